"""The reconciliation engine: each status from a questionnaire built to trigger it.

The measured side is a synthetic `evalkit.summary/1` dict with known truth: a GPU-like
endpoint whose decode step grows 0.5 ms per running stream (TPOT p50 = 10 + 0.5·c ms),
TTFT p90 = 170 + 10·c ms, so every expected number below can be worked out by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.analysis.intervals import samples_for
from evalkit.analysis.summary import measurements
from evalkit.analysis.thresholds import Tolerances, load_tolerances, tolerances_from_dict
from evalkit.errors import InputError
from evalkit.fmt import fmt_s
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.questionnaire.load import load_questionnaire, parse_questionnaire
from evalkit.questionnaire.model import Questionnaire
from evalkit.review.fit import streams_at_reading_speed, use_case_fit
from evalkit.review.reconcile import Review, reconcile
from evalkit.review.rules import (
    Judgement,
    RunTarget,
    decide,
    meets,
    rerun_for,
    same_endpoint,
    target_mismatch,
    tolerance_words,
    tolerated,
    within,
)
from evalkit.review.scorecard import build_scorecard
from evalkit.review.verdict import STREAMING_QUESTIONS, verdict

SAMPLES = Path(__file__).resolve().parent.parent / "questionnaires"
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _level(c: int) -> dict[str, Any]:
    tpot = (10 + 0.5 * c) / 1000
    requests = 200
    rejected = 4 if c == 512 else 0
    return {
        "concurrency": c, "requests": requests,
        "outcomes": {"ok": requests - rejected, "rejected": rejected},
        "ttft_s": {"p50": 0.15 + 0.005 * c, "p90": 0.17 + 0.01 * c, "p99": 0.2 + 0.012 * c,
                   "n": 200},
        "tpot_s": {"p50": tpot, "p90": 1.2 * tpot, "p99": 1.4 * tpot, "n": 200},
        "itl_s": {"p50": tpot, "p90": 1.3 * tpot, "p99": 1.5 * tpot, "n": 20000},
        "stream_tokens_per_s": {"p50": 1 / tpot, "p90": 1.1 / tpot, "p99": 1.15 / tpot,
                                "n": 200},
        "aggregate_tokens_per_s": 0.95 * c / tpot,
        "stalls": 0,
    }


def make_summary(**client: Any) -> dict[str, Any]:
    """A GPU-like endpoint: itl degrades first, past 16 streams (TPOT p90 2× baseline)."""
    base = _level(1)
    return {
        "schema": "evalkit.summary/1",
        "connect": {"usage_reported": True, "tokens_per_chunk": {"p50": 1}, "rtt_s": 0.001},
        "baseline": {k: base[k] for k in ("ttft_s", "tpot_s", "itl_s", "stream_tokens_per_s")}
        | {"requests": 20},
        "prefill": {"tokens_per_s": 4900.0, "overhead_s": 0.09, "r2": 0.99, "points": []},
        "ramp": {"levels": [_level(c) for c in LEVELS], "max_sustained_concurrency": 16,
                 "first_degraded": "itl"},
        "client": {"loop_lag_p99_s": 0.001, "client_bound": False, **client},
        "validity": {"status": "valid", "reasons": []},
    }


SUMMARY = make_summary()
#: what the synthetic run probed; q() names the same unless a fragment says otherwise
RUN = RunTarget(model="m-7b", endpoint="https://api.vendor.example/v1")


def q(text: str) -> Questionnaire:
    """A questionnaire from a YAML fragment (schema, and RUN's model/endpoint, added)."""
    head = "schema: evalkit.questionnaire/1\n"
    if not text.startswith("model:"):
        head += f"model: {RUN.model}\n"
    if "endpoint:" not in text:
        head += f"endpoint: {RUN.endpoint}\n"
    return parse_questionnaire((head + text).encode(), "t.yaml")


def judge(text: str, summary: Any = SUMMARY, tol: Tolerances | None = None) -> Review:
    """The review of a questionnaire fragment against the synthetic run."""
    return reconcile(q(text), summary, tol, RUN)


def sample(name: str, summary: Any = SUMMARY) -> Review:
    """A sample questionnaire against a run of the model and endpoint it names."""
    questionnaire = load_questionnaire(SAMPLES / f"{name}.yaml")
    run = RunTarget(model=questionnaire.model, endpoint=questionnaire.endpoint)
    return reconcile(questionnaire, summary, None, run)


PANEL = """
Q6:
  output_tokens_per_s: {p50: 170, p90: 520, p99: 767}
  window: last 7 days
  source: production
"""
WRITTEN = ("  reconciliation: The headline is one stream on an idle node with a cached "
           "prefix; production runs 64 streams per node.\n")

# (question, yaml, expected status, text the reason must contain)
CASES: list[tuple[str, str, str, str]] = [
    # Q1: TTFT under load; measured p90 at 16 = 330 ms, p50 = 230 ms
    ("Q1", "", "unanswered", "Q1 is not answered"),
    ("Q1", "Q1: {evidence: [], notes: }\n", "unanswered", "Q1 is not answered"),
    ("Q1", "Q1: {notes: blazing fast}\n", "unanswerable", "no TTFT numbers"),
    ("Q1", "Q1: {ttft_p90_ms: 140, at_concurrency: 16, source: lab}\n", "unanswerable",
     "TTFT p90 140 ms is given from a lab benchmark"),
    ("Q1", "Q1: {ttft_p90_ms: 140, at_concurrency: 16}\n", "unanswerable",
     "without saying where it was measured"),
    ("Q1", "Q1: {ttft_p90_ms: 140, at_concurrency: 1, source: production}\n", "unanswerable",
     "in isolation (concurrency 1), not under load"),
    ("Q1", "Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 16, source: production}\n",
     "unreconciled", "p50 500 ms is above its own p90 400 ms"),
    ("Q1", "Q1: {ttft_p90_ms: 100, at_concurrency: 16, source: production}\n", "unreconciled",
     "Claimed TTFT p90 100 ms at 16 streams vs measured p90 330 ms at 16: 3.3× slower."),
    ("Q1", "Q1: {ttft_p50_ms: 150, ttft_p90_ms: 320, at_concurrency: 16, source: production}\n",
     "unreconciled", "vs measured p50 230 ms at 16: 1.5× slower"),
    ("Q1", "Q1: {ttft_p90_ms: 300, at_concurrency: 16, source: production}\n", "ok",
     "vs measured p90 330 ms at 16: holds."),  # 330 ≤ 300 × 1.25
    ("Q1", "Q1: {ttft_p90_ms: 260, at_concurrency: 16, source: production}\n", "unreconciled",
     "vs measured p90 330 ms at 16: 1.3× slower."),  # just outside: 330 > 260 × 1.25
    # between levels: 20 streams lies between 16 (330 ms) and 32 (490 ms)
    ("Q1", "Q1: {ttft_p90_ms: 210, at_concurrency: 20, source: production}\n", "unreconciled",
     "vs measured p90 330 ms already at 16 streams, fewer than claimed: 1.6× slower."),
    ("Q1", "Q1: {ttft_p90_ms: 400, at_concurrency: 20, source: production}\n", "ok",
     "vs measured p90 490 ms even at 32 streams, more than claimed: holds."),
    ("Q1", "Q1: {ttft_p90_ms: 300, at_concurrency: 20, source: production}\n", "unverified",
     "not verified: the run measured no level that decides 20 streams; re-run `evalkit "
     "probe --base-url https://api.vendor.example/v1 --model m-7b --questionnaire t.yaml "
     "--max-concurrency 40 --out DIR`."),
    ("Q1", "Q1: {ttft_p90_ms: 9000, at_concurrency: 4096, source: production}\n", "unverified",
     "not verified: the run's levels stop at 512; re-run `evalkit probe"),
    # Q2: measured at 16: 55.6 tokens/s per stream (p50), 844 aggregate
    ("Q2", "", "unanswered", "Q2 is not answered"),
    ("Q2", "Q2: {notes: Industry-leading throughput}\n", "unanswerable", "only text"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, source: production}\n",
     "unanswerable", "no measured production distribution"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, source: lab, "
     "distribution: {p50: 800}}\n", "unanswerable", "from a lab benchmark"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, source: production, "
     "distribution: {p50: 800}}\n", "unanswerable", "without the concurrency"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 3000, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 700, p90: 900, p99: 1000}}\n", "unreconciled",
     "exceeds the top of its own production distribution (1,000)"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 900, p90: 700}}\n", "unreconciled",
     "not in increasing order"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 3200, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 3000, p90: 3200, p99: 3400}}\n", "unreconciled",
     "(200 tokens/s per stream, 3,200 tokens/s aggregate) vs measured 55.6 tokens/s per "
     "stream (p50) and 844 tokens/s aggregate at 16: 3.8× short aggregate."),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 780, p90: 900, p99: 980}}\n", "ok", "holds."),
    # one-sided: 844 aggregate holds a claim of 1,120 (844 ≥ 0.75 × 1,120) but not 1,130
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1120, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 1100, p90: 1200}}\n", "ok", "holds."),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1130, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 1100, p90: 1200}}\n", "unreconciled",
     "1.3× short aggregate."),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, "
     "source: production, distribution: {p50: 780, p90: 900, p99: 980}}\n", "unanswerable",
     "without the GPU count behind the endpoint"),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 1024, gpus: 1, "
     "source: production, distribution: {p50: 780, p90: 900, p99: 980}}\n", "unverified",
     "the run's levels stop at 512"),
    # Q3: measured prefill 4,900 tokens/s, decode alone 95.2 tokens/s
    ("Q3", "", "unanswered", "Q3 is not answered"),
    ("Q3", "Q3: {blended_price_per_mtok: 0.9, currency: USD}\n", "unanswerable",
     "Only a single blended price (0.90 USD per million tokens)"),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4}\n", "unanswerable",
     "no capacity model"),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "blended_price_per_mtok: 0.9, capacity_model: sized apart}\n", "unreconciled",
     "The blended price 0.90 per million tokens lies outside the separate prices (input 0.10 "
     "and output 0.40 per million tokens)"),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "prefill_tokens_per_s: 20000}\n", "unreconciled",
     "prefill claimed 20,000 tokens/s vs measured 4,900 tokens/s: prefill 4.1× short."),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "prefill_tokens_per_s: 9800}\n", "ok", "holds."),  # 4,900 = 0.5 × 9,800: the edge
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "prefill_tokens_per_s: 9900}\n", "unreconciled", "prefill 2.0× short."),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "prefill_tokens_per_s: 5000, decode_tokens_per_s_per_stream: 90}\n", "ok", "holds."),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "capacity_model: prefill nodes and decode nodes are sized apart}\n", "unverified",
     "it states no prefill or decode rate, so no run can check it"),
    # Q4: ramp sustained 16, broke at 32 on TPOT
    ("Q4", "", "unanswered", "Q4 is not answered"),
    ("Q4", "Q4: {first_degrades: itl, source: lab}\n", "unanswerable", "no maximum"),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 16, source: lab}\n", "unanswerable",
     "not what degrades first"),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 16, first_degrades: itl, source: estimate}\n",
     "unanswerable", "as an estimate"),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 64, nodes: 1, first_degrades: itl, "
     "source: lab}\n", "unreconciled",
     "Claimed 64 streams per node × 1 node = 64, TPOT first vs the ramp, which sustained 16 "
     "and broke at 32 on TPOT: the claim is 2.0× the level at which it broke."),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 16, nodes: 1, first_degrades: admission, "
     "source: production}\n", "unreconciled", "TPOT, not admission, degraded first"),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 24, first_degrades: itl, source: lab}\n",
     "ok", "(at least 24 for the endpoint)"),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 40, first_degrades: itl, source: lab}\n",
     "ok", "holds."),  # 40 ≤ 32 × 1.25: within tolerance of the break
    ("Q4", "Q4: {max_concurrent_streams_per_node: 41, first_degrades: itl, source: lab}\n",
     "unreconciled", "the claim is 1.3× the level at which it broke"),
    ("Q4", "endpoint: https://elsewhere.example/v1\n"
     "Q4: {max_concurrent_streams_per_node: 24, first_degrades: itl, source: lab}\n",
     "unverified", "the run probed https://api.vendor.example/v1, the questionnaire names "
     "https://elsewhere.example/v1"),
    # Q5: categorical
    ("Q5", "", "unanswered", "Q5 is not answered"),
    ("Q5", "Q5: {notes: Enterprise-grade dashboards}\n", "unanswerable", "does not say"),
    ("Q5", "Q5: {observability: per_stream}\n", "unanswerable", "not how it is exported"),
    ("Q5", "Q5: {observability: none}\n", "ok", "no latency observability"),
    ("Q5", "Q5: {observability: none, export: Prometheus itl histogram}\n", "unreconciled",
     "yet describes an export (Prometheus itl histogram): the two answers contradict"),
    ("Q5", "Q5: {observability: request_level, export: Prometheus histogram}\n", "ok",
     "request-level latency only (via Prometheus histogram)"),
    ("Q5", "Q5: {observability: per_stream, export: Prometheus itl histogram}\n", "unverified",
     "not verified: the run did not scrape it: re-run the probe with --metrics-url"),
    # Q6: headline 1,107 vs the panel
    ("Q6", "headline: {value: 1107}\n", "unanswered", "to set beside the headline 1,107"),
    ("Q6", "headline: {value: 1107}\nQ6: {notes: we do not publish telemetry}\n",
     "unanswerable", "no production panel numbers"),
    ("Q6", "headline: {value: 1107}\n" + PANEL.replace("production", "lab"), "unanswerable",
     "from a lab benchmark"),
    ("Q6", "headline: {value: 1107}\n" + PANEL.replace("  window: last 7 days\n", ""),
     "unanswerable", "no window"),
    ("Q6", "headline: {value: 1107}\n" + PANEL, "unreconciled",
     "6.5× the production panel's median 170 tokens/s (last 7 days; limit 2×"),
    ("Q6", "headline: {value: 1107}\n" + PANEL.replace("520", "100"), "unreconciled",
     "percentiles 170/100/767 are not in increasing order"),
    ("Q6", "headline: {value: 1107}\n" + PANEL + WRITTEN, "ok",
     "a written reconciliation explains the gap"),
    ("Q6", "headline: {value: 300}\n" + PANEL, "ok", "1.8× the production panel's median"),
    ("Q6", "headline: {value: 300, unit: output_tokens_per_s_per_gpu}\n" + PANEL,
     "unreconciled", "no written reconciliation bridges them"),
    ("Q6", "model: another-model\nheadline: {value: 300}\n" + PANEL, "unverified",
     "the run probed model m-7b, the questionnaire names another-model"),
]

