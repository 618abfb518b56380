"""The workload section from records built to order: units complete or cut short, a turn
beside its cold prompt, an agent task end to end, the units' tokens, the trace's send lag.
Pure: records in, figures out."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.analysis.frames import frames
from evalkit.analysis.thresholds import default_slo_profiles
from evalkit.analysis.workload import trace_section, workload_section
from evalkit.records import RequestRecord
from tests.analysis.helpers import failed, stream

#: TTFT = 0.05 s + 1 ms per 10 prompt tokens
FIT = {"overhead_s": 0.05, "slope_s_per_token": 0.0001}


def turn(session: str, k: int, planned: int, *, t0: float, ttft: float, prompt: int,
         shape: str = "chat", users: int = 1, step: bool = False, n: int = 5,
         cached: int | None = None) -> RequestRecord:
    return stream(f"{session}-{k}", "workload", users, t0=t0, ttft=ttft, gap=0.01, n=n,
                  shape=shape, session=session, planned_turns=planned,
                  turn=None if step else k, step=k if step else None,
                  prompt_tokens=prompt, counted_prompt_tokens=prompt, end_s=ttft + 0.04,
                  cached_prompt_tokens=cached)


def section(recs: list[RequestRecord], prefill: dict[str, Any] | None = FIT,
            bound: dict[int, bool] | None = None) -> dict[str, Any]:
    req, chunks = frames(recs)
    out = workload_section(req, chunks, prefill=prefill, client_bound=bound or {},
                           profiles=default_slo_profiles(), reading_speed=8.0, target=0.99)
    assert out is not None
    return out


def test_units_complete_and_cut_short() -> None:
    recs = [turn("a", k, 3, t0=k, ttft=0.06, prompt=100 * k) for k in (1, 2, 3)]
    recs += [turn("b", 1, 3, t0=10, ttft=0.06, prompt=100)]  # cut short after one turn
    recs += [turn("c", 1, 2, t0=20, ttft=0.06, prompt=100),
             failed("c-2", "error", "workload", 1, t0=21)]  # a failed turn ends its unit
    recs[-1] = RequestRecord(**{**recs[-1].__dict__, "shape": "chat", "session": "c",
                                "turn": 2, "planned_turns": 2})
    sh = section(recs)["levels"][0]["shapes"]["chat"]
    assert (sh["units"], sh["units_complete"]) == (3, 1)
    assert sh["requests"] == 6 and sh["outcomes"]["error"] == 1
    # the units' tokens: only the complete one, summed over its turns
    assert sh["unit_tokens"]["requests"] == 1 and sh["unit_tokens"]["input"] == 600
    assert sh["unit_tokens"]["output"] == 15
    # the failed unit's served turn is summed apart (its failed turn reported no usage);
    # the unit cut short with every turn ok is in neither sum
    failed_units = sh["unit_tokens_failed"]
    assert failed_units["requests"] == 1
    assert (failed_units["input"], failed_units["output"]) == (100, 5)
    # a failure is in goodput's denominator
    assert sh["goodput"]["interactive_chat"]["requests"] == 6
    assert sh["goodput"]["interactive_chat"]["met"] == 5


def test_a_turn_stands_beside_its_cold_prompt() -> None:
    recs = [turn(s, 1, 2, t0=i, ttft=0.09, prompt=400) for i, s in enumerate("abc")]
    recs += [turn(s, 2, 2, t0=10 + i, ttft=0.06, prompt=800, cached=768)
             for i, s in enumerate("abc")]
    turns = section(recs)["levels"][0]["shapes"]["chat"]["turns"]
    assert [t["turn"] for t in turns] == [1, 2]
    cold1, cold2 = turns[0]["cold_ttft_s"], turns[1]["cold_ttft_s"]
    assert cold1 == pytest.approx(0.09) and cold2 == pytest.approx(0.13)
    assert turns[0]["ttft_vs_cold"] == pytest.approx(1.0)
    assert turns[1]["ttft_vs_cold"] == pytest.approx(0.06 / 0.13)
    assert turns[1]["cached_prompt_tokens_p50"] == 768
    assert turns[0]["cached_prompt_tokens_p50"] is None
    # no prefill fit: no cold figure, and the section says why
    out = section(recs, prefill=None)
    assert out["levels"][0]["shapes"]["chat"]["turns"][1]["cold_ttft_s"] is None
    assert "no prefill fit" in out["cold_basis"]


def test_an_agent_task_end_to_end_and_its_slowest_step() -> None:
    # 3 steps: sent at 0, 1 and 2.5 s; each ends 0.04 s after its TTFT
    ttfts = (0.1, 0.3, 0.2)
    recs = [turn("t", k, 3, t0=t0, ttft=ttfts[k - 1], prompt=200, shape="coder", step=True)
            for k, t0 in zip((1, 2, 3), (0.0, 1.0, 2.5), strict=True)]
    sh = section(recs)["levels"][0]["shapes"]["coder"]
    assert "steps" in sh and "turns" not in sh
    assert [s["step"] for s in sh["steps"]] == [1, 2, 3]
    tasks = sh["tasks"]
    assert tasks["complete"] == 1
    assert tasks["e2e_s"]["p50"] == pytest.approx(2.5 + 0.2 + 0.04)
    assert tasks["slowest_step_ttft_s"]["p50"] == pytest.approx(0.3)
    assert tasks["slowest_step_s"]["p50"] == pytest.approx(0.3 + 0.04)
    # a task with a step missing is not complete, and not timed
    sh2 = section(recs[:2])["levels"][0]["shapes"]["coder"]
    assert sh2["tasks"]["complete"] == 0 and sh2["tasks"]["e2e_s"]["n"] == 0


def test_levels_and_shapes_apart_and_client_bound_named() -> None:
    recs = [turn("a", 1, 1, t0=0, ttft=0.06, prompt=100, users=1),
            turn("b", 1, 1, t0=1, ttft=0.08, prompt=100, users=4, shape="lookup"),
            turn("c", 1, 1, t0=1, ttft=0.08, prompt=100, users=4)]
    out = section(recs, bound={4: True})
    assert [lv["users"] for lv in out["levels"]] == [1, 4]
    assert [lv["client_bound"] for lv in out["levels"]] == [False, True]
    assert sorted(out["levels"][1]["shapes"]) == ["chat", "lookup"]
    req, chunks = frames([stream("x", "ramp", 1)])
    assert workload_section(req, chunks, prefill=None, client_bound={},
                            profiles=default_slo_profiles(), reading_speed=8.0,
                            target=0.99) is None


def test_the_trace_reports_its_send_lag_and_lengths() -> None:
    recs = [stream(f"r{i}", "trace", None, t0=i * 0.1, n=4, send_lag_s=lag,
                   requested_output_tokens=6, counted_prompt_tokens=300, shape="trace")
            for i, lag in enumerate((0.001, 0.002, 0.030))]
    req, chunks = frames(recs)
    tr = trace_section(req, chunks, client_bound=False, profiles=default_slo_profiles(),
                       reading_speed=8.0, target=0.99)
    assert tr is not None and tr["requests"] == 3
    assert tr["send_lag_s"]["max"] == pytest.approx(0.030)
    assert tr["output_tokens_asked"] == 18 and tr["output_tokens_received"] == 12
    assert tr["prompt_tokens_sent"] == 900
    assert (tr["planned"], tr["complete"]) == (None, False)  # no description: not complete
    for entries, complete in ((3, True), (5, False)):
        tr = trace_section(req, chunks, client_bound=False, profiles=default_slo_profiles(),
                           reading_speed=8.0, target=0.99, described={"entries": entries})
        assert tr is not None and (tr["planned"], tr["complete"]) == (entries, complete)
