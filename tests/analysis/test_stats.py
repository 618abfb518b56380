"""Percentiles, outcome counts, the steady-state window and a phase's statistics
(`evalkit.analysis.stats`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.analysis.checks import usage_honesty
from evalkit.analysis.frames import frames, records_frame
from evalkit.analysis.stats import (
    output_length_check,
    percentiles,
    phase_stats,
    steady_state_window,
    top_error,
)
from evalkit.analysis.summarize import summarize
from evalkit.analysis.thresholds import Thresholds
from evalkit.records import RequestRecord
from tests.analysis.helpers import closed_loop, failed, stream


class TestPercentiles:
    def test_known_values_with_count_and_confidence(self) -> None:
        """Linear interpolation on 1..100, with n beside them and confidence at n = 100."""
        p = percentiles(np.arange(1, 101))
        assert (p["p50"], p["p90"], p["p99"]) == pytest.approx((50.5, 90.1, 99.01))
        assert p["n"] == 100 and p["low_confidence"] is False
        assert percentiles([1.0, 2.0])["low_confidence"] is True

    def test_empty_and_nan_give_none_not_zero(self) -> None:
        """No samples is None, never an invented 0; NaNs are not samples."""
        p = percentiles([float("nan"), float("nan")])
        assert p["n"] == 0 and p["p50"] is None and p["p99"] is None and p["mean"] is None

    def test_extra_quantiles_are_named(self) -> None:
        """The slow tail of stream rate is asked for as p10 / p1."""
        p = percentiles(np.arange(0, 101), extra=(10.0, 1.0))
        assert p["p10"] == pytest.approx(10.0) and p["p1"] == pytest.approx(1.0)

    @given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1,
                    max_size=300))
    def test_monotone(self, xs: list[float]) -> None:
        """p50 ≤ p90 ≤ p99 within [min, max], whatever the samples."""
        p = percentiles(xs)
        assert p["min"] <= p["p50"] <= p["p90"] <= p["p99"] <= p["max"]
        assert p["n"] == len(xs)


class TestStreamMetrics:
    def test_itl_per_gap_and_tpot_per_token_differ_when_chunks_bundle(self) -> None:
        """4-token chunks every 40 ms: ITL is 40 ms per gap, TPOT 10 ms per token.

        The 36 tokens after the first chunk took 0.36 s; dividing by n - 1 = 39 would read
        9.2 ms, deflated by the bundle.
        """
        s = phase_stats(*_req_and_chunks([stream("a", gap=0.04, n=10, tpc=4)]), target=1)
        assert s["itl_s"]["p50"] == pytest.approx(0.04)
        assert s["itl_s"]["n"] == 9
        assert s["tpot_s"]["p50"] == pytest.approx(0.36 / 36)
        assert s["stream_tokens_per_s"]["p50"] == pytest.approx(36 / 0.36)
        assert s["tokens_per_chunk"]["p50"] == 4
        assert s["ttft_s"]["p50"] == pytest.approx(0.1)
        assert s["e2e_s"]["p50"] == pytest.approx(0.1 + 9 * 0.04)

    def test_tpot_uses_server_usage_not_chunk_count(self) -> None:
        """Server says 21 tokens though we counted 10 chunks of 1: each chunk carried 2.1
        of the server's tokens, so 18.9 came after the first, and TPOT divides by that
        (dividing by our count, 9, would read 2.1x slow; by 21 - 1 = 20, 5 % fast)."""
        s = phase_stats(*_req_and_chunks([stream("a", gap=0.05, n=10, usage=21)]), target=1)
        assert s["tpot_s"]["p50"] == pytest.approx(0.45 / 18.9)
        assert s["tokens_per_chunk"]["p50"] == pytest.approx(2.1)
        assert s["output_tokens_estimated"] is False

    def test_ttfa_beside_ttft_when_reasoning_comes_first(self) -> None:
        """Reasoning from 0.1 s, the answer from 0.5 s: TTFT 0.1, TTFA 0.5, one such stream."""
        recs = [stream("r", ttfa_s=0.5), stream("plain", t0=5)]
        s = phase_stats(*frames(recs), target=1)
        assert s["ttft_s"]["max"] == pytest.approx(0.1)
        assert s["ttfa_s"]["max"] == pytest.approx(0.5) and s["ttfa_s"]["n"] == 1
        assert s["reasoning_first"] == 1

    def test_empty_stream_has_no_ttft(self) -> None:
        """An ok stream with no content chunk has no TTFT, E2E or TPOT: None, not 0."""
        s = phase_stats(*_req_and_chunks([stream("a", n=0, usage=0)]), target=1)
        assert s["ttft_s"]["p50"] is None and s["ttft_s"]["n"] == 0
        assert s["tpot_s"]["n"] == 0 and s["itl_s"]["n"] == 0

    def test_itl_never_bridges_two_streams(self) -> None:
        """The gap between one stream's last chunk and the next stream's first is not ITL."""
        recs = [stream("a", t0=0.0, gap=0.02, n=5), stream("b", t0=10.0, gap=0.03, n=5)]
        req, chunks = frames(recs)
        assert chunks["gap_s"].isna().sum() == 2
        s = phase_stats(req, chunks, target=1)
        assert s["itl_s"]["n"] == 8
        assert s["itl_s"]["max"] == pytest.approx(0.03)
        assert chunks["t_s"].iloc[5] == pytest.approx(10.1)  # absolute: t0 + offset

    def test_failed_requests_stay_in_denominators(self) -> None:
        """97 ok, 2 rejected, 1 cut mid-stream: 2 % not admitted, 3 % failed, TTFT over 97."""
        recs = [stream(f"ok{i}", t0=i) for i in range(97)]
        recs += [failed("r1", "rejected", status=429), failed("r2", "rejected", status=503)]
        recs.append(stream("cut", t0=200, outcome="incomplete", n=3))
        s = phase_stats(*_req_and_chunks(recs), target=1)
        assert s["requests"] == 100
        assert s["outcomes"] == {"ok": 97, "rejected": 2, "error": 0, "incomplete": 1,
                                 "timeout": 0}
        assert s["admission_failure_rate"] == pytest.approx(0.02)
        assert s["failure_rate"] == pytest.approx(0.03)
        assert s["ttft_s"]["n"] == 97

    @pytest.mark.parametrize(("outcome", "n_chunks", "not_admitted"), [
        ("timeout", 0, True),    # queued until the client gave up
        ("timeout", 5, False),   # served, then too slow: not an admission failure
        ("error", 0, False),     # a 500 happens at any load: a failure, not admission
        ("incomplete", 0, False),
        ("rejected", 0, True),
        ("ok", 5, False),
    ])
    def test_admission_failure_is_never_served(self, outcome: str, n_chunks: int,
                                               not_admitted: bool) -> None:
        """Admission failure = rejected, or timed out without a single content chunk."""
        req = records_frame([stream("a", outcome=outcome, n=n_chunks)])
        assert bool(req["admission_failure"].iloc[0]) is not_admitted

    def test_stalls_count_gaps_above_threshold_in_any_stream(self) -> None:
        """A 1.5 s hole in one stream is one stall; a 0.9 s hole is none at 1 s."""
        a = stream("a", n=3, gap=0.02)
        a = RequestRecord(**{**a.__dict__, "chunks": [(0.1, 1), (1.6, 1), (1.62, 1)]})
        b = stream("b", t0=5, outcome="timeout", n=2, gap=0.9)
        s = phase_stats(*_req_and_chunks([a, b]), target=1)
        assert s["stalls"] == 1 and s["stalled_streams"] == 1
        assert s["max_gap_s"] == pytest.approx(1.5)
        s2 = phase_stats(*_req_and_chunks([a, b]), target=1, thresholds=Thresholds(stall_s=0.5))
        assert s2["stalls"] == 2 and s2["stalled_streams"] == 2

    def test_estimated_when_no_server_usage(self) -> None:
        """No usage: output tokens are our count, and marked estimated."""
        r = stream("a", usage=None, counted=12, n=6, tpc=2)
        req = records_frame([r])
        assert req["output_tokens"].iloc[0] == 12
        assert bool(req["output_tokens_estimated"].iloc[0]) is True

    @given(st.lists(st.tuples(st.floats(0.001, 0.5), st.integers(1, 8)), min_size=1,
                    max_size=40), st.floats(0.001, 2.0))
    @settings(max_examples=60, deadline=None)
    def test_tpot_identity(self, parts: list[tuple[float, int]], ttft: float) -> None:
        """TPOT × (tokens after the first chunk) + TTFT == E2E, whatever the bundling."""
        t, chunks = ttft, []
        for i, (g, k) in enumerate(parts):
            t += g if i else 0.0
            chunks.append((t, k))
        tokens = sum(k for _, k in chunks)
        r = RequestRecord(id="x", phase="baseline", level=1, outcome="ok", t0_s=0.0,
                          chunks=chunks, output_tokens=tokens)
        row = records_frame([r]).iloc[0]
        after_first = tokens - chunks[0][1]
        if tokens < 2 or after_first < 1:
            assert math.isnan(row["tpot_s"])
        else:
            assert row["tpot_s"] * after_first + row["ttft_s"] == pytest.approx(row["e2e_s"])
            assert row["ttft_s"] == pytest.approx(ttft)


def _req_and_chunks(recs: list[RequestRecord]) -> tuple:
    return frames(recs)


class TestSteadyState:
    @pytest.mark.parametrize(("starts", "ends", "target", "window", "basis"), [
        # 2 workers, staggered: both in flight from 1 until the first drains at 4
        ([0, 1, 2, 3], [2, 3, 4, 5], 2, (1, 4), "plateau"),
        # target never reached (client managed only 2 of 4): span at the peak
        ([0, 1, 2, 3], [2, 3, 4, 5], 4, (1, 4), "peak"),
        # open loop: the arrival span
        ([0, 1, 2, 3], [2, 3, 4, 5], None, (0, 3), "arrivals"),
        # back to back at concurrency 1 (end == next start): one plateau, not fragments
        ([0, 1, 2], [1, 2, 3], 1, (0, 3), "plateau"),
        # every request refused at once: nothing was ever in flight, the whole span
        ([0, 1, 2], [0, 1, 2], 2, (0, 2), "whole"),
        # the first case on a clock whose origin is 4 s later: only shifted
        ([-4, -3, -2, -1], [-2, -1, 0, 1], 2, (-3, 0), "plateau"),
    ])
    def test_window(self, starts: list[float], ends: list[float], target: int | None,
                    window: tuple[float, float], basis: str) -> None:
        """The window spans the intended concurrency, ramp-up and drain excluded."""
        w = steady_state_window(starts, ends, target)
        assert w is not None
        assert (w.start_s, w.end_s) == pytest.approx(window)
        assert w.basis == basis

    def test_empty(self) -> None:
        """No requests, no window."""
        assert steady_state_window([], [], 4) is None

    def test_achieved_in_flight_over_the_window(self) -> None:
        """Four workers; one sits out 1-6 s (a Retry-After): the peak reads 4, the window's
        time-weighted mean (4·1 + 3·5 + 4·4) / 10 = 3.5, its lowest 3."""
        w = steady_state_window([0, 0, 0, 0, 6], [10, 10, 10, 1, 10], 4)
        assert w is not None and (w.start_s, w.end_s, w.basis) == (0, 10, "plateau")
        assert (w.max_inflight, w.mean_inflight, w.min_inflight) == (4, pytest.approx(3.5), 3)

    def test_achieved_in_flight_at_full_load(self) -> None:
        w = steady_state_window([0, 0], [5, 5], 2)
        assert w is not None and (w.mean_inflight, w.min_inflight) == (2.0, 2)

    def test_aggregate_throughput_excludes_ramp_up_and_drain(self) -> None:
        """4 streams at 10 tok/s, staggered 1 s apart: 40 tok/s, not the naive 34.8."""
        recs = closed_loop("ramp", 4, 5, ttft=0.1, gap=0.1, n=40, stagger=1.0)
        req, chunks = frames(recs)
        s = phase_stats(req, chunks, target=4)
        naive = 4 * 5 * 40 / 23.0
        assert s["steady_state"]["start_s"] == pytest.approx(3.0)
        assert s["steady_state"]["end_s"] == pytest.approx(20.0)
        assert s["aggregate_tokens_per_s"] == pytest.approx(40.0, rel=0.01)
        assert abs(naive - 40.0) > 4.0  # the test can tell the two apart
        assert s["stream_tokens_per_s"]["p50"] == pytest.approx(10.0)

    @given(level=st.integers(1, 8), gap=st.floats(0.005, 0.2), n=st.integers(5, 40),
           per_worker=st.integers(3, 6), stagger=st.floats(0.0, 1.0))
    @settings(max_examples=40, deadline=None)
    def test_aggregate_is_level_over_gap(self, level: int, gap: float, n: int,
                                         per_worker: int, stagger: float) -> None:
        """Streams emitting one token every `gap` from t0: aggregate = level / gap."""
        e2e = n * gap
        recs = closed_loop("ramp", level, per_worker, ttft=gap, gap=gap, n=n,
                           stagger=stagger * e2e / level)
        s = phase_stats(*frames(recs), target=level)
        assert s["steady_state"]["basis"] == "plateau"
        edge = 1.5 / ((per_worker - 1) * n)  # at most one token per stream at each edge
        assert s["aggregate_tokens_per_s"] == pytest.approx(level / gap, rel=edge)


class TestPhaseStatsEdges:
    """phase_stats and its steady-state window at their edges."""

    def test_phase_stats_keys(self) -> None:
        assert set(summarize([stream("b")])["baseline"]) == {
            "achieved_output_tokens", "configuration_failures", "reconnects",
            "admission_failure_rate", "aggregate_tokens_per_s", "aggregate_tokens_per_s_ci",
            "connections",
            "client_bound", "e2e_s", "engine_timings", "failure_rate", "failure_rate_ci",
            "itl_s", "max_gap_s",
            "outcomes",
            "output_length", "output_tokens", "output_tokens_estimated", "reasoning_first",
            "requests", "stall_threshold_s", "stalled_streams", "stalls", "steady_state",
            "stream_tokens_per_s", "tokens_per_chunk", "top_error", "tpot_s", "ttfa_s",
            "ttft_s", "validity"}
        assert set(summarize([stream("b")])["baseline"]["steady_state"]) == {
            "start_s", "end_s", "basis", "target_inflight", "max_inflight", "mean_inflight",
            "min_inflight", "duration_s"}

    def test_the_engines_own_account_beside_ours(self) -> None:
        """Where the engine sent its timings, its prompt time sits beside our TTFT of the
        same requests, with their difference request by request; a request without them
        (or a failed one) is left out, and a group without any has none."""
        recs = [stream("a", ttft=0.10, engine_prompt_s=0.04, engine_output_tokens=10,
                       engine_decode_s=0.18),
                stream("b", t0=1, ttft=0.50, engine_prompt_s=0.05, engine_output_tokens=10,
                       engine_decode_s=0.27),
                stream("c", t0=2, ttft=0.30),                      # sent no timings
                stream("d", t0=3, outcome="error", n=0, engine_prompt_s=0.01)]
        e = summarize(recs)["baseline"]["engine_timings"]
        assert e["requests"] == 2
        assert e["prompt_s"]["n"] == 2 and e["ttft_s"]["n"] == 2
        # ours minus its: 0.06 and 0.45 s; p50 and p90 interpolated between them
        beyond = e["ttft_beyond_prompt_s"]
        assert (beyond["p50"], beyond["p90"]) == pytest.approx((0.255, 0.06 + 0.9 * 0.39))
        # its time per token: 0.18 and 0.27 s over 9 steps each (0.02, 0.03)
        assert (e["tpot_s"]["p50"], e["tpot_s"]["p90"]) == pytest.approx((0.025, 0.029))
        assert summarize([stream("x")])["baseline"]["engine_timings"] is None

    def test_answer_first_is_not_reasoning_first(self) -> None:
        recs = [stream("a", ttfa_s=0.1), stream("r", t0=1, ttfa_s=0.3)]  # ttft 0.1 both
        assert summarize(recs)["baseline"]["reasoning_first"] == 1

    def test_tokens_and_flags_of_the_group(self) -> None:
        b = summarize([stream("a", n=12, usage=None, counted=12)])["baseline"]
        assert (b["output_tokens"]["p50"], b["output_tokens_estimated"]) == (12, True)

    def test_a_gap_exactly_at_the_stall_threshold_is_no_stall(self) -> None:
        at = summarize([stream("a", ttft=0.5, gap=1.0, n=2)])["baseline"]
        over = summarize([stream("a", ttft=0.5, gap=1.25, n=2)])["baseline"]
        assert (at["stalls"], over["stalls"], over["stalled_streams"]) == (0, 1, 1)

    def test_stalls_and_gaps_are_the_groups_own(self) -> None:
        recs = [stream("b", gap=0.02), stream("s", "soak", 2, t0=5, gap=2.0, n=3)]
        s = summarize(recs)
        assert (s["baseline"]["stalls"], s["baseline"]["max_gap_s"]) == (0, pytest.approx(0.02))
        assert (s["soak"]["stalls"], s["soak"]["stalled_streams"]) == (2, 1)

    def test_output_length_uses_the_runs_shortfall(self) -> None:
        rec = stream("a", n=85, requested_output_tokens=100)
        assert summarize([rec])["baseline"]["output_length"]["flagged"] is True
        tuned = summarize([rec], {"thresholds": {"output_shortfall": 0.2}})
        assert tuned["baseline"]["output_length"]["flagged"] is False

    def test_aggregate_counts_chunks_inside_the_window_only(self) -> None:
        """Level 2 holds from 0.5 s (the second start) to 1.0 s (the first end): chunks at
        0.75 and 1.0 of each count (4 tokens / 0.5 s); the first's chunk at 0.5 does not."""
        recs = [stream("a", "ramp", 2, t0=0.0, ttft=0.25, gap=0.25, n=4),
                stream("b", "ramp", 2, t0=0.5, ttft=0.25, gap=0.25, n=4)]
        lv = summarize(recs)["ramp"]["levels"][0]
        assert (lv["steady_state"]["start_s"], lv["steady_state"]["end_s"]) == (0.5, 1.0)
        assert lv["steady_state"]["max_inflight"] == 2
        assert lv["aggregate_tokens_per_s"] == pytest.approx(8.0)

    def test_aggregate_interval_brackets_the_rate(self) -> None:
        lv = summarize(closed_loop("ramp", 4, 10))["ramp"]["levels"][0]
        low, high = lv["aggregate_tokens_per_s_ci"]
        assert low <= lv["aggregate_tokens_per_s"] <= high

    def test_aggregate_interval_counts_tokens_not_chunks(self) -> None:
        """Three tokens a chunk: the interval is around the token rate (its batch means
        average to it), not around the chunk rate a third as high."""
        lv = summarize(closed_loop("ramp", 4, 10, tpc=3))["ramp"]["levels"][0]
        low, high = lv["aggregate_tokens_per_s_ci"]
        assert (low + high) / 2 == pytest.approx(lv["aggregate_tokens_per_s"], rel=0.2)

    def test_nothing_in_flight_has_no_window(self) -> None:
        b = summarize([failed("r1", "rejected", t0=5.0), failed("r2", "rejected", t0=5.0)])[
            "baseline"]
        assert (b["steady_state"], b["aggregate_tokens_per_s"],
                b["aggregate_tokens_per_s_ci"]) == (None, None, None)

    def test_a_window_of_exactly_a_tenth_of_the_phase_is_kept(self) -> None:
        """2 in flight from 4 to 5 s of a 10 s level: exactly 10 %, so the plateau stands;
        shorter, the whole span is used."""
        long = stream("a", "ramp", 2, t0=0.0, ttft=1.0, gap=1.0, n=10)  # ends at 10
        lv = summarize([long, stream("b", "ramp", 2, t0=4.0, ttft=0.5, gap=0.5, n=2)])[
            "ramp"]["levels"][0]
        assert lv["steady_state"]["basis"] == "plateau"
        assert (lv["steady_state"]["start_s"], lv["steady_state"]["end_s"]) == (4.0, 5.0)
        lv = summarize([long, stream("b", "ramp", 2, t0=4.0, ttft=0.25, gap=0.5, n=2)])[
            "ramp"]["levels"][0]
        assert lv["steady_state"]["basis"] == "whole"
        assert (lv["steady_state"]["start_s"], lv["steady_state"]["end_s"]) == (0.0, 10.0)

    def test_the_tenth_is_of_the_phase_length_not_its_clock_time(self) -> None:
        recs = [stream("a", "ramp", 2, t0=100.0, ttft=0.25, gap=0.25, n=4),
                stream("b", "ramp", 2, t0=100.5, ttft=0.25, gap=0.25, n=4)]
        assert summarize(recs)["ramp"]["levels"][0]["steady_state"]["basis"] == "plateau"

    def test_usage_honesty_on_its_own(self) -> None:
        frame = records_frame([stream("a", n=10, usage=15, counted=10),
                               stream("c", n=10, usage=15, counted=10, t0=2),
                               stream("b", n=1, usage=1, counted=1, t0=1)])
        check = usage_honesty(frame)  # median 1.5: half again what we counted
        assert (check["checked"], check["tolerance"], check["flagged"]) == (3, 0.25, True)


