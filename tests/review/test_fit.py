"""Use-case fit and the streams served at reading speed (`evalkit.review.fit`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalkit.analysis.intervals import samples_for
from evalkit.analysis.summary import measurements
from evalkit.analysis.thresholds import Tolerances, tolerances_from_dict
from evalkit.review.fit import streams_at_reading_speed, use_case_fit
from evalkit.review.reconcile import reconcile
from tests.review.helpers import RUN, SUMMARY, _at, _level, judge, make_summary, q, typed


class TestUseCases:
    def test_fit_per_profile_from_known_truth(self) -> None:
        """Each profile holds up to the level the synthetic truth predicts."""
        fits = use_case_fit(measurements(SUMMARY), Tolerances())
        # voice: TTFT p90 0.17+0.01c ≤ 0.5 → up to 32; live: ≤ 0.45 → 16;
        # chat: TTFT p90 ≤ 2 s → 128 (TPOT p90 at 256 is 166 ms, fine, TTFT 2.73 s is not);
        # batch: 0.95·256/0.138 s = 1,762 tokens/s; 512 is excluded (2% rejected > 1%)
        assert {k: (f.fit, f.max_concurrency, f.lower_bound) for k, f in fits.items()} == {
            "voice_agent": (True, 32, False), "live_suggestions": (True, 16, False),
            "interactive_chat": (True, 128, False), "batch": (True, 256, False)}
        live = fits["live_suggestions"].reason
        for fact in ("up to 16 streams", "TTFT p90 330 ms ≤ 450 ms", "TPOT p90 22 ms ≤ 40 ms",
                     "0.0% failed ≤ 1%", "at 32: TTFT p90 490 ms > 450 ms"):
            assert fact in live, (fact, live)
        assert fits["batch"].reason.startswith("No latency limit: peak aggregate 1,762 tokens/s "
                                               "at 256 streams")

    def test_streams_at_reading_speed(self) -> None:
        """1/TPOT p90 at 256 is 6.0 tokens/s (above 5.5); at 512 it is 3.1 and 2% fail."""
        fit = streams_at_reading_speed(measurements(SUMMARY), Tolerances())
        assert (fit.fit, fit.max_concurrency, fit.lower_bound) == (True, 256, False)
        assert "at 512: 90% of streams below 5.5 tokens/s (1/TPOT p90 = 3.1 tokens/s) and " \
               "2.0% failed > 1%" in fit.reason

    def test_a_fit_that_never_broke_is_a_lower_bound(self) -> None:
        """Held at every level tried: 'not tried above', never an unqualified fit."""
        summary = make_summary()
        summary["ramp"]["levels"] = summary["ramp"]["levels"][:4]  # up to 8 streams
        fit = streams_at_reading_speed(measurements(summary), Tolerances())
        assert (fit.fit, fit.max_concurrency, fit.lower_bound) == (True, 8, True)
        assert fit.reason.endswith("; not tried above 8, so that is a lower bound.")

    def test_a_stall_breaks_the_voice_profile(self) -> None:
        """Voice holds to 32 streams; a counted stall at 8 stops it at 4."""
        summary = make_summary()
        summary["ramp"]["levels"][3]["stalls"] = 2  # 8 streams
        fit = use_case_fit(measurements(summary), Tolerances())["voice_agent"]
        assert (fit.fit, fit.max_concurrency) == (True, 4)
        assert fit.reason.endswith("; at 8: 2 stalls.")

    def test_ramp_that_never_broke_leaves_a_higher_claim_unverified(self) -> None:
        """Sustained 16 with no breach is a lower bound: a claim of 64 is neither
        contradicted nor verified, and the reason says which run would decide it."""
        summary = make_summary()
        summary["ramp"]["levels"] = summary["ramp"]["levels"][:5]
        summary["ramp"]["first_degraded"] = None
        text = "Q4: {max_concurrent_streams_per_node: 64, first_degrades: itl, source: lab}\n"
        j = judge(text, summary).judgements["Q4"]
        assert j.status == "unverified"
        assert "held up to 16 streams" in j.reason and "without degrading" in j.reason
        assert "--max-concurrency 128" in j.reason
        text = "Q4: {max_concurrent_streams_per_node: 8, first_degrades: itl, source: lab}\n"
        j = judge(text, summary).judgements["Q4"]
        assert j.status == "unverified"
        assert "what degrades first was not seen" in j.reason

    def test_a_limit_below_the_concurrency_sold_is_a_gap(self) -> None:
        """Q4's honest 24 streams against Q2's 32 sold: ok, and a gap."""
        text = ("Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 32, gpus: 1, "
                "source: production, distribution: {p50: 780, p90: 900}}\n"
                "Q4: {max_concurrent_streams_per_node: 24, first_degrades: itl, source: lab}\n")
        j = judge(text).judgements["Q4"]
        assert (j.status, j.finding) == ("ok", "gap")
        assert "below the 32 streams Q2 sells" in j.reason

    def test_nothing_delivered_is_infinitely_short(self) -> None:
        """A level that delivered nothing contradicts a throughput claim, without dividing by 0."""
        summary = make_summary()
        summary["ramp"]["levels"][4]["stream_tokens_per_s"]["p50"] = 0.0
        summary["ramp"]["levels"][4]["aggregate_tokens_per_s"] = 0.0
        text = ("Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, gpus: 1, "
                "source: production, distribution: {p50: 780}}\n")
        j = judge(text, summary).judgements["Q2"]
        assert j.status == "unreconciled"
        assert j.reason.endswith(": infinitely short per stream (p50).")

    def test_a_level_that_mostly_failed_does_not_hold_a_claim(self) -> None:
        """Latency of the few survivors of a failed level never verifies a claim there."""
        summary = make_summary()
        summary["ramp"]["levels"][4]["status"] = "failed"  # 16 streams
        text = "Q1: {ttft_p90_ms: 900, at_concurrency: 16, source: production}\n"
        j = judge(text, summary).judgements["Q1"]
        assert j.status == "unreconciled"
        assert "a level where most requests failed" in j.reason

    def test_baseline_only_and_a_profile_without_limits(self) -> None:
        """A run with only a baseline is judged at 1 stream; a limitless profile still reads."""
        summary = {"baseline": _level(1), "validity": {"status": "valid"}}
        tol = tolerances_from_dict({"slo_profiles": {"anything": {"label": "anything"}}})
        fits = use_case_fit(measurements(summary), tol)
        anything = fits["anything"]
        assert (anything.fit, anything.max_concurrency, anything.lower_bound) == (True, 1, True)
        assert "(0.0% failed ≤ 1%)" in anything.reason
        assert "not tried above 1" in anything.reason
        assert fits["voice_agent"].reason.startswith("Holds the voice agent limits at every "
                                                     "level tried, up to 1 stream (TTFT p90 "
                                                     "180 ms ≤ 500 ms")
        del summary["baseline"]["outcomes"], summary["baseline"]["requests"]
        fits = use_case_fit(measurements(summary), tol)
        anything = fits["anything"]  # no outcomes: no failure rate to state
        assert (anything.fit, anything.max_concurrency, anything.lower_bound) == (True, 1, True)
        assert "failed" not in anything.reason

    def test_profile_that_fails_at_the_first_level(self) -> None:
        """A limit below the baseline fails the use case outright."""
        tol = tolerances_from_dict({"slo_profiles": {"voice_agent": {"ttft_p90_s": 0.1}}})
        fit = use_case_fit(measurements(SUMMARY), tol)["voice_agent"]
        assert (fit.fit, fit.max_concurrency) == (False, None)
        assert "at 1 stream" in fit.reason and "TTFT p90 180 ms > 100 ms" in fit.reason


def _with_level(**fields: Any) -> dict[str, Any]:
    """The synthetic run with level 16 changed."""
    summary = make_summary()
    summary["ramp"]["levels"][4].update(fields)
    return summary


class TestUseCaseEdges:
    def test_a_latency_exactly_at_the_limit_holds(self) -> None:
        """TTFT p90 of 450 ms exactly meets live suggestions' 450 ms; 451 ms does not."""
        for p90, held in ((0.45, 16), (0.451, 8)):
            summary = _with_level(ttft_s={"p50": 0.2, "p90": p90, "p99": 0.5, "n": 200})
            fit = use_case_fit(measurements(summary), Tolerances())["live_suggestions"]
            assert (fit.fit, fit.max_concurrency) == (True, held)

    def test_a_failure_rate_exactly_at_the_limit_holds(self) -> None:
        """1 failed in 100 meets max_failure_rate 1 %; 2 in 100 do not."""
        for failed, held in ((1, 16), (2, 8)):
            summary = _with_level(requests=100, outcomes={"ok": 100 - failed, "error": failed})
            fit = use_case_fit(measurements(summary), Tolerances())["live_suggestions"]
            assert (fit.fit, fit.max_concurrency) == (True, held)

    def test_reading_speed_exactly_at_the_limit_holds(self) -> None:
        """1/TPOT p90 of exactly 4 tokens/s meets a reading speed of 4; just below does not."""
        tol = tolerances_from_dict({"reading_speed_tokens_per_s": 4})
        for p90, fits in ((0.25, True), (0.2501, False)):
            summary = {"baseline": {**_level(1), "tpot_s": {"p50": 0.2, "p90": p90}},
                       "validity": {"status": "valid"}}
            fit = streams_at_reading_speed(measurements(summary), tol)
            assert fit.fit is fits, fit.reason

    def test_half_failed_is_not_mostly_failed(self) -> None:
        """A level where exactly half failed is judged on its figures; more than half is
        a level where the claim cannot hold."""
        text = "Q1: {ttft_p90_ms: 900, at_concurrency: 16, source: production}\n"
        for failed, status in ((100, "ok"), (101, "unreconciled")):
            summary = _with_level(requests=200, outcomes={"ok": 200 - failed,
                                                          "error": failed})
            assert judge(text, summary).judgements["Q1"].status == status


