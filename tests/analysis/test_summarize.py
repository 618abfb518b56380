"""The metrics core on synthetic records whose right answers are known by hand."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.analysis.checks import cache_check, streaming_check, usage_honesty
from evalkit.analysis.frames import chunks_frame, frames, records_frame
from evalkit.analysis.prefill import prefill_fit
from evalkit.analysis.ramp import _requests_to_decide, judge_ramp
from evalkit.analysis.stats import (
    output_length_check,
    percentiles,
    phase_stats,
    steady_state_window,
    top_error,
)
from evalkit.analysis.summarize import ClientCheck, SummaryMeta, client_section, summarize
from evalkit.analysis.thresholds import Thresholds
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.records import RequestRecord
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import RunTarget


def stream(rid: str, phase: str = "baseline", level: int | None = 1, *, t0: float = 0.0,
           ttft: float = 0.1, gap: float = 0.02, n: int = 10, tpc: int = 1,
           outcome: str = "ok", usage: int | None = -1, counted: int | None = -1,
           **kw: object) -> RequestRecord:
    """One streamed request: n chunks of tpc tokens, the first at ttft, then every gap s."""
    chunks = [(ttft + i * gap, tpc) for i in range(n)]
    tokens = n * tpc
    usage = tokens if usage == -1 else usage
    counted = tokens if counted == -1 else counted
    fields: dict[str, object] = {
        "ttft_s": chunks[0][0] if chunks else None,
        "e2e_s": chunks[-1][0] if chunks else None,
        "output_tokens": usage if usage is not None else counted,
        "output_tokens_estimated": usage is None,
        "usage_completion_tokens": usage,
        "counted_output_tokens": counted,
        "finish_reason": "length" if outcome == "ok" else None,
    }
    fields.update(kw)
    return RequestRecord(id=rid, phase=phase, level=level, outcome=outcome,  # type: ignore[arg-type]
                         t0_s=t0, chunks=chunks, **fields)  # type: ignore[arg-type]


def failed(rid: str, outcome: str, phase: str = "baseline", level: int | None = 1,
           t0: float = 0.0, status: int | None = None) -> RequestRecord:
    """A request that delivered no content at all."""
    return RequestRecord(id=rid, phase=phase, level=level, outcome=outcome,  # type: ignore[arg-type]
                         t0_s=t0, http_status=status)


def closed_loop(phase: str, level: int, per_worker: int, *, ttft: float = 0.1,
                gap: float = 0.02, n: int = 10, tpc: int = 1, stagger: float | None = None,
                t_start: float = 0.0) -> list[RequestRecord]:
    """`level` workers, each sending the next request the moment the last one ends."""
    e2e = ttft + (n - 1) * gap
    stagger = e2e / level if stagger is None else stagger
    out = []
    for w in range(level):
        t = t_start + w * stagger
        for k in range(per_worker):
            out.append(stream(f"{phase}-{level}-{w}-{k}", phase, level, t0=t, ttft=ttft,
                              gap=gap, n=n, tpc=tpc))
            t += e2e
    return out


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


def _level(c: int, ttft_p90: float | None, tpot_p90: float | None, admission: float = 0.0,
           requests: int = 100) -> dict:
    ok = round(requests * (1 - admission))
    return {"concurrency": c, "requests": requests,
            "outcomes": {"ok": ok, "rejected": requests - ok},
            "ttft_s": {"p90": ttft_p90}, "tpot_s": {"p90": tpot_p90},
            "admission_failure_rate": admission, "failure_rate": 1 - ok / requests}


BASE = {"ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}


class TestJudgeRamp:
    @pytest.mark.parametrize(("levels", "bound", "sustained", "first", "at"), [
        # TTFT breaches at 8, TPOT flat
        ([(1, .1, .02), (2, .12, .02), (4, .15, .021), (8, .5, .022), (16, .9, .02)],
         (), 4, "ttft", 8),
        # TPOT breaches first at 4
        ([(1, .1, .02), (2, .1, .03), (4, .15, .05), (8, .5, .06)], (), 2, "itl", 4),
        # admission: 5 % of 100 rejected at 8 (exact interval 1.6-11 %, above 1 %) while
        # latency holds
        ([(1, .1, .02), (4, .1, .02), (8, .1, .02, .05)], (), 4, "admission", 8),
        # no breach: the highest level is the (lower-bound) answer
        ([(1, .1, .02), (2, .1, .02), (4, .15, .03)], (), 4, None, None),
        # level 1 already breaches: nothing sustained, not "0"
        ([(1, .3, .02), (2, .4, .02)], (), None, "ttft", 1),
        # client-bound level 4 is neither sustained nor breached
        ([(1, .1, .02), (2, .1, .02), (4, .15, .02), (8, .5, .02)], (4,), 2, "ttft", 8),
        # client-bound breaching level 8 gives no conclusion; 16 is the first real breach
        ([(1, .1, .02), (4, .1, .02), (8, .5, .02), (16, .5, .02)], (8,), 4, "ttft", 16),
    ])
    def test_table(self, levels: list[tuple], bound: tuple[int, ...], sustained: int | None,
                   first: str | None, at: int | None) -> None:
        """Highest sustained level and first degraded metric, on hand-built levels."""
        out = judge_ramp([_level(*lv) for lv in levels], BASE, Thresholds(), bound)
        assert out["max_sustained_concurrency"] == sustained
        assert out["first_degraded"] == first
        assert out["first_breach_concurrency"] == at
        for d in out["levels"]:
            if d["concurrency"] in bound:
                assert d["status"] == "client_bound" and d["breaches"] == []

    @given(st.lists(st.tuples(st.floats(0.05, 0.5), st.floats(0.01, 0.1),
                              st.sampled_from([0.0, 0.005, 0.05]), st.booleans()),
                    min_size=1, max_size=7))
    def test_invariants(self, spec: list[tuple[float, float, float, bool]]) -> None:
        """Sustained < first breach; bound levels neither; first_degraded is a breach there."""
        levels = [_level(2 ** i, t, p, a) for i, (t, p, a, _) in enumerate(spec)]
        bound = [2 ** i for i, (*_, b) in enumerate(spec) if b]
        out = judge_ramp(levels, BASE, Thresholds(), bound)
        first, held = out["first_breach_concurrency"], out["max_sustained_concurrency"]
        if first is not None and held is not None:
            assert held < first
        by_c = {d["concurrency"]: d for d in out["levels"]}
        for c in bound:
            assert by_c[c]["status"] == "client_bound"
        assert held is None or by_c[held]["status"] == "sustained"
        if first is not None:
            assert out["first_degraded"] in by_c[first]["breaches"]
            assert all(by_c[c]["status"] != "breached" for c in by_c if c < first)
        else:
            assert out["first_degraded"] is None

    def test_tie_goes_to_largest_excess_and_says_so(self) -> None:
        """At level 8 TTFT is 3× (1.5× its limit) and TPOT 5× (2.5×): 'itl' first."""
        out = judge_ramp([_level(1, .1, .02), _level(8, .3, .1)], BASE)
        assert out["first_degraded"] == "itl"
        assert out["first_degraded_tied"] == ["itl", "ttft"]
        assert out["first_degraded_tie_rule"]

    def test_confirmation_and_lower_bound_flags(self) -> None:
        """A breach the next level repeats is confirmed; a run with no breach is a bound."""
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02), _level(16, .1, .02)], BASE)
        assert out["breach_confirmed"] is False
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02), _level(16, .6, .02)], BASE)
        assert out["breach_confirmed"] is True and out["max_sustained_is_lower_bound"] is False
        out = judge_ramp([_level(1, .1, .02)], BASE)
        assert out["max_sustained_is_lower_bound"] is True and out["breach_confirmed"] is None

    def test_thresholds_override(self) -> None:
        """A 1.5× TTFT rise passes at 2× and breaches at 1.2×."""
        levels = [_level(1, .1, .02), _level(4, .15, .02)]
        assert judge_ramp(levels, BASE)["first_degraded"] is None
        assert judge_ramp(levels, BASE, Thresholds(ttft_p90_ratio=1.2))["first_degraded"] == "ttft"

    def test_level_without_successes_is_the_breach(self) -> None:
        """All requests failed mid-stream: a failed level is the breach (never 'no level
        breached'), judged on its failure rate, whatever the client's state."""
        lv = _level(4, None, None)
        lv["outcomes"], lv["failure_rate"] = {"ok": 0, "incomplete": 100}, None
        out = judge_ramp([_level(1, .1, .02), lv], BASE, client_bound=[4])
        assert out["levels"][1]["status"] == "failed"
        assert out["levels"][1]["excess"]["admission"] == pytest.approx(100.0)
        assert out["max_sustained_concurrency"] == 1
        assert (out["first_breach_concurrency"], out["first_degraded"]) == (4, "admission")
        assert out["max_sustained_is_lower_bound"] is False

    def test_a_level_with_no_requests_is_no_data(self) -> None:
        """Nothing sent at a level is no evidence either way."""
        lv = _level(4, None, None)
        lv["requests"], lv["outcomes"], lv["failure_rate"] = 0, {}, None
        out = judge_ramp([_level(1, .1, .02), lv], BASE)
        assert out["levels"][1]["status"] == "no_data"
        assert out["first_breach_concurrency"] is None


class TestPrefillFit:
    LENGTHS = (128, 512, 1024, 2048, 4096)

    def _records(self, ttfts: dict[int, list[float]]) -> list[RequestRecord]:
        return [stream(f"p{p}-{i}", "prefill", 1, t0=i, ttft=t, n=2, prompt_tokens=p)
                for p, ts in ttfts.items() for i, t in enumerate(ts)]

    def test_noiseless_points_recover_a_and_b(self) -> None:
        """TTFT = 0.05 + 0.0002·p exactly: overhead 0.05 s, 5000 tokens/s, r² = 1."""
        fit = prefill_fit(records_frame(self._records(
            {p: [0.05 + 0.0002 * p] for p in self.LENGTHS})))
        assert fit["overhead_s"] == pytest.approx(0.05)
        assert fit["tokens_per_s"] == pytest.approx(5000.0)
        assert fit["r2"] == pytest.approx(1.0)
        assert [pt["prompt_tokens"] for pt in fit["points"]] == list(self.LENGTHS)

    def test_noisy_points_with_an_outlier(self) -> None:
        """±3 % noise and one 10× outlier per length: medians keep b within 5 %."""
        rng = np.random.default_rng(7)
        data = {}
        for p in self.LENGTHS:
            true = 0.05 + 0.0002 * p
            ts = list(true * (1 + rng.uniform(-0.03, 0.03, 9)))
            data[p] = [*ts, true * 10]
        fit = prefill_fit(records_frame(self._records(data)))
        assert fit["tokens_per_s"] == pytest.approx(5000.0, rel=0.05)
        assert fit["overhead_s"] == pytest.approx(0.05, abs=0.01)
        assert fit["r2"] > 0.99
        assert fit["points"][0]["n"] == 10

    @pytest.mark.parametrize("ttfts", [
        {512: [0.1, 0.11]},                   # one length only
        {128: [0.3], 4096: [0.2]},            # TTFT falls with length: b ≤ 0
        {},                                   # nothing at all
    ])
    def test_cannot_fit(self, ttfts: dict[int, list[float]]) -> None:
        """No honest line: the rate and overhead are None, and the reason is given."""
        fit = prefill_fit(records_frame(self._records(ttfts) or [stream("b")]))
        assert fit["tokens_per_s"] is None and fit["overhead_s"] is None
        assert fit["reason"]

    def test_a_slope_interval_reaching_exactly_zero_gives_only_a_lower_bound(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A slope whose 95 % interval starts at 0.0 exactly: zero is inside it, so there is
        no rate, only "faster than 1/high". No three real TTFTs land on 0.0 exactly under
        the fit's exact sums, so the fit's answer is set to that edge."""
        import evalkit.analysis.prefill as prefill

        def edge(x: Any, y: Any) -> dict[str, Any]:
            return {"slope": 5e-5, "intercept": 0.09, "slope_ci": [0.0, 1e-4],
                    "intercept_ci": [0.0, 0.2], "dof": 1}

        monkeypatch.setattr(prefill, "ols", edge)
        fit = prefill_fit(records_frame(self._records(
            {100: [0.1], 200: [0.14], 300: [0.19]})))
        assert fit["slope_ci"][0] == 0.0
        assert fit["tokens_per_s"] is None and fit["tokens_per_s_ci"] is None
        assert fit["tokens_per_s_at_least"] == pytest.approx(1 / fit["slope_ci"][1])


class TestChecks:
    @pytest.mark.parametrize(("achieved", "short"), [(94, True), (96, False), (100, False)])
    def test_output_length_shortfall(self, achieved: int, short: bool) -> None:
        """More than 5 % short of the requested 100 tokens is flagged."""
        s = summarize([stream("a", n=achieved, requested_output_tokens=100)])
        check = s["checks"]["output_length"]
        assert check["checked"] == 1 and check["flagged"] is short

    @pytest.mark.parametrize(("usage", "flagged"), [(150, True), (105, False), (70, True)])
    def test_usage_honesty(self, usage: int, flagged: bool) -> None:
        """The vendor bills 150 for 100 tokens we counted: flagged; 105 is tokenizer noise."""
        s = summarize([stream(f"a{i}", n=100, usage=usage, counted=100) for i in range(3)])
        assert s["checks"]["usage_honesty"]["flagged"] is flagged
        assert s["checks"]["usage_honesty"]["checked"] == 3

    @pytest.mark.parametrize(("repeat", "cached"), [(0.02, True), (0.19, False),
                                                    (0.1, False)])
    def test_cache(self, repeat: float, cached: bool) -> None:
        """Repeat TTFT 0.02 vs 0.2 s first: a prefix cache; 0.19 s: none; 0.1 s, exactly
        half: not "much faster" (the threshold is a strict bound)."""
        recs = []
        for i in range(3):
            recs.append(stream(f"c{i}a", "cache", t0=2 * i, ttft=0.2, prompt_id=f"p{i}"))
            recs.append(stream(f"c{i}b", "cache", t0=2 * i + 1, ttft=repeat, prompt_id=f"p{i}"))
        out = cache_check(records_frame(recs))
        assert out is not None
        assert out["pairs"] == 3 and out["prefix_cache"] is cached
        assert out["repeat_over_first"] == pytest.approx(repeat / 0.2)

    def test_cache_pairs_only_the_cache_phase(self) -> None:
        """The same prompt sent earlier in the baseline is not the cache check's first
        send; the figures are the pair's own medians."""
        recs = [stream("b0", "baseline", t0=0, ttft=1.0, prompt_id="p"),
                stream("c0", "cache", t0=10, ttft=1.0, prompt_id="p"),
                stream("c1", "cache", t0=20, ttft=0.2, prompt_id="p")]
        assert cache_check(records_frame(recs)) == {
            "pairs": 1, "first_ttft_s": 1.0, "repeat_ttft_s": 0.2, "repeat_over_first": 0.2,
            "prefix_cache": True, "threshold": 0.5}

    @pytest.mark.parametrize("recs", [
        # a first TTFT of 0 s: nothing can be "much faster" than it
        [stream("c0", "cache", t0=0, ttft=0.0, prompt_id="q"),
         stream("c1", "cache", t0=1, ttft=0.1, prompt_id="q")],
        # no repeat at all
        [stream("c0", "cache", t0=0, ttft=0.3, prompt_id="q")],
    ])
    def test_cache_without_a_pair_says_nothing(self, recs: list[RequestRecord]) -> None:
        assert cache_check(records_frame(recs)) == {
            "pairs": 0, "first_ttft_s": None, "repeat_ttft_s": None, "repeat_over_first": None,
            "prefix_cache": None, "threshold": 0.5}

    def test_network_share_and_connect(self) -> None:
        """RTT 10 ms against a 100 ms baseline TTFT: network is 10 % of TTFT."""
        recs = [stream(f"rtt{i}", "rtt", None, t0=i, n=0, usage=None, counted=None,
                       e2e_s=0.01) for i in range(5)]
        recs += [stream(f"b{i}", t0=10 + i) for i in range(5)]
        recs.append(stream("c", "connect", tpc=3, usage=None, counted=30))
        s = summarize(recs)
        assert s["checks"]["network"]["rtt_s"] == pytest.approx(0.01)
        assert s["checks"]["network"]["share_of_ttft"] == pytest.approx(0.1)
        assert s["connect"]["rtt_s"] == pytest.approx(0.01)
        assert s["connect"]["usage_reported"] is False
        assert s["connect"]["tokens_per_chunk"]["p50"] == 3

    def test_open_loop_reports_send_lag(self) -> None:
        """A slow client cannot hide queueing: send lag p50/p99 are reported."""
        recs = [stream(f"r{i}", "rate", None, t0=i * 0.5, send_lag_s=0.001 * i)
                for i in range(11)]
        s = summarize(recs)["rate"]
        assert s["send_lag_s"]["p50"] == pytest.approx(0.005)
        assert s["send_lag_s"]["p99"] == pytest.approx(0.0099)
        assert s["arrival_rps"] == pytest.approx(2.0)
        assert s["steady_state"]["basis"] == "arrivals"


class TestSummarize:
    def _run(self) -> list[RequestRecord]:
        recs = [stream("c", "connect")]
        recs += [stream(f"b{i}", t0=i, ttft=0.1) for i in range(20)]
        recs += [stream(f"p{p}", "prefill", t0=100 + i, ttft=0.05 + 0.0001 * p, n=2,
                        prompt_tokens=p) for i, p in enumerate((100, 1000, 4000))]
        t = 200.0
        for level, ttft in ((1, 0.1), (2, 0.11), (4, 0.14), (8, 0.45), (16, 0.8)):
            # at least 40 requests a level: fewer cannot bound a p90 from above (36), and
            # an unbounded interval is a tie, never a sustained level
            recs += closed_loop("ramp", level, max(6, 40 // level), ttft=ttft, t_start=t)
            t += 20
        return recs

    def test_ramp_end_to_end(self) -> None:
        """TTFT breaches at 8 while TPOT stays flat: first_degraded 'ttft', sustained 4."""
        s = summarize(self._run())
        assert s["schema"] == "evalkit.summary/1"
        assert s["ramp"]["first_degraded"] == "ttft"
        assert s["ramp"]["max_sustained_concurrency"] == 4
        assert [lv["concurrency"] for lv in s["ramp"]["levels"]] == [1, 2, 4, 8, 16]
        lv8 = s["ramp"]["levels"][3]
        assert lv8["ttft_s"]["p90"] == pytest.approx(0.45)
        assert lv8["tpot_p90_ratio"] == pytest.approx(1.0)
        assert lv8["outcomes"]["ok"] == 48 and lv8["requests"] == 48
        assert s["ramp"]["baseline_source"] == "baseline"
        assert s["prefill"]["tokens_per_s"] == pytest.approx(10000.0)

    def test_client_bound_level_from_meta(self) -> None:
        """meta marks level 8 client-bound: no breach there; 16 is the first, 4 sustained."""
        meta = {"levels": {"8": {"loop_lag_p99_s": 0.2, "cpu_fraction": 0.98,
                                 "client_bound": True}},
                "phases": {"baseline": {"loop_lag_p99_s": 0.001, "cpu_fraction": 0.1}}}
        s = summarize(self._run(), meta)
        assert s["ramp"]["first_breach_concurrency"] == 16
        assert s["ramp"]["max_sustained_concurrency"] == 4
        assert s["ramp"]["levels"][3]["status"] == "client_bound"
        assert s["client"]["client_bound"] is True
        assert s["client"]["loop_lag_p99_s"] == pytest.approx(0.2)
        assert s["client"]["client_bound_levels"] == [8]
        assert s["client"]["capacity_judgement_affected"] is True

    def test_client_bound_above_the_breach_changes_no_conclusion(self) -> None:
        """Bound only at 16, after the breach at 8: the judgement stands and says so."""
        s = summarize(self._run(), {"levels": {"16": {"client_bound": True}}})
        assert s["ramp"]["first_breach_concurrency"] == 8
        assert s["ramp"]["max_sustained_concurrency"] == 4
        assert s["client"]["client_bound"] is True
        assert s["client"]["capacity_judgement_affected"] is False

    def test_a_client_bound_baseline_voids_the_capacity_judgement(self) -> None:
        """Every ramp ratio is taken against the baseline: bound there, no level's verdict
        stands, however clean the ramp looked, and no claim is verified from the run."""
        s = summarize(self._run(), {"phases": {"baseline": {"cpu_fraction": 0.99,
                                                            "client_bound": True}}})
        assert s["ramp"]["baseline_client_bound"] is True
        assert s["baseline"]["client_bound"] is True
        assert s["client"]["client_bound_phases"] == ["baseline"]
        assert s["client"]["capacity_judgement_affected"] is True
        assert s["validity"]["status"] == "degraded"
        assert any("no capacity conclusion" in r for r in s["validity"]["reasons"])
        claim = parse_questionnaire(b"schema: evalkit.questionnaire/1\nmodel: m\n"
                                    b"endpoint: http://h/v1\nQ4: {max_concurrent_streams_"
                                    b"per_node: 4, first_degrades: ttft, source: lab}\n")
        q4 = reconcile(claim, s, None, RunTarget("m", "http://h/v1")).judgements["Q4"]
        assert q4.status == "unverified" and "client-bound" in q4.reason
        clean = summarize(self._run())
        assert clean["client"]["capacity_judgement_affected"] is False
        assert reconcile(claim, clean, None, RunTarget("m", "http://h/v1")).judgements[
            "Q4"].status == "ok"

    def test_contract_keys_and_json_safety(self) -> None:
        """Every contract key is present, and the dict survives strict JSON."""
        s = summarize(self._run(), SummaryMeta(phases={"ramp": ClientCheck(0.001, 0.3)}))
        json.dumps(s, allow_nan=False)
        assert {"schema", "connect", "baseline", "prefill", "ramp", "client"} <= set(s)
        assert {"usage_reported", "tokens_per_chunk", "rtt_s"} <= set(s["connect"])
        assert {"ttft_s", "tpot_s", "itl_s", "stream_tokens_per_s", "requests"} <= \
            set(s["baseline"])
        assert {"tokens_per_s", "overhead_s", "r2", "points"} <= set(s["prefill"])
        assert {"levels", "max_sustained_concurrency", "first_degraded"} <= set(s["ramp"])
        level_keys = {"concurrency", "requests", "outcomes", "ttft_s", "tpot_s", "itl_s",
                      "stream_tokens_per_s", "aggregate_tokens_per_s", "stalls"}
        assert all(level_keys <= set(lv) for lv in s["ramp"]["levels"])
        assert {"p50", "p90", "p99", "n"} <= set(s["baseline"]["ttft_s"])
        assert {"loop_lag_p99_s", "client_bound"} <= set(s["client"])
        assert s["client"]["client_bound"] is False

    def test_documented_extra_keys_are_there(self) -> None:
        """The keys the module docstring promises to readers exist in a full run."""
        s = summarize(self._run())
        stats = {"admission_failure_rate", "failure_rate", "ttfa_s", "reasoning_first",
                 "e2e_s", "tokens_per_chunk", "output_tokens", "steady_state",
                 "stalled_streams", "max_gap_s", "output_length", "output_tokens_estimated"}
        assert stats <= set(s["baseline"]) and stats <= set(s["ramp"]["levels"][0])
        assert {"p10", "p1"} <= set(s["ramp"]["levels"][0]["stream_tokens_per_s"])
        assert {"status", "excess", "breaches", "ttft_p90_ratio", "tpot_p90_ratio"} <= \
            set(s["ramp"]["levels"][0])
        assert {"first_breach_concurrency", "breach_confirmed", "baseline_source",
                "max_sustained_is_lower_bound", "judged_on", "note"} <= set(s["ramp"])
        assert {"cache", "network", "output_length", "usage_honesty",
                "streaming"} == set(s["checks"])
        assert s["checks"]["network"] is None  # no rtt records, no meta rtt_s

    def test_missing_phases_are_none(self) -> None:
        """Only a baseline was run: the other sections are None, not empty numbers."""
        s = summarize([stream("b")])
        assert s["baseline"]["requests"] == 1
        for key in ("connect", "prefill", "ramp", "soak", "rate"):
            assert s[key] is None
        assert s["checks"]["cache"] is None and s["checks"]["network"] is None
        empty = summarize([])
        assert empty["baseline"] is None and empty["requests"] == 0
        json.dumps(empty, allow_nan=False)

    def test_ramp_level_1_stands_in_for_a_missing_baseline(self) -> None:
        """No baseline phase: ramp level 1 is the reference, and the summary says so."""
        recs = closed_loop("ramp", 1, 40) + closed_loop("ramp", 4, 10, ttft=0.5, t_start=50)
        s = summarize(recs)
        assert s["ramp"]["baseline_source"] == "ramp level 1"
        assert s["ramp"]["first_degraded"] == "ttft"
        assert s["ramp"]["max_sustained_concurrency"] == 1

    def test_soak_drift(self) -> None:
        """TTFT rising from 0.1 to 0.3 s over a soak shows as a 3× drift in p90."""
        recs = [stream(f"s{i}", "soak", 8, t0=float(i), ttft=0.1 if i < 30 else 0.3)
                for i in range(90)]
        s = summarize(recs)["soak"]
        assert s["concurrency"] == 8
        assert s["drift"]["ttft_p90_ratio"] == pytest.approx(3.0)
        assert s["drift"]["tpot_p90_ratio"] == pytest.approx(1.0)

    def test_meta_thresholds_and_versions(self) -> None:
        """Thresholds and versions from meta are used and echoed."""
        s = summarize([stream("b")], {"thresholds": {"stall_s": 0.3}, "suite_version": "9"})
        assert s["thresholds"]["stall_s"] == 0.3 and s["suite_version"] == "9"
        assert s["baseline"]["stall_threshold_s"] == 0.3

    def test_client_bound_phase_is_said_in_its_section(self) -> None:
        """A client-bound soak says so beside its numbers; the baseline did not."""
        recs = [stream("b")] + [stream(f"s{i}", "soak", 4, t0=i) for i in range(6)]
        s = summarize(recs, {"phases": {"soak": {"client_bound": True}}})
        assert s["soak"]["client_bound"] is True and s["baseline"]["client_bound"] is False


@pytest.mark.parametrize("bad", [{"stall_s": 0}, {"ttft_p90_ratio": -2}, {"stall_s": "x"}])
def test_thresholds_must_be_positive(bad: dict) -> None:
    """A zero or negative threshold is a usage error, not a silent never-breach."""
    from evalkit.errors import UsageError

    with pytest.raises(UsageError, match="threshold"):
        Thresholds.from_dict(bad)


_chunk_lists = st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(0, 5)), max_size=6).map(
    lambda cs: sorted(cs))
_records = st.builds(
    RequestRecord,
    id=st.uuids().map(str),
    phase=st.sampled_from(["connect", "baseline", "prefill", "ramp", "soak", "rate", "cache",
                           "rtt", "warmup"]),
    level=st.one_of(st.none(), st.sampled_from([1, 2, 4, 8])),
    outcome=st.sampled_from(["ok", "rejected", "error", "incomplete", "timeout"]),
    t0_s=st.floats(0.0, 100.0),
    prompt_tokens=st.one_of(st.none(), st.sampled_from([64, 512, 2048])),
    requested_output_tokens=st.one_of(st.none(), st.integers(0, 64)),
    output_tokens=st.one_of(st.none(), st.integers(0, 64)),
    counted_output_tokens=st.one_of(st.none(), st.integers(0, 64)),
    usage_completion_tokens=st.one_of(st.none(), st.integers(0, 64)),
    chunks=_chunk_lists,
    send_lag_s=st.one_of(st.none(), st.floats(0.0, 0.1)),
    prompt_id=st.one_of(st.none(), st.sampled_from(["a", "b"])),
)


@given(st.lists(_records, max_size=25), st.booleans())
@settings(max_examples=60, deadline=None)
def test_any_records_give_strict_json(records: list[RequestRecord], bound: bool) -> None:
    """Whatever mix of phases, outcomes and gaps in the data: a summary, never NaN or a crash."""
    meta = {"levels": {"4": {"client_bound": bound}}, "rtt_s": 0.001}
    s = summarize(records, meta)
    json.dumps(s, allow_nan=False)
    assert s["requests"] == len(records)
    assert sum(s["outcomes"].values()) == len(records)


def test_a_request_that_hung_until_its_timeout_counts_as_in_flight() -> None:
    """A failed request without content holds its connection until it ended (`end_s`)."""
    from evalkit.analysis.frames import records_frame

    hung = RequestRecord(id="h", phase="ramp", level=2, outcome="timeout", t0_s=10.0,
                         end_s=30.0)
    old = RequestRecord(id="o", phase="ramp", level=2, outcome="timeout", t0_s=10.0)
    ends = records_frame([hung, old])["end_s"].tolist()
    assert ends == [40.0, 10.0]


class TestSections:
    """Each section's exact keys (the contract readers code against) and its edge cases."""

    def test_connect_section(self) -> None:
        recs = [stream("c", "connect", ttft=0.3, usage=None, counted=10)]
        c = summarize(recs)["connect"]
        assert set(c) == {"usage_reported", "tokens_per_chunk", "rtt_s", "requests",
                          "outcomes", "ttft_s", "output_tokens_estimated", "validity"}
        assert (c["usage_reported"], c["requests"], c["ttft_s"]) == (False, 1, 0.3)
        assert (c["outcomes"]["ok"], c["output_tokens_estimated"]) == (1, True)
        assert summarize([stream("c", "connect")])["connect"]["usage_reported"] is True
        failed_only = summarize([failed("c", "error", "connect")])["connect"]
        assert (failed_only["usage_reported"], failed_only["ttft_s"]) == (None, None)
        assert failed_only["output_tokens_estimated"] is False

    def test_prefill_keys_points_and_confidence(self) -> None:
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=0.05 + 0.0001 * p, n=2,
                       prompt_tokens=p, prompt_tokens_estimated=True)
                for i, p in enumerate((100, 1000))]
        fit = summarize(recs)["prefill"]
        assert set(fit) == {"tokens_per_s", "overhead_s", "r2", "slope_s_per_token", "points",
                            "lengths", "requests", "prompt_tokens_estimated", "reason",
                            "low_confidence", "validity", "slope_ci", "overhead_s_ci",
                            "tokens_per_s_ci", "tokens_per_s_at_least"}
        assert fit["slope_ci"] is None  # two lengths: a line, but no interval
        assert fit["points"] == [{"prompt_tokens": 100, "ttft_s": pytest.approx(0.06), "n": 1},
                                 {"prompt_tokens": 1000, "ttft_s": pytest.approx(0.15), "n": 1}]
        assert (fit["lengths"], fit["requests"], fit["low_confidence"]) == (2, 2, True)
        assert fit["prompt_tokens_estimated"] is True and fit["reason"] is None
        assert fit["slope_s_per_token"] == pytest.approx(0.0001)
        three = summarize([*recs, stream("p3", "prefill", t0=9, ttft=0.25, n=2,
                                         prompt_tokens=2000)])["prefill"]
        assert (three["low_confidence"], three["prompt_tokens_estimated"]) == (False, True)

    def test_prefill_uses_only_ok_prefill_requests_with_a_length(self) -> None:
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=0.05 + 0.0001 * p, n=2, prompt_tokens=p)
                for i, p in enumerate((100, 1000, 2000))]
        noise = [stream("b", t0=10, ttft=9.0, n=2, prompt_tokens=500),            # baseline
                 stream("x", "prefill", t0=11, ttft=9.0, n=2),                    # no length
                 stream("f", "prefill", t0=12, ttft=9.0, n=2, prompt_tokens=300,
                        outcome="incomplete")]                                    # not ok
        fit = summarize(recs + noise)["prefill"]
        assert fit["requests"] == 3 and fit["tokens_per_s"] == pytest.approx(10_000)
        assert fit["r2"] == pytest.approx(1.0)

    def test_prefill_r2_of_a_noisy_fit(self) -> None:
        """r² = 1 − SS_res/SS_tot, by hand for three points off a line."""
        ttft = {100: 0.06, 200: 0.08, 300: 0.07}
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=t, n=2, prompt_tokens=p)
                for i, (p, t) in enumerate(ttft.items())]
        x, y = np.array(list(ttft)), np.array(list(ttft.values()))
        b, a = np.polyfit(x, y, 1)
        r2 = 1 - ((y - (a + b * x)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
        fit = summarize(recs)["prefill"]
        assert fit["r2"] == pytest.approx(r2) and 0 < r2 < 1
        assert fit["slope_s_per_token"] == pytest.approx(b)

    def test_a_flat_prefill_has_no_rate(self) -> None:
        """TTFT that does not grow with the prompt: slope 0, no rate, r² undefined."""
        recs = [stream(f"p{p}", "prefill", t0=i, ttft=0.0, n=2, prompt_tokens=p)
                for i, p in enumerate((100, 1000, 2000))]
        fit = summarize(recs)["prefill"]
        assert fit["tokens_per_s"] is None and fit["r2"] is None
        assert fit["slope_s_per_token"] == 0.0
        assert "slope" in fit["reason"]

    def test_ramp_section_keys_thresholds_and_targets(self) -> None:
        recs = closed_loop("ramp", 2, 4, t_start=0) + closed_loop("ramp", 4, 4, t_start=10)
        recs.append(stream("u", "ramp", None, t0=30))
        s = summarize(recs, {"thresholds": {"stall_s": 0.3, "ttft_p90_ratio": 5}})
        ramp = s["ramp"]
        assert ramp["unlevelled_requests"] == 1
        assert ramp["baseline_client_bound"] is False and ramp["baseline_source"] is None
        assert ramp["thresholds"]["ttft_p90_ratio"] == 5
        assert [lv["stall_threshold_s"] for lv in ramp["levels"]] == [0.3, 0.3]
        assert [lv["steady_state"]["target_inflight"] for lv in ramp["levels"]] == [2, 4]

    def test_soak_section(self) -> None:
        recs = closed_loop("soak", 3, 4)
        soak = summarize(recs, {"thresholds": {"stall_s": 0.3}})["soak"]
        assert soak["concurrency"] == 3 and soak["stall_threshold_s"] == 0.3
        assert soak["steady_state"]["target_inflight"] == 3
        mixed = [*recs, stream("other", "soak", 5, t0=1)]
        assert summarize(mixed)["soak"]["concurrency"] is None

    @pytest.mark.parametrize(("t0s", "rps"), [((0.0, 0.5), 2.0), ((0.0, 2.0, 4.0), 0.5),
                                              ((1.0, 1.0), None), ((3.0,), None)])
    def test_rate_arrivals(self, t0s: tuple[float, ...], rps: float | None) -> None:
        recs = [stream(f"r{i}", "rate", None, t0=t, send_lag_s=0.0) for i, t in enumerate(t0s)]
        rate = summarize(recs, {"thresholds": {"stall_s": 0.3}})["rate"]
        assert rate["arrival_rps"] == (pytest.approx(rps) if rps else None)
        assert rate["stall_threshold_s"] == 0.3

    def test_drift_windows(self) -> None:
        """Thirds of the soak by start time; each window's own p90; last over first."""
        recs = [stream(f"s{i}", "soak", 2, t0=float(i), ttft=0.1 + 0.1 * (i // 3),
                       gap=0.01 * (1 + i // 3)) for i in range(9)]
        drift = summarize(recs)["soak"]["drift"]
        assert set(drift) == {"windows", "ttft_p90_ratio", "tpot_p90_ratio"}
        assert [(w["start_s"], w["end_s"]) for w in drift["windows"]] == [
            (0.0, pytest.approx(8 / 3)), (pytest.approx(8 / 3), pytest.approx(16 / 3)),
            (pytest.approx(16 / 3), 8.0)]
        assert [w["ttft_s"]["p90"] for w in drift["windows"]] == pytest.approx([0.1, 0.2, 0.3])
        assert [w["tpot_s"]["p90"] for w in drift["windows"]] == pytest.approx(
            [0.01, 0.02, 0.03])
        assert drift["ttft_p90_ratio"] == pytest.approx(3.0)
        assert drift["tpot_p90_ratio"] == pytest.approx(3.0)
        assert summarize(recs[:6])["soak"]["drift"] is not None  # two per window: enough
        assert summarize(recs[:5])["soak"]["drift"] is None

    def test_meta_from_plain_data(self) -> None:
        meta = SummaryMeta.from_dict({"phases": {"baseline": {"cpu_fraction": 0.4}},
                                      "levels": {"8": {"loop_lag_p99_s": 0.01}}})
        assert meta.phases["baseline"] == ClientCheck(None, 0.4, False)
        assert meta.levels[8] == ClientCheck(0.01, None, False)
        assert (meta.tool_version, meta.run_status) == (SummaryMeta().tool_version, None)
        s = summarize([stream("b")], {"phases": {"baseline": {"cpu_fraction": 0.4}}})
        assert s["client"]["cpu_fraction_max"] == 0.4


class TestJudgeRampEdges:
    def test_exactly_at_a_threshold_is_not_a_breach(self) -> None:
        """TTFT p90 exactly 2× the baseline's is at the limit, not over it."""
        out = judge_ramp([_level(1, .1, .02), _level(4, .2, .02)], BASE)
        assert (out["levels"][1]["status"], out["levels"][1]["excess"]["ttft"]) == (
            "sustained", 1.0)

    def test_exactly_half_ok_is_not_mostly_failed(self) -> None:
        half = _level(4, .1, .02, admission=0.5)
        out = judge_ramp([_level(1, .1, .02), half], BASE)
        assert out["levels"][1]["status"] == "breached"  # 50 % failed > 1 %, not 'failed'
        below = _level(4, .1, .02, admission=0.51)
        assert judge_ramp([_level(1, .1, .02), below], BASE)["levels"][1]["status"] == "failed"

    def test_failure_rate_from_outcomes_when_not_given(self) -> None:
        lv = {"concurrency": 4, "requests": 10, "outcomes": {"ok": 8, "error": 2},
              "ttft_s": {"p90": .1}, "tpot_s": {"p90": .02}}
        out = judge_ramp([_level(1, .1, .02), lv], BASE)
        assert out["levels"][1]["excess"]["admission"] == pytest.approx(0.2 / 0.01)
        no_ok = {**lv, "outcomes": {"error": 10}}
        assert judge_ramp([no_ok], BASE)["levels"][0]["status"] == "failed"

    def test_a_bound_level_says_what_it_would_have_breached(self) -> None:
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02)], BASE, client_bound=[8])
        lv8 = out["levels"][1]
        assert (lv8["status"], lv8["breaches"], lv8["would_breach"]) == (
            "client_bound", [], ["ttft"])
        assert out["levels"][0]["would_breach"] == []
        assert out["client_bound_levels"] == [8]
        assert out["note"] == "no level breached: the highest level measured is a lower bound"

    def test_the_larger_excess_goes_first_whatever_its_name(self) -> None:
        """TTFT 5× (2.5× its limit) beats TPOT 3× (1.5×) at level 8."""
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .06)], BASE)
        assert (out["first_degraded"], out["first_degraded_tied"]) == ("ttft", ["ttft", "itl"])
        assert out["first_degraded_metric"] == "ttft_s p90 / baseline"
        one = judge_ramp([_level(1, .1, .02), _level(8, .5, .02)], BASE)
        assert (one["first_degraded_tied"], one["first_degraded_tie_rule"]) == ([], None)
        admission = judge_ramp([_level(1, .1, .02), _level(8, .1, .02, .05)], BASE)
        assert admission["first_degraded_metric"] == "failure_rate"

    def test_notes_and_confirmation_by_a_failed_level(self) -> None:
        failed = _level(16, None, None)
        failed["outcomes"], failed["failure_rate"] = {"ok": 0, "error": 100}, None
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02), failed], BASE)
        assert out["breach_confirmed"] is True and out["note"] is None
        first = judge_ramp([_level(1, .5, .02)], BASE)
        assert first["note"] == "the lowest judged level (1) already breaches"
        nothing = judge_ramp([_level(1, .1, .02)], BASE, client_bound=[1])
        assert nothing["note"] == "no level could be judged"

    def test_judged_on_and_thresholds(self) -> None:
        out = judge_ramp([_level(1, .1, .02)], {"ttft_s": {"p90": .1}})
        assert out["judged_on"] == ["ttft", "admission"]
        assert judge_ramp([_level(1, .1, .02)], None)["judged_on"] == ["admission"]
        assert judge_ramp([_level(1, .1, .02)], BASE)["judged_on"] == ["ttft", "itl",
                                                                       "admission"]
        assert out["thresholds"] == {"ttft_p90_ratio": 2.0, "tpot_p90_ratio": 2.0,
                                     "admission_failure_rate": 0.01}


