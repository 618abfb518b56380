"""The judges' shared rules and words (`evalkit.review.rules`): the run's target, the decision
on intervals, the tolerance rule, the re-run advice."""

from __future__ import annotations

import math
from typing import Any

import pytest

from evalkit.analysis.intervals import samples_for
from evalkit.analysis.summary import measurements
from evalkit.questionnaire.load import parse_questionnaire
from evalkit.questionnaire.model import Questionnaire
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import (
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
from evalkit.rundir.meta import StandIn
from tests.review.helpers import RUN, _level, judge, q, typed

# ------------------------------------------------- reading the summary, and numbers shown


class TestReadingTheSummary:
    """What `measurements` and `RunTarget.from_run` make of what they are given."""

    def test_run_target_from_run_json(self) -> None:
        run = {"target": {"model": " m ", "base_url": "http://h/v1"}, "profile": "quick",
               "stands_in_for": {"model": "x"}}
        assert RunTarget.from_run(run) == RunTarget("m", "http://h/v1", StandIn("x"), "quick")
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
        review = reconcile(None, typed({"validity": {"status": "valid"}}))
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


def test_the_questionnaire_s_model_is_clipped_at_60_characters() -> None:
    said = target_mismatch(q(f"model: {'q' * 70}\n"), RUN) or ""
    assert f"the questionnaire names {'q' * 59}…" in said and "q" * 60 not in said


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


def test_the_questionnaire_s_endpoint_is_clipped_at_80_characters() -> None:
    url = "https://" + "e" * 90 + "/v1"
    said = target_mismatch(q(f"endpoint: {url}\n"), RUN) or ""
    assert f"the questionnaire names {url[:79]}…" in said and url[:80] not in said