class TestFitDetails:
    """The use-case ladder's facts: which level, which figure, which limit."""

    def test_batch_takes_the_best_rated_level(self) -> None:
        summary = make_summary()
        levels = summary["ramp"]["levels"]
        for lv in levels:
            lv["aggregate_tokens_per_s"] = 0.0
        levels[2]["aggregate_tokens_per_s"] = 0.5                       # 4 streams
        levels[3].update(aggregate_tokens_per_s=9.0, requests=100,      # 8: 1 % failed
                         outcomes={"ok": 99, "error": 1})
        fit = use_case_fit(measurements(summary), Tolerances())["batch"]
        assert (fit.fit, fit.max_concurrency) == (True, 8)
        levels[3]["aggregate_tokens_per_s"] = None
        assert use_case_fit(measurements(summary), Tolerances())["batch"].max_concurrency == 4
        for lv in levels:
            lv["aggregate_tokens_per_s"] = None
        none = use_case_fit(measurements(summary), Tolerances())["batch"]
        assert none.fit is None and "aggregate" in none.reason

    def test_voice_names_its_figures_and_counts_stalls(self) -> None:
        summary = make_summary()
        summary["ramp"]["levels"][3]["stalls"] = 1  # 8 streams
        fit = use_case_fit(measurements(summary), Tolerances())["voice_agent"]
        assert fit.reason.startswith("Holds the voice agent limits up to 4 streams (")
        assert "ITL p99" in fit.reason and "no stalls" in fit.reason
        assert fit.reason.endswith("; at 8: 1 stall.")
        for lv in summary["ramp"]["levels"]:
            del lv["stalls"]  # not counted: no stall limit can be judged, none is assumed
        fit = use_case_fit(measurements(summary), Tolerances())["voice_agent"]
        assert (fit.fit, fit.max_concurrency) == (True, 32) and "stall" not in fit.reason

    def test_failures_in_a_fit(self) -> None:
        summary = make_summary()
        summary["ramp"]["levels"][4].update(requests=100, outcomes={"ok": 90, "error": 10})
        fit = use_case_fit(measurements(summary), Tolerances())["live_suggestions"]
        assert fit.max_concurrency == 8 and "at 16: 10.0% failed > 1%" in fit.reason

    def test_nothing_to_note_adds_no_parentheses(self) -> None:
        summary = {"baseline": {k: v for k, v in _level(1).items()
                                if k not in ("outcomes", "requests")},
                   "validity": {"status": "valid"}}
        tol = tolerances_from_dict({"slo_profiles": {"anything": {"label": "anything"}}})
        fit = use_case_fit(measurements(summary), tol)["anything"]
        assert fit.fit is True and "(" not in fit.reason

    def test_not_measurable_and_nothing_measured(self) -> None:
        summary = {"baseline": {**_level(1), "ttft_s": {}}, "validity": {"status": "valid"}}
        fit = use_case_fit(measurements(summary), Tolerances())["voice_agent"]
        assert fit.fit is None and "at 1 stream" in fit.reason and "TTFT p90" in fit.reason
        only_prefill = {"prefill": {"tokens_per_s": 100.0}, "validity": {"status": "valid"}}
        fit = use_case_fit(measurements(only_prefill), Tolerances())["voice_agent"]
        assert fit.fit is None and "No measured level" in fit.reason

    def test_reading_speed_in_words_and_a_zero_tpot(self) -> None:
        fit = streams_at_reading_speed(measurements(SUMMARY), Tolerances())
        assert "90% of streams above 5.5 tokens/s" in fit.reason
        zero = {"baseline": {**_level(1), "tpot_s": {"p90": 0.0}},
                "validity": {"status": "valid"}}
        fit = streams_at_reading_speed(measurements(zero), Tolerances())
        assert fit.fit is None and "TPOT p90 not measured" in fit.reason


