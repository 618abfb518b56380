"""A vendor cannot game the verdict (issue 24, `evalkit.review.streaming`, `panel`): a
claim no streaming product can use is a gap, Q6 reconciles with our run, and a reasoning
chunk sent at once does not set the latency a claim is judged on. Each rule has a
questionnaire or summary built to trip it and one just inside it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalkit.analysis.summary import Summary
from evalkit.analysis.thresholds import tolerances_from_dict
from evalkit.review.fit import use_case_fit
from evalkit.review.measured import TtftMeasured
from evalkit.review.panel import contradiction
from tests.review.helpers import PANEL_RUN, SUMMARY, forthright_run, judge, sample, typed

# ------------------------------------------------------------------ 1. tiny claims


def _q2(rate: float, c: int = 1, gpus: int = 1) -> str:
    return (f"Q2: {{output_tokens_per_s_per_gpu: {rate}, at_concurrency: {c}, gpus: {gpus}, "
            f"source: production, distribution: {{p50: {rate}, p90: {rate}}}}}\n")


class TestTinyClaims:
    def test_a_rate_below_reading_speed_is_ok_only_with_a_gap(self) -> None:
        """0.001 tokens/s per GPU at 1 stream holds (an under-promise always does) but is
        no streaming capacity: the finding `gap` says why."""
        j = judge(_q2(0.001)).judgements["Q2"]
        assert (j.status, j.finding) == ("ok", "gap")
        assert ("0.001 tokens/s per stream is below reading speed (5.5 tokens/s, "
                "reading_speed_tokens_per_s), so it is not a streaming capacity") in j.reason

    def test_just_at_reading_speed_is_a_streaming_capacity(self) -> None:
        """5.5 tokens/s per stream (22 per GPU over 4 streams) is the edge: no gap."""
        j = judge(_q2(22, c=4)).judgements["Q2"]
        assert (j.status, j.finding) == ("ok", None), j.reason
        below = judge(_q2(21.9, c=4)).judgements["Q2"]
        assert (below.status, below.finding) == ("ok", "gap")

    def test_below_every_use_case_s_floor_is_a_gap_even_under_a_lower_reading_speed(
            self) -> None:
        """With reading speed set to 1 token/s, 3 tokens/s per stream still serves no use
        case (the voice agent's 0.3 s gap limit needs 3.3 tokens/s, the least floor)."""
        tol = tolerances_from_dict({"reading_speed_tokens_per_s": 1})
        j = judge(_q2(3, c=1), SUMMARY, tol).judgements["Q2"]
        assert j.finding == "gap" and "below what every streaming use case needs (the least: " \
            "3.3 tokens/s)" in j.reason
        assert judge(_q2(3.4, c=1), SUMMARY, tol).judgements["Q2"].finding is None

    def test_a_limit_of_one_stream_per_node_is_a_gap(self) -> None:
        one = judge("Q4: {max_concurrent_streams_per_node: 1, first_degrades: itl, "
                    "source: lab}\n").judgements["Q4"]
        assert one.finding == "gap" and "serves requests one at a time" in one.reason
        two = judge("Q4: {max_concurrent_streams_per_node: 2, first_degrades: itl, "
                    "source: lab}\n").judgements["Q4"]
        assert two.finding is None

    def test_a_gap_on_q2_never_counts_toward_streaming_ready(self) -> None:
        """forthright holds up; sold at 0.001 tokens/s per GPU it is not ready."""
        ready = sample("forthright", forthright_run())
        assert ready.verdict.streaming_ready is True
        s = forthright_run()
        from evalkit.questionnaire.load import load_questionnaire
        from evalkit.review.reconcile import reconcile
        from evalkit.review.rules import RunTarget
        from tests.review.helpers import SAMPLES
        q = load_questionnaire(SAMPLES / "forthright.yaml")
        from dataclasses import replace
        tiny = replace(q, q2=replace(q.q2, output_tokens_per_s_per_gpu=0.001,
                                     distribution=replace(q.q2.distribution, p50=0.001,
                                                          p90=0.001, p99=0.001)))
        review = reconcile(tiny, typed(s), None, RunTarget(model=q.model, endpoint=q.endpoint))
        assert review.judgements["Q2"].status == "ok"
        assert review.verdict.streaming_ready is False
        assert "Q2 shows a gap: what is quoted is not a streaming capacity" in \
            review.verdict.text


# ------------------------------------------------------------ 2. Q6 against our run

SOLD = "Q2: {at_concurrency: 16}\n"


def _panel(p50: float, p90: float, headline: float | None = None,
           text: str | None = None) -> str:
    head = f"headline: {{value: {headline}}}\n" if headline is not None else ""
    rec = f"  reconciliation: {text}\n" if text else ""
    return (head + SOLD + f"Q6:\n  output_tokens_per_s: {{p50: {p50}, p90: {p90}}}\n"
            "  window: last 7 days\n  source: production\n" + rec)


WORDS = "The headline is one stream on an idle node; production runs many streams at once."


class TestQ6AgainstOurRun:
    def test_a_panel_far_below_our_measurement_is_unreconciled_whatever_the_text(
            self) -> None:
        """0.01 tokens/s when we measured 170 at the 16 streams sold: 17,000× apart."""
        j = judge(_panel(0.01, 0.02, headline=70, text=WORDS), PANEL_RUN).judgements["Q6"]
        assert j.status == "unreconciled"
        assert ("the panel's median 0.01 tokens/s is 17,000.0× below the 170 tokens/s per "
                "stream (p50) we measured at 16 streams") in j.reason
        assert "whatever the reconciliation says" in j.reason

    @pytest.mark.parametrize(("p50", "status"), [
        (136, "ok"), (135, "unreconciled"),   # our 170 ≤ 136 × 1.25 = 170
        (226.6, "ok"), (227, "unreconciled"),  # our 170 ≥ 227 × 0.75 = 170.25
    ])
    def test_just_inside_and_outside_throughput_rel_on_both_sides(
            self, p50: float, status: str) -> None:
        j = judge(_panel(p50, 300), PANEL_RUN).judgements["Q6"]
        assert j.status == status, j.reason

    def test_a_straddle_is_not_a_pass(self) -> None:
        s = json.loads(json.dumps(PANEL_RUN))
        for lv in s["ramp"]["levels"]:
            if lv["concurrency"] == 16:
                lv["stream_tokens_per_s"]["p50_ci"] = [120.0, 200.0]
        j = judge(_panel(170, 200), s).judgements["Q6"]
        assert j.status == "unverified" and "straddles" in j.reason

    def test_a_headline_far_above_anything_we_measured_is_unreconciled(self) -> None:
        """99,999 over a panel of 170 with 40+ characters of text: the ramp broke at 32
        and our best aggregate was 1,829 tokens/s, so the text cannot carry it."""
        j = judge(_panel(170, 200, headline=99999, text=WORDS), PANEL_RUN).judgements["Q6"]
        assert j.status == "unreconciled"
        assert "our best aggregate was 1,829 tokens/s at 512 streams, short of 99,999" in \
            j.reason
        ok = judge(_panel(170, 200, headline=2000, text=WORDS), PANEL_RUN).judgements["Q6"]
        assert ok.status == "ok", ok.reason  # 1,829 ≥ 2,000 × 0.75

    def test_a_reconciliation_naming_a_figure_the_answer_contradicts_is_none(self) -> None:
        """It says the median is 70 tokens/s where the panel says 170."""
        text = ("The headline 1,107 tokens/s is one stream alone; the median stream runs at "
                "70 tokens/s in production.")
        j = judge(_panel(170, 200, headline=1107, text=text), PANEL_RUN).judgements["Q6"]
        assert j.status == "unreconciled"
        assert ("the written reconciliation is none: the reconciliation gives the median as "
                "70 tokens/s, the panel as 170") in j.reason
        agrees = text.replace("70 tokens/s", "170 tokens/s")
        j = judge(_panel(170, 200, headline=1107, text=agrees), PANEL_RUN).judgements["Q6"]
        assert j.status == "ok", j.reason

    def test_a_figure_neither_headline_nor_panel_gives_is_a_contradiction(self) -> None:
        assert contradiction("batch mode reaches 5,000 tok/s", [170, 200, 1107], 170) == (
            "the reconciliation names 5,000 tokens/s, a figure neither the headline nor the "
            "panel gives")
        assert contradiction("headline 1,107 tokens per second, p50 170 tokens/s",
                             [170, 200, 1107], 170) is None

    def test_without_a_concurrency_sold_nothing_is_verified(self) -> None:
        j = judge(_panel(170, 200).replace(SOLD, ""), PANEL_RUN).judgements["Q6"]
        assert j.status == "unverified" and "Q2 names no concurrency it sells" in j.reason


# ------------------------------------------------------------ 3. TTFA where reasoning first


def _reasoning(ttft: float, ttfa: float, gap: float | None = None,
               levels: tuple[int, ...] = (1, 2, 4, 8, 16)) -> dict[str, Any]:
    """SUMMARY where reasoning came first at `levels`: TTFT `ttft`, TTFA `ttfa`."""
    s = json.loads(json.dumps(SUMMARY))
    for lv in [s["baseline"], *s["ramp"]["levels"]]:
        if lv is s["baseline"] or lv["concurrency"] in levels:
            lv["ttft_s"] = {"p50": ttft, "p90": ttft * 1.1, "p99": ttft * 1.2, "n": 200}
            lv["ttfa_s"] = {"p50": ttfa, "p90": ttfa * 1.1, "p99": ttfa * 1.2, "n": 200}
            lv["reasoning_first"] = 200
            if gap is not None:
                lv["max_gap_s"] = gap
    return s


Q1 = "Q1: {ttft_p50_ms: 200, at_concurrency: 16, source: production}\n"


class TestTtfaWhereReasoningComesFirst:
    def test_q1_is_judged_on_the_answer_s_time(self) -> None:
        """'Okay' at once, the answer 600 ms later: 200 ms claimed does not hold."""
        j = judge(Q1, _reasoning(0.0004, 0.6, gap=0.6)).judgements["Q1"]
        assert j.status == "unreconciled"
        assert "measured TTFA p50 600 ms (time to the first answer token: reasoning came " \
            "first in 200 of 200 requests, so TTFT p50 0 ms is a reasoning chunk's)" in j.reason
        assert j.measured == TtftMeasured(16, ttft_p50_ms=0.4, ttfa_p50_ms=600.0,
                                          reasoning_first=200)

    def test_an_answer_in_time_still_holds(self) -> None:
        j = judge(Q1, _reasoning(0.05, 0.2)).judgements["Q1"]
        assert (j.status, j.finding) == ("ok", None), j.reason

    def test_a_reasoning_chunk_within_1_ms_then_silence_is_a_finding(self) -> None:
        j = judge(Q1, _reasoning(0.0004, 0.6, gap=0.6)).judgements["Q1"]
        assert j.finding == "gap" and "a placeholder that sets TTFT" in j.reason
        assert "0.4 ms after sending (TTFT p50)" in j.reason

    @pytest.mark.parametrize(("ttft", "ttfa", "gap"), [
        (0.0011, 0.6, 0.6),   # 1.1 ms: an engine could have read the prompt
        (0.0004, 0.25, 0.25),  # the answer 250 ms later: no long silence
        (0.0004, 0.6, 0.02),  # reasoning kept streaming: the longest gap is 20 ms
    ])
    def test_just_inside_the_placeholder_rule(self, ttft: float, ttfa: float,
                                              gap: float) -> None:
        j = judge("Q1: {ttft_p50_ms: 700, at_concurrency: 16, source: production}\n",
                  _reasoning(ttft, ttfa, gap=gap)).judgements["Q1"]
        assert j.finding is None, j.reason

    def test_fits_judge_ttfa_and_name_ttft_beside_it(self) -> None:
        """The voice agent's TTFT p90 ≤ 0.5 s: TTFA p90 660 ms fails it even at 1 stream."""
        fits = use_case_fit(Summary.from_json(_reasoning(0.0004, 0.6, gap=0.6)),
                            tolerances_from_dict({}))
        voice = fits["voice_agent"]
        assert voice.fit is False
        assert "TTFA p90 660 ms > 500 ms (reasoning came first in 200 requests; TTFT p90 " \
            "0 ms)" in voice.reason
        assert fits["live_suggestions"].fit is False
        assert "TTFA p90 660 ms > 450 ms" in fits["live_suggestions"].reason
        plain = use_case_fit(Summary.from_json(SUMMARY), tolerances_from_dict({}))
        assert "TTFT p90" in plain["voice_agent"].reason