#: statuses that carry the `gap` finding in the table above (qid, yaml prefix)
GAPS = {("Q5", "Q5: {observability: none}\n"),
        ("Q5", "Q5: {observability: request_level, export: Prometheus histogram}\n"),
        ("Q3", "Q3: {blended_price_per_mtok: 0.9, currency: USD}\n")}


@pytest.mark.parametrize("qid, text, status, reason", CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_each_status_is_triggered(qid: str, text: str, status: str, reason: str) -> None:
    """A questionnaire built to trigger a status gets it, with a reason naming the numbers,
    and the `gap` finding exactly where an honest answer reveals one."""
    judgement = judge(text).judgements[qid]
    assert (judgement.status, reason in judgement.reason) == (status, True), judgement.reason
    assert judgement.finding == ("gap" if (qid, text) in GAPS else None)


def test_every_status_appears_for_every_numeric_question() -> None:
    """The table covers all five statuses for each of the six questions."""
    seen = {(c[0], c[2]) for c in CASES}
    for qid in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6"):
        for status in ("ok", "unverified", "unanswered", "unanswerable", "unreconciled"):
            assert (qid, status) in seen, (qid, status)


def test_vendor_text_in_a_reason_is_one_clipped_line() -> None:
    """Vendor text quoted in a reason is flattened and clipped, so the reason stays a line."""
    text = "Q5:\n  observability: per_stream\n  export: |\n    line one\n    " + "x" * 300 + "\n"
    reason = reconcile(q(text), None).judgements["Q5"].reason
    assert "\n" not in reason
    assert "via line one " + "x" * 110 + "…; not verified" in reason  # 119 chars + …


def test_every_reason_is_one_sentence() -> None:
    """Reasons end in one full stop and carry no line breaks."""
    for _, text, _, _ in CASES:
        for j in judge(text).judgements.values():
            assert j.reason.endswith(".") and "\n" not in j.reason
            assert j.reason.count(". ") == 0, j.reason


def test_tolerances_are_written_one_sided() -> None:
    """A rule that only catches the vendor's shortfall never reads as ±."""
    review = sample("forthright")
    tolerances = {qid: j.tolerance for qid, j in review.judgements.items()}
    assert tolerances["Q1"] == "one-sided: measured ≤ claimed × 1.25 (ttft_rel 25%)"
    assert tolerances["Q2"] == "one-sided: measured ≥ claimed × 0.75 (throughput_rel 25%)"
    assert tolerances["Q3"] == "one-sided: measured ≥ claimed × 0.5 (rate_rel 50%)"
    assert tolerances["Q4"] == ("one-sided: claimed ≤ breaking level × 1.25 "
                                "(concurrency_rel 25%)")
    assert not any("±" in t for t in tolerances.values())


class TestSamples:
    def test_forthright_holds_up_where_it_was_measured(self) -> None:
        """Every measured answer within tolerance: Q5 alone is unverified (no scrape)."""
        review = sample("forthright")
        assert {k: j.status for k, j in review.judgements.items()} == {
            "Q1": "ok", "Q2": "ok", "Q3": "ok", "Q4": "ok", "Q5": "unverified", "Q6": "ok"}
        assert review.verdict.streaming_ready is True
        assert review.verdict.text.startswith("Steadystream Inference ")
        assert review.verdict.text.endswith(" Also flagged: Q5 unverified.")

    def test_evasive_is_sized_for_the_old_regime(self) -> None:
        """Words, blended price, lab TTFT, no panel: not streaming-ready, in the SPEC's words."""
        review = sample("evasive")
        assert {k: j.status for k, j in review.judgements.items()} == {
            "Q1": "unanswerable", "Q2": "unanswerable", "Q3": "unanswerable",
            "Q4": "unanswered", "Q5": "unanswerable", "Q6": "unanswerable"}
        assert review.judgements["Q3"].finding == "gap"
        assert review.verdict.streaming_ready is False
        assert review.verdict.text.startswith(
            "Apex Hyperscale AI cannot answer Q2, Q4 and Q6 with measured numbers, so it has "
            "sized its quote for a regime the product is leaving (batch / request-rate)")
        assert "single blended price (0.90 USD" in review.judgements["Q3"].reason

    def test_headline_claims_only_verifies_nothing(self) -> None:
        """1,107 vs a median of 170 with no written reconciliation: Q6 does not hold up,
        and with no run nothing else is green."""
        review = reconcile(load_questionnaire(SAMPLES / "headline.yaml"), None)
        statuses = {k: j.status for k, j in review.judgements.items()}
        assert statuses == {"Q1": "unverified", "Q2": "unverified", "Q3": "unverified",
                            "Q4": "unverified", "Q5": "ok", "Q6": "unreconciled"}
        assert review.judgements["Q5"].finding == "gap"
        assert "is 6.5× the production panel's median 170 tokens/s" in \
            review.judgements["Q6"].reason
        assert review.verdict.streaming_ready is False
        assert "but Q6 does not hold up" in review.verdict.text

    def test_headline_claims_fail_against_a_small_endpoint(self) -> None:
        """Against the GPU-like run its 64-stream claims are far beyond what was measured."""
        review = sample("headline")
        statuses = {k: j.status for k, j in review.judgements.items()}
        assert statuses["Q2"] == statuses["Q4"] == statuses["Q6"] == "unreconciled"
        assert statuses["Q1"] == "ok"  # 470 ms p50 / 810 ms p90 at 64 is within its claim
        assert "at 64: holds" in review.judgements["Q1"].reason
        assert review.verdict.streaming_ready is False


class TestPartialInputs:
    def test_claims_only_review_is_never_streaming_ready(self) -> None:
        """With no probe run, consistent measured claims are unverified, each saying what
        would verify them, and the verdict says complete and consistent, not verified."""
        review = reconcile(load_questionnaire(SAMPLES / "forthright.yaml"), None)
        assert [j.status for j in review.judgements.values()] == ["unverified"] * 6
        for qid in ("Q1", "Q2", "Q3", "Q4", "Q6"):
            assert "claims-only review" in review.judgements[qid].reason, qid
            assert "evalkit probe" in review.judgements[qid].reason, qid
            assert review.judgements[qid].measured is None
        assert review.verdict.streaming_ready is False
        assert "complete and consistent" in review.verdict.text
        assert "not verified" in review.verdict.text
        assert {f.fit for f in review.use_cases.values()} == {None}

    def test_claims_only_still_catches_internal_contradictions(self) -> None:
        """p50 above p90 is unreconciled with or without a measurement."""
        text = "Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 16, source: production}\n"
        assert reconcile(q(text), None).judgements["Q1"].status == "unreconciled"

    def test_measurements_without_questionnaire(self) -> None:
        """All answers unanswered, verdict not ready, measurements still judged."""
        review = reconcile(None, SUMMARY, None, RUN)
        assert {j.status for j in review.judgements.values()} == {"unanswered"}
        assert review.verdict.streaming_ready is False
        assert review.verdict.text.startswith("No questionnaire was given")
        assert review.use_cases["voice_agent"].fit is True

    def test_a_run_that_names_no_target_verifies_no_claim(self) -> None:
        """Without knowing what the run probed, it cannot stand for the vendor's endpoint."""
        text = "Q1: {ttft_p90_ms: 300, at_concurrency: 16, source: production}\n"
        j = reconcile(q(text), SUMMARY).judgements["Q1"]
        assert j.status == "unverified"
        assert "does not say which model and endpoint it probed" in j.reason

    @pytest.mark.parametrize(("stands_in", "status"), [
        ({"model": "m-7b", "endpoint": "https://API.vendor.example:443/v1/"}, "ok"),
        ({"model": "m-7b", "endpoint": "https://api.vendor.example/v2"}, "unverified"),
        ({"model": "m-8b", "endpoint": "https://api.vendor.example/v1"}, "unverified"),
    ])
    def test_a_stand_in_run_is_judged_as_the_endpoint_it_played(
            self, stands_in: dict[str, str], status: str) -> None:
        """The demo's reference endpoint plays the vendor's: matched on what it stood in
        for (case, default port and trailing slash aside), not on its own loopback URL."""
        text = "Q1: {ttft_p90_ms: 300, at_concurrency: 16, source: production}\n"
        run = RunTarget("evalkit-reference", "http://127.0.0.1:9/v1", stands_in)
        assert reconcile(q(text), SUMMARY, None, run).judgements["Q1"].status == status

    def test_invalid_run_verifies_nothing_and_says_run_invalid(self) -> None:
        """A run whose baseline never succeeded: no green mark, no fit, RUN INVALID."""
        summary = make_summary()
        summary["validity"] = {"status": "invalid",
                               "reasons": ["baseline: no request succeeded: 6 of 6 failed"]}
        review = sample("forthright", summary)
        statuses = {k: j.status for k, j in review.judgements.items()}
        assert "ok" not in statuses.values()
        assert "the run is invalid (baseline: no request succeeded" in \
            review.judgements["Q2"].reason
        assert review.verdict.streaming_ready is False
        assert review.verdict.text.startswith("RUN INVALID (baseline: no request succeeded")
        assert {f.fit for f in review.use_cases.values()} == {None}
        assert review.reading_speed.fit is None

    def test_degraded_run_is_judged_but_never_ready(self) -> None:
        """Claims are checked on a degraded run, but readiness needs a valid one."""
        summary = make_summary()
        summary["validity"] = {"status": "degraded", "reasons": ["cache: 1 of 4 failed"]}
        review = sample("forthright", summary)
        assert review.judgements["Q2"].status == "ok"
        assert review.verdict.streaming_ready is False
        assert "the run is degraded (cache: 1 of 4 failed)" in review.verdict.text

    def test_client_bound_run_draws_no_capacity_judgement(self) -> None:
        """A claim the run would contradict stays unjudged when the client was the bottleneck."""
        text = "Q1: {ttft_p90_ms: 100, at_concurrency: 16, source: production}\n"
        review = judge(text, make_summary(client_bound=True))
        assert review.judgements["Q1"].status == "unverified"
        assert "client-bound" in review.judgements["Q1"].reason
        assert {f.fit for f in review.use_cases.values()} == {None}
        assert review.reading_speed.fit is None
        headline = sample("headline", make_summary(client_bound=True)).judgements["Q6"]
        assert headline.status == "unreconciled"  # its own numbers contradict each other

    def test_missing_and_garbage_summary_fields_are_not_measured(self) -> None:
        """A summary with holes and wrong types yields 'unverified', never a crash."""
        summary = {"baseline": {"ttft_s": {"p90": "fast"}}, "ramp": {"levels": [
            {"concurrency": 4, "ttft_s": {"p90": float("nan")}}, {"concurrency": "x"}, 7]}}
        text = "Q1: {ttft_p90_ms: 100, at_concurrency: 4, source: production}\n"
        review = judge(text, summary)
        assert review.judgements["Q1"].status == "unverified"
        assert "states no validity" in review.judgements["Q1"].reason
        assert review.use_cases["voice_agent"].fit is None
        summary["validity"] = {"status": "valid"}
        review = judge(text, summary)
        assert review.judgements["Q1"].status == "unverified"
        assert "the run measured no level that decides 4 streams" in \
            review.judgements["Q1"].reason


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


class TestTolerances:
    def test_override_file_changes_the_judgement_and_the_printed_tolerance(
            self, tmp_path: Path) -> None:
        """A looser TTFT tolerance from a file turns 3.3× slower into a hold, and says so."""
        path = tmp_path / "tol.yaml"
        path.write_text("ttft_rel: 2.5\nslo_profiles:\n  voice_agent: {ttft_p90_s: 0.4}\n")
        tol = load_tolerances(path)
        text = "Q1: {ttft_p90_ms: 100, at_concurrency: 16, source: production}\n"
        j = judge(text, SUMMARY, tol).judgements["Q1"]
        assert (j.status, j.tolerance) == ("ok", "one-sided: measured ≤ claimed × 3.5 "
                                                 "(ttft_rel 250%)")
        assert tol.slo_profiles["voice_agent"].ttft_p90_s == 0.4
        assert tol.slo_profiles["voice_agent"].itl_p99_s == 0.3

    def test_json_override_and_reading_speed(self, tmp_path: Path) -> None:
        """A JSON file can raise reading speed; fewer levels then qualify."""
        path = tmp_path / "tol.json"
        path.write_text(json.dumps({"reading_speed_tokens_per_s": 10}))
        fit = streams_at_reading_speed(measurements(SUMMARY), load_tolerances(path))
        assert fit.max_concurrency == 128

    @pytest.mark.parametrize("data, message", [
        ({"ttft_rell": 0.3}, "tolerances: unknown field 'ttft_rell'"),
        ({"ttft_rel": "lots"}, "ttft_rel: expected a number, got 'lots'"),
        ({"ttft_rel": -1}, "ttft_rel: must be greater than 0, got -1"),
        ({"throughput_rel": 1}, "throughput_rel: a shortfall share must be below 1 (0.25 = 25% "
                                "short), got 1"),
        ({"reading_speed_percentile": "p95"}, "reading_speed_percentile: expected one of p50, "
                                              "p90, p99, got 'p95'"),
        ({"slo_profiles": {"voice_agent": {"ttft": 1}}},
         "slo_profiles.voice_agent: unknown field 'ttft'"),
        ([1, 2], "tolerances: expected a mapping, got list"),
    ])
    def test_bad_overrides_are_input_errors(self, data: Any, message: str) -> None:
        """A typo never silently falls back to a default."""
        with pytest.raises(InputError) as info:
            tolerances_from_dict(data)
        assert str(info.value) == message


class TestScorecard:
    def test_scorecard_contract_and_json_safety(self) -> None:
        """The SPEC's keys are present, JSON has no NaN, and each judgement shows its tolerance."""
        summary = make_summary()
        summary["prefill"]["tokens_per_s"] = math.nan
        headline = load_questionnaire(SAMPLES / "headline.yaml")
        card = build_scorecard(headline, summary, Tolerances(),
                               RunTarget(headline.model, headline.endpoint, None, "quick"))
        text = json.dumps(card, allow_nan=False)
        assert json.loads(text)["schema"] == "evalkit.scorecard/1"
        assert card["vendor"] == "Blazefast Cloud"
        assert set(card["verdict"]) == {"streaming_ready", "text"}
        assert list(card["questions"]) == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
        for entry in card["questions"].values():
            assert {"status", "finding", "claimed", "measured", "reason", "tolerance"} <= \
                set(entry)
        assert card["questions"]["Q5"]["finding"] == "gap"
        assert card["questions"]["Q6"]["claimed"]["headline"] == 1107
        assert card["questions"]["Q6"]["claimed"]["panel"] == {"p50": 170, "p90": 520,
                                                               "p99": 767}
        assert set(card["use_cases"]) == {"voice_agent", "live_suggestions",
                                          "interactive_chat", "batch"}
        assert card["streams_at_reading_speed"]["value"] == 256
        assert card["tolerances"]["ttft_rel"] == 0.25
        assert card["review"] == "claims_and_measurements"
        assert card["run"] == {"validity": "valid", "validity_reasons": [],
                               "model": "gpt-oss-120b",
                               "endpoint": "https://api.blazefast.example/v1",
                               "profile": "quick", "stands_in_for": None,
                               "target_mismatch": None}

    def test_empty_scorecard(self) -> None:
        """Neither input: a scorecard that says nothing was given, still valid JSON."""
        card = build_scorecard(None, None)
        json.dumps(card, allow_nan=False)
        assert card["vendor"] == "(vendor not named)"
        assert card["review"] == "empty"
        assert card["run"] is None
        assert card["streams_at_reading_speed"]["value"] is None
        assert {uc["fit"] for uc in card["use_cases"].values()} == {None}


class TestClientBound:
    def test_narrowed_flag_is_preferred(self) -> None:
        """A bound level above the first breach does not void the run (metrics' narrowing)."""
        summary = make_summary(client_bound=True, capacity_judgement_affected=False)
        summary["ramp"]["levels"][-1]["client_bound"] = True  # 512 streams, far above 32
        review = sample("forthright", summary)
        assert review.client_bound is False
        assert review.judgements["Q1"].status == "ok"
        fit = review.reading_speed
        assert (fit.fit, fit.max_concurrency) == (True, 256)
        assert fit.reason.startswith("Holds reading speed up to 256 streams (")
        assert fit.reason.endswith("; not judged at 512: the client was the bottleneck at 512 "
                                   "streams.")

    def test_bound_level_never_decides_a_claim(self) -> None:
        """With 16 client-bound, a claim at 16 is decided by 8 below or 32 above, or not."""
        summary = make_summary(capacity_judgement_affected=False)
        summary["ramp"]["levels"][4]["status"] = "client_bound"  # 16 streams
        verdicts = {ms: judge(f"Q1: {{ttft_p90_ms: {ms}, at_concurrency: 16, "
                              "source: production}\n", summary).judgements["Q1"]
                    for ms in (190, 300, 600)}
        assert verdicts[190].status == "unreconciled"  # 250 ms at 8 is already 1.3× over
        assert "already at 8 streams" in verdicts[190].reason
        assert verdicts[300].status == "unverified"    # holds at 8, fails at 32
        assert verdicts[600].status == "ok"            # 490 ms even at 32
        assert "even at 32 streams" in verdicts[600].reason

    def test_named_first_breach_is_used(self) -> None:
        """The ramp's own first_breach_concurrency is the breaking level when it is given."""
        summary = make_summary()
        summary["ramp"]["first_breach_concurrency"] = 64
        text = "Q4: {max_concurrent_streams_per_node: 64, first_degrades: itl, source: lab}\n"
        j = judge(text, summary).judgements["Q4"]
        assert (j.status, j.measured) == ("ok", {"max_sustained_concurrency": 16,
                                                 "first_degraded": "itl",
                                                 "breaking_concurrency": 64,
                                                 "first_tie_concurrency": None})


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 600), st.floats(allow_nan=True),
              st.text(max_size=5), st.just(10**400)),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(st.sampled_from(
            ["ramp", "levels", "concurrency", "ttft_s", "tpot_s", "itl_s", "p50", "p90", "p99",
             "stream_tokens_per_s", "aggregate_tokens_per_s", "outcomes", "ok", "requests",
             "baseline", "prefill", "tokens_per_s", "client", "client_bound",
             "max_sustained_concurrency", "first_degraded", "first_breach_concurrency"]),
            kids, max_size=5)),
    max_leaves=25)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSONISH, st.sampled_from(["forthright", "evasive", "headline"]))