class TestSummaryParts:
    def test_ramp_keys(self) -> None:
        s = summarize(closed_loop("ramp", 1, 3) + closed_loop("ramp", 2, 3, t_start=10))
        assert set(s["ramp"]) == {
            "levels", "max_sustained_concurrency", "first_degraded", "first_degraded_metric",
            "first_breach_concurrency", "first_degraded_tied", "first_degraded_tie_rule",
            "breach_confirmed", "max_sustained_is_lower_bound", "first_breach_failures",
            "note", "client_bound_levels", "judged_on", "thresholds", "baseline_source",
            "baseline_client_bound", "unlevelled_requests", "tie_levels",
            "first_tie_concurrency", "max_sustained_bounded_by_tie", "breach_rule"}
        assert {"ttft_p90_ratio", "tpot_p90_ratio", "breaches", "would_breach", "failures",
                "excess", "client_bound", "status", "validity", "ttft_p90_ratio_ci",
                "tpot_p90_ratio_ci", "excess_ci", "ties", "tie_requests",
                "failure_rate_ci"} <= set(s["ramp"]["levels"][1])

    def test_client_section(self) -> None:
        meta = {"phases": {"baseline": {"cpu_fraction": 0.3, "client_bound": True,
                                        "client_bound_reasons": ["cpu"]},
                           "soak": {"loop_lag_p99_s": 0.01, "send_lag_p99_s": 0.002,
                                    "send_lag_fraction": 0.001}},
                "levels": {"16": {"cpu_fraction": 0.95}, "4": {
                    "client_bound": True, "client_bound_reasons": ["send_lag", "cpu"],
                    "send_lag_p99_s": 0.04, "send_lag_fraction": 0.08}}}
        client = summarize([stream("b")], meta)["client"]
        assert set(client) == {"loop_lag_p99_s", "cpu_fraction_max", "send_lag_p99_s",
                               "send_lag_fraction_max", "client_bound", "client_bound_reasons",
                               "client_bound_phases", "client_bound_levels", "phases",
                               "levels", "capacity_judgement_affected"}
        assert (client["cpu_fraction_max"], client["loop_lag_p99_s"]) == (0.95, 0.01)
        # the worst of every phase and level, and every reason any of them gave, once
        assert (client["send_lag_p99_s"], client["send_lag_fraction_max"]) == (0.04, 0.08)
        assert client["client_bound_reasons"] == ["cpu", "send_lag"]
        assert client["levels"]["4"]["client_bound_reasons"] == ["send_lag", "cpu"]
        assert client["levels"]["16"]["send_lag_fraction"] is None
        assert (client["client_bound_phases"], client["client_bound_levels"]) == (
            ["baseline"], [4])
        assert list(client["levels"]) == ["4", "16"]
        soak = client["phases"]["soak"]
        assert (soak["loop_lag_p99_s"], soak["cpu_fraction"], soak["client_bound"]) == (
            0.01, None, False)
        assert summarize([stream("b")])["client"]["cpu_fraction_max"] is None

    def test_network_from_records_or_meta(self) -> None:
        recs = [stream(f"rtt{i}", "rtt", None, t0=i, n=0, usage=None, counted=None,
                       ttft_s=0.02) for i in range(3)]  # no e2e: the round trip is ttft
        recs += [stream(f"b{i}", t0=10 + i, ttft=0.2) for i in range(3)]
        net = summarize(recs, {"rtt_s": 0.5})["checks"]["network"]
        assert set(net) == {"rtt_s", "rtt", "source", "baseline_ttft_p50_s", "share_of_ttft"}
        assert (net["rtt_s"], net["source"], net["rtt"]["n"]) == (pytest.approx(0.02),
                                                                  "rtt records", 3)
        assert net["baseline_ttft_p50_s"] == pytest.approx(0.2)
        meta_only = summarize(recs[3:], {"rtt_s": 0.05})["checks"]["network"]
        assert (meta_only["rtt_s"], meta_only["source"]) == (0.05, "meta")
        assert meta_only["share_of_ttft"] == pytest.approx(0.25)

    def test_usage_honesty_edges(self) -> None:
        recs = [stream("a", n=100, usage=125, counted=100),   # 25 % over: at the tolerance
                stream("b", n=100, usage=126, counted=100, t0=1),  # over it
                stream("c", n=100, usage=100, counted=0, t0=2)]    # nothing counted: skipped
        check = summarize(recs)["checks"]["usage_honesty"]
        assert set(check) == {"checked", "usage_over_counted", "disagreeing", "flagged",
                              "tolerance"}
        assert (check["checked"], check["disagreeing"], check["tolerance"]) == (2, 1, 0.25)
        assert check["usage_over_counted"]["n"] == 2
        assert check["flagged"] is True  # median 1.255
        at_edge = summarize([stream("a", n=100, usage=125, counted=100)])
        assert at_edge["checks"]["usage_honesty"]["flagged"] is False
        none = summarize([stream("a", n=10, usage=None, counted=10)])["checks"][
            "usage_honesty"]
        assert (none["checked"], none["disagreeing"], none["flagged"]) == (0, 0, None)

    def test_meta_thresholds_reach_every_check(self) -> None:
        recs = [stream("c0", "cache", t0=0, ttft=0.2, prompt_id="p"),
                stream("c1", "cache", t0=1, ttft=0.14, prompt_id="p"),
                *[stream(f"b{i}", t0=10 + i) for i in range(3)]]
        assert summarize(recs)["checks"]["cache"]["prefix_cache"] is False      # 0.7 ≥ 0.5
        tuned = summarize(recs, {"thresholds": {"cache_ttft_ratio": 0.8}})
        assert tuned["checks"]["cache"]["prefix_cache"] is True                  # 0.7 < 0.8
        assert tuned["baseline"]["steady_state"]["target_inflight"] == 1


