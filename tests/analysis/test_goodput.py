"""Goodput at the SLO on records whose right answers are known by hand."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.summarize import SummaryMeta, summarize
from evalkit.analysis.summary import Summary
from evalkit.analysis.thresholds import Thresholds
from evalkit.records import RequestRecord
from tests.analysis.helpers import closed_loop, failed, stream


def _gapped(rid: str, t0: float, pause: float) -> RequestRecord:
    """Ten one-token chunks 20 ms apart but for one pause of `pause` s after the fifth."""
    chunks = [(0.1 + 0.02 * i + (pause - 0.02 if i >= 5 else 0.0), 1) for i in range(10)]
    return RequestRecord(id=rid, phase="ramp", level=2, outcome="ok", t0_s=t0,
                         chunks=chunks, ttft_s=chunks[0][0], e2e_s=chunks[-1][0],
                         output_tokens=10, output_tokens_estimated=False,
                         usage_completion_tokens=10, counted_output_tokens=10,
                         finish_reason="length")


def _level_two(t: float) -> list[RequestRecord]:
    """Ten requests at level 2, each built to meet or miss a known set of profiles:

    | requests            | voice (0.5 s, gap 0.3) | live (0.45 s, 40 ms) | chat | batch |
    | 4 fast              | yes                    | yes                  | yes  | yes   |
    | 2 TTFT 0.48 s       | yes                    | no                   | yes  | yes   |
    | 1 TPOT 35 ms        | yes                    | yes                  | yes  | yes   |
    | 1 TPOT 50 ms        | yes                    | no                   | yes  | yes   |
    | 1 one 0.4 s pause   | no                     | no (TPOT 62 ms)      | yes  | yes   |
    | 1 rejected          | no                     | no                   | no   | no    |
    """
    recs = [stream(f"f{i}", "ramp", 2, t0=t + 0.3 * i) for i in range(4)]
    recs += [stream(f"s{i}", "ramp", 2, t0=t + 0.1 + 0.3 * i, ttft=0.48) for i in range(2)]
    recs += [stream("t35", "ramp", 2, t0=t + 0.5, gap=0.035),
             stream("t50", "ramp", 2, t0=t + 0.7, gap=0.05),
             _gapped("pause", t + 0.9, 0.4),
             failed("rej", "rejected", "ramp", 2, t0=t + 1.0, status=429)]
    return recs


def _run() -> list[RequestRecord]:
    recs = [stream(f"b{i}", t0=i) for i in range(10)]
    recs += closed_loop("ramp", 1, 30, t_start=100.0)
    recs += _level_two(200.0)
    recs += closed_loop("ramp", 4, 10, t_start=300.0)
    return recs


def _level(s: dict[str, Any], c: int) -> dict[str, Any]:
    return next(lv for lv in s["ramp"]["levels"] if lv["concurrency"] == c)


class TestFractions:
    def test_each_profile_counts_the_requests_that_met_it(self) -> None:
        s = summarize(_run())
        g = _level(s, 2)["goodput"]
        assert {k: (v["met"], v["requests"]) for k, v in g.items()} == {
            "voice_agent": (8, 10), "live_suggestions": (5, 10),
            "interactive_chat": (9, 10), "batch": (9, 10)}
        assert g["voice_agent"]["fraction"] == pytest.approx(0.8)
        assert g["voice_agent"]["fraction_ci"] == pytest.approx(proportion_interval(8, 10))
        # 8 of 10 cannot reach 99 %: the whole interval is below it
        assert g["voice_agent"]["status"] == "missed"
        # 9 of 10: the interval still reaches 99 %, a tie (never a pass)
        assert g["batch"]["status"] == "tie"
        assert _level(s, 1)["goodput"]["voice_agent"]["fraction"] == 1.0

    def test_tokens_per_s_are_the_meeting_requests_inside_the_window(self) -> None:
        recs = _run()
        s = summarize(recs)
        lv = _level(s, 2)
        win = lv["steady_state"]
        live = {"f0", "f1", "f2", "f3", "t35"}
        by_hand = sum(n for r in recs if r.id in live for off, n in r.chunks
                      if win["start_s"] < r.t0_s + off <= win["end_s"])
        assert by_hand > 0
        assert lv["goodput"]["live_suggestions"]["tokens_per_s"] == pytest.approx(
            by_hand / win["duration_s"])
        # every ok request meets batch: its goodput rate is the aggregate rate
        assert lv["goodput"]["batch"]["tokens_per_s"] == pytest.approx(
            lv["aggregate_tokens_per_s"])

    def test_reasoning_first_is_judged_on_the_answer(self) -> None:
        """A reasoning chunk at 10 ms and the answer at 0.6 s misses a voice agent."""
        recs = [stream(f"r{i}", "ramp", 1, t0=i, ttft=0.01, ttfa_s=0.6) for i in range(5)]
        g = _level(summarize(recs), 1)["goodput"]
        assert g["voice_agent"]["met"] == 0 and g["interactive_chat"]["met"] == 5

    def test_one_chunk_carrying_everything_misses_the_gap_and_tpot_limits(self) -> None:
        recs = [stream(f"u{i}", "ramp", 1, t0=i, n=1, tpc=50) for i in range(5)]
        g = _level(summarize(recs), 1)["goodput"]
        assert g["voice_agent"]["met"] == 0 and g["live_suggestions"]["met"] == 0
        assert g["batch"]["met"] == 5


class TestHighestLevelWithinTheSlo:
    def test_the_climb_stops_at_the_first_level_that_did_not_meet_it(self) -> None:
        s = summarize(_run())
        ramp = s["ramp"]
        # level 4 met every profile again, but the climb stopped at 2
        assert _level(s, 4)["goodput"]["voice_agent"]["status"] == "met"
        assert ramp["max_goodput_concurrency"] == {
            "voice_agent": 1, "live_suggestions": 1, "interactive_chat": 1, "batch": 1}
        assert ramp["goodput_stopped_at"]["voice_agent"] == 2
        assert ramp["max_goodput_is_lower_bound"]["voice_agent"] is False
        assert ramp["goodput_target"] == 0.99
        assert ramp["goodput_limits"]["voice_agent"]["max_gap_s"] == 0.3

    def test_every_level_met_is_a_lower_bound(self) -> None:
        recs = closed_loop("ramp", 1, 20) + closed_loop("ramp", 2, 10, t_start=50.0)
        ramp = summarize(recs)["ramp"]
        assert ramp["max_goodput_concurrency"]["voice_agent"] == 2
        assert ramp["max_goodput_is_lower_bound"]["voice_agent"] is True

    def test_the_target_is_a_threshold(self) -> None:
        """At an 80 % target, 8 of 10 meets it and the voice agent climbs to 4."""
        meta = SummaryMeta(thresholds=Thresholds(goodput_target=0.8))
        ramp = summarize(_run(), meta)["ramp"]
        assert ramp["max_goodput_concurrency"]["voice_agent"] == 4
        assert ramp["max_goodput_concurrency"]["live_suggestions"] == 1

    def test_a_client_bound_level_ends_the_climb(self) -> None:
        meta = {"levels": {"2": {"client_bound": True}}}
        recs = closed_loop("ramp", 1, 20) + closed_loop("ramp", 2, 10, t_start=50.0)
        ramp = summarize(recs, meta)["ramp"]
        assert ramp["max_goodput_concurrency"]["voice_agent"] == 1

    def test_a_target_above_one_is_refused(self) -> None:
        from evalkit.errors import UsageError
        with pytest.raises(UsageError):
            Thresholds(goodput_target=1.5)


class TestTypedReading:
    def test_summary_reads_goodput_per_level_and_the_maximum(self) -> None:
        m = Summary.from_json(summarize(_run()))
        assert m is not None
        lv = m.level(2)
        assert lv is not None
        g = lv.goodput["voice_agent"]
        assert g.fraction == pytest.approx(0.8) and g.status == "missed"
        assert g.fraction_ci is not None and g.fraction_ci[0] < 0.8 < g.fraction_ci[1]
        assert m.max_goodput == {"voice_agent": 1, "live_suggestions": 1,
                                 "interactive_chat": 1, "batch": 1}

    def test_an_old_summary_has_no_goodput(self) -> None:
        doc = summarize(_run())
        del doc["ramp"]["max_goodput_concurrency"]
        for lv in doc["ramp"]["levels"]:
            del lv["goodput"]
        m = Summary.from_json(doc)
        assert m is not None and m.max_goodput == {} and m.levels[-1].goodput == {}


class TestAgainstTruth:
    def test_goodput_is_the_share_the_truth_log_gives(self, reference: Any,
                                                      tmp_path: Path) -> None:
        """Against the reference endpoint with some streams paused 0.5 s mid-way (past a
        voice agent's 0.3 s gap, and a TPOT past live suggestions' 40 ms) and some answered
        500: each level's goodput is the share of its requests that met each profile by the
        server's own write times (a request within 10 ms of a limit may fall either way)."""
        from evalkit.probe.plan.settings import ProbeConfig
        from evalkit.probe.suite import run_probe
        from evalkit.rundir.store import read_run_files

        srv = reference("gpu", mode="thread", request_overhead_ms=20, fault_stall_prob=0.2,
                        fault_stall_s=0.5, fault_http_500=0.1, seed=11)
        out = tmp_path / "run"
        run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True,
                              phases=("baseline", "ramp"),
                              overrides={"output_tokens": 16, "baseline": {"requests": 4},
                                         # level 4 shows the faults: it keeps its 36
                                         "ramp": {"levels": [1, 4],
                                                  "level_duration_s": 1.5,
                                                  "level_min_requests": 8,
                                                  "min_requests": {"4": 36}}}), out)
        meta, records = read_run_files(out)
        truth = {t["request_id"]: t for t in srv.truth()}
        s = summarize(records)
        origin = meta["clock"]["origin_ns"]
        limits = s["ramp"]["goodput_limits"]
        checked = 0
        for lv in s["ramp"]["levels"]:
            mine = [r for r in records if r.phase == "ramp" and r.level == lv["concurrency"]]
            for name, lim in limits.items():
                sure, near = 0, 0
                for r in mine:
                    verdict = _truth_meets(truth[r.id], origin + r.t0_s * 1e9, lim)
                    sure += verdict == "yes"
                    near += verdict == "near"
                g = lv["goodput"][name]
                assert g["requests"] == len(mine)
                assert sure <= g["met"] <= sure + near, (lv["concurrency"], name, g, sure, near)
                checked += 1
        assert checked == 8
        # the faults bit: some requests missed the voice agent, and failures missed batch
        four = _level(s, 4)["goodput"]
        assert four["voice_agent"]["met"] < four["voice_agent"]["requests"]
        assert four["batch"]["met"] < four["batch"]["requests"]
        assert four["live_suggestions"]["met"] <= four["voice_agent"]["met"]