class TestUseCaseOnIntervals:
    def test_a_limit_straddled_at_the_first_level_is_not_decided(self) -> None:
        """TTFT p90 170 ms against a limit of 150 ms, interval 100-300 ms: neither a pass
        nor a fail, and the reason says how many requests would decide it."""
        s = json.loads(json.dumps(SUMMARY))
        for lv in s["ramp"]["levels"]:
            lv["ttft_s"]["p90_ci"] = [0.1, 0.3 + 0.01 * lv["concurrency"]]
        tol = tolerances_from_dict({"slo_profiles": {"chat": {"ttft_p90_s": 0.15}}})
        fit = use_case_fit(measurements(s), tol)["chat"]
        assert fit.fit is None and fit.reason.startswith("Not decided at 1 stream: TTFT p90 "
                                                         "not enough evidence: n = 200")
        assert "requests there would decide it" in fit.reason

    def test_a_failure_rate_above_the_limit_but_not_surely_is_not_a_pass(self) -> None:
        """4 of 200 failed at 512 (2 %) with an exact interval 0.5-5 %: the ladder stops
        below it, not past it, and not as a failure either."""
        s = json.loads(json.dumps(SUMMARY))
        s["ramp"]["levels"][-1]["failure_rate_ci"] = [0.0055, 0.05]
        tol = tolerances_from_dict({"slo_profiles": {"batch-ish": {"ttft_p90_s": 100.0}}})
        fit = use_case_fit(measurements(s), tol)["batch-ish"]
        assert fit.fit is True and fit.max_concurrency == 256
        assert "not judged at 512: not enough evidence: 2.0% of 200 failed" in fit.reason