class TestMoreEdges:
    """Edges the mutants of the judgement, the drift and the prefill interval pointed to."""

    def test_a_breached_level_would_breach_nothing(self) -> None:
        out = judge_ramp([_level(1, .1, .02), _level(8, .5, .02)], BASE)
        assert (out["levels"][1]["breaches"], out["levels"][1]["would_breach"]) == (["ttft"],
                                                                                    [])

    def test_no_ok_count_is_no_success(self) -> None:
        """Two requests, both errors, no 'ok' key and no failure_rate: the level failed."""
        lv = {"concurrency": 2, "requests": 2, "outcomes": {"error": 2}}
        assert judge_ramp([lv], BASE)["levels"][0]["status"] == "failed"

    def test_the_given_failure_rate_is_used(self) -> None:
        lv = {**_level(4, .1, .02), "failure_rate": 0.05}  # outcomes say all ok
        assert judge_ramp([_level(1, .1, .02), lv], BASE)["levels"][1]["breaches"] == [
            "admission"]

    def test_a_zero_baseline_gives_no_ratio(self) -> None:
        out = judge_ramp([_level(1, .1, .02)], {"ttft_s": {"p90": 0.0}, "tpot_s": {"p90": .02}})
        assert out["levels"][0]["ttft_p90_ratio"] is None

    def test_chunks_frame(self) -> None:
        chunks = chunks_frame([stream("a", n=3, tpc=2, t0=1.0), stream("b", n=2, t0=5.0)])
        assert list(chunks["id"]) == ["a", "a", "a", "b", "b"]
        assert list(chunks["t_s"]) == pytest.approx([1.1, 1.12, 1.14, 5.1, 5.12])
        assert list(chunks["tokens"]) == [2, 2, 2, 1, 1]

    def test_drift_windows_split_at_their_edges(self) -> None:
        """Starts 0..6 s in thirds [0, 2), [2, 4), [4, 6]: a start on an edge opens the
        later window, and the last start is in the last window."""
        recs = [stream(f"s{i}", "soak", 2, t0=float(i), ttft=0.1 * (i + 1)) for i in range(7)]
        drift = summarize(recs)["soak"]["drift"]
        assert [w["ttft_s"]["n"] for w in drift["windows"]] == [2, 2, 3]
        assert [w["ttft_s"]["p90"] for w in drift["windows"]] == pytest.approx([0.19, 0.39,
                                                                               0.68])

    def test_the_prefill_rate_and_its_interval(self) -> None:
        """Noisy points: the rate's interval is the slope's, inverted; two points give no
        interval; a slope whose interval reaches 0 gives only a lower bound on the rate."""
        def fit(ttfts: dict[int, float]) -> dict:
            recs = [stream(f"p{p}", "prefill", t0=i, ttft=t, n=2, prompt_tokens=p)
                    for i, (p, t) in enumerate(ttfts.items())]
            return summarize(recs)["prefill"]

        noisy = fit({100: 0.061, 1000: 0.148, 2000: 0.252, 3000: 0.349})
        low, high = noisy["slope_ci"]
        assert 0 < low < noisy["slope_s_per_token"] < high
        assert noisy["tokens_per_s_ci"] == pytest.approx([1 / high, 1 / low])
        assert noisy["tokens_per_s"] == pytest.approx(1 / noisy["slope_s_per_token"])
        assert fit({100: 0.06, 1000: 0.15})["tokens_per_s_ci"] is None
        flat = fit({100: 0.10, 1000: 0.13, 2000: 0.09, 3000: 0.125})
        assert flat["slope_s_per_token"] > 0 and flat["slope_ci"][0] <= 0
        assert flat["tokens_per_s"] is None and flat["tokens_per_s_ci"] is None
        assert flat["tokens_per_s_at_least"] == pytest.approx(1 / flat["slope_ci"][1])
        assert f"above {1 / flat['slope_ci'][1]:,.0f} tokens/s" in flat["reason"]

    def test_meta_run_status_and_versions_from_plain_data(self) -> None:
        meta = SummaryMeta.from_dict({"run_status": "failed", "run_error": "HTTP 404\nmore",
                                      "tool_version": "9.9", "suite_version": "7"})
        assert (meta.run_status, meta.run_error) == ("failed", "HTTP 404\nmore")
        assert (meta.tool_version, meta.suite_version) == ("9.9", "7")
        assert SummaryMeta.from_dict({}).suite_version == SummaryMeta().suite_version
        s = summarize([failed("c", "error", "connect")], {"run_status": "failed",
                                                          "run_error": "HTTP 404\nmore"})
        assert s["validity"]["reasons"][0] == "the connect gate failed: HTTP 404"


