"""Every figure carries its uncertainty: intervals checked against known distributions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalkit.analysis.intervals import (
    ols,
    proportion_interval,
    quantile_interval,
    quantile_ranks,
    quantile_width,
    rate_interval,
)
from evalkit.analysis.stats import percentiles
from evalkit.analysis.summarize import summarize
from evalkit.probe.plan.claims import size_levels
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.records import RequestRecord
from tests.review.helpers import typed


class TestQuantileInterval:
    @pytest.mark.parametrize(("n", "q"), [(12, 0.5), (60, 0.9), (400, 0.99), (30_000, 0.9)])
    def test_coverage_by_simulation(self, n: int, q: float) -> None:
        """Drawn from a known distribution, the 95 % interval covers the true percentile
        about 95 % of the time (at least 95 % by construction: the order statistics'
        coverage is exact, rounded up to whole ranks)."""
        rng = np.random.default_rng(7)
        truth = -math.log(1 - q)  # the q-quantile of Exp(1)
        trials = 400 if n > 1000 else 2000
        hits = 0
        for _ in range(trials):
            lo, hi = quantile_interval(np.sort(rng.exponential(size=n)), q)
            hits += (lo is None or lo <= truth) and (hi is None or truth <= hi)
        assert 0.93 <= hits / trials <= 0.995, hits / trials

    def test_too_few_samples_leave_an_end_open(self) -> None:
        """Under 36 samples a p90 has no upper bound: the interval says so, not a number."""
        assert quantile_ranks(35, 0.9)[1] is None
        assert quantile_ranks(36, 0.9) == (29, 36)
        assert quantile_ranks(5, 0.5) == (None, None)
        p = percentiles(np.arange(1.0, 17.0))  # n = 16
        assert p["p90_ci"][1] is None and p["p50_ci"] == [4.0, 13.0]  # the 4th and 13th

    def test_interval_brackets_the_estimate(self) -> None:
        """Whatever the data, low ≤ estimate ≤ high for every percentile given."""
        rng = np.random.default_rng(3)
        for n in (7, 50, 500):
            p = percentiles(rng.lognormal(size=n))
            for k in ("p50", "p90", "p99"):
                lo, hi = p[f"{k}_ci"]
                assert (lo is None or lo <= p[k]) and (hi is None or p[k] <= hi)


class TestFits:
    def test_ols_interval_covers_the_true_slope(self) -> None:
        """A known line with noise: the slope's interval holds the truth ~95 % of runs."""
        rng = np.random.default_rng(11)
        x = np.array([64.0, 512, 1024, 2048, 4096])
        hits = 0
        for _ in range(1000):
            y = 0.1 + 2e-5 * x + rng.normal(scale=0.004, size=x.size)
            lo, hi = ols(x, y)["slope_ci"]
            hits += lo <= 2e-5 <= hi
        assert 0.93 <= hits / 1000 <= 0.98

    @staticmethod
    def _flat(seed: int) -> list[RequestRecord]:
        rng = np.random.default_rng(seed)
        recs = []
        for i, n in enumerate((64, 512, 1024, 2048) * 3):
            ttft = 0.05 + rng.normal(scale=0.002)
            recs.append(RequestRecord(
                id=f"p{i}", phase="prefill", level=1, outcome="ok", t0_s=float(i),
                prompt_tokens=n, ttft_s=ttft, e2e_s=ttft + 0.01,
                chunks=[(ttft, 1), (ttft + 0.01, 1)], http_status=200, finish_reason="length",
                output_tokens=2))
        return recs

    def test_a_flat_prefill_is_a_lower_bound_never_a_rate(self) -> None:
        """TTFT that does not grow with prompt length (noise only): no rate is printed,
        only 'above X tokens/s', and Q3 cannot lean on it."""
        fit = summarize(self._flat(1))["prefill"]
        assert fit["tokens_per_s"] is None and fit["tokens_per_s_ci"] is None
        assert fit["slope_ci"][0] <= 0 <= fit["slope_ci"][1]
        assert fit["tokens_per_s_at_least"] > 0
        assert fit["reason"].startswith("no measurable prefill cost: above")
        # whatever the noise draws, a flat endpoint never gets a rate
        assert all(summarize(self._flat(seed))["prefill"]["tokens_per_s"] is None
                   for seed in range(20))

    def test_rate_interval_covers_a_steady_rate(self) -> None:
        """Tokens arriving at 500/s on average: the batch-means interval covers 500."""
        rng = np.random.default_rng(2)
        hits = 0
        for _ in range(300):
            times = np.sort(rng.uniform(0, 10, size=5000))
            lo, hi = rate_interval(times, np.ones(times.size), 0.0, 10.0)
            hits += lo <= 500 <= hi
        assert 0.9 <= hits / 300 <= 1.0