class TestReadingSpeedOnIntervals:
    """Streams at reading speed (5.5 tokens/s) judged on 1/TPOT p90's interval: the slow end
    of TPOT is the slow end of the rate."""

    def reason(self, summary: dict[str, Any]) -> str:
        return streams_at_reading_speed(measurements(summary), Tolerances()).reason

    def test_an_interval_that_straddles_reading_speed_decides_nothing(self) -> None:
        """TPOT p90 interval 150-200 ms at 256 streams is 5.0-6.7 tokens/s around 5.5."""
        reason = self.reason(_at(256, tpot_s={"p90_ci": [0.15, 0.2]}))
        assert reason.startswith("Holds reading speed up to 128 streams (90% of streams above "
                                 "5.5 tokens/s (1/TPOT p90 = 11.3 tokens/s)")
        assert ("not judged at 256: 1/TPOT p90 not enough evidence: n = 200, 95 % interval "
                "5.0 tokens/s–6.7 tokens/s straddles the limit 5.5 tokens/s; about 479 "
                "requests there would decide it.") in reason

    @pytest.mark.parametrize(("ci", "shown"), [([0.15, None], "unbounded–6.7 tokens/s"),
                                               ([0.0, 0.2], "5.0 tokens/s–unbounded"),
                                               ([None, 0.2], "5.0 tokens/s–unbounded"),
                                               ([None, 0.0], "unbounded–unbounded")])
    def test_an_open_end_is_unbounded_and_the_p90_says_how_many_requests(
            self, ci: list[float | None], shown: str) -> None:
        """An open (or zero) TPOT end leaves that end of the rate open; a p90 needs at least
        36 requests for both ends (plan.samples_for(0.9))."""
        reason = self.reason(_at(256, tpot_s={"p90_ci": ci}))
        assert (f"95 % interval {shown} straddles the limit 5.5 tokens/s; at least "
                f"{samples_for(0.9)} requests there would decide it.") in reason

    def test_without_intervals_the_point_decides(self) -> None:
        assert self.reason(SUMMARY) == (
            "Holds reading speed up to 256 streams (90% of streams above 5.5 tokens/s (1/TPOT "
            "p90 = 6.0 tokens/s) and 0.0% failed ≤ 1%); at 512: 90% of streams below 5.5 "
            "tokens/s (1/TPOT p90 = 3.1 tokens/s) and 2.0% failed > 1%.")