class TestPhaseStatsEdges:
    """phase_stats and its steady-state window at their edges."""

    def test_phase_stats_keys(self) -> None:
        assert set(summarize([stream("b")])["baseline"]) == {
            "admission_failure_rate", "aggregate_tokens_per_s", "aggregate_tokens_per_s_ci",
            "client_bound", "e2e_s", "failure_rate", "failure_rate_ci", "itl_s", "max_gap_s",
            "outcomes",
            "output_length", "output_tokens", "output_tokens_estimated", "reasoning_first",
            "requests", "stall_threshold_s", "stalled_streams", "stalls", "steady_state",
            "stream_tokens_per_s", "tokens_per_chunk", "top_error", "tpot_s", "ttfa_s",
            "ttft_s", "validity"}
        assert set(summarize([stream("b")])["baseline"]["steady_state"]) == {
            "start_s", "end_s", "basis", "target_inflight", "max_inflight", "duration_s"}

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


class TestTopLevel:
    def test_top_level_keys_and_what_they_say(self) -> None:
        s = summarize([stream("b", usage=None, counted=10), failed("f", "error", t0=1)],
                      {"tool_version": "1.2.3"})
        assert set(s) == {"schema", "tool", "tool_version", "suite_version", "requests",
                          "outcomes", "output_tokens_estimated", "thresholds", "connect",
                          "baseline", "prefill", "ramp", "soak", "rate", "checks", "client",
                          "validity"}
        assert (s["tool"], s["tool_version"], s["requests"]) == ("evalkit", "1.2.3", 2)
        assert (s["outcomes"]["ok"], s["outcomes"]["error"]) == (1, 1)
        assert s["output_tokens_estimated"] is True

    def test_a_bound_rate_phase_says_so(self) -> None:
        recs = [stream(f"r{i}", "rate", None, t0=i * 0.5, send_lag_s=0.0) for i in range(3)]
        assert summarize(recs, {"phases": {"rate": {"client_bound": True}}})["rate"][
            "client_bound"] is True

    def test_checks_take_the_runs_thresholds(self) -> None:
        recs = [stream(f"a{i}", n=85, usage=85 * 3 // 2, counted=85, t0=i,
                       requested_output_tokens=150) for i in range(3)]
        s = summarize(recs, {"thresholds": {"usage_disagreement": 0.6,
                                            "output_shortfall": 0.2}})
        assert s["checks"]["usage_honesty"]["flagged"] is False    # 1.5× within ±60 %
        assert s["checks"]["output_length"]["flagged"] is False    # 127 of 150: within 20 %
        default = summarize(recs)["checks"]
        assert default["usage_honesty"]["flagged"] is True
        assert default["output_length"]["flagged"] is True

    def test_a_failed_cache_request_is_no_first_ttft(self) -> None:
        recs = [failed("x", "error", "cache", t0=0.0),
                stream("c1", "cache", t0=1, ttft=0.2, prompt_id="p"),
                stream("c2", "cache", t0=2, ttft=0.05, prompt_id="p")]
        recs[0] = RequestRecord(id="x", phase="cache", level=1, outcome="error", t0_s=0.0,
                                prompt_id="p")
        out = summarize(recs)["checks"]["cache"]
        assert (out["pairs"], out["repeat_over_first"]) == (1, pytest.approx(0.25))


