"""Q1–Q3 (`evalkit.review.rates`): time to first token, throughput, and prefill priced apart
from decode, judged on intervals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalkit.analysis.intervals import samples_for
from evalkit.analysis.thresholds import Tolerances, tolerances_from_dict
from evalkit.review.measured import PrefillDecodeMeasured, TtftMeasured
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import Judgement
from tests.review.helpers import SUMMARY, _at, _tied, judge, q

Q3_PRICES = "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "


def _with_rates(prefill_ci: list[float | None] | None, decode_p50_ci: list[float | None] | None,
                lengths: int = 5) -> dict[str, Any]:
    """SUMMARY with intervals on the measured rates: prefill 4,900 tokens/s, decode per
    stream (the baseline's p50) 1/0.0105 = 95.2 tokens/s."""
    s = json.loads(json.dumps(SUMMARY))
    s["prefill"] |= {"tokens_per_s_ci": prefill_ci, "lengths": lengths}
    s["baseline"]["stream_tokens_per_s"]["p50_ci"] = decode_p50_ci
    return s


class TestQ3OnIntervals:
    """Q3's claimed rates judged on the measured rates' 95 % intervals (rate_rel 50 %: a
    claim holds while the measurement reaches half of it)."""

    @pytest.mark.parametrize(("claim", "prefill_ci", "status", "says"), [
        # the whole interval (4,000-6,000) above half the claim (3,000): holds
        ("prefill_tokens_per_s: 6000", [4000, 6000], "ok", "holds."),
        # the whole interval below half of 20,000: short, whatever the interval
        ("prefill_tokens_per_s: 20000", [4000, 6000], "unreconciled", "prefill 4.1× short"),
        # 9,000 claimed, 4,500 the edge: the interval 3,000-8,000 straddles it
        ("prefill_tokens_per_s: 9000", [3000, 8000], "unverified",
         "the prefill rate's 95 % interval 3,000 tokens/s–8,000 tokens/s (a fit over 5 "
         "prompt lengths) straddles"),
        # the point (4,900) would hold 9,000; its interval does not, so not verified
        ("prefill_tokens_per_s: 9000", [4400, 5400], "unverified", "straddles"),
        # fewer than 3 lengths: no interval at all, and the rate decides nothing
        ("prefill_tokens_per_s: 6000", None, "unverified", "too few for an interval"),
    ])
    def test_prefill(self, claim: str, prefill_ci: list[float] | None, status: str,
                     says: str) -> None:
        summary = _with_rates(prefill_ci, None, lengths=5 if prefill_ci else 2)
        j = judge(Q3_PRICES + claim + "}\n", summary).judgements["Q3"]
        assert j.status == status and says in j.reason, j.reason
        assert j.measured is not None
        assert j.measured.prefill_tokens_per_s_ci == (tuple(prefill_ci) if prefill_ci else None)

    @pytest.mark.parametrize(("claim", "ci", "status", "says"), [
        (150, [90.0, 100.0], "ok", "holds."),                    # 75 ≤ 90
        (250, [90.0, 100.0], "unreconciled", "decode per stream 2.6× short"),  # 100 < 125
        (190, [90.0, 100.0], "unverified",
         "decode per stream (the baseline's p50): not enough evidence: n = 200"),  # 95 in
    ])
    def test_decode(self, claim: int, ci: list[float], status: str, says: str) -> None:
        j = judge(Q3_PRICES + f"decode_tokens_per_s_per_stream: {claim}}}\n",
                  _with_rates([4000, 6000], ci)).judgements["Q3"]
        assert j.status == status and says in j.reason, j.reason
        if status == "unverified":
            # the request count that would decide it, from the interval's half-width
            assert "requests there would decide it" in j.reason

    def test_the_interval_is_shown_beside_the_rate(self) -> None:
        j = judge(Q3_PRICES + "prefill_tokens_per_s: 6000}\n",
                  _with_rates([4000, 6000], None)).judgements["Q3"]
        assert ("prefill claimed 6,000 tokens/s vs measured 4,900 tokens/s (95 % interval "
                "4,000 tokens/s–6,000 tokens/s)") in j.reason


class TestUndecidedInWords:
    @pytest.mark.parametrize(("lengths", "said"), [(1, "rests on 1 prompt length, too few"),
                                                   (2, "rests on 2 prompt lengths, too few")])
    def test_a_fit_without_an_interval_counts_its_prompt_lengths(
            self, lengths: int, said: str) -> None:
        j = judge(Q3_PRICES + "prefill_tokens_per_s: 9000}\n",
                  _with_rates(None, None, lengths=lengths)).judgements["Q3"]
        assert j.status == "unverified" and said in j.reason, j.reason

    @pytest.mark.parametrize("ci, end", [([4000, None], "from 4,000 tokens/s up, no upper end"),
                                         ([None, 6000], "up to 6,000 tokens/s, no lower end")])
    def test_an_open_interval_over_enough_lengths_is_said_open(
            self, ci: list[float | None], end: str) -> None:
        """Five prompt lengths are enough for an interval: an open end is said as one, not
        as too few lengths."""
        j = judge(Q3_PRICES + "prefill_tokens_per_s: 9000}\n",
                  _with_rates(ci, None, lengths=5)).judgements["Q3"]
        assert j.status == "unverified" and "too few" not in j.reason
        assert f"95 % interval is open ({end}; a fit over 5 prompt lengths)" in j.reason

    @pytest.mark.parametrize("ci", [[4000, None], [None, 6000]])
    def test_an_interval_open_at_one_end_decides_nothing(self, ci: list[float | None]) -> None:
        """Half an interval is no interval: the reason asks for more prompt lengths."""
        j = judge(Q3_PRICES + "prefill_tokens_per_s: 9000}\n",
                  _with_rates(ci, None, lengths=2)).judgements["Q3"]
        assert j.status == "unverified" and "straddles" not in j.reason
        assert "rests on 2 prompt lengths, too few for an interval" in j.reason
        shown = "–".join("unbounded" if v is None else f"{v:,} tokens/s" for v in ci)
        assert f"vs measured 4,900 tokens/s (95 % interval {shown})" in j.reason

    def test_a_tie_without_a_request_estimate_asks_for_more_requests(self) -> None:
        s = _tied(16)
        for lv in s["ramp"]["levels"]:
            lv.pop("tie_requests", None)
        j = judge("Q4: {max_concurrent_streams_per_node: 30, first_degrades: itl, "
                  "source: production}\n", s).judgements["Q4"]
        assert j.status == "unverified"
        assert "level 16 is a tie on TTFT" in j.reason
        assert "n = 200): more requests at 16 streams would decide it (re-run with --levels 16" \
            in j.reason


def _q1(text: str, summary: Any = SUMMARY) -> Judgement:
    return judge("Q1: {" + text + ", source: production}\n", summary).judgements["Q1"]


class TestQ1Details:
    """At 16 streams the run measured TTFT p50 230 ms and p90 330 ms; ttft_rel is 25 %."""

    @pytest.mark.parametrize(("claims", "status", "shown"), [
        # both hold: the one nearer its limit is shown (p90 330/300 = 1.1 > p50 230/300)
        ("ttft_p50_ms: 300, ttft_p90_ms: 300", "ok", "vs measured p90 330 ms at 16: holds."),
        # both hold: p50 230/200 = 1.15 > p90 330/400
        ("ttft_p50_ms: 200, ttft_p90_ms: 400", "ok", "vs measured p50 230 ms at 16: holds."),
    ])
    def test_the_figure_shown_is_the_one_nearest_its_limit(
            self, claims: str, status: str, shown: str) -> None:
        j = _q1(claims + ", at_concurrency: 16")
        assert j.status == status and j.reason.endswith(shown), j.reason

    @pytest.mark.parametrize(("claims", "status", "shown"), [
        # p50 fails (230 > 225) though p90's ratio is larger (330/250) and undecided
        ("ttft_p50_ms: 180, ttft_p90_ms: 250", "unreconciled",
         "vs measured p50 230 ms at 16: 1.3× slower."),
        # p90 is undecided (interval 300-400 ms around 375 ms); p50 holds with a larger ratio
        ("ttft_p50_ms: 200, ttft_p90_ms: 300", "unverified", "vs measured p90 330 ms at 16: "
         "not enough evidence"),
    ])
    def test_a_failing_figure_comes_first_then_an_undecided_one(
            self, claims: str, status: str, shown: str) -> None:
        j = _q1(claims + ", at_concurrency: 16", _at(16, ttft_s={"p90_ci": [0.3, 0.4]}))
        assert j.status == status and shown in j.reason, j.reason

    def test_just_inside_and_outside_with_the_ratio_shown(self) -> None:
        """330 ms against 264.1 ms × 1.25 = 330.1 ms holds; against 244.5 ms it is 1.35×,
        shown as 1.3×."""
        assert _q1("ttft_p90_ms: 264.1, at_concurrency: 16").status == "ok"
        j = _q1("ttft_p90_ms: 244.5, at_concurrency: 16")
        assert j.status == "unreconciled" and j.reason.endswith("at 16: 1.3× slower.")

    def test_what_was_claimed_and_measured_is_kept(self) -> None:
        j = _q1("ttft_p50_ms: 300, ttft_p90_ms: 300, at_concurrency: 16",
                _at(16, ttft_s={"p90": 0.33046}))
        assert j.claimed.to_dict() == {"source": "production", "ttft_p50_ms": 300,
                                       "ttft_p90_ms": 300, "at_concurrency": 16}
        assert j.measured == TtftMeasured(16, 230.0, 330.5)

    def test_two_streams_are_load(self) -> None:
        j = _q1("ttft_p90_ms: 300, at_concurrency: 2")
        assert j.status == "ok" and j.reason.endswith("vs measured p90 190 ms at 2: holds.")

    def test_a_claim_without_its_concurrency_is_not_under_load(self) -> None:
        assert _q1("ttft_p90_ms: 300").reason == (
            "TTFT p90 300 ms is given with no concurrency stated, not under load.")

    def test_words_only_leave_nothing_to_check(self) -> None:
        j = judge("Q1: {notes: fast}\n").judgements["Q1"]
        assert j.reason.endswith("so nothing can be checked.")


def test_q2_keeps_the_claim_and_names_its_tolerance() -> None:
    j = judge("Q2: {output_tokens_per_s_per_gpu: 80, at_concurrency: 16, gpus: 1, "
              "source: production}\n", SUMMARY,
              tolerances_from_dict({"throughput_rel": 0.9})).judgements["Q2"]
    assert j.tolerance == "one-sided: measured ≥ claimed × 0.1 (throughput_rel 90%)"
    assert j.claimed.to_dict() == {"source": "production", "output_tokens_per_s_per_gpu": 80,
                         "at_concurrency": 16, "gpus": 1}


Q2_DIST = "distribution: {p50: 300, p90: 400, p99: 500}"


def _q2(text: str, summary: Any = SUMMARY, tol: Tolerances | None = None) -> Judgement:
    return judge("Q2: {" + text + ", source: production}\n", summary, tol).judgements["Q2"]


class TestQ2Details:
    """At 16 streams the run measured 55.6 tokens/s per stream (p50) and 844 tokens/s in
    aggregate; throughput_rel is 25 % (a claim holds while measured ≥ 0.75 × claimed)."""

    @pytest.mark.parametrize(("gpus", "v", "said"), [(1, 400, "400 tokens/s per GPU × 1 GPU at"),
                                                      (2, 200, "200 tokens/s per GPU × 2 GPUs at")])
    def test_the_gpus_are_counted_in_words(self, gpus: int, v: int, said: str) -> None:
        j = _q2(f"output_tokens_per_s_per_gpu: {v}, at_concurrency: 16, gpus: {gpus}, {Q2_DIST}")
        assert j.status == "ok" and said in j.reason

    def test_the_distribution_is_quoted_as_given(self) -> None:
        review = reconcile(q(f"Q2: {{output_tokens_per_s_per_gpu: 400, at_concurrency: 16, "
                             f"gpus: 1, source: production, {Q2_DIST}}}\n"), None)
        assert "sits within its own production distribution (300/400/500); not verified" \
            in review.judgements["Q2"].reason
        j = _q2("output_tokens_per_s_per_gpu: 400, at_concurrency: 16, gpus: 1, "
                "distribution: {p50: 500, p90: 400}")
        assert j.reason.startswith("The production distribution 500/400 tokens/s per GPU is not "
                                   "in increasing order")

    def test_the_margin_over_the_distribution_names_throughput_rel(self) -> None:
        j = _q2(f"output_tokens_per_s_per_gpu: 990, at_concurrency: 16, gpus: 1, {Q2_DIST}",
                tol=tolerances_from_dict({"throughput_rel": 0.9}))
        assert j.reason.endswith("own production distribution (500) by more than 90% "
                                 "(throughput_rel).")

    def test_a_mostly_failed_level_does_not_hold(self) -> None:
        j = _q2(f"output_tokens_per_s_per_gpu: 400, at_concurrency: 16, gpus: 1, {Q2_DIST}",
                _at(16, outcomes={"ok": 50, "error": 150}))
        assert j.status == "unreconciled"
        assert j.reason.endswith("vs a level where most requests failed at 16: it does not "
                                 "hold.")

    def test_the_aggregate_is_judged_only_at_the_concurrency_claimed(self) -> None:
        """1,200 tokens/s at 20 streams: not set against 16 streams' 844 tokens/s aggregate;
        60 tokens/s per stream holds at 16 and fails at 32, so 20 is not decided, and the
        command that would decide it is named."""
        j = _q2(f"output_tokens_per_s_per_gpu: 300, at_concurrency: 20, gpus: 4, {Q2_DIST}")
        assert j.status == "unverified"
        assert j.reason.endswith(
            "is consistent; not verified: the run measured no level that decides 20 streams; "
            "re-run `evalkit probe --base-url https://api.vendor.example/v1 --model m-7b "
            "--questionnaire t.yaml --max-concurrency 40 --out DIR`.")

    def test_a_zero_aggregate_is_the_worst_shortfall(self) -> None:
        j = _q2(f"output_tokens_per_s_per_gpu: 400, at_concurrency: 16, gpus: 4, {Q2_DIST}",
                _at(16, aggregate_tokens_per_s=0))
        assert j.reason.endswith("and 0.0 tokens/s aggregate at 16: infinitely short "
                                 "aggregate.")

    def test_undecided_on_the_per_stream_interval_first(self) -> None:
        """75 tokens/s per stream claimed (limit 56.2): the p50's interval 50-unbounded and
        the aggregate's 800-1,000 (limit 900) both straddle; the per-stream one is said, with
        the requests a p50 needs for both ends."""
        j = _q2(f"output_tokens_per_s_per_gpu: 300, at_concurrency: 16, gpus: 4, {Q2_DIST}",
                _at(16, stream_tokens_per_s={"p50_ci": [50, None]},
                    aggregate_tokens_per_s_ci=[800, 1000]))
        assert j.status == "unverified"
        assert j.reason.endswith(
            "at 16: not enough evidence: n = 200, 95 % interval 50.0 tokens/s–unbounded "
            f"straddles the limit 56.2 tokens/s; at least {samples_for(0.5)} requests there "
            "would decide it.")


def _q3(text: str, summary: Any = SUMMARY) -> Judgement:
    return judge("Q3: {" + text + "}\n", summary).judgements["Q3"]


class TestQ3Details:
    def test_one_price_alone_is_not_separate_prices(self) -> None:
        j = _q3("input_price_per_mtok: 0.1, capacity_model: prefill and decode")
        assert (j.status, j.reason) == (
            "unanswerable", "Q3 does not give separate input and output prices per million "
            "tokens.")
        assert j.claimed.to_dict() == {"input_price_per_mtok": 0.1,
                                     "capacity_model": "prefill and decode"}

    @pytest.mark.parametrize("blended", [0.1, 0.4])
    def test_a_blended_price_at_either_separate_price_is_a_possible_mix(
            self, blended: float) -> None:
        """All input tokens (0.10) or all output tokens (0.40) are mixes too."""
        j = _q3(f"input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
                f"blended_price_per_mtok: {blended}, capacity_model: words")
        assert j.status == "unverified" and "outside the separate prices" not in j.reason

    def test_the_currency_is_clipped_at_12_characters(self) -> None:
        j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, currency: Euro-cents-ab, "
                "capacity_model: words")
        assert "(input 0.10 Euro-cents-… and output 0.40 Euro-cents-… per million" in j.reason

    def test_an_open_decode_interval_asks_for_the_requests_a_p50_needs(self) -> None:
        j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
                "decode_tokens_per_s_per_stream: 150", _with_rates([4000, 6000], [60.0, None]))
        assert j.status == "unverified"
        assert j.reason.endswith("95 % interval 60.0 tokens/s–unbounded straddles the limit "
                                 f"75.0 tokens/s; at least {samples_for(0.5)} requests there "
                                 "would decide it.")
        assert j.measured is not None
        assert j.measured.decode_tokens_per_s_per_stream_p50_ci == (60.0, None)

    def test_the_larger_shortfall_is_named(self) -> None:
        """Prefill 12,000 claimed vs 4,900 (2.4×) and decode 300 vs 95.2 (3.2×)."""
        j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
                "prefill_tokens_per_s: 12000, decode_tokens_per_s_per_stream: 300")
        assert j.status == "unreconciled" and j.reason.endswith(": decode per stream 3.2× short.")

    def test_a_run_without_a_baseline_did_not_measure_decode(self) -> None:
        s = json.loads(json.dumps(SUMMARY))
        del s["baseline"]
        j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
                "decode_tokens_per_s_per_stream: 150", s)
        assert j.status == "unverified"
        assert j.reason.endswith("not verified: the run did not measure the decode per stream "
                                 "rate (run the prefill and baseline phases).")