class TestFailuresOnIntervals:
    """4 of 200 failed at 512 (2 %) against max_failure_rate 1 %, on its exact interval."""

    def reason(self, summary: dict[str, Any]) -> str:
        return streams_at_reading_speed(measurements(summary), Tolerances()).reason

    @pytest.mark.parametrize(("ci", "shown"), [([0.0055, 0.05], "0.5–5.0%"),
                                               ([0.0055, None], "0.5–100.0%"),
                                               ([0.01, 0.05], "1.0–5.0%")])
    def test_an_interval_reaching_the_limit_decides_nothing(
            self, ci: list[float | None], shown: str) -> None:
        """Low end at or under 1 %: not surely above; an open high end is 100 %."""
        assert self.reason(_at(512, failure_rate_ci=ci)).endswith(
            f"not judged at 512: not enough evidence: 2.0% of 200 failed, 95 % interval "
            f"{shown} straddles 1%.")

    @pytest.mark.parametrize("ci", [[None, 0.05], [0.011, 0.05]])
    def test_an_interval_without_a_low_end_or_wholly_above_fails(
            self, ci: list[float | None]) -> None:
        assert self.reason(_at(512, failure_rate_ci=ci)).endswith(
            "at 512: 90% of streams below 5.5 tokens/s (1/TPOT p90 = 3.1 tokens/s) and 2.0% "
            "failed > 1%.")

    def test_a_rate_exactly_at_the_limit_holds_whatever_its_interval(self) -> None:
        summary = _at(512, outcomes={"ok": 198, "rejected": 2}, failure_rate_ci=[0.001, 0.036])
        assert self.reason(summary).endswith(
            "at 512: 90% of streams below 5.5 tokens/s (1/TPOT p90 = 3.1 tokens/s).")