def test_any_summary_gives_a_json_scorecard(summary: Any, name: str) -> None:
    """Whatever a summary holds, the scorecard is built, JSON-safe, with valid statuses."""
    card = build_scorecard(load_questionnaire(SAMPLES / f"{name}.yaml"), summary,
                           None, RUN)
    json.dumps(card, allow_nan=False)
    statuses = {e["status"] for e in card["questions"].values()}
    assert statuses <= {"ok", "unverified", "unanswered", "unanswerable", "unreconciled"}
    # the samples name another endpoint than RUN: whatever the summary says, only
    # claims that need no measurement (Q5's honest gaps) may be ok
    assert all(e["status"] != "ok" or q == "Q5" for q, e in card["questions"].items())
    assert all(uc["fit"] in (True, False, None) for uc in card["use_cases"].values())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["ttft_rel", "rate_rel", "reading_speed_percentile",
                                        "throughput_rel", "concurrency_rel",
                                        "headline_panel_ratio", "concurrency_match_factor",
                                        "min_reconciliation_chars", "slo_profiles",
                                        "voice_agent", "ttft_p90_s", "label", "batch"]),
                       JSONISH, max_size=4))
def test_any_override_is_tolerances_or_an_input_error(data: dict[str, Any]) -> None:
    """A hostile override file gives tolerances that still judge, or one InputError."""
    try:
        tol = tolerances_from_dict(data)
    except InputError:
        return
    for sample in ("forthright", "headline"):
        card = build_scorecard(load_questionnaire(SAMPLES / f"{sample}.yaml"), SUMMARY, tol)
        json.dumps(card, allow_nan=False)


# ------------------------------------------------------------------ the verdict, pure

QIDS = ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6")


def _judged(finding: str | None = None, **status: str) -> dict[str, Judgement]:
    """Q1..Q6 all `ok` but for the statuses given (and a finding on each of those)."""
    return {qid: Judgement(status.get(qid, "ok"), "r.", {}, None, "t",
                           finding if qid in status else None)  # type: ignore[arg-type]
            for qid in QIDS}