def test_a_flat_prefill_fit_decides_no_prefill_claim_and_only_prefill() -> None:
    """The fit's slope could be zero (prefill faster than 20,000 tokens/s): no prefill claim
    is confirmed; a decode claim unmeasured beside it is reported as unmeasured."""
    s = json.loads(json.dumps(SUMMARY))
    s["prefill"] = {"tokens_per_s": None, "tokens_per_s_at_least": 20000.0, "points": []}
    j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, prefill_tokens_per_s: 9000", s)
    assert j.status == "unverified"
    assert "this run saw no measurable prefill cost (above 20,000 tokens/s" in j.reason
    assert j.measured is not None
    assert round(j.measured.decode_tokens_per_s_per_stream_p50, 1) == 95.2
    s["baseline"] = None
    j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
            "decode_tokens_per_s_per_stream: 150", s)
    assert j.reason.endswith("not verified: the run did not measure the decode per stream rate "
                             "(run the prefill and baseline phases).")
    assert j.measured == PrefillDecodeMeasured()  # every key written, each null


def test_a_measured_ttft_of_zero_is_not_the_figure_nearest_its_limit() -> None:
    j = _q1("ttft_p50_ms: 300, ttft_p90_ms: 300, at_concurrency: 16",
            _at(16, ttft_s={"p50": 0.0}))
    assert j.reason.endswith("vs measured p90 330 ms at 16: holds."), j.reason