class TestLimitsInTheLadder:
    @pytest.mark.parametrize(("limit", "metric", "said", "q"), [
        ({"ttft_p90_s": 0.15}, "ttft_s", "TTFT p90", 0.9),
        ({"tpot_p90_s": 0.01}, "tpot_s", "TPOT p90", 0.9),
        ({"itl_p99_s": 0.01}, "itl_s", "ITL p99", 0.99)])
    def test_an_open_interval_asks_for_the_requests_its_percentile_needs(
            self, limit: dict[str, float], metric: str, said: str, q: float) -> None:
        """A p90 needs 36 requests for both ends of its interval, a p99 368."""
        pname = said.split()[1]
        summary = _at(1, **{metric: {f"{pname}_ci": [0.001, None]}})
        tol = tolerances_from_dict({"slo_profiles": {"x": limit}})
        reason = use_case_fit(measurements(summary), tol)["x"].reason
        assert reason.startswith(f"Not decided at 1 stream: {said} not enough evidence:")
        assert f"at least {samples_for(q)} requests there would decide it." in reason

    def test_what_held_lists_only_what_was_checked(self) -> None:
        """No stall count in the summary adds nothing to what held; no check with a figure
        adds no parentheses."""
        s = json.loads(json.dumps(SUMMARY))
        for lv in s["ramp"]["levels"]:
            del lv["stalls"]
        tol = tolerances_from_dict({"slo_profiles": {"x": {"itl_p99_s": 1.0}, "y": {}}})
        fits = use_case_fit(measurements(s), tol)
        assert fits["x"].reason.startswith("Holds the x limits up to 256 streams (ITL p99 207 "
                                           "ms ≤ 1.00 s and 0.0% failed ≤ 1%); at 512:")
        for lv in s["ramp"]["levels"]:
            del lv["outcomes"]
        assert use_case_fit(measurements(s), tol)["y"].reason == (
            "Holds the y limits at every level tried, up to 512 streams; not tried above 512, "
            "so that is a lower bound.")


def test_a_level_missing_a_figure_is_not_measurable_rather_than_undecided() -> None:
    tol = tolerances_from_dict({"slo_profiles": {"x": {"ttft_p90_s": 1.0}}})
    fit = use_case_fit(measurements(_at(1, ttft_s={"p90": None})), tol)["x"]
    assert (fit.fit, fit.reason) == (None, "Not measurable at 1 stream: TTFT p90 not measured.")


def test_a_failure_share_is_said_to_a_tenth_of_a_percent() -> None:
    """20 of 200 (10.0 %) with an interval reaching down to 0.5 %: not decided."""
    s = _at(512, outcomes={"ok": 180, "rejected": 20}, failure_rate_ci=[0.005, 0.15])
    reason = streams_at_reading_speed(measurements(s), Tolerances()).reason
    assert reason.endswith("not judged at 512: not enough evidence: 10.0% of 200 failed, 95 % "
                           "interval 0.5–15.0% straddles 1%.")


def test_a_run_that_verifies_nothing_judges_no_reading_speed() -> None:
    s = json.loads(json.dumps(SUMMARY))
    s["validity"] = {"status": "invalid", "reasons": ["baseline: all failed"]}
    fit = streams_at_reading_speed(measurements(s), Tolerances())
    assert fit.fit is None and fit.reason.startswith("Not judged: the run is invalid")


class TestRunLevelEdges:
    def _invalid(self, reasons: list[str]) -> dict[str, Any]:
        s = json.loads(json.dumps(SUMMARY))
        s["validity"] = {"status": "invalid", "reasons": reasons}
        return s

    def test_an_invalid_run_without_a_reason_says_only_that(self) -> None:
        fits = use_case_fit(measurements(self._invalid([])), Tolerances())
        assert fits["batch"].fit is None and fits["batch"].reason == (
            "Not judged: the run is invalid, so it verifies nothing; fix the endpoint or the "
            "probe's options and re-run it.")

    def test_the_run_s_reason_is_quoted_up_to_160_characters(self) -> None:
        reason = "r" * 161
        fit = use_case_fit(measurements(self._invalid([reason])), Tolerances())["batch"]
        assert f"the run is invalid ({'r' * 159}…), so" in fit.reason

    def test_a_claims_only_review_names_the_questionnaire_s_command_and_no_mismatch(
            self) -> None:
        review = reconcile(q("model: other-model\nQ1: {ttft_p90_ms: 300, at_concurrency: 16, "
                             "source: production}\n"), None, None, RUN)
        assert review.target_mismatch is None and review.client_bound is False
        assert "run `evalkit probe --base-url https://api.vendor.example/v1 --model other-model " \
            "--questionnaire t.yaml --out DIR`" in review.judgements["Q1"].reason

    def test_an_empty_summary_is_an_invalid_run_not_a_client_bound_one(self) -> None:
        review = reconcile(q("vendor: A\n"), typed({"schema": "evalkit.summary/1"}), None, RUN)
        assert review.run_validity == "invalid" and review.client_bound is False