class TestVerdict:
    def test_ready_only_when_q2_q4_q6_are_ok_on_a_valid_run(self) -> None:
        """All six ok on a valid run: ready, and the vendor is named."""
        v = verdict(_judged(), "Acme")
        assert v.streaming_ready is True
        assert v.text.startswith("Acme ") and "Also flagged" not in v.text
        assert verdict(_judged(), None).text.startswith("The vendor ")

    @pytest.mark.parametrize("qid", STREAMING_QUESTIONS)
    @pytest.mark.parametrize(("status", "says"), [
        ("unanswered", "cannot answer"), ("unanswerable", "cannot answer"),
        ("unreconciled", "not hold up"), ("unverified", "could not verify")])
    def test_one_streaming_question_short_of_ok_is_not_ready(
            self, qid: str, status: str, says: str) -> None:
        """Q2 alone, Q4 alone or Q6 alone failing (the others ok) denies readiness, and
        the verdict names that question and why."""
        v = verdict(_judged(**{qid: status}), "Acme")
        assert v.streaming_ready is False
        assert says in v.text
        rest = v.text.replace("Q2, Q4 and Q6", "")  # the three it must answer, named
        assert [q for q in STREAMING_QUESTIONS if q in rest] == [qid], v.text

    def test_what_is_missing_outranks_what_is_broken_and_unverified(self) -> None:
        """Unanswered beats unreconciled beats unverified, each naming only its questions."""
        def named(v: Any) -> list[str]:
            rest = v.text.replace("Q2, Q4 and Q6", "")
            return [q for q in STREAMING_QUESTIONS if q in rest]

        v = verdict(_judged(Q2="unverified", Q4="unreconciled", Q6="unanswered"), "Acme")
        assert ("cannot answer" in v.text, named(v)) == (True, ["Q6"])
        v = verdict(_judged(Q2="unverified", Q4="unreconciled", Q6="unreconciled"), "Acme")
        assert ("not hold up" in v.text, named(v)) == (True, ["Q4", "Q6"])
        v = verdict(_judged(Q2="unverified", Q6="unverified"), "Acme")
        assert ("could not verify" in v.text, named(v)) == (True, ["Q2", "Q6"])

    @pytest.mark.parametrize("qid", ["Q1", "Q3", "Q5"])
    def test_the_other_questions_are_flagged_but_do_not_decide(self, qid: str) -> None:
        """Q1, Q3 or Q5 short of ok leaves the quote ready, and is listed with its status;
        a gap is listed wherever it is found."""
        v = verdict(_judged(**{qid: "unreconciled"}), "Acme")
        assert v.streaming_ready is True
        assert v.text.endswith(f" Also flagged: {qid} unreconciled.")
        gap = verdict(_judged("gap", **{qid: "ok"}), "Acme")
        assert gap.streaming_ready is True
        assert gap.text.endswith(f" Gaps found: {qid}.")

    @pytest.mark.parametrize(("validity", "reasons", "says"), [
        ("invalid", ("baseline: no request succeeded",), "RUN INVALID (baseline: no request"),
        ("invalid", (), "RUN INVALID: "),
        ("degraded", ("cache: 1 of 4 failed",), "the run is degraded (cache: 1 of 4 failed)"),
        ("degraded", (), "the run is degraded, so"),
        ("unknown", (), "the run is unknown"),
        (None, (), "claims-only review"),
    ])
    def test_a_run_that_is_not_valid_never_makes_a_quote_ready(
            self, validity: str | None, reasons: tuple[str, ...], says: str) -> None:
        """Every answer ok is still not ready on an invalid, degraded or missing run."""
        v = verdict(_judged(Q1="unanswered"), "Acme", True, validity, reasons)
        assert v.streaming_ready is False
        assert says in v.text
        assert v.text.endswith("Also flagged: Q1 unanswered.")

    def test_an_invalid_run_outranks_a_missing_questionnaire(self) -> None:
        """RUN INVALID is said first, whatever else is missing."""
        v = verdict(_judged(), None, has_questionnaire=False, validity="invalid")
        assert v.text.startswith("RUN INVALID")
        v = verdict(_judged(), None, has_questionnaire=False, validity="valid")
        assert (v.streaming_ready, v.text.startswith("No questionnaire")) == (False, True)


# ------------------------------------------------------------- each tolerance's edge

EDGES: list[tuple[str, str, str, str | None]] = [
    # (question, yaml, expected status, the tolerance override or None)
    # Q1 ttft_rel 25 %: p90 330 ms at 16 holds a claim of 265 (1.245×), not 263 (1.255×)
    ("Q1", "Q1: {ttft_p90_ms: 265, at_concurrency: 16, source: production}\n", "ok", None),
    ("Q1", "Q1: {ttft_p90_ms: 263, at_concurrency: 16, source: production}\n",
     "unreconciled", None),
    ("Q1", "Q1: {ttft_p90_ms: 263, at_concurrency: 16, source: production}\n", "ok",
     "ttft_rel: 0.3"),
    # ... and the p50 (230 ms) on its own: 185 holds (1.243×), 183 does not (1.257×)
    ("Q1", "Q1: {ttft_p50_ms: 185, ttft_p90_ms: 900, at_concurrency: 16, "
     "source: production}\n", "ok", None),
    ("Q1", "Q1: {ttft_p50_ms: 183, ttft_p90_ms: 900, at_concurrency: 16, "
     "source: production}\n", "unreconciled", None),
    # Q2 throughput_rel 25 %, one-sided: aggregate 844 at 16 holds 1,125 but not 1,127 ...
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1125, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 1100, p90: 1200}}\n", "ok", None),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1127, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 1100, p90: 1200}}\n", "unreconciled", None),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1127, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 1100, p90: 1200}}\n", "ok",
     "throughput_rel: 0.3"),
    # ... a vendor that under-promises is never flagged ...
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 10, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 9, p90: 10}}\n", "ok", None),
    # ... per stream (p50 38.5 at 32, the level above a claim at 20 streams): 51.2 per
    # stream holds even there, 51.4 does not, and 16 below does not contradict it
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 512, at_concurrency: 20, gpus: 2, "
     "source: production, distribution: {p50: 500, p90: 600}}\n", "ok", None),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 514, at_concurrency: 20, gpus: 2, "
     "source: production, distribution: {p50: 500, p90: 600}}\n", "unverified", None),
    # ... and the claim may sit at most 25 % above its own distribution's top
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1000, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 700, p90: 800}}\n", "ok", None),
    ("Q2", "Q2: {output_tokens_per_s_per_gpu: 1001, at_concurrency: 16, gpus: 1, "
     "source: production, distribution: {p50: 700, p90: 800}}\n", "unreconciled", None),
    # Q3 rate_rel 50 %: decode alone 95.2 tokens/s holds 190 per stream, not 191
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "decode_tokens_per_s_per_stream: 190}\n", "ok", None),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "decode_tokens_per_s_per_stream: 191}\n", "unreconciled", None),
    ("Q3", "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
     "decode_tokens_per_s_per_stream: 191}\n", "ok", "rate_rel: 0.6"),
    # Q4 concurrency_rel 25 %: broke at 32, so 40 holds and 41 does not
    ("Q4", "Q4: {max_concurrent_streams_per_node: 41, first_degrades: itl, source: lab}\n",
     "ok", "concurrency_rel: 0.3"),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 20, nodes: 2, first_degrades: itl, "
     "source: lab}\n", "ok", None),
    ("Q4", "Q4: {max_concurrent_streams_per_node: 21, nodes: 2, first_degrades: itl, "
     "source: lab}\n", "unreconciled", None),
    # Q6 headline_panel_ratio 2×: 340 over a median of 170 needs no reconciliation, 341 does
    ("Q6", "headline: {value: 340}\n" + PANEL, "ok", None),
    ("Q6", "headline: {value: 341}\n" + PANEL, "unreconciled", None),
    ("Q6", "headline: {value: 341}\n" + PANEL, "ok", "headline_panel_ratio: 2.1"),
    # ... and a written reconciliation needs 40 characters
    ("Q6", "headline: {value: 1107}\n" + PANEL + "  reconciliation: " + "w" * 40 + "\n",
     "ok", None),
    ("Q6", "headline: {value: 1107}\n" + PANEL + "  reconciliation: " + "w" * 39 + "\n",
     "unreconciled", None),
    ("Q6", "headline: {value: 1107}\n" + PANEL + "  reconciliation: " + "w" * 39 + "\n",
     "ok", "min_reconciliation_chars: 39"),
]


@pytest.mark.parametrize("qid, text, status, override", EDGES,
                         ids=[f"{e[0]}-{e[2]}-{i}" for i, e in enumerate(EDGES)])
def test_claims_just_inside_and_just_outside_each_tolerance(
        qid: str, text: str, status: str, override: str | None) -> None:
    """Each tolerance holds a claim just inside it and flags one just outside, and an
    override moves the edge."""
    import yaml

    tol = tolerances_from_dict(yaml.safe_load(override)) if override else None
    j = judge(text, SUMMARY, tol).judgements[qid]
    assert j.status == status, j.reason


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


# ------------------------------------------------- reading the summary, and numbers shown


class TestReadingTheSummary:
    """What `measurements` and `RunTarget.from_run` make of what they are given."""

    def test_run_target_from_run_json(self) -> None:
        run = {"target": {"model": " m ", "base_url": "http://h/v1"}, "profile": "quick",
               "stands_in_for": {"model": "x"}}
        assert RunTarget.from_run(run) == RunTarget("m", "http://h/v1", {"model": "x"}, "quick")
        assert RunTarget.from_run({"target": {"model": "  "}, "stands_in_for": {}}) == \
            RunTarget(None, None, None, None)
        assert RunTarget.from_run(None) is None and RunTarget.from_run([1]) is None

    def test_levels_outcomes_and_flags(self) -> None:
        summary = {"validity": {"status": "valid"}, "ramp": {
            "levels": [{"concurrency": 0}, {"concurrency": 2.5},
                       {"concurrency": 4, "outcomes": {"ok": 6, "error": 2, "odd": "x"},
                        "status": "client_bound", "stalls": 3},
                       {"concurrency": 8, "requests": 10, "client_bound": True, "status": 7},
                       {"concurrency": 16, "requests": True, "outcomes": {}}],
            "max_sustained_concurrency": 4.0, "first_degraded": "memory",
            "first_breach_concurrency": 8}}
        m = measurements(summary)
        assert m is not None
        assert [lv.concurrency for lv in m.levels] == [4, 8, 16]
        four, eight, sixteen = m.levels
        assert (four.requests, four.failed, four.client_bound, four.status, four.stalls) == (
            8, 2, True, "client_bound", 3)
        assert (eight.requests, eight.failed, eight.client_bound, eight.status) == (
            10, None, True, None)
        assert (sixteen.requests, sixteen.failed) == (None, None)
        assert (m.max_sustained, m.first_degraded, m.first_breach) == (4, None, 8)
        assert m.baseline is None and m.client_bound is False

    def test_the_baseline_is_level_1_unless_the_ramp_measured_1(self) -> None:
        ramp_one = {**_level(1), "aggregate_tokens_per_s": 7.0}
        m = measurements({"validity": {"status": "valid"}, "baseline": _level(1),
                          "ramp": {"levels": [ramp_one]}})
        assert m is not None and m.levels[0].aggregate_tokens_per_s == 7.0
        assert m.baseline is not None and m.baseline.aggregate_tokens_per_s != 7.0

    @pytest.mark.parametrize(("summary", "validity"), [
        ({"validity": {"status": "degraded", "reasons": ["a", 2]}}, ("degraded", ("a", "2"))),
        ({"validity": {"status": "weird"}, "baseline": {"outcomes": {"ok": 0, "error": 3}}},
         ("invalid", ("baseline: no request succeeded: 3 of 3 failed (error 3)",))),
        ({"baseline": {"outcomes": {"ok": 5}}}, ("valid", ())),
        ({"baseline": {"outcomes": {}}},
         ("unknown", ("the summary states no validity and no baseline outcomes",))),
    ])
    def test_validity_as_stated_or_judged_from_the_baseline(
            self, summary: dict[str, Any], validity: tuple[str, tuple[str, ...]]) -> None:
        summary = {**summary, "prefill": {"tokens_per_s": 100.0}}
        m = measurements(summary)
        assert m is not None and (m.validity, m.validity_reasons) == validity

    def test_nothing_measured(self) -> None:
        assert measurements({"validity": {"status": "valid"}}) is None
        assert measurements(None) is None and measurements([]) is None  # type: ignore[arg-type]
        invalid = measurements({"validity": {"status": "invalid"}})
        assert invalid is not None and invalid.levels == ()
        review = reconcile(None, {"validity": {"status": "valid"}})
        assert review.run_validity == "invalid"
        assert review.run_validity_reasons == ("the summary holds no measured level",)

    @pytest.mark.parametrize(("client", "bound"), [
        ({"client_bound": True}, True), ({"client_bound": "yes"}, False),
        ({"client_bound": True, "capacity_judgement_affected": False}, False),
        ({"capacity_judgement_affected": True}, True), ({}, False)])
    def test_client_bound_prefers_the_narrowed_flag(self, client: dict[str, Any],
                                                    bound: bool) -> None:
        m = measurements({"validity": {"status": "valid"}, "baseline": _level(1),
                          "client": client})
        assert m is not None and m.client_bound is bound

    @pytest.mark.parametrize(("a", "b", "same"), [
        ("https://API.x.example:443/v1/", "https://api.x.example/v1", True),
        ("http://x.example:80/v1", "HTTP://x.example/v1", True),
        ("http://x.example:8080/v1", "http://x.example/v1", False),
        ("https://x.example/v1", "http://x.example/v1", False),
        ("https://x.example/v1", "https://x.example/v2", False),
        ("http://x.example:99999/v1", "http://x.example/v1", False),
        (" http://x.example/v1 ", "http://x.example/v1", True),
    ])
    def test_same_endpoint(self, a: str, b: str, same: bool) -> None:
        assert same_endpoint(a, b) is same

    def test_what_stops_a_run_from_standing_for_the_claims(self) -> None:
        named = q("vendor: A\n")
        assert target_mismatch(named, RunTarget("m-7b", RUN.endpoint)) is None
        assert target_mismatch(named, None) is None and target_mismatch(None, RUN) is None
        unnamed = parse_questionnaire(b"schema: evalkit.questionnaire/1\n", "t.yaml")
        said = target_mismatch(unnamed, RunTarget(None, None))
        assert said is not None and said.count(";") == 1
        assert "model and endpoint it probed" in said and "its model and endpoint" in said
        only_model = parse_questionnaire(b"schema: evalkit.questionnaire/1\nmodel: m-7b\n")
        said = target_mismatch(only_model, RUN)
        assert said is not None and "its endpoint," in said and "model and" not in said