@pytest.mark.parametrize(("written", "said"), [("250.7", "251"), ("12.25", "12.2"),
                                               ("0.25", "0.25"), ("1200", "1,200")])
def test_a_claimed_figure_is_said_to_its_significant_digits(written: str, said: str) -> None:
    j = _q1(f"ttft_p90_ms: {written}, at_concurrency: 1")
    assert j.reason == f"TTFT p90 {said} ms is given in isolation (concurrency 1), not under load."


@pytest.mark.parametrize(("written", "said"), [("100.5", "100"), ("1.96", "2.0")])
def test_a_claimed_figure_near_a_format_edge(written: str, said: str) -> None:
    j = _q1(f"ttft_p90_ms: {written}, at_concurrency: 1")
    assert j.reason.startswith(f"TTFT p90 {said} ms is given")


class TestPrefillUndecidedSays:
    """Why the prefill rate decides no claim, by what the fit had: three prompt lengths
    and no interval, fewer than three, or an interval that straddles the tolerance."""

    @staticmethod
    def _why(lengths: int | None, ci: tuple[float | None, float | None] | None) -> str:
        from evalkit.analysis.summary import Summary
        from evalkit.review.rates import _prefill_undecided

        return _prefill_undecided(Summary(
            levels=(), baseline=None, prefill_tokens_per_s=1500.0, max_sustained=None,
            first_degraded=None, client_bound=False, prefill_lengths=lengths), ci)

    @pytest.mark.parametrize("ci", [None, (None, None)])
    def test_three_lengths_and_no_interval(self, ci: tuple[None, None] | None) -> None:
        assert self._why(3, ci) == (
            "the prefill fit over 3 prompt lengths gives no interval on its rate; probe with "
            "more prompt lengths or repeats (--profile standard)")

    @pytest.mark.parametrize("lengths", [2])
    def test_too_few_lengths_whatever_the_interval(self, lengths: int | None) -> None:
        why = self._why(lengths, (1000.0, 2000.0))
        assert "too few for an interval" in why and "(3 needed)" in why

    def test_three_lengths_and_a_straddling_interval(self) -> None:
        why = self._why(3, (1000.0, 2000.0))
        assert why.startswith("not enough evidence") and "1,000" in why and "2,000" in why
        assert "a fit over 3 prompt lengths" in why and why.endswith("(--profile standard)")