def test_q3_never_counts_a_lower_bound_as_confirming_a_rate() -> None:
    """A prefill claim against 'above X tokens/s' is unverified, even when X exceeds it."""
    from evalkit.questionnaire.load import parse_questionnaire
    from evalkit.review.reconcile import reconcile
    from evalkit.review.rules import RunTarget

    q = parse_questionnaire(b"schema: evalkit.questionnaire/1\nmodel: m\nendpoint: http://e/v1\n"
                            b"Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
                            b"prefill_tokens_per_s: 4000}\n", "q.yaml")
    summary = {"validity": {"status": "valid"},
               "baseline": {"outcomes": {"ok": 6}, "requests": 6},
               "prefill": {"tokens_per_s": None, "tokens_per_s_at_least": 90000.0}}
    j = reconcile(q, typed(summary), None, RunTarget("m", "http://e/v1")).judgements["Q3"]
    assert j.status == "unverified"
    assert "no measurable prefill cost (above 90,000 tokens/s" in j.reason


@pytest.mark.parametrize(("p90", "ci", "status", "words"), [
    (0.33, [0.31, 0.36], "ok", "holds"),                              # all of it ≤ 375 ms
    (0.50, [0.45, 0.60], "unreconciled", "1.7× slower"),              # all of it > 375 ms
    (0.33, [0.25, 0.45], "unverified", "interval 250 ms–450 ms straddles the limit 375 ms"),
    (0.33, [0.20, None], "unverified", "at least 36 requests there would decide it"),
    (0.33, None, "ok", "holds"),                                      # no interval: the point
])
def test_a_claim_is_judged_on_the_interval(p90: float, ci: list[float | None] | None,
                                           status: str, words: str) -> None:
    """TTFT p90 claimed 300 ms at 16 streams (limit 375 ms with ttft_rel 25 %): inside the
    interval is ok, outside unreconciled, straddling unverified with the n that decides."""
    from evalkit.questionnaire.load import parse_questionnaire
    from evalkit.review.reconcile import reconcile
    from evalkit.review.rules import RunTarget

    q = parse_questionnaire(b"schema: evalkit.questionnaire/1\nmodel: m\nendpoint: http://e/v1\n"
                            b"Q1: {ttft_p90_ms: 300, at_concurrency: 16, source: production}\n",
                            "q.yaml")
    level = {"concurrency": 16, "requests": 16, "outcomes": {"ok": 16},
             "ttft_s": {"p90": p90, "n": 16, **({"p90_ci": ci} if ci is not None else {})}}
    summary = {"validity": {"status": "valid"}, "ramp": {"levels": [level]}}
    j = reconcile(q, typed(summary), None, RunTarget("m", "http://e/v1")).judgements["Q1"]
    assert j.status == status, j.reason
    assert words in j.reason
    if status == "unverified":
        assert "n = 16" in j.reason


