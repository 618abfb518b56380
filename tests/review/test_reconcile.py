"""The reconciliation engine: each status from a questionnaire built to trigger it.

The measured side is a synthetic `evalkit.summary/1` dict with known truth: a GPU-like
endpoint whose decode step grows 0.5 ms per running stream (TPOT p50 = 10 + 0.5·c ms),
TTFT p90 = 170 + 10·c ms, so every expected number below can be worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.analysis.summary import measurements
from evalkit.analysis.thresholds import tolerances_from_dict
from evalkit.questionnaire.load import load_questionnaire
from evalkit.review.measured import ConcurrencyMeasured
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import RunTarget
from evalkit.rundir.meta import StandIn
from tests.review.helpers import (
    PANEL,
    PANEL_RUN,
    RUN,
    SAMPLES,
    SUMMARY,
    WRITTEN,
    _level,
    forthright_run,
    judge,
    make_summary,
    q,
    sample,
    typed,
)

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
     "unreconciled", "no written reconciliation is given"),
    ("Q6", "model: another-model\nheadline: {value: 300}\n" + PANEL, "unverified",
     "the run probed model m-7b, the questionnaire names another-model"),
]

#: statuses that carry the `gap` finding in the table above (qid, yaml prefix)
GAPS = {("Q5", "Q5: {observability: none}\n"),
        ("Q5", "Q5: {observability: request_level, export: Prometheus histogram}\n"),
        ("Q3", "Q3: {blended_price_per_mtok: 0.9, currency: USD}\n"),
        # 0.78 tokens/s per stream is below reading speed: no streaming capacity
        *{(c[0], c[1]) for c in CASES if "at_concurrency: 1024, gpus: 1" in c[1]}}


@pytest.mark.parametrize("qid, text, status, reason", CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_each_status_is_triggered(qid: str, text: str, status: str, reason: str) -> None:
    """A questionnaire built to trigger a status gets it, with a reason naming the numbers,
    and the `gap` finding exactly where an honest answer reveals one."""
    judgement = judge(text, PANEL_RUN if qid == "Q6" else SUMMARY).judgements[qid]
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
        review = sample("forthright", forthright_run())
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
        review = reconcile(None, typed(SUMMARY), None, RUN)
        assert {j.status for j in review.judgements.values()} == {"unanswered"}
        assert review.verdict.streaming_ready is False
        assert review.verdict.text.startswith("No questionnaire was given")
        assert review.use_cases["voice_agent"].fit is True

    def test_a_run_that_names_no_target_verifies_no_claim(self) -> None:
        """Without knowing what the run probed, it cannot stand for the vendor's endpoint."""
        text = "Q1: {ttft_p90_ms: 300, at_concurrency: 16, source: production}\n"
        j = reconcile(q(text), typed(SUMMARY)).judgements["Q1"]
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
        run = RunTarget("evalkit-reference", "http://127.0.0.1:9/v1", StandIn(**stands_in))
        assert reconcile(q(text), typed(SUMMARY), None, run).judgements["Q1"].status == status

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
        summary = forthright_run()
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
        assert (j.status, j.measured and j.measured.to_json()) == ("ok", {
            "max_sustained_concurrency": 16, "first_degraded": "itl", "breaking_concurrency": 64,
                                                 "first_tie_concurrency": None})


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
    j = judge(text, PANEL_RUN if qid == "Q6" else SUMMARY, tol).judgements[qid]
    assert j.status == status, j.reason


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
                "headline: {value: 300}\n" + PANEL.replace("Q2: {at_concurrency: 16}\n", ""))
        j = judge(text).judgements
        assert j["Q1"].measured.to_json() == {"concurrency": 16, "ttft_p50_ms": 230.0,
                                    "ttft_p90_ms": 330.0}
        assert j["Q2"].measured.to_json() == {"concurrency": 16,
                                    "stream_tokens_per_s_p50": pytest.approx(1 / 0.018),
                                    "aggregate_tokens_per_s": pytest.approx(0.95 * 16 / 0.018)}
        assert j["Q3"].measured.to_json() == {"prefill_tokens_per_s": 4900.0,
                                    "decode_tokens_per_s_per_stream_p50": pytest.approx(
                                        1 / 0.0105),
                                    # a summary without intervals: none shown
                                    "prefill_tokens_per_s_ci": None,
                                    "decode_tokens_per_s_per_stream_p50_ci": None}
        assert j["Q4"].measured == ConcurrencyMeasured(16, "itl", 32, None)
        assert j["Q6"].claimed.headline_unit == "output_tokens_per_s"
        assert set(j["Q6"].measured.to_json()) == {"baseline_stream_tokens_per_s",
                                               "stream_tokens_per_s_at_16", "ttft_s_at_16"}

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
        assert judge(text, summary).judgements["Q4"].measured == ConcurrencyMeasured(
            16, "itl", 32, None)


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
        assert (j.status, j.measured and j.measured.concurrency) == ("unreconciled", 8)
        assert "already at 8 streams" in j.reason

    def test_the_level_above_holds_it(self) -> None:
        text = "Q1: {ttft_p90_ms: 400, at_concurrency: 16, source: production}\n"
        j = judge(text, self._without_ttft_at_16()).judgements["Q1"]
        assert (j.status, j.measured and j.measured.concurrency) == ("ok", 32)
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
        assert j.measured is not None and j.measured.breaking_concurrency is None
        assert j.status == "ok"  # 600 ≤ (512 + 1) × 1.25

    def test_our_distribution_beside_the_panel(self) -> None:
        j = judge("headline: {value: 300}\n" + PANEL).judgements["Q6"]
        base = _level(1)["stream_tokens_per_s"]
        ours = j.measured.baseline.to_json()
        assert {k: v for k, v in ours.items() if k != "ci"} == {
            k: pytest.approx(v) for k, v in base.items()}


def test_a_contradiction_is_added_to_an_answer_refused_for_another_reason() -> None:
    j = judge("Q1: {ttft_p50_ms: 500, ttft_p90_ms: 400, at_concurrency: 16, source: lab}\n"
              ).judgements["Q1"]
    assert j.status == "unanswerable" and j.reason.endswith(
        " Its numbers also contradict each other: TTFT p50 500 ms is above p90 400 ms.")


def test_the_review_keeps_the_target_mismatch_and_the_client_bound_flag() -> None:
    review = reconcile(q("model: other-model\n"), typed(make_summary(client_bound=True)), None, RUN)
    assert review.target_mismatch is not None and "other-model" in review.target_mismatch
    assert review.client_bound is True


def test_a_summary_with_nothing_measured_keeps_its_reasons() -> None:
    """A summary whose records were all left out (issue 26: none was evidence of the run)
    is invalid for holding no level, and still says why it holds none."""
    why = "requests.jsonl: 12 records repeat an earlier record's id (lines 2, 3, 4, 5, 6, …)"
    rec = reconcile(None, typed({"schema": "evalkit.summary/1", "requests": 1,
                           "validity": {"status": "degraded", "reasons": [why, 7]}}))
    assert rec.run_validity == "invalid"
    assert rec.run_validity_reasons == ("the summary holds no measured level", why)
    assert reconcile(None, typed({"validity": "x"})).run_validity_reasons == (
        "the summary holds no measured level",)