class TestNumbersInWords:
    @pytest.mark.parametrize(("seconds", "shown"), [
        (None, "not measured"), (0.9994, "999 ms"), (0.33, "330 ms"), (1.0, "1.00 s"),
        (2.345, "2.35 s")])
    def test_durations(self, seconds: float | None, shown: str) -> None:
        assert fmt_s(seconds) == shown

    @pytest.mark.parametrize(("rate", "shown"), [
        (None, "not measured"), (99.94, "99.9 tokens/s"), (100.0, "100 tokens/s"),
        (1234.5, "1,234 tokens/s")])
    def test_rates(self, rate: float | None, shown: str) -> None:
        assert fmt_rate(rate) == shown


class TestWhatWasMeasured:
    """Each judgement's `measured` holds the figures it rests on, by name (scorecard.json)."""

    def test_measured_figures_per_question(self) -> None:
        text = ("Q1: {ttft_p50_ms: 300, ttft_p90_ms: 400, at_concurrency: 16, "
                "source: production}\n"
                "Q2: {output_tokens_per_s_per_gpu: 800, at_concurrency: 16, gpus: 1, "
                "source: production, distribution: {p50: 780, p90: 900}}\n"
                "Q3: {input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
                "prefill_tokens_per_s: 5000}\n"
                "Q4: {max_concurrent_streams_per_node: 24, first_degrades: itl, source: lab}\n"
                "headline: {value: 300}\n" + PANEL)
        j = judge(text).judgements
        assert j["Q1"].measured == {"concurrency": 16, "ttft_p50_ms": 230.0,
                                    "ttft_p90_ms": 330.0}
        assert j["Q2"].measured == {"concurrency": 16,
                                    "stream_tokens_per_s_p50": pytest.approx(1 / 0.018),
                                    "aggregate_tokens_per_s": pytest.approx(0.95 * 16 / 0.018)}
        assert j["Q3"].measured == {"prefill_tokens_per_s": 4900.0,
                                    "decode_tokens_per_s_per_stream_p50": pytest.approx(
                                        1 / 0.0105),
                                    # a summary without intervals: none shown
                                    "prefill_tokens_per_s_ci": None,
                                    "decode_tokens_per_s_per_stream_p50_ci": None}
        assert j["Q4"].measured == {"max_sustained_concurrency": 16, "first_degraded": "itl",
                                    "breaking_concurrency": 32, "first_tie_concurrency": None}
        assert j["Q6"].claimed["headline_unit"] == "output_tokens_per_s"
        assert set(j["Q6"].measured or {}) == {"baseline_stream_tokens_per_s",
                                               "stream_tokens_per_s_at_16"}

    def test_a_level_reads_requests_before_its_outcomes(self) -> None:
        """`requests` counts every request; outcomes may list only some (then the rest
        failed); with no `requests` the outcomes are the count."""
        summary = {"validity": {"status": "valid"}, "ramp": {"levels": [
            {"concurrency": 2, "requests": 10, "outcomes": {"ok": 8},
             "ttft_s": {"p90": 0.2, "n": 8}},
            {"concurrency": 4, "outcomes": {"ok": 6, "error": 3}}]}}
        m = measurements(summary)
        assert m is not None
        two, four = m.levels
        assert (two.requests, two.failed, two.ttft_s.n) == (10, 2, 8)
        assert (four.requests, four.failed) == (9, 3)

    def test_a_breaking_level_without_the_ramps_word_for_it(self) -> None:
        """No first_breach_concurrency: the first level above the sustained one broke."""
        summary = make_summary()
        summary["ramp"]["first_breach_concurrency"] = None
        text = "Q4: {max_concurrent_streams_per_node: 24, first_degrades: itl, source: lab}\n"
        assert judge(text, summary).judgements["Q4"].measured == {
            "max_sustained_concurrency": 16, "first_degraded": "itl",
            "breaking_concurrency": 32, "first_tie_concurrency": None}


class TestNeighbouringLevels:
    """A claim's own level cannot tell (no such figure there): the levels around it decide,
    and the judgement rests on (and shows) the level that decided it."""

    def _without_ttft_at_16(self) -> dict[str, Any]:
        summary = make_summary()
        summary["ramp"]["levels"][4]["ttft_s"] = {}  # 16 streams: no TTFT figure
        return summary

    def test_the_level_below_contradicts_it(self) -> None:
        text = "Q1: {ttft_p90_ms: 190, at_concurrency: 16, source: production}\n"
        j = judge(text, self._without_ttft_at_16()).judgements["Q1"]  # 250 ms at 8
        assert (j.status, (j.measured or {}).get("concurrency")) == ("unreconciled", 8)
        assert "already at 8 streams" in j.reason

    def test_the_level_above_holds_it(self) -> None:
        text = "Q1: {ttft_p90_ms: 400, at_concurrency: 16, source: production}\n"
        j = judge(text, self._without_ttft_at_16()).judgements["Q1"]
        assert (j.status, (j.measured or {}).get("concurrency")) == ("ok", 32)
        assert "even at 32 streams" in j.reason


class TestShownFigures:
    def test_prices_at_and_above_a_thousand(self) -> None:
        """Below 1,000 a price keeps its cents; from 1,000 on it is whole."""
        j = judge("Q3: {blended_price_per_mtok: 999.5, currency: USD}\n").judgements["Q3"]
        assert "(999.50 USD per million tokens)" in j.reason
        for price, shown in ((1000, "1,000"), (1500.4, "1,500")):
            j = judge(f"Q3: {{blended_price_per_mtok: {price}}}\n").judgements["Q3"]
            assert f"({shown} per million tokens)" in j.reason, j.reason

    def test_a_breach_with_nothing_above_the_sustained_level(self) -> None:
        """A summary that names what degraded but no level past the sustained one: the
        breaking level is unknown, and the claim is judged against the sustained level."""
        summary = make_summary()
        summary["ramp"]["max_sustained_concurrency"] = 512
        text = "Q4: {max_concurrent_streams_per_node: 600, first_degrades: itl, source: lab}\n"
        j = judge(text, summary).judgements["Q4"]
        assert j.measured is not None and j.measured["breaking_concurrency"] is None
        assert j.status == "ok"  # 600 ≤ (512 + 1) × 1.25

    def test_our_distribution_beside_the_panel(self) -> None:
        j = judge("headline: {value: 300}\n" + PANEL).judgements["Q6"]
        base = _level(1)["stream_tokens_per_s"]
        ours = (j.measured or {})["baseline_stream_tokens_per_s"]
        assert {k: v for k, v in ours.items() if k != "ci"} == {
            k: pytest.approx(v) for k, v in base.items()}


def _g(v: float | None) -> str:
    return "none" if v is None else f"{v:g}"


class TestDecide:
    """judging.decide: a one-sided limit against a point or a 95 % interval."""

    @pytest.mark.parametrize(("value", "interval", "limit", "at_most", "decision"), [
        (3.0, None, 3.0, True, "holds"), (3.1, None, 3.0, True, "fails"),
        (3.0, None, 3.0, False, "holds"), (2.9, None, 3.0, False, "fails"),
        (2.0, (1.0, 3.0), 3.0, True, "holds"),    # the whole interval at or under the limit
        (4.0, (3.0, 5.0), 3.0, True, "undecided"),  # touching it from above decides nothing
        (4.0, (3.1, 5.0), 3.0, True, "fails"),
        (4.0, (3.0, 5.0), 3.0, False, "holds"),   # at least: the low end at the limit holds
        (2.0, (1.0, 3.0), 3.0, False, "undecided"),
        (2.0, (1.0, 2.9), 3.0, False, "fails"),
    ])
    def test_the_decision(self, value: float, interval: tuple[float, float] | None,
                          limit: float, at_most: bool, decision: str) -> None:
        got, why = decide(value, interval, limit, at_most=at_most, n=50, q=0.9, fmt=_g)
        assert got == decision
        assert (why == "") == (decision != "undecided")

    def test_how_many_samples_would_decide_it(self) -> None:
        """n × (half-width / distance to the limit)²; an open end needs the samples that
        bound the percentile at all; a value on the limit needs many more."""
        _, why = decide(2.0, (1.0, 5.0), 2.5, at_most=True, n=100, q=0.9, fmt=_g)
        assert "n = 100, 95 % interval 1–5 straddles the limit 2.5" in why
        assert "about 1600 requests there would decide it" in why
        _, why = decide(2.0, (1.0, 5.0), 2.5, at_most=True, n=None, q=0.9, fmt=_g)
        assert "about 16 requests" in why
        _, why = decide(2.5, (1.0, 5.0), 2.5, at_most=True, n=100, q=0.9, fmt=_g)
        assert "many more requests" in why
        _, why = decide(2.0, (None, 5.0), 2.5, at_most=True, n=3, q=0.9, fmt=_g)
        assert "interval unbounded–5" in why
        assert f"at least {samples_for(0.9)} requests" in why
        _, why = decide(2.0, (1.0, None), 2.5, at_most=False, n=3, q=None, fmt=_g)
        assert "interval 1–unbounded" in why and "more requests there" in why


_ABOVE_5, _BELOW_5 = math.nextafter(5.0, math.inf), math.nextafter(5.0, -math.inf)