class TestProportionInterval:
    @pytest.mark.parametrize(("k", "n", "low", "high"), [
        (0, 20, 0.0, 0.1684), (2, 100, 0.00243, 0.07038), (20, 20, 0.8316, 1.0),
        (1, 1, 0.025, 1.0)])
    def test_exact_values(self, k: int, n: int, low: float, high: float) -> None:
        """Clopper-Pearson ends as published tables give them (0 of 20: 16.8 %)."""
        lo, hi = proportion_interval(k, n) or [None, None]
        assert lo == pytest.approx(low, abs=2e-4) and hi == pytest.approx(high, abs=2e-4)

    def test_coverage_by_simulation(self) -> None:
        """A 3 % failure rate, 150 requests: covered at least 95 % of the time (exact
        intervals are conservative)."""
        rng = np.random.default_rng(5)
        hits = 0
        for _ in range(2000):
            lo, hi = proportion_interval(int(rng.binomial(150, 0.03)), 150) or [0, 0]
            hits += lo <= 0.03 <= hi
        assert 0.95 <= hits / 2000 <= 0.995

    def test_nothing_sent_is_no_interval(self) -> None:
        assert proportion_interval(0, 0) is None


def _call(lo: float | None, hi: float | None, limit: float) -> str:
    """The breach rule, restated: wholly above, wholly at or below, or a straddle."""
    if lo is not None and lo > limit:
        return "breach"
    if hi is not None and hi <= limit:
        return "clear"
    return "tie"


@pytest.mark.slow
def test_a_real_ramp_reports_what_its_intervals_say(reference: Any, tmp_path: Path) -> None:
    """A quick ramp over loopback HTTP against the reference endpoint (its GPU profile
    slows per-token latency past 2x at 8 streams), each level sized for a p90 known to
    20 points (36 requests: both ends bounded): every level's status is what its own
    intervals say against the limits, and the width achieved is the width planned."""
    srv = reference("gpu")
    levels = [1, 4, 8]
    floors = size_levels(levels, 0.20)
    res = run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect", "baseline", "ramp"),
                                overrides={"output_tokens": 16, "baseline": {"requests": 6},
                                           "connect": {"rtt_samples": 3},
                                           "ramp": {"levels": levels, "level_duration_s": 0.5,
                                                    "min_requests": floors}}),
                    tmp_path / "run")
    assert res.summary is not None
    ramp = res.summary["ramp"]
    base = res.summary["baseline"]
    judged = [lv for lv in ramp["levels"] if not lv["client_bound"]]
    assert judged, "the client was the bottleneck at every level: too busy a machine"
    for lv in judged:
        calls = {}
        for key, metric in (("ttft_s", "ttft"), ("tpot_s", "itl")):
            n = lv[key]["n"]
            assert n >= floors[lv["concurrency"]] and quantile_width(n, 0.9) <= 0.20
            lo, hi = lv[key]["p90_ci"]
            calls[metric] = _call(lo / base[key]["p90"], hi / base[key]["p90"], 2.0)
        fl = lv["failure_rate_ci"][0]
        calls["admission"] = ("breach" if fl > 0.01 else
                              "tie" if lv["failure_rate"] > 0.01 else "clear")
        want = ("breached" if "breach" in calls.values() else
                "tie" if "tie" in calls.values() else "sustained")
        assert lv["status"] == want, (lv["concurrency"], calls, lv["status"])
        assert lv["ties"] == ([m for m in ("ttft", "itl", "admission") if calls[m] == "tie"]
                              if want != "sustained" else [])
    # the GPU profile's per-token latency is well past 2x at 8 streams: a confirmed breach
    # (unless a busy machine made the client the bottleneck there: then no judgement)
    top = ramp["levels"][-1]
    if not top["client_bound"]:
        assert top["status"] == "breached" and ramp["first_degraded"] == "itl", top["ties"]
    held = [lv["concurrency"] for lv in ramp["levels"] if lv["status"] == "sustained"]
    assert ramp["max_sustained_concurrency"] == (max(held) if held else None)