class TestFrames:
    """The request and chunk frames every metric is computed from."""

    def test_columns(self) -> None:
        req, chunks = frames([stream("a")])
        assert {"output_tokens", "output_tokens_estimated", "n_chunks", "chunk_tokens",
                "tpot_s", "stream_tokens_per_s", "end_s", "ok", "served",
                "admission_failure"} <= set(req.columns)
        assert set(chunks.columns) == {"rid", "id", "phase", "level", "t_s", "offset_s",
                                       "tokens", "scaled_tokens", "gap_s"}
        assert list(chunks["phase"]) == ["baseline"] * 10 and list(chunks["level"]) == [1] * 10
        assert list(chunks["offset_s"]) == pytest.approx([0.1 + 0.02 * i for i in range(10)])

    def test_output_tokens_fall_back_to_our_count_then_the_chunks(self) -> None:
        counted = stream("a", n=4, usage=None, counted=7)
        chunked = RequestRecord(id="b", phase="baseline", level=1, outcome="ok", t0_s=1.0,
                                chunks=[(0.1, 2), (0.2, 2), (0.3, 2)])
        single = RequestRecord(id="c", phase="baseline", level=1, outcome="ok", t0_s=2.0,
                               chunks=[(0.1, 3)])
        req = records_frame([counted, chunked, single])
        assert list(req["output_tokens"]) == [7, 6, 3]
        assert list(req["output_tokens_estimated"]) == [True, True, True]
        assert list(req["e2e_s"]) == pytest.approx([0.16, 0.3, 0.1])  # the last chunk's

    def test_tpot_needs_two_tokens_after_the_first_chunk_or_one(self) -> None:
        req = records_frame([stream("two", n=2, gap=0.05),
                             stream("bundle", n=1, tpc=2, t0=1.0)])
        assert req["tpot_s"].iloc[0] == pytest.approx(0.05)
        assert math.isnan(req["tpot_s"].iloc[1])  # nothing came after the first chunk

    def test_chunk_tokens_scale_to_usage(self) -> None:
        one = summarize([stream("a", n=1, tpc=1, usage=5)])["baseline"]
        assert one["tokens_per_chunk"]["p50"] == 5.0
        blank = summarize([stream(f"b{i}", "ramp", 1, t0=i, n=3, tpc=0, usage=5)
                           for i in range(2)])["ramp"]["levels"][0]
        assert blank["aggregate_tokens_per_s"] == 0.0  # nothing we could count, not NaN

    def test_a_timeout_that_streamed_was_served(self) -> None:
        late = RequestRecord(id="t", phase="baseline", level=1, outcome="timeout", t0_s=0.0,
                             chunks=[(0.2, 1)])
        assert summarize([late, stream("a", t0=1)])["baseline"]["admission_failure_rate"] == 0

    def test_records_may_be_any_iterable(self) -> None:
        assert summarize(iter([stream("a")]))["requests"] == 1

    def test_an_outcome_we_do_not_know_is_counted(self) -> None:
        weird = RequestRecord(id="w", phase="baseline", level=1, outcome="weird",  # type: ignore[arg-type]
                              t0_s=0.0)
        assert summarize([weird, stream("a", t0=1)])["outcomes"]["weird"] == 1

    def test_duplicate_ids_keep_their_chunks(self) -> None:
        chunks = chunks_frame([stream("x", n=2), stream("x", n=1, t0=1)])
        assert list(chunks["id"]) == ["x", "x", "x"]

    def test_an_overflowing_mean_is_no_number(self) -> None:
        assert percentiles([1e308, 1e308])["mean"] is None


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