class TestToleranceRule:
    """judging's one-sided tolerance rule, which every judge and the fit apply: a figure
    exactly at the tolerated edge holds, the next float past it does not, and the good
    side is never bounded (a vendor that under-promises is not flagged)."""

    def test_the_tolerated_edge(self) -> None:
        assert tolerated(100.0, 0.25, at_most=True) == 125.0     # lower is better: +25 %
        assert tolerated(100.0, 0.25, at_most=False) == 75.0     # higher is better: -25 %
        assert tolerated(0.2, 0.5, at_most=True) == pytest.approx(0.3)

    @pytest.mark.parametrize(("value", "at_most", "holds"), [
        (125.0, True, True), (math.nextafter(125.0, math.inf), True, False),
        (math.nextafter(125.0, -math.inf), True, True), (0.0, True, True),
        (75.0, False, True), (math.nextafter(75.0, -math.inf), False, False),
        (math.nextafter(75.0, math.inf), False, True), (1e12, False, True),
    ])
    def test_within_at_and_past_the_edge(self, value: float, at_most: bool,
                                         holds: bool) -> None:
        assert within(value, 100.0, 0.25, at_most=at_most) is holds

    @pytest.mark.parametrize(("value", "at_most", "holds"), [
        (5.0, True, True), (5.0, False, True),                   # the limit itself meets it
        (_ABOVE_5, True, False), (_BELOW_5, True, True),
        (_BELOW_5, False, False), (_ABOVE_5, False, True),
    ])
    def test_meets_a_limit(self, value: float, at_most: bool, holds: bool) -> None:
        assert meets(value, 5.0, at_most=at_most) is holds

    def test_the_words_say_the_rule(self) -> None:
        assert tolerance_words(0.25, "ttft_rel", at_most=True) == (
            "one-sided: measured ≤ claimed × 1.25 (ttft_rel 25%)")
        assert tolerance_words(0.5, "rate_rel", at_most=False) == (
            "one-sided: measured ≥ claimed × 0.5 (rate_rel 50%)")
        assert tolerance_words(0.1, "concurrency_rel", at_most=True, value="claimed",
                               reference="breaking level") == (
            "one-sided: claimed ≤ breaking level × 1.1 (concurrency_rel 10%)")

    @pytest.mark.parametrize(("claimed", "status"), [(40, "ok"), (41, "unreconciled")])
    def test_a_concurrency_claim_at_the_edge(self, claimed: int, status: str) -> None:
        """Q4 against a ramp that broke at 32: 40 is 32 × 1.25 exactly, 41 is past it."""
        j = judge(f"Q4: {{max_concurrent_streams_per_node: {claimed}, first_degrades: itl, "
                  "source: production}\n").judgements["Q4"]
        assert j.status == status, j.reason
        assert j.tolerance == "one-sided: claimed ≤ breaking level × 1.25 (concurrency_rel 25%)"

    @pytest.mark.parametrize(("top", "beyond"), [(1000, False), (999, True)])
    def test_a_throughput_claim_at_its_own_distributions_edge(self, top: int,
                                                              beyond: bool) -> None:
        """Q2's claim against the top of its own distribution: 1,250 is 1,000 × 1.25."""
        j = judge(f"Q2: {{output_tokens_per_s_per_gpu: 1250, at_concurrency: 16, gpus: 1, "
                  f"source: production, distribution: {{p50: 900, p90: 950, p99: {top}}}}}\n"
                  ).judgements["Q2"]
        said = "exceeds the top of its own production distribution (999) by more than 25%"
        assert (said in j.reason) is beyond, j.reason
        # at the edge the claim is consistent, and goes on to be held against our run
        assert ("vs measured" in j.reason) is not beyond, j.reason


def test_rerun_for_names_the_levels_or_the_command() -> None:
    """Without the questionnaire's command: the levels below, at and above the claim."""
    assert rerun_for(20) == "re-run the probe with --levels 10,20,40"
    assert rerun_for(1) == "re-run the probe with --levels 1,2"
    assert rerun_for(3) == "re-run the probe with --levels 1,3,6"
    assert rerun_for(16, "evalkit probe X") == "re-run `evalkit probe X --max-concurrency 32 " \
                                               "--out DIR`"


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


class TestReadingMore:
    def test_intervals_and_outcomes_without_ok(self) -> None:
        summary = {"validity": {"status": "valid"}, "ramp": {
            "levels": [{"concurrency": 2, "requests": 3, "outcomes": {"error": 3},
                        "ttft_s": {"p50": 0.1, "p50_ci": [0.09, 0.11], "p90": 0.2,
                                   "p90_ci": [0.15, None], "p99": 0.3, "p99_ci": [1]},
                        "aggregate_tokens_per_s": 5.0,
                        "aggregate_tokens_per_s_ci": [4.0, 6.0]}],
            "first_degraded": "admission"}}
        m = measurements(summary)
        assert m is not None
        (two,) = m.levels
        assert (two.failed, two.aggregate_ci, m.first_degraded) == (3, (4.0, 6.0), "admission")
        assert two.ttft_s.interval("p50") == (0.09, 0.11)
        assert two.ttft_s.interval("p90") == (0.15, None)
        assert two.ttft_s.interval("p99") is None

    def test_the_baseline_joins_the_ramp_as_level_1(self) -> None:
        summary = {"validity": {"status": "valid"}, "baseline": _level(1),
                   "ramp": {"levels": [_level(2), _level(4)]}}
        m = measurements(summary)
        assert m is not None and [lv.concurrency for lv in m.levels] == [1, 2, 4]

    @pytest.mark.parametrize(("a", "b"), [("http:///v1", "http://xxxx/v1"),
                                          ("https://h/apiX", "https://h/api")])
    def test_endpoints_that_differ(self, a: str, b: str) -> None:
        assert same_endpoint(a, b) is False

    def test_what_the_run_and_the_questionnaire_name_is_clipped(self) -> None:
        model, url = "m" * 70, "https://" + "e" * 90 + "/v1"
        said = target_mismatch(q("vendor: A\n"), RunTarget(model, url)) or ""
        assert f"model {'m' * 59}…," in said and "m" * 60 not in said
        assert f"probed {url[:79]}…," in said and url[:80] not in said
        half = target_mismatch(q("vendor: A\n"), RunTarget("m-7b", None)) or ""
        assert "does not say which model and endpoint it probed" in half


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
        assert j.measured["prefill_tokens_per_s_ci"] == prefill_ci

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


def _tied(first_tie: int | None, ties: tuple[str, ...] = ("ttft",),
          breach: int | None = 32, first: str | None = "itl") -> dict[str, Any]:
    """SUMMARY whose ramp has a tie at `first_tie` (about 400 requests would decide it)."""
    s = json.loads(json.dumps(SUMMARY))
    for lv in s["ramp"]["levels"]:
        if lv["concurrency"] == first_tie:
            lv |= {"status": "tie", "ties": list(ties), "tie_requests": 400}
    s["ramp"] |= {"first_tie_concurrency": first_tie, "first_breach_concurrency": breach,
                  "first_degraded": first,
                  "max_sustained_concurrency": 8 if first_tie == 16 else 16}
    return s


class TestQ4Ties:
    """A tie on the ramp is never `ok`: the claim it could move is unverified, with the
    run that would decide it (more requests at the tied level)."""

    @pytest.mark.parametrize(("claim", "first", "summary", "status", "says"), [
        # no tie: the ramp held 16, broke at 32 on TPOT
        (30, "itl", _tied(None), "ok", "holds"),
        # the tie at 16 may be where it broke: a claim of 30 is not decided
        (30, "itl", _tied(16), "unverified",
         "level 16 is a tie on TTFT (its 95 % interval straddles the limit, n = 200): about "
         "400 requests at 16 streams would decide it"),
        # a claim within the tie's level holds whichever way the tie goes, but the tie
        # (on ttft) could still change what degraded first
        (16, "itl", _tied(16), "unverified", "level 16 is a tie"),
        # the tie is on the claimed metric itself: still within what the tie allows
        (16, "itl", _tied(16, ("itl",)), "ok", "holds"),
        # above the confirmed breach whatever the tie: unreconciled
        (100, "itl", _tied(16), "unreconciled", "the level at which it broke"),
        # a metric neither the breach nor the tie names: unreconciled
        (16, "admission", _tied(16), "unreconciled", "TPOT, not admission, degraded first"),
        # no breach at all, a tie on top of what held: not verified, and why
        (30, "itl", _tied(32, breach=None, first=None), "unverified",
         "the ramp held up to 16 streams and no level breached, but level 32 is a tie"),
    ])
    def test_q4(self, claim: int, first: str, summary: dict[str, Any], status: str,
                says: str) -> None:
        text = (f"Q4: {{max_concurrent_streams_per_node: {claim}, first_degrades: {first}, "
                "source: production}\n")
        j = judge(text, summary).judgements["Q4"]
        assert j.status == status and says in j.reason, j.reason


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


#: a scrape of the vendor's metrics page (summary.json's `vendor_metrics`) that saw our tokens
SCRAPE = {"url": "https://scrape.example/metrics", "engine": "vllm", "scrapes": 6,
          "scrapes_ok": 6, "scrape_errors": [], "per_stream_itl": True,
          "families": {"itl": "vllm:inter_token_latency_seconds"}, "itl_observations": 120}
Q5_PER_STREAM = ("Q5: {observability: per_stream, export: Prometheus itl histogram, "
                 "metrics_url: https://claimed.example/metrics}\n")


def _scraped(vm: dict[str, Any] | None = None, validity: str | None = "valid") -> dict[str, Any]:
    """SUMMARY with the scrape `vm` (none when None) and a stated validity (none when None)."""
    s = json.loads(json.dumps(SUMMARY))
    if vm is not None:
        s["vendor_metrics"] = vm
    if validity is None:
        del s["validity"]
    else:
        s["validity"] = {"status": validity, "reasons": ["baseline: 3 of 20 failed"]}
    return s


class TestQ5AgainstTheScrape:
    """A per-stream claim is checked against the probe's own scrape of the vendor's page."""

    def test_a_scrape_that_counted_our_tokens_is_ok_and_its_figures_are_kept(self) -> None:
        j = judge(Q5_PER_STREAM, _scraped(SCRAPE)).judgements["Q5"]
        assert j.status == "ok"
        assert "our scrape of https://scrape.example/metrics found" in j.reason
        assert "counted 120 inter-token intervals" in j.reason
        assert j.measured == {"url": "https://scrape.example/metrics", "engine": "vllm",
                              "families": {"itl": "vllm:inter_token_latency_seconds"},
                              "per_stream_itl": True, "itl_observations": 120,
                              "scrapes_ok": 6}

    def test_a_failed_scrape_names_the_page_the_probe_scraped_and_why(self) -> None:
        vm = SCRAPE | {"scrapes_ok": 0, "scrape_errors": ["HTTP 404", "HTTP 500"]}
        j = judge(Q5_PER_STREAM, _scraped(vm)).judgements["Q5"]
        assert j.status == "unverified"
        assert "the scrape of https://scrape.example/metrics failed (HTTP 404);" in j.reason

    def test_a_long_scrape_error_is_clipped_at_120_characters(self) -> None:
        error = "ConnectError: " + "e" * 120
        vm = SCRAPE | {"scrapes_ok": 0, "scrape_errors": [error]}
        j = judge(Q5_PER_STREAM, _scraped(vm)).judgements["Q5"]
        assert f"failed ({error[:119]}…);" in j.reason

    def test_a_scrape_without_its_count_or_errors_is_a_failed_one(self) -> None:
        vm = {k: v for k, v in SCRAPE.items() if k not in ("scrapes_ok", "scrape_errors")}
        j = judge(Q5_PER_STREAM, _scraped(vm)).judgements["Q5"]
        assert j.status == "unverified" and "failed (no scrape answered)" in j.reason

    def test_a_long_page_address_is_clipped_at_120_characters(self) -> None:
        url = "https://scrape.example/" + "m" * 120
        vm = SCRAPE | {"url": url, "scrapes_ok": 0, "scrape_errors": ["HTTP 404"]}
        j = judge(Q5_PER_STREAM, _scraped(vm)).judgements["Q5"]
        assert f"the scrape of {url[:119]}… failed" in j.reason

    @pytest.mark.parametrize(("text", "url"), [
        (Q5_PER_STREAM, "https://claimed.example/metrics"),
        ("Q5: {observability: per_stream, export: Prometheus itl histogram}\n", "URL")])
    def test_without_a_scrape_it_names_the_page_to_scrape(self, text: str, url: str) -> None:
        """The vendor's own metrics_url when it gave one, else a placeholder to fill in."""
        j = judge(text, _scraped(None)).judgements["Q5"]
        assert j.status == "unverified" and j.measured is None
        assert j.reason.endswith(f"not verified: the run did not scrape it: re-run the probe "
                                 f"with --metrics-url {url}.")

    @pytest.mark.parametrize(("validity", "why"), [
        ("invalid", "the run is invalid (baseline: 3 of 20 failed), so it verifies nothing"),
        (None, "the run's summary states no validity")])
    def test_a_run_that_verifies_nothing_verifies_no_scrape_either(
            self, validity: str | None, why: str) -> None:
        """Even a scrape that counted our tokens: the run it belongs to is not evidence."""
        j = judge(Q5_PER_STREAM, _scraped(SCRAPE, validity)).judgements["Q5"]
        assert j.status == "unverified"
        assert f"not verified: {why}" in j.reason and "--metrics-url" not in j.reason
        assert j.measured is not None and j.measured["itl_observations"] == 120


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