def _truth_meets(t: dict[str, Any], t0_ns: float, lim: dict[str, Any]) -> str:
    """Did the server's own writes meet these limits: "yes", "no" or "near" (within 10
    ms of one). A request the server did not stream to its end missed."""
    if t["status"] != 200 or t["outcome"] not in ("ok", "fault:stall"):
        return "no"
    writes = [(w[0], w[2]) for w in t["writes"] if w[3] == "content"]
    if len(writes) < 2:
        return "no"
    times = [w[0] / 1e9 for w in writes]
    first = (t["first_answer_ns"] - t0_ns) / 1e9
    tokens = sum(n for _, n in writes)
    tpot = (times[-1] - times[0]) / (tokens - writes[0][1])
    gap = max(b - a for a, b in itertools.pairwise(times))
    figures = [(first, lim["first_answer_s"], 0.010), (tpot, lim["tpot_s"], 0.001),
               (gap, lim["max_gap_s"], 0.010)]
    if lim["min_stream_tokens_per_s"]:
        figures.append((tpot, 1 / lim["min_stream_tokens_per_s"], 0.001))
    near = False
    for value, limit, margin in figures:
        if limit is None:
            continue
        if abs(value - limit) <= margin:
            near = True
        elif value > limit:
            return "no"
    return "near" if near else "yes"