def _ramp_level(c: int, ttfts: list[float], rejected: int = 0, t0: float = 0.0
                ) -> list[RequestRecord]:
    """A ramp level of len(ttfts) served streams (TPOT flat at the baseline's 20 ms) and
    `rejected` requests refused at once."""
    recs = [stream(f"r{c}-{i}", "ramp", c, t0=t0 + i * 0.01, ttft=v)
            for i, v in enumerate(ttfts)]
    return recs + [failed(f"x{c}-{i}", "rejected", "ramp", c, t0=t0, status=429)
                   for i in range(rejected)]


def _straddle(n: int = 60) -> list[float]:
    """n TTFTs whose p90 interval straddles the 0.2 s limit (2x a 0.1 s baseline): the
    order statistics bounding it are 0.1 s (rank 49 of 60) and 0.25 s (rank 59)."""
    return [0.1] * 58 + [0.25] * (n - 58)


#: how each kind of level is built: its TTFTs and rejected count
LEVEL_KINDS: dict[str, tuple[list[float], int]] = {
    "held": ([0.1 + 0.001 * i for i in range(40)], 0),        # p90 interval 0.13-0.14 s
    "slow": ([0.3 + 0.001 * i for i in range(40)], 0),        # wholly above 0.2 s
    "straddle": (_straddle(), 0),
    "few": ([0.1] * 10, 0),                                   # p90 unbounded above
    "fail2": ([0.1] * 98, 2),                                 # 2 %: exact 0.2-7 %
    "fail10": ([0.1] * 90, 10),                               # 10 %: exact 4.9-18 %
}