def test_the_questionnaire_s_model_is_clipped_at_60_characters() -> None:
    said = target_mismatch(q(f"model: {'q' * 70}\n"), RUN) or ""
    assert f"the questionnaire names {'q' * 59}…" in said and "q" * 60 not in said


def _at(c: int, **fields: Any) -> dict[str, Any]:
    """SUMMARY with level `c` changed (a dict value updates the level's own dict)."""
    s = json.loads(json.dumps(SUMMARY))
    for lv in s["ramp"]["levels"]:
        if lv["concurrency"] == c:
            for k, v in fields.items():
                lv[k] = lv[k] | v if isinstance(v, dict) else v
    return s


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


class TestProbeCommand:
    """The command a reviewer is told to run: the questionnaire's endpoint, model and file
    name, each clipped (vendor text), and a placeholder for what it does not name."""

    def test_names_the_file_not_its_folders_on_any_system(self) -> None:
        from evalkit.review.rules import probe_command
        for path in ("C:\\vendors\\q3 answers\\acme.yaml", "/srv/vendors/acme.yaml"):
            said = probe_command(Questionnaire(model="m-7b", endpoint="https://e/v1", path=path))
            assert said == ("evalkit probe --base-url https://e/v1 --model m-7b "
                            "--questionnaire acme.yaml")

    def test_placeholders_for_what_is_not_named(self) -> None:
        from evalkit.review.rules import probe_command
        assert probe_command(Questionnaire()) == (
            "evalkit probe --base-url URL --model MODEL --questionnaire FILE")

    def test_each_part_is_clipped(self) -> None:
        from evalkit.review.rules import probe_command
        url, model, name = "https://" + "e" * 80, "m" * 61, "n" * 61 + ".yaml"
        said = probe_command(Questionnaire(model=model, endpoint=url, path="/x/" + name))
        assert said == (f"evalkit probe --base-url {url[:79]}… --model {model[:59]}… "
                        f"--questionnaire {name[:59]}…")
        whole = probe_command(Questionnaire(model="m" * 60, endpoint=url[:80], path="q.yaml"))
        assert whole == (f"evalkit probe --base-url {url[:80]} --model {'m' * 60} "
                         "--questionnaire q.yaml")


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


class TestQ5Families:
    def test_the_histogram_is_named_and_clipped_at_80(self) -> None:
        name = "vllm:" + "i" * 90
        j = judge(Q5_PER_STREAM, _scraped(SCRAPE | {"families": {"itl": name}})).judgements["Q5"]
        assert f"found the per-token histogram {name[:79]}…, which counted 120" in j.reason

    def test_one_counted_interval_is_enough(self) -> None:
        j = judge(Q5_PER_STREAM, _scraped(SCRAPE | {"itl_observations": 1})).judgements["Q5"]
        assert j.status == "ok" and "which counted 1 inter-token intervals" in j.reason

    @pytest.mark.parametrize(("families", "found"), [
        ({"tpot_req": "tgi_" + "t" * 90}, f"only the request-level tgi_{'t' * 75}… (one mean "
                                          "per request)"),
        ({}, "no inter-token metric at all")])
    def test_without_a_per_stream_histogram_it_says_what_was_found(
            self, families: dict[str, str], found: str) -> None:
        vm = SCRAPE | {"per_stream_itl": False, "families": families}
        j = judge(Q5_PER_STREAM, _scraped(vm)).judgements["Q5"]
        assert j.status == "unreconciled"
        assert f"our scrape of https://scrape.example/metrics found {found}: no per-stream" \
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
        assert j.claimed == {"source": "production", "ttft_p50_ms": 300, "ttft_p90_ms": 300,
                             "at_concurrency": 16}
        assert j.measured == {"concurrency": 16, "ttft_p50_ms": 230.0, "ttft_p90_ms": 330.5}

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
    assert j.claimed == {"source": "production", "output_tokens_per_s_per_gpu": 80,
                         "at_concurrency": 16, "gpus": 1}


def test_a_level_missing_a_figure_is_not_measurable_rather_than_undecided() -> None:
    tol = tolerances_from_dict({"slo_profiles": {"x": {"ttft_p90_s": 1.0}}})
    fit = use_case_fit(measurements(_at(1, ttft_s={"p90": None})), tol)["x"]
    assert (fit.fit, fit.reason) == (None, "Not measurable at 1 stream: TTFT p90 not measured.")


def test_the_questionnaire_s_endpoint_is_clipped_at_80_characters() -> None:
    url = "https://" + "e" * 90 + "/v1"
    said = target_mismatch(q(f"endpoint: {url}\n"), RUN) or ""
    assert f"the questionnaire names {url[:79]}…" in said and url[:80] not in said


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


def test_a_histogram_that_counted_none_of_our_streams_is_unreconciled() -> None:
    j = judge(Q5_PER_STREAM, _scraped(SCRAPE | {"itl_observations": 0})).judgements["Q5"]
    assert j.status == "unreconciled"
    assert ("and https://scrape.example/metrics exports the per-token histogram "
            "vllm:inter_token_latency_seconds, but it counted none of our streams' tokens "
            "while we probed") in j.reason
    # a scrape that flags per-stream ITL but records no histogram name says so in words
    unnamed = SCRAPE | {"itl_observations": 0, "families": {}}
    j = judge(Q5_PER_STREAM, _scraped(unnamed)).judgements["Q5"]
    assert "exports a per-token histogram (its name not recorded), but" in j.reason


def _q3(text: str, summary: Any = SUMMARY) -> Judgement:
    return judge("Q3: {" + text + "}\n", summary).judgements["Q3"]


class TestQ3Details:
    def test_one_price_alone_is_not_separate_prices(self) -> None:
        j = _q3("input_price_per_mtok: 0.1, capacity_model: prefill and decode")
        assert (j.status, j.reason) == (
            "unanswerable", "Q3 does not give separate input and output prices per million "
            "tokens.")
        assert j.claimed == {"input_price_per_mtok": 0.1, "capacity_model": "prefill and decode"}

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
        assert j.measured["decode_tokens_per_s_per_stream_p50_ci"] == [60.0, None]

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
    assert round(j.measured["decode_tokens_per_s_per_stream_p50"], 1) == 95.2
    s["baseline"] = None
    j = _q3("input_price_per_mtok: 0.1, output_price_per_mtok: 0.4, "
            "decode_tokens_per_s_per_stream: 150", s)
    assert j.reason.endswith("not verified: the run did not measure the decode per stream rate "
                             "(run the prefill and baseline phases).")
    assert j.measured == {"prefill_tokens_per_s": None, "decode_tokens_per_s_per_stream_p50": None,
                          "prefill_tokens_per_s_ci": None,
                          "decode_tokens_per_s_per_stream_p50_ci": None}


def _q4(text: str, summary: Any = SUMMARY, tol: Tolerances | None = None) -> Judgement:
    return judge("Q4: {" + text + ", first_degrades: itl, source: production}\n", summary,
                 tol).judgements["Q4"]


class TestQ4Details:
    @pytest.mark.parametrize(("nodes", "said"), [(1, "8 streams per node × 1 node = 8,"),
                                                 (2, "8 streams per node × 2 nodes = 16,")])
    def test_the_nodes_are_counted_in_words(self, nodes: int, said: str) -> None:
        j = _q4(f"max_concurrent_streams_per_node: 8, nodes: {nodes}")
        assert j.status == "ok" and j.reason.startswith(f"Claimed {said} TPOT first vs the ramp")
        assert j.claimed == {"source": "production", "max_concurrent_streams_per_node": 8,
                             "nodes": nodes, "first_degrades": "itl"}
        assert j.measured == {"max_sustained_concurrency": 16, "first_degraded": "itl",
                              "breaking_concurrency": 32, "first_tie_concurrency": None}

    def test_the_tolerance_names_concurrency_rel(self) -> None:
        j = _q4("max_concurrent_streams_per_node: 8",
                tol=tolerances_from_dict({"concurrency_rel": 0.9}))
        assert j.tolerance == "one-sided: claimed ≤ breaking level × 1.9 (concurrency_rel 90%)"

    def test_a_tie_with_nothing_confirmed_says_so_and_keeps_the_tie(self) -> None:
        s = _tied(16, breach=None, first=None)
        s["ramp"]["max_sustained_concurrency"] = None
        j = _q4("max_concurrent_streams_per_node: 30", s)
        assert j.status == "unverified"
        assert "; not verified: no level was confirmed sustained or breached: level 16 is a tie " \
            "on TTFT" in j.reason
        assert j.measured == {"max_sustained_concurrency": None, "first_degraded": None,
                              "breaking_concurrency": None, "first_tie_concurrency": 16}

    def test_a_ramp_that_judged_no_level_names_the_run_that_would(self) -> None:
        s = json.loads(json.dumps(SUMMARY))
        s["ramp"] |= {"first_degraded": None, "max_sustained_concurrency": None}
        j = _q4("max_concurrent_streams_per_node: 30", s)
        assert j.status == "unverified" and j.measured is not None
        assert j.reason.endswith(
            "not verified: the ramp judged no level (re-run `evalkit probe --base-url "
            "https://api.vendor.example/v1 --model m-7b --questionnaire t.yaml "
            "--max-concurrency 60 --out DIR`).")


class TestQ4Edges:
    def test_a_ramp_that_held_the_claim_without_degrading_did_not_see_what_degrades(
            self) -> None:
        s = json.loads(json.dumps(SUMMARY))
        s["ramp"] |= {"first_degraded": None, "max_sustained_concurrency": 16}
        shown = {"max_sustained_concurrency": 16, "first_degraded": None,
                 "breaking_concurrency": None, "first_tie_concurrency": None}
        at = _q4("max_concurrent_streams_per_node: 16", s)
        assert at.status == "unverified" and at.measured == shown
        assert "not verified: the ramp held 16 streams, at least the claim, and nothing " \
            "degraded" in at.reason
        above = _q4("max_concurrent_streams_per_node: 17", s)
        assert above.status == "unverified" and above.measured == shown
        assert "not verified: the ramp held up to 16 streams and stopped below the claim " \
            "without degrading" in above.reason

    def test_a_ramp_that_sustained_no_level_says_so(self) -> None:
        s = json.loads(json.dumps(SUMMARY))
        s["ramp"] |= {"max_sustained_concurrency": None, "first_breach_concurrency": 1}
        j = _q4("max_concurrent_streams_per_node: 8", s)
        assert j.status == "unreconciled"
        assert "vs the ramp, which sustained no level and broke at 1 on TPOT: the claim is 8.0× " \
            "the level at which it broke." in j.reason
        assert j.measured == {"max_sustained_concurrency": None, "first_degraded": "itl",
                              "breaking_concurrency": 1, "first_tie_concurrency": None}

    def test_without_a_breaking_level_the_limit_is_one_above_what_held(self) -> None:
        """Degraded, but no level above the 512 it sustained: the limit is 513 × 1.25."""
        s = json.loads(json.dumps(SUMMARY))
        s["ramp"] |= {"max_sustained_concurrency": 512, "first_breach_concurrency": None}
        assert _q4("max_concurrent_streams_per_node: 641", s).status == "ok"
        over = _q4("max_concurrent_streams_per_node: 700", s)
        assert over.status == "unreconciled" and "broke at None" not in over.reason
        assert ("which sustained 512 and saw TPOT degrade first at a level it does not list: "
                "the claim is 1.4× the level at which it broke") in over.reason
        assert _q4("max_concurrent_streams_per_node: 642", s).status == "unreconciled"

    def test_a_tie_decides_up_to_its_level_times_the_tolerance(self) -> None:
        """A tie on TPOT at 16: a claim of 20 (16 × 1.25) holds, 21 is not decided."""
        ok = _q4("max_concurrent_streams_per_node: 20", _tied(16, ("itl",)))
        assert ok.status == "ok"
        open_ = _q4("max_concurrent_streams_per_node: 21", _tied(16, ("itl",)))
        assert open_.status == "unverified" and "but level 16 is a tie on TPOT" in open_.reason
        assert open_.measured == {"max_sustained_concurrency": 8, "first_degraded": "itl",
                                  "breaking_concurrency": 32, "first_tie_concurrency": 16}


