"""The workload's judgement (`evalkit.review.workload`), on summaries built to trigger each
rule: a client-bound level, units cut short, a missed goodput, an invalid run."""

from __future__ import annotations

import copy
from typing import Any

from evalkit.analysis.thresholds import Tolerances
from evalkit.review.rules import RunTarget
from evalkit.review.workload import (
    later_turns,
    ramp_source,
    sources,
    trace_block,
    workload_block,
)
from evalkit.review.workload_card import Sources, TurnCard
from tests.review.helpers import typed


def _goodput(share: float, n: int, status: str) -> dict[str, Any]:
    return {"fraction": share, "fraction_ci": [max(share - 0.2, 0.0), min(share + 0.1, 1.0)],
            "tokens_per_s": 50.0, "met": round(share * n), "requests": n, "status": status}


def _shape(units: int = 4, complete: int = 4, status: str = "met", share: float = 1.0,
           ratios: tuple[float, ...] = (1.0, 0.6, 0.5)) -> dict[str, Any]:
    return {"requests": 12, "outcomes": {"ok": 12}, "units": units,
            "units_complete": complete,
            "ttft_s": {"p50": 0.2, "p90": 0.3}, "tpot_s": {"p90": 0.02},
            "goodput": {name: _goodput(share, 12, status) for name in
                        ("voice_agent", "live_suggestions", "interactive_chat", "batch")},
            "turns": [{"turn": i + 1, "requests": 4, "prompt_tokens_p50": 200.0 * (i + 1),
                       "cached_prompt_tokens_p50": None, "ttft_s": {"p50": 0.2 * r},
                       "tpot_s": {"p90": 0.02}, "cold_ttft_s": 0.2, "ttft_vs_cold": r}
                      for i, r in enumerate(ratios)]}


def _summary(*levels: tuple[int, bool, dict[str, Any]]) -> dict[str, Any]:
    return {"workload": {
        "described": {"name": "support chat", "source": {"name": "wl.yaml",
                                                        "sha256": "0123456789abcdef" * 4},
                      "shapes": [{"name": "chat", "kind": "session"}]},
        "levels": [{"users": u, "client_bound": bound, "shapes": {"chat": s}}
                   for u, bound, s in levels],
        "cold_basis": "basis"}}


TOL = Tolerances()


def test_a_met_level_reads_met_with_its_interval_and_later_turns_against_cold() -> None:
    block = workload_block(typed(_summary((1, False, _shape()), (4, False, _shape()))), TOL)
    assert block is not None
    shape = block.levels[1].shapes[0]
    assert shape.verified and shape.goodput["voice_agent"].status == "met"
    assert shape.goodput["voice_agent"].fraction_ci == (0.8, 1.0)
    assert shape.later_vs_cold == 0.55  # the median of turns 2 and 3, not turn 1
    assert block.source == "workload support chat (wl.yaml, 0123456789ab)"
    assert block.headline == ("chat: 4 users, 100 % of turns within voice agent; later "
                                 "turns x0.55 of cold (at 1 user)")


def test_a_client_bound_level_is_never_met() -> None:
    block = workload_block(typed(_summary((1, False, _shape()), (4, True, _shape()))), TOL)
    assert block is not None
    bound = block.levels[1].shapes[0]
    assert not bound.verified and bound.not_verified is not None and \
        "client could not keep up at 4 users" in bound.not_verified
    assert {g.status for g in bound.goodput.values()} == {"not_verified"}
    # page one names the highest level that is verified, not the bound one
    assert block.headline.startswith("chat: 1 user, 100 % of turns")
    only_bound = workload_block(typed(_summary((4, True, _shape()))), TOL)
    assert only_bound is not None
    assert only_bound.headline.startswith("chat: not verified (the client could not")


def test_a_missing_client_check_counts_as_bound() -> None:
    summary = _summary((2, False, _shape()))
    del summary["workload"]["levels"][0]["client_bound"]
    block = workload_block(typed(summary), TOL)
    assert block is not None and not block.levels[0].shapes[0].verified


def test_units_cut_short_void_a_met_but_a_miss_stays_a_miss() -> None:
    cut = workload_block(typed(_summary((2, False, _shape(units=4, complete=3)))), TOL)
    assert cut is not None
    shape = cut.levels[0].shapes[0]
    assert shape.goodput["voice_agent"].status == "not_verified"
    assert "1 of 4 units were cut short" in (shape.goodput["voice_agent"].reason or "")
    missed = workload_block(typed(_summary((2, False, _shape(complete=3, status="missed",
                                                       share=0.5)))), TOL)
    assert missed is not None
    assert missed.levels[0].shapes[0].goodput["voice_agent"].status == "missed"
    no_count = _shape()
    del no_count["units_complete"]
    unknown = workload_block(typed(_summary((2, False, no_count))), TOL)
    assert unknown is not None and not unknown.levels[0].shapes[0].verified


def test_a_missed_goodput_is_said_as_missed_with_its_share() -> None:
    block = workload_block(typed(_summary((2, False, _shape(status="missed", share=0.5)))), TOL)
    assert block is not None
    assert block.levels[0].shapes[0].goodput["interactive_chat"].status == "missed"
    assert "50 % of turns within voice agent (missed)" in block.headline


def test_an_invalid_run_verifies_no_workload_figure() -> None:
    block = workload_block(typed(_summary((1, False, _shape()))), TOL, void="the run is invalid: x")
    assert block is not None
    assert {g.status for g in block.levels[0].shapes[0].goodput.values()} == {
        "not_verified"}


def test_later_turns_need_a_later_turn_with_a_cold_prompt() -> None:
    assert later_turns((TurnCard(index=1, ttft_vs_cold=0.5),)) is None
    assert later_turns((TurnCard(index=2, ttft_vs_cold=None),)) is None
    assert later_turns((TurnCard(index=2, ttft_vs_cold=0.5),)) == 0.5


def test_the_trace_names_its_file_and_speed_and_a_bound_replay_is_not_verified() -> None:
    trace = {"described": {"speed": 2.0, "source": {"name": "mooncake.jsonl",
                                                     "sha256": "f" * 64}},
             "requests": 40, "client_bound": True, "send_lag_s": {"p50": 0.001, "p99": 0.02},
             "goodput": {"voice_agent": _goodput(1.0, 40, "met")}}
    block = trace_block(typed({"trace": trace}))
    assert block is not None
    assert block.source == "trace mooncake.jsonl (ffffffffffff) replayed at 2x its speed"
    assert block.goodput["voice_agent"].status == "not_verified"
    ok = trace_block(typed({"trace": {**copy.deepcopy(trace), "client_bound": False}}))
    assert ok is not None and ok.goodput["voice_agent"].status == "met"


def test_every_part_names_its_source() -> None:
    summary = {**_summary((1, False, _shape())), "baseline": {"requests": 2}}
    got = sources(typed(summary), RunTarget(prompt_tokens=256))
    assert got == Sources("the suite's synthetic single-turn prompts of 256 tokens",
                          "workload support chat (wl.yaml, 0123456789ab)", None)
    assert ramp_source(RunTarget(prompts_file="mine.jsonl, abc")) == \
        "the buyer's prompts file mine.jsonl, abc (single-turn)"
    assert workload_block(typed({}), TOL) is None and trace_block(None) is None