class TestRampTies:
    """The breach rule on intervals: a level breaches when its p90's (or its failure
    rate's) 95 % interval lies wholly above the limit; a straddling interval is a tie,
    which is neither held nor breached."""

    @pytest.mark.parametrize(("kinds", "statuses", "sustained", "breach", "first", "tie"), [
        (("held", "held", "slow"), ["sustained", "sustained", "breached"], 2, 4, "ttft",
         None),
        # a tie below the breach: the max sustained stops under it, and says so
        (("held", "straddle", "slow"), ["sustained", "tie", "breached"], 1, 4, "ttft", 2),
        # a tie below a sustained level bounds nothing (load only makes it worse)
        (("few", "held", "slow"), ["tie", "sustained", "breached"], 2, 4, "ttft", None),
        # failures: 2 % of 100 cannot be told from 1 %; 10 % of 100 can
        (("held", "fail2", "fail10"), ["sustained", "tie", "breached"], 1, 4, "admission",
         2),
        # no breach at all, a tie on top: a lower bound, and bounded by the tie
        (("held", "straddle"), ["sustained", "tie"], 1, None, None, 2),
        # nothing confirmed either way
        (("few", "straddle"), ["tie", "tie"], None, None, None, 1),
    ])
    def test_table(self, kinds: tuple[str, ...], statuses: list[str], sustained: int | None,
                   breach: int | None, first: str | None, tie: int | None) -> None:
        recs = [stream(f"b{i}", t0=float(i)) for i in range(40)]  # p90 0.1 s, TPOT 20 ms
        for i, kind in enumerate(kinds):
            ttfts, rejected = LEVEL_KINDS[kind]
            recs += _ramp_level(2 ** i, ttfts, rejected, t0=100.0 * (i + 1))
        ramp = summarize(recs)["ramp"]
        assert [lv["status"] for lv in ramp["levels"]] == statuses
        assert ramp["max_sustained_concurrency"] == sustained
        assert ramp["first_breach_concurrency"] == breach
        assert ramp["first_degraded"] == first
        assert ramp["first_tie_concurrency"] == tie
        assert ramp["max_sustained_bounded_by_tie"] is (tie is not None)
        assert ramp["tie_levels"] == [lv["concurrency"] for lv in ramp["levels"]
                                      if lv["status"] == "tie"]
        for lv in ramp["levels"]:  # what a tie says: which metric, and how many would decide
            if lv["status"] == "tie":
                assert lv["ties"] and lv["breaches"] == []
                assert lv["tie_requests"] > lv["requests"]
            else:
                assert lv["tie_requests"] is None
        if tie is not None:
            assert f"level {tie} is a tie" in ramp["note"]

    def test_each_call_agrees_with_the_interval(self) -> None:
        """The ratio intervals are the level's p90 interval over the baseline p90, and the
        call follows them: straddle 0.1-0.25 s over 0.1 s is 1.0-2.5 against 2.0."""
        recs = [stream(f"b{i}", t0=float(i)) for i in range(40)]
        recs += _ramp_level(2, _straddle(), t0=100) + _ramp_level(4, [0.1] * 10, t0=200)
        lv2, lv4 = summarize(recs)["ramp"]["levels"]
        assert lv2["ttft_p90_ratio_ci"] == pytest.approx([1.0, 2.5])
        assert lv2["excess_ci"]["ttft"] == pytest.approx([0.5, 1.25])
        assert (lv2["status"], lv2["ties"]) == ("tie", ["ttft"])
        # 10 samples bound a p90 from below only: a tie that 36 requests could close
        assert lv4["ttft_p90_ratio_ci"][1] is None
        assert (lv4["status"], lv4["ties"], lv4["tie_requests"]) == ("tie", ["ttft", "itl"],
                                                                     36)

    def test_failure_tie_needs_about_this_many(self) -> None:
        """2 % seen in 100: about 1.96² · 0.02 · 0.98 / 0.01² ≈ 753 requests would confirm
        a 2 % rate is above 1 %."""
        recs = [stream(f"b{i}", t0=float(i)) for i in range(40)]
        recs += _ramp_level(2, [0.1] * 98, 2, t0=100)
        lv = summarize(recs)["ramp"]["levels"][0]
        assert lv["failure_rate_ci"][0] < 0.01 < lv["failure_rate"]
        assert (lv["status"], lv["ties"], lv["tie_requests"]) == ("tie", ["admission"], 753)


class TestRequestsToDecide:
    """`tie_requests`, the figure a tie prints ("about N requests there would decide it"):
    if what was seen holds, an interval narrows as 1/sqrt(n); never fewer than one more
    request than the level had, and no figure where nothing could decide it."""

    @pytest.mark.parametrize(("n", "point", "ci", "limit", "expected"), [
        (40, 1.5, [1.0, 2.5], 2.0, 90),      # half-width 0.75 over a gap of 0.5: 40 · 1.5²
        (40, 2.5, [1.0, 3.0], 2.0, 160),     # above the limit: 40 · (1.0 / 0.5)²
        (100, 1.0, [0.9, 1.1], 2.0, 101),    # already narrow: one more than it had
        (100, 1.5, [1.0, None], 2.0, 101),   # an open end: the p90's own floor, 36, is less
        (10, 1.5, [None, 2.5], 2.0, 36),     # an open end: 36 samples bound a p90
        (40, 2.0, [1.0, 2.5], 2.0, None),    # on the limit: no number of requests decides
        (40, 1.5, None, 2.0, None),          # no interval: nothing to narrow
    ])
    def test_a_latency_ratio(self, n: int, point: float, ci: list[float | None] | None,
                             limit: float, expected: int | None) -> None:
        assert _requests_to_decide(n, point, ci, limit, False) == expected

    @pytest.mark.parametrize(("n", "point", "limit", "expected"), [
        (100, 0.02, 0.01, 753),    # 1.96² · 0.02 · 0.98 / 0.01²
        (1000, 0.5, 0.01, 1001),   # the formula's 4 is fewer than it had: one more
        (100, 0.02, 0.02, None),   # at the limit, or under it: no count confirms a breach
        (100, 0.01, 0.02, None),
    ])
    def test_a_failure_rate(self, n: int, point: float, limit: float,
                            expected: int | None) -> None:
        assert _requests_to_decide(n, point, [0.0, 1.0], limit, True) == expected
        assert _requests_to_decide(n, point, None, limit, True) is None