def test_a_prefill_fit_without_a_length_count_says_so_not_none() -> None:
    """An older or hand-made summary gives an interval but no prompt-length count: the
    reason says what is missing instead of 'rests on None prompt lengths'."""
    j = judge(Q3_PRICES + "prefill_tokens_per_s: 9000}\n",
              _with_rates([4000, 12000], None, lengths=None)).judgements["Q3"]
    assert j.status == "unverified" and "None" not in j.reason
    assert ("the summary does not say how many prompt lengths the prefill fit rests on, "
            "so its rate decides nothing; probe with more prompt lengths or repeats") \
        in j.reason


class TestAchievedConcurrency:
    """A level that held fewer streams in flight than its name (Retry-After pauses, send
    lag, a lost worker) cannot verify a claim made at its concurrency; it can refute one."""

    @staticmethod
    def _short(mean: float = 11.0) -> dict[str, Any]:
        s = json.loads(json.dumps(SUMMARY))
        for lv in s["ramp"]["levels"]:
            if lv["concurrency"] == 16:
                lv["achieved_concurrency"] = {"mean": mean, "min": 8, "nominal": 16,
                                              "share": mean / 16, "underloaded": True}
        return s

    def test_a_hold_at_a_lighter_load_is_not_verified(self) -> None:
        assert _q1("ttft_p90_ms: 300, at_concurrency: 16").status == "ok"
        j = _q1("ttft_p90_ms: 300, at_concurrency: 16", self._short())
        assert j.status == "unverified", j.reason
        assert "held only a mean of 11.0 streams in flight, not 16" in j.reason

    def test_a_failure_at_a_lighter_load_still_fails(self) -> None:
        j = _q1("ttft_p90_ms: 200, at_concurrency: 16", self._short())
        assert j.status == "unreconciled", j.reason
