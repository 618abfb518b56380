"""Q4–Q6 (`evalkit.review.limits`): the concurrency limit and what degrades first, the vendor's
observability, and its production panel."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalkit.analysis.thresholds import Tolerances, tolerances_from_dict
from evalkit.review.measured import ConcurrencyMeasured, ObservabilityMeasured
from evalkit.review.rules import Judgement
from tests.review.helpers import PANEL, PANEL_RUN, SUMMARY, WRITTEN, _tied, judge


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


class TestQ4FailureKinds:
    """Q4's answer names itl, ttft or admission; a ramp that first saw another kind of
    failure (streams cut, stalled, errors) is unreconciled whatever was claimed, and says
    what the vendor did not disclose."""

    @pytest.mark.parametrize(("kind", "undisclosed"), [
        ("incomplete", "cuts streams it has already begun under load"),
        ("timeout", "stall past the client's deadline under load"),
        ("error", "answers with errors under load"),
        ("precision", "answers under load are not the answers it gives alone"),
        ("length", "outputs under load are cut shorter than alone")])
    @pytest.mark.parametrize("claimed", ["admission", "itl", "ttft"])
    def test_an_undisclosed_failure_is_unreconciled(self, kind: str, undisclosed: str,
                                                    claimed: str) -> None:
        text = (f"Q4: {{max_concurrent_streams_per_node: 16, first_degrades: {claimed}, "
                "source: production}\n")
        j = judge(text, _tied(None, first=kind)).judgements["Q4"]
        assert j.status == "unreconciled", j.reason
        assert "did not disclose" in j.reason and undisclosed in j.reason, j.reason
        assert j.measured is not None and j.measured.first_degraded == kind

    def test_rejections_claimed_as_admission_hold(self) -> None:
        text = ("Q4: {max_concurrent_streams_per_node: 30, first_degrades: admission, "
                "source: production}\n")
        j = judge(text, _tied(None, first="admission")).judgements["Q4"]
        assert j.status == "ok", j.reason


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
        assert j.measured == ObservabilityMeasured(
            "https://scrape.example/metrics", "vllm",
            {"itl": "vllm:inter_token_latency_seconds"}, True, 120, 6)

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
        assert j.measured is not None and j.measured.itl_observations == 120


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


def _q4(text: str, summary: Any = SUMMARY, tol: Tolerances | None = None) -> Judgement:
    return judge("Q4: {" + text + ", first_degrades: itl, source: production}\n", summary,
                 tol).judgements["Q4"]


class TestQ4Details:
    @pytest.mark.parametrize(("nodes", "said"), [(1, "8 streams per node × 1 node = 8,"),
                                                 (2, "8 streams per node × 2 nodes = 16,")])
    def test_the_nodes_are_counted_in_words(self, nodes: int, said: str) -> None:
        j = _q4(f"max_concurrent_streams_per_node: 8, nodes: {nodes}")
        assert j.status == "ok" and j.reason.startswith(f"Claimed {said} TPOT first vs the ramp")
        assert j.claimed.to_dict() == {"source": "production", "max_concurrent_streams_per_node": 8,
                             "nodes": nodes, "first_degrades": "itl"}
        assert j.measured == ConcurrencyMeasured(16, "itl", 32, None)

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
        assert j.measured == ConcurrencyMeasured(None, None, None, 16)

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
        shown = ConcurrencyMeasured(16, None, None, None)
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
        assert j.measured == ConcurrencyMeasured(None, "itl", 1, None)

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
        assert open_.measured == ConcurrencyMeasured(8, "itl", 32, 16)


def _q6(text: str, summary: Any = PANEL_RUN) -> Judgement:
    return judge(text, summary).judgements["Q6"]


ONE_STREAM = ("; the panel's median 170 tokens/s agrees with the 170 tokens/s per stream "
              "(p50) we measured at 16 streams")


class TestQ6Details:
    """The panel (p50 170 tokens/s) against a headline; headline_panel_ratio is 2×."""

    def test_a_written_reconciliation_explains_the_gap_with_our_figures_beside(self) -> None:
        j = _q6("headline: {value: 1107}\n" + PANEL + WRITTEN)
        assert j.status == "ok"
        assert j.reason == ("Headline 1,107 tokens/s is 6.5× the production panel's median 170 "
                            "tokens/s (last 7 days; limit 2× without a written reconciliation): "
                            "a written reconciliation explains the gap" + ONE_STREAM +
                            ", and our best aggregate was 1,829 tokens/s at 512 streams, "
                            "which reaches the headline.")
        assert j.claimed.to_dict()["panel"] == {"p50": 170, "p90": 520, "p99": 767}
        assert j.measured is not None and sorted(j.measured.to_json()) == [
            "baseline_stream_tokens_per_s", "stream_tokens_per_s_at_16", "ttft_s_at_16"]
        assert j.measured.sold is not None and j.measured.sold.shown.p50 == 170

    def test_twice_the_panel_is_within_the_limit(self) -> None:
        j = _q6("headline: {value: 340}\n" + PANEL)
        assert j.status == "ok" and "is 2.0× the production panel's median" in j.reason
        assert ": within the limit" + ONE_STREAM + "." in j.reason

    def test_without_a_headline_the_panel_stands_alone(self) -> None:
        assert _q6(PANEL).reason == ("The production panel (last 7 days) is given and there is "
                                     "no headline figure to reconcile it with" + ONE_STREAM
                                     + ".")

    @pytest.mark.parametrize(("head", "panel", "basis"), [
        ("headline: {value: 1107}\n", "{p90: 520, p99: 767}", "the panel has no per-request p50"),
        ("headline: {value: 1107, unit: output_tokens_per_s_per_gpu}\n",
         "{p50: 170, p90: 520}", "the headline is in output_tokens_per_s_per_gpu, the panel "
                                 "per request")])
    def test_a_headline_that_cannot_be_divided_by_the_panel(
            self, head: str, panel: str, basis: str) -> None:
        text = (f"{head}Q2: {{at_concurrency: 16}}\nQ6:\n  output_tokens_per_s: {panel}\n"
                "  window: w\n  source: production\n")
        j = _q6(text + WRITTEN)
        said = (f"Headline 1,107 and the panel cannot be divided ({basis}), and a written "
                "reconciliation is given")
        if "p50" in panel:  # a panel median is set beside our run
            assert j.status == "ok" and j.reason == said + ONE_STREAM + "."
        else:  # no median: nothing of ours checks the panel
            assert j.status == "unverified" and j.reason == said + (
                "; not verified against our own measurement: the panel gives no per-request "
                "median rate to set beside ours.")

    def test_the_window_may_be_the_distribution_s_and_is_clipped(self) -> None:
        window = "w" * 61
        j = _q6("Q2: {at_concurrency: 16}\nQ6:\n  output_tokens_per_s: {p50: 170, p90: 520, "
                "window: " + window + "}\n"
                "  source: production\n")
        assert j.status == "ok" and f"The production panel ({window[:59]}…) is given" in j.reason

    def test_latency_alone_is_a_panel_and_its_order_is_checked(self) -> None:
        j = _q6("headline: {value: 1107}\nQ6:\n  latency_s: {p50: 1.3, p90: 8.4}\n  window: w\n"
                "  source: production\n")
        assert j.status == "unreconciled" and "panel" not in j.claimed.to_dict()
        assert "cannot be compared (the panel has no per-request p50)" in j.reason
        j = _q6(PANEL + "  latency_s: {p50: 9, p90: 7}\n")
        assert j.reason == ("The panel's latency percentiles 9/7 are not in increasing order, "
                            "so they contradict each other.")

    def test_a_run_without_a_baseline_verifies_no_panel(self) -> None:
        s = json.loads(json.dumps(PANEL_RUN))
        for lv in s["ramp"]["levels"]:
            if lv["concurrency"] == 16:
                lv["client_bound"] = True
        j = _q6(PANEL, s)
        assert j.status == "unverified" and j.reason.endswith(
            "not verified against our own measurement: the run judged no level at the 16 "
            "streams Q2 sells; re-run `evalkit probe --base-url https://api.vendor.example/v1 "
            "--model m-7b --questionnaire t.yaml --max-concurrency 32 --out DIR`.")


class TestQ5Kept:
    def test_what_the_scrape_said_is_kept_under_its_own_names(self) -> None:
        j = judge(Q5_PER_STREAM, _scraped(SCRAPE | {"scrapes_ok": 0})).judgements["Q5"]
        assert j.measured == ObservabilityMeasured(
            "https://scrape.example/metrics", "vllm",
            {"itl": "vllm:inter_token_latency_seconds"}, True, 120, 0)
        assert j.claimed.to_dict() == {"observability": "per_stream",
                                       "export": "Prometheus itl histogram",
                                       "metrics_url": "https://claimed.example/metrics"}

    def test_an_export_said_beside_none_is_quoted_up_to_80_characters(self) -> None:
        export = "x" * 81
        j = judge(f"Q5: {{observability: none, export: {export}}}\n").judgements["Q5"]
        assert j.status == "unreconciled" and f"({export[:79]}…)" in j.reason


class TestQ6Edges:
    def test_a_panel_without_numbers_is_not_claimed_as_a_panel(self) -> None:
        j = _q6("Q6:\n  output_tokens_per_s: {window: w}\n  latency_s: {p50: 1.3, p90: 8.4}\n"
                "  source: production\n")
        assert "panel" not in j.claimed.to_dict()
        assert j.claimed.to_dict()["output_tokens_per_s"] == {"window": "w"}

    def test_without_our_own_p50_at_the_level_sold_nothing_is_verified(self) -> None:
        s = json.loads(json.dumps(PANEL_RUN))
        for lv in s["ramp"]["levels"]:
            if lv["concurrency"] == 16:
                lv["stream_tokens_per_s"] = {"p90": 100.0, "n": 20}
        j = _q6(PANEL, s)
        assert j.status == "unverified" and j.reason == (
            "The production panel (last 7 days) is given and there is no headline figure to "
            "reconcile it with; against our run at 16 streams: our run has no per-stream p50 "
            "there.")


def test_q4_without_nodes_names_the_claimed_metric_as_the_page_does() -> None:
    """The claim restated: per node, at least that for the endpoint, and the metric it
    says degrades first in the page's words (itl is TPOT)."""
    text = ("Q4: {max_concurrent_streams_per_node: 30, first_degrades: itl, "
            "source: production}\n")
    j = judge(text, _tied(None)).judgements["Q4"]
    assert "30 streams per node (at least 30 for the endpoint), TPOT first" in j.reason