class TestJudgedOnTheGivenInterval:
    """`judge_ramp` judges a level on the intervals its dict carries (a summary re-judged,
    a merged shard): an interval ending exactly at the limit is not beyond it, and an
    open end falls back to the point."""

    def _judge(self, **kw: Any) -> dict[str, Any]:
        base = {"concurrency": 1, "requests": 40, "outcomes": {"ok": 40},
                "ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
        level = {"concurrency": 2, "requests": 100, "outcomes": {"ok": 98, "error": 2},
                 "ttft_s": {"p90": 0.1, "p90_ci": [0.09, 0.11]},
                 "tpot_s": {"p90": 0.02, "p90_ci": [0.019, 0.021]}, **kw}
        judged: dict[str, Any] = judge_ramp([base, level], base)["levels"][1]
        return judged

    @pytest.mark.parametrize(("kw", "status"), [
        ({}, "tie"),                                   # 2 of 100: exact [0.2 %, 7 %]
        ({"failure_rate_ci": [0.015, 0.03]}, "breached"),   # the given interval decides
        ({"failure_rate_ci": [0.01, 0.05]}, "tie"),    # a low end at the limit: not above
        ({"failure_rate": 0.01, "failure_rate_ci": [0.005, 0.05]}, "sustained"),  # at it
        # an interval without its low end: judged on the observed rate
        ({"failure_rate_ci": [None, 0.5]}, "breached"),
        ({"failure_rate": 0.01, "failure_rate_ci": [None, 0.5]}, "sustained"),
        ({"failure_rate": 0.0, "failure_rate_ci": [None, 0.5]}, "sustained"),
        # a rate without requests is no data, not a crash
        ({"requests": 0, "outcomes": {}, "failure_rate": 0.5}, "no_data"),
    ])
    def test_failure_rate(self, kw: dict[str, Any], status: str) -> None:
        lv = self._judge(**kw)
        assert lv["status"] == status
        assert lv["breaches"] == (["admission"] if status == "breached" else [])
        assert lv["ties"] == (["admission"] if status == "tie" else [])

    @pytest.mark.parametrize(("ci", "status"), [
        ([0.2, 0.3], "tie"),        # 2.0-3.0 × the baseline against 2.0: not wholly above
        ([0.1, 0.2], "sustained"),  # 1.0-2.0: at the limit is within it
    ])
    def test_latency_interval_ending_at_the_limit(self, ci: list[float], status: str
                                                  ) -> None:
        lv = self._judge(outcomes={"ok": 100}, ttft_s={"p90": 0.15, "p90_ci": ci})
        assert (lv["status"], lv["ties"]) == (status, ["ttft"] if status == "tie" else [])

    @pytest.mark.parametrize("key", ["ttft_s", "tpot_s"])
    def test_requests_to_decide_a_tie_count_the_samples_the_percentile_had(self, key: str
                                                                           ) -> None:
        """10 TTFT (or TPOT) samples among 100 ok requests: a p90 needs 36 samples for both
        ends, so about 36 requests would decide it, not 101."""
        base_p90 = 0.1 if key == "ttft_s" else 0.02
        lv = self._judge(outcomes={"ok": 100}, **{key: {
            "p90": 1.5 * base_p90, "n": 10, "p90_ci": [base_p90, None]}})
        assert (lv["status"], lv["ties"], lv["tie_requests"]) == (
            "tie", ["ttft" if key == "ttft_s" else "itl"], 36)

    def test_a_breached_level_names_its_ties_too_and_no_count(self) -> None:
        """Breached on failures, tied on TTFT: both are said; no count would decide it."""
        lv = self._judge(failure_rate_ci=[0.015, 0.03],
                         ttft_s={"p90": 0.25, "p90_ci": [0.2, 0.3]})
        assert (lv["status"], lv["breaches"], lv["ties"], lv["tie_requests"]) == (
            "breached", ["admission"], ["ttft"], None)

    def test_a_client_bound_level_names_no_tie(self) -> None:
        """A client-bound level supports no conclusion, a tie included."""
        level = {"concurrency": 2, "requests": 100, "outcomes": {"ok": 100},
                 "ttft_s": {"p90": 0.25, "p90_ci": [0.2, 0.3]}}
        base = {"concurrency": 1, "ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
        lv = judge_ramp([base, level], base, client_bound=[2])["levels"][1]
        assert (lv["status"], lv["ties"], lv["tie_requests"]) == ("client_bound", [], None)


def test_a_lost_worker_is_said_only_where_one_was_lost() -> None:
    """summary.json's client checks carry `lost` only for the level that lost a worker."""
    client = client_section(SummaryMeta(phases={"ramp": ClientCheck(0.001, 0.3)},
                                        levels={8: ClientCheck(lost=("worker 2 died",))}))
    assert "lost" not in client["phases"]["ramp"]
    assert list(client["levels"]["8"]["lost"]) == ["worker 2 died"]


class TestTieInTheRampNote:
    """What the ramp's note says of a tie: the count that would decide it when there is
    one, and whether any level held; a breach is confirmed only by the next judged level
    (a tie after it confirms nothing)."""

    @staticmethod
    def _lv(c: int, p90: float, ci: list[float | None], n: int | None = None
            ) -> dict[str, Any]:
        ttft: dict[str, Any] = {"p90": p90, "p90_ci": ci, **({"n": n} if n else {})}
        return {"concurrency": c, "requests": 100, "outcomes": {"ok": 100}, "ttft_s": ttft,
                "tpot_s": {"p90": 0.02, "p90_ci": [0.019, 0.021]}}

    def _ramp(self, *levels: dict[str, Any]) -> dict[str, Any]:
        base = {"concurrency": 1, "ttft_s": {"p90": 0.1}, "tpot_s": {"p90": 0.02}}
        return judge_ramp(list(levels), base)

    def test_held_then_a_tie_with_a_count(self) -> None:
        ramp = self._ramp(self._lv(2, 0.1, [0.09, 0.11]), self._lv(4, 0.15, [0.1, None], 10),
                          self._lv(8, 0.5, [0.4, 0.6]))
        assert ramp["note"].startswith("level 4 is a tie (ttft")
        assert ramp["note"].endswith("; about 36 requests there would decide it")

    def test_a_tie_on_the_limit_has_no_count_to_give(self) -> None:
        """A p90 exactly at the limit: no number of requests decides it, and the note
        says no count (never 'None')."""
        ramp = self._ramp(self._lv(2, 0.1, [0.09, 0.11]), self._lv(4, 0.2, [0.15, 0.25]),
                          self._lv(8, 0.5, [0.4, 0.6]))
        assert ramp["levels"][1]["tie_requests"] is None
        assert ramp["note"].endswith("so the max sustained level may be higher")

    @pytest.mark.parametrize(("tie", "more"), [
        ((0.15, [0.1, None], 10), "; about 36 requests there would decide it"),
        ((0.2, [0.15, 0.25], None), ""),
    ])
    def test_no_level_held_and_a_tie(self, tie: tuple[float, list[float | None],
                                                       int | None], more: str) -> None:
        ramp = self._ramp(self._lv(4, *tie), self._lv(8, 0.5, [0.4, 0.6]))
        assert ramp["note"] == ("no level was confirmed sustained: level 4 is a tie (its 95 "
                                f"% interval straddles the limit on ttft){more}")
        assert ramp["max_sustained_concurrency"] is None

    def test_a_tie_after_the_breach_confirms_nothing(self) -> None:
        ramp = self._ramp(self._lv(2, 0.5, [0.4, 0.6]), self._lv(4, 0.15, [0.1, None], 10),
                          self._lv(8, 0.5, [0.4, 0.6]))
        assert [lv["status"] for lv in ramp["levels"]] == ["breached", "tie", "breached"]
        assert ramp["breach_confirmed"] is None


def test_meta_from_plain_data_keeps_lost_workers_and_reasons() -> None:
    """A Ray run's meta after a JSON round trip: the lost worker and the reasons stay."""
    meta = SummaryMeta.from_dict({"levels": {"8": {
        "client_bound": True, "lost": ["worker 2 died"], "client_bound_reasons": ["cpu"]}}})
    assert meta.levels[8] == ClientCheck(client_bound=True, lost=("worker 2 died",),
                                         client_bound_reasons=("cpu",))


def test_a_lost_worker_degrades_its_phase_its_level_and_the_run() -> None:
    """Scale-out: a worker lost during the baseline and another at level 2 each degrade
    where they were lost, and the run names both (its ramp level is not a phase)."""
    recs = [stream(f"b{i}", t0=float(i)) for i in range(10)] + closed_loop("ramp", 2, 5,
                                                                              t_start=20)
    v = summarize(recs, SummaryMeta(phases={"baseline": ClientCheck(lost=("w1 died",))},
                                    levels={2: ClientCheck(lost=("w2 died",))}))["validity"]
    assert (v["phases"]["baseline"]["status"], v["phases"]["baseline"]["reasons"]) == (
        "degraded", ["a client worker was lost: w1 died"])
    assert (v["levels"]["2"]["status"], v["levels"]["2"]["reasons"]) == (
        "degraded", ["a client worker was lost: w2 died"])
    assert v["status"] == "degraded"
    assert "a client worker was lost: w2 died" in v["reasons"]
    assert v["phases"]["ramp"]["status"] == "valid"


def test_the_top_error_groups_messages_by_their_first_120_characters() -> None:
    """Errors that differ only past 120 characters (a request id at the end) are one
    error: three of them outnumber two of another."""
    head = "upstream overloaded, retry later " * 4  # 132 characters
    recs = [RequestRecord(id=f"a{i}", phase="baseline", level=1, outcome="error", t0_s=0.0,
                          error=f"{head}req-{i}") for i in range(3)]
    recs += [RequestRecord(id=f"b{i}", phase="baseline", level=1, outcome="error", t0_s=0.0,
                           error="rate limited") for i in range(2)]
    assert top_error(records_frame(recs)) == f"{head[:120]} (x3)"


@pytest.mark.parametrize(("requested", "checked", "flagged"), [(1, 1, False), (None, 0, None)])
def test_output_length_checks_every_requested_length(requested: int | None, checked: int,
                                                     flagged: bool | None) -> None:
    """A request for one token is checked like any other; with no length requested there
    is nothing to flag (None, not a clean False)."""
    out = summarize([stream("a", n=1, requested_output_tokens=requested)])["baseline"]
    assert (out["output_length"]["checked"], out["output_length"]["flagged"]) == (
        checked, flagged)


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


def test_without_usage_the_output_is_our_count_and_said_estimated() -> None:
    """No usage from the server: the output is our count of the text (12), not the chunks'
    token sum (10), and it is flagged as estimated even when the record did not say so."""
    b = summarize([stream("a", n=10, usage=None, counted=12, output_tokens=None,
                          output_tokens_estimated=False)])["baseline"]
    assert (b["output_tokens"]["p50"], b["output_tokens_estimated"]) == (12, True)


def test_a_stream_whose_first_chunk_carries_every_token_has_no_tpot() -> None:
    """Two tokens, both in the first chunk, the stream closing 0.2 s later: no token came
    after the first chunk, so there is no TPOT and no per-stream rate (not 0 tok/s)."""
    b = summarize([stream("a", n=1, tpc=2, usage=2, e2e_s=0.3)])["baseline"]
    assert (b["tpot_s"]["n"], b["stream_tokens_per_s"]["n"]) == (0, 0)


def _shaped(rid: str, sizes: list[int], phase: str = "baseline",
            outcome: str = "ok") -> RequestRecord:
    """A request whose content came in chunks of these token counts."""
    chunks = [(0.1 + 0.02 * i, k) for i, k in enumerate(sizes)]
    total = sum(sizes)
    return RequestRecord(id=rid, phase=phase, level=1, outcome=outcome,  # type: ignore[arg-type]
                         t0_s=float(len(rid)), chunks=chunks, ttft_s=chunks[0][0],
                         e2e_s=chunks[-1][0], output_tokens=total,
                         output_tokens_estimated=False, usage_completion_tokens=total,
                         counted_output_tokens=total,
                         finish_reason="length" if outcome == "ok" else None)


class TestStreamingCheck:
    """Did the endpoint stream? An answer sent whole has a TTFT and no rhythm."""

    @staticmethod
    def _run(streamed: int, whole: list[list[int]]) -> list[RequestRecord]:
        recs = [_shaped(f"s{i}", [1] * 8) for i in range(streamed)]
        recs += [_shaped(f"w{i}", sizes) for i, sizes in enumerate(whole)]
        # not judged: 3 tokens are too few, prefill asks for 2, a cut stream is no answer
        return [*recs, _shaped("short", [3]), _shaped("pre", [8], phase="prefill"),
                _shaped("cut", [8], outcome="incomplete")]

    def test_counts_the_answers_that_came_in_one_chunk(self) -> None:
        """8 tokens in one chunk, and 4 in one (4 is enough to judge), are unstreamed;
        2 of 4 in the largest chunk is half, not most."""
        recs = self._run(17, [[8], [4], [2, 1, 1]])
        assert streaming_check(*frames(recs)) == {
            "checked": 20, "one_chunk": 2, "one_chunk_fraction": 0.1, "flagged": True,
            "tolerance": 0.05}

    def test_the_tolerance_itself_is_not_over_it(self) -> None:
        recs = self._run(18, [[8], [2, 1, 1]])
        check = streaming_check(*frames(recs))
        assert (check["one_chunk_fraction"], check["flagged"]) == (0.05, False)

    def test_nothing_to_judge_says_so(self) -> None:
        assert streaming_check(*frames([_shaped("short", [3])])) == {
            "checked": 0, "one_chunk": 0, "one_chunk_fraction": None, "flagged": None,
            "tolerance": 0.05}

    def test_an_endpoint_that_did_not_stream_degrades_the_run(self) -> None:
        """Through summarize: the check in `checks`, the reason in the run's validity, and
        the run's own threshold (unstreamed_share) is the one applied."""
        recs = self._run(17, [[8], [4], [2, 1, 1]])
        s = summarize(recs, {"run_status": "complete"})
        assert s["checks"]["streaming"]["one_chunk"] == 2
        assert s["validity"]["status"] == "degraded"
        assert "the endpoint did not stream: 2 of 20 requests came with most of their " \
               "output in one chunk, so TPOT and stream rates describe no stream" \
               in s["validity"]["reasons"]
        lenient = summarize(recs, {"run_status": "complete",
                                   "thresholds": {"unstreamed_share": 0.2}})
        assert lenient["checks"]["streaming"]["flagged"] is False
        assert not any("did not stream" in r for r in lenient["validity"]["reasons"])