class TestOutputLength:
    def test_keys_edges_and_the_default_shortfall(self) -> None:
        recs = [stream("a", n=95, requested_output_tokens=100),     # exactly 5 % short: ok
                stream("b", n=94, requested_output_tokens=100, t0=1),
                stream("c", n=10, requested_output_tokens=0, t0=2)]  # nothing asked: skipped
        check = output_length_check(records_frame(recs))
        assert set(check) == {"checked", "short", "short_fraction", "achieved_ratio",
                              "flagged", "tolerance"}
        assert (check["checked"], check["short"], check["short_fraction"]) == (2, 1, 0.5)
        assert (check["tolerance"], check["achieved_ratio"]["n"]) == (0.05, 2)


def test_the_top_error_groups_messages_by_their_first_120_characters() -> None:
    """Errors that differ only past 120 characters (a request id at the end) are one
    error: three of them outnumber two of another."""
    head = "upstream overloaded, retry later " * 4  # 132 characters
    recs = [RequestRecord(id=f"a{i}", phase="baseline", level=1, outcome="error", t0_s=0.0,
                          error=f"{head}req-{i}") for i in range(3)]
    recs += [RequestRecord(id=f"b{i}", phase="baseline", level=1, outcome="error", t0_s=0.0,
                           error="rate limited") for i in range(2)]
    assert top_error(records_frame(recs)) == f"{head[:120]} (x3)"


class TestPercentilesExactly:
    def test_one_to_a_hundred(self) -> None:
        """Every figure of 1..100 by hand: the percentiles, their distribution-free 95 %
        intervals (order statistics 40 and 61 around the median), mean, min and max."""
        assert percentiles(list(range(1, 101))) == {
            "p50": 50.5, "p90": pytest.approx(90.1), "p99": pytest.approx(99.01), "n": 100,
            "low_confidence": False, "mean": 50.5, "min": 1.0, "max": 100.0,
            "p50_ci": [40.0, 61.0], "p90_ci": [84.0, 96.0], "p99_ci": [97.0, None]}

    def test_nothing_is_every_figure_none(self) -> None:
        assert percentiles([]) == {
            "p50": None, "p90": None, "p99": None, "n": 0, "low_confidence": True,
            "mean": None, "min": None, "max": None,
            "p50_ci": [None, None], "p90_ci": [None, None], "p99_ci": [None, None]}

    def test_missing_values_are_skipped(self) -> None:
        """A None among the values (a request without that figure) is left out."""
        out = percentiles([0.1, None, 0.3])
        assert (out["n"], out["mean"], out["min"], out["max"]) == (2, pytest.approx(0.2),
                                                                    0.1, 0.3)