def _q6(text: str, summary: Any = SUMMARY) -> Judgement:
    return judge(text, summary).judgements["Q6"]


ONE_STREAM = "; we measured 95.2 tokens/s per stream (p50) with one stream."


class TestQ6Details:
    """The panel (p50 170 tokens/s) against a headline; headline_panel_ratio is 2×."""

    def test_a_written_reconciliation_explains_the_gap_with_our_figures_beside(self) -> None:
        j = _q6("headline: {value: 1107}\n" + PANEL + WRITTEN)
        assert j.status == "ok"
        assert j.reason == ("Headline 1,107 tokens/s is 6.5× the production panel's median 170 "
                            "tokens/s (last 7 days; limit 2× without a written reconciliation): "
                            "a written reconciliation explains the gap" + ONE_STREAM)
        assert j.claimed["panel"] == {"p50": 170, "p90": 520, "p99": 767}
        assert j.measured is not None and sorted(j.measured) == [
            "baseline_stream_tokens_per_s", "stream_tokens_per_s_at_16"]
        assert round(j.measured["stream_tokens_per_s_at_16"]["p50"], 1) == 55.6

    def test_twice_the_panel_is_within_the_limit(self) -> None:
        j = _q6("headline: {value: 340}\n" + PANEL)
        assert j.status == "ok" and "is 2.0× the production panel's median" in j.reason
        assert ": within the limit" + ONE_STREAM in j.reason

    def test_without_a_headline_the_panel_stands_alone(self) -> None:
        assert _q6(PANEL).reason == ("The production panel (last 7 days) is given and there is "
                                     "no headline figure to reconcile it with" + ONE_STREAM)

    @pytest.mark.parametrize(("head", "panel", "basis"), [
        ("headline: {value: 1107}\n", "{p90: 520, p99: 767}", "the panel has no per-request p50"),
        ("headline: {value: 1107, unit: output_tokens_per_s_per_gpu}\n",
         "{p50: 170, p90: 520}", "the headline is in output_tokens_per_s_per_gpu, the panel "
                                 "per request")])
    def test_a_headline_that_cannot_be_divided_by_the_panel(
            self, head: str, panel: str, basis: str) -> None:
        text = (f"{head}Q6:\n  output_tokens_per_s: {panel}\n  window: w\n  source: production\n")
        j = _q6(text + WRITTEN)
        assert j.status == "ok" and j.reason == (
            f"Headline 1,107 and the panel cannot be divided ({basis}), and a written "
            "reconciliation is given" + ONE_STREAM)

    def test_the_window_may_be_the_distribution_s_and_is_clipped(self) -> None:
        window = "w" * 61
        j = _q6("Q6:\n  output_tokens_per_s: {p50: 170, p90: 520, window: " + window + "}\n"
                "  source: production\n")
        assert j.status == "ok" and f"The production panel ({window[:59]}…) is given" in j.reason

    def test_latency_alone_is_a_panel_and_its_order_is_checked(self) -> None:
        j = _q6("headline: {value: 1107}\nQ6:\n  latency_s: {p50: 1.3, p90: 8.4}\n  window: w\n"
                "  source: production\n")
        assert j.status == "unreconciled" and "panel" not in j.claimed
        assert "cannot be compared (the panel has no per-request p50)" in j.reason
        j = _q6(PANEL + "  latency_s: {p50: 9, p90: 7}\n")
        assert j.reason == ("The panel's latency percentiles 9/7 are not in increasing order, "
                            "so they contradict each other.")

    def test_a_run_without_a_baseline_verifies_no_panel(self) -> None:
        s = json.loads(json.dumps(SUMMARY))
        del s["baseline"]
        j = _q6(PANEL, s)
        assert j.status == "unverified" and j.reason.endswith(
            "not verified against our own measurement: the run has no baseline to set our own "
            "distribution beside it.")


def test_a_contradiction_is_added_to_an_answer_refused_for_another_reason() -> None:
    j = judge("Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 16, source: lab}\n"
              ).judgements["Q1"]
    assert j.status == "unanswerable" and j.reason.endswith(
        " Its numbers also contradict each other: TTFT p50 500 ms is above p90 400 ms.")


def test_a_failure_share_is_said_to_a_tenth_of_a_percent() -> None:
    """20 of 200 (10.0 %) with an interval reaching down to 0.5 %: not decided."""
    s = _at(512, outcomes={"ok": 180, "rejected": 20}, failure_rate_ci=[0.005, 0.15])
    reason = streams_at_reading_speed(measurements(s), Tolerances()).reason
    assert reason.endswith("not judged at 512: not enough evidence: 10.0% of 200 failed, 95 % "
                           "interval 0.5–15.0% straddles 1%.")


def test_a_measured_ttft_of_zero_is_not_the_figure_nearest_its_limit() -> None:
    j = _q1("ttft_p50_ms: 300, ttft_p90_ms: 300, at_concurrency: 16",
            _at(16, ttft_s={"p50": 0.0}))
    assert j.reason.endswith("vs measured p90 330 ms at 16: holds."), j.reason


class TestVerdictWords:
    @pytest.mark.parametrize(("broken", "said"), [({"Q2": "unreconciled"}, "Q2 does not hold up"),
                                                  ({"Q2": "unreconciled", "Q6": "unreconciled"},
                                                   "Q2 and Q6 do not hold up")])
    def test_what_does_not_hold_up_is_counted_and_ends_the_sentence(
            self, broken: dict[str, str], said: str) -> None:
        v = verdict(_judged(**broken), "Acme")
        assert v.streaming_ready is False and said in v.text
        assert v.text.endswith("until reconciled.")

    @pytest.mark.parametrize("validity", ["invalid", "degraded"])
    def test_the_run_s_reason_is_quoted_up_to_200_characters(self, validity: str) -> None:
        reason = "r" * 201
        v = verdict(_judged(), "Acme", validity=validity, validity_reasons=(reason, "other"))
        assert f"({'r' * 199}…)" in v.text and "r" * 200 not in v.text
        whole = verdict(_judged(), "Acme", validity=validity, validity_reasons=(reason[:200],))
        assert f"({'r' * 200})" in whole.text

    def test_nothing_else_flagged_adds_nothing(self) -> None:
        v = verdict(_judged(), "Acme")
        assert v.streaming_ready is True and v.text.endswith("sized for the streaming regime.")


class TestQ5Kept:
    def test_what_the_scrape_said_is_kept_under_its_own_names(self) -> None:
        j = judge(Q5_PER_STREAM, _scraped(SCRAPE | {"scrapes_ok": 0})).judgements["Q5"]
        assert j.measured == {"url": "https://scrape.example/metrics", "engine": "vllm",
                              "families": {"itl": "vllm:inter_token_latency_seconds"},
                              "per_stream_itl": True, "itl_observations": 120,
                              "scrapes_ok": 0}
        assert j.claimed == {"observability": "per_stream", "export": "Prometheus itl histogram",
                             "metrics_url": "https://claimed.example/metrics"}

    def test_an_export_said_beside_none_is_quoted_up_to_80_characters(self) -> None:
        export = "x" * 81
        j = judge(f"Q5: {{observability: none, export: {export}}}\n").judgements["Q5"]
        assert j.status == "unreconciled" and f"({export[:79]}…)" in j.reason


def test_a_run_that_verifies_nothing_judges_no_reading_speed() -> None:
    s = json.loads(json.dumps(SUMMARY))
    s["validity"] = {"status": "invalid", "reasons": ["baseline: all failed"]}
    fit = streams_at_reading_speed(measurements(s), Tolerances())
    assert fit.fit is None and fit.reason.startswith("Not judged: the run is invalid")


def test_the_review_keeps_the_target_mismatch_and_the_client_bound_flag() -> None:
    review = reconcile(q("model: other-model\n"), make_summary(client_bound=True), None, RUN)
    assert review.target_mismatch is not None and "other-model" in review.target_mismatch
    assert review.client_bound is True


@pytest.mark.parametrize(("written", "said"), [("250.7", "251"), ("12.25", "12.2"),
                                               ("0.25", "0.25"), ("1200", "1,200")])
def test_a_claimed_figure_is_said_to_its_significant_digits(written: str, said: str) -> None:
    j = _q1(f"ttft_p90_ms: {written}, at_concurrency: 1")
    assert j.reason == f"TTFT p90 {said} ms is given in isolation (concurrency 1), not under load."


@pytest.mark.parametrize(("written", "said"), [("100.5", "100"), ("1.96", "2.0")])
def test_a_claimed_figure_near_a_format_edge(written: str, said: str) -> None:
    j = _q1(f"ttft_p90_ms: {written}, at_concurrency: 1")
    assert j.reason.startswith(f"TTFT p90 {said} ms is given")


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
        review = reconcile(q("vendor: A\n"), {"schema": "evalkit.summary/1"}, None, RUN)
        assert review.run_validity == "invalid" and review.client_bound is False


class TestQ6Edges:
    def test_a_panel_without_numbers_is_not_claimed_as_a_panel(self) -> None:
        j = _q6("Q6:\n  output_tokens_per_s: {window: w}\n  latency_s: {p50: 1.3, p90: 8.4}\n"
                "  source: production\n")
        assert "panel" not in j.claimed and j.claimed["output_tokens_per_s"] == {"window": "w"}

    def test_without_our_own_p50_nothing_is_set_beside(self) -> None:
        s = json.loads(json.dumps(SUMMARY))
        s["baseline"]["stream_tokens_per_s"] = {"p90": 100.0, "n": 20}
        assert _q6(PANEL, s).reason == ("The production panel (last 7 days) is given and there "
                                        "is no headline figure to reconcile it with.")


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


def test_q4_without_nodes_names_the_claimed_metric_as_the_page_does() -> None:
    """The claim restated: per node, at least that for the endpoint, and the metric it
    says degrades first in the page's words (itl is TPOT)."""
    text = ("Q4: {max_concurrent_streams_per_node: 30, first_degrades: itl, "
            "source: production}\n")
    j = judge(text, _tied(None)).judgements["Q4"]
    assert "30 streams per node (at least 30 for the endpoint), TPOT first" in j.reason


def test_a_prefill_fit_without_a_length_count_says_so_not_none() -> None:
    """An older or hand-made summary gives an interval but no prompt-length count: the
    reason says what is missing instead of 'rests on None prompt lengths'."""
    j = judge(Q3_PRICES + "prefill_tokens_per_s: 9000}\n",
              _with_rates([4000, 12000], None, lengths=None)).judgements["Q3"]
    assert j.status == "unverified" and "None" not in j.reason
    assert ("the summary does not say how many prompt lengths the prefill fit rests on, "
            "so its rate decides nothing; probe with more prompt lengths or repeats") \
        in j.reason
