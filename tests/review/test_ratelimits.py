"""The rate limits reconciled like a claim: hand-built runs (records -> summary.json's
`rate_limits`, by `evalkit.analysis.ratelimits`), then a run against the reference
endpoint rate-limiting for real."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.analysis.frames import records_frame
from evalkit.analysis.jsonread import read_as
from evalkit.analysis.ratelimits import rate_limit_section
from evalkit.analysis.summarize import summarize
from evalkit.analysis.summary_sections import RateLimits
from evalkit.analysis.thresholds import Tolerances
from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.questionnaire.model import RateLimitsAnswer
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer
from evalkit.review.ratelimits import judge_rate_limits
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import STATUSES, Judgement, RunTarget
from evalkit.review.scorecard import Scorecard, build_card
from tests.review.helpers import RUN, SUMMARY, judge, q, typed


def _ok(rid: str, t0: float, headers: dict[str, str] | None = None) -> RequestRecord:
    """An ok request of 100 input and 10 output tokens, 0.3 s long."""
    return RequestRecord(id=rid, phase="baseline", level=1, outcome="ok", t0_s=t0,
                         prompt_tokens=100, output_tokens=10, http_status=200,
                         chunks=[(0.1 + 0.02 * i, 1) for i in range(10)], end_s=0.3,
                         rate_limit_headers=headers)


def _429(rid: str, t0: float, retry: float = 2.0) -> RequestRecord:
    return RequestRecord(id=rid, phase="baseline", level=1, outcome="rejected", t0_s=t0,
                         http_status=429, retry_after_s=retry, end_s=0.004)


def _summary(records: list[RequestRecord], window_s: float = 60.0) -> dict[str, Any]:
    s = json.loads(json.dumps(SUMMARY))
    s["rate_limits"] = rate_limit_section(records_frame(records), window_s)
    return s


#: one request every 2 s for 70 s, rejected from t=70.5 on: 30 in the minute before
STEADY_30 = [_ok(f"r{k}", 2.0 * k) for k in range(36)] + [_429("x", 70.5), _429("y", 71)]
#: a burst of 30 in 3 s, then rejected: 30 in the minute, 600/min offered
BURST_30 = [_ok(f"b{i}", i * 0.1) for i in range(30)] + [_429("x", 3.0)]
#: 40 requests in 20 s and never rejected
UNLIMITED = [_ok(f"u{i}", i * 0.5) for i in range(41)]


def _rl(text: str, records: list[RequestRecord], window_s: float = 60.0) -> Judgement:
    j = judge(text, _summary(records, window_s)).rate_limits
    assert j is not None
    return j


class TestStatuses:
    def test_rejected_well_below_the_claim_names_both_figures(self) -> None:
        """Done-when: a vendor that rejects above 30/min while claiming 600/min."""
        j = _rl("rate_limits: {requests_per_minute: 600, source: production}", STEADY_30)
        assert j.status == "unreconciled"
        assert j.reason.startswith("Rejected from 30 requests/min; claimed 600 requests/min")
        assert j.measured is not None
        at = j.measured.at_rejection
        assert at is not None and at.requests_per_minute == 30.0 and at.full_window is True

    def test_an_honest_claim_within_tolerance_holds(self) -> None:
        for claim in (30, 36, 40):  # 30 ≥ 40 × 0.75
            j = _rl(f"rate_limits: {{requests_per_minute: {claim}, source: production}}",
                    STEADY_30)
            assert j.status == "ok", (claim, j.reason)
            assert "30 requests/min" in j.reason and "Retry-After 2 s" in j.reason
        j = _rl("rate_limits: {requests_per_minute: 41, source: production}", STEADY_30)
        assert j.status == "unreconciled"

    def test_a_run_that_never_reached_the_limit_is_unverified(self) -> None:
        j = _rl("rate_limits: {requests_per_minute: 600, source: production}", UNLIMITED)
        assert j.status == "unverified"
        assert "never rejected with 429" in j.reason
        assert "120 requests/min, scaled from the 20 s it ran" in j.reason
        assert "--rate 15" in j.reason  # 1.5 × 600/min in requests/s

    def test_a_token_limit_reached_explains_the_429(self) -> None:
        """30 requests/min of 110 tokens is 3,300 tokens/min: a claimed 3,000 tokens/min
        limit was reached even though requests stayed under 600/min."""
        j = _rl("rate_limits: {requests_per_minute: 600, tokens_per_minute: 3000}",
                STEADY_30)
        assert j.status == "ok" and "tokens/min limit" in j.reason
        j = _rl("rate_limits: {requests_per_minute: 600, output_tokens_per_minute: 1000}",
                STEADY_30)
        assert j.status == "unreconciled"
        assert "30 requests/min and 300 output tokens/min" in j.reason

    def test_the_concurrency_limit_explains_a_429(self) -> None:
        """Six streams held at once when the 429 came: a claimed limit of 6 streams per
        key explains it (ok), one of 64 does not."""
        recs = [_ok(f"c{i}", 10.0 + i * 0.01) for i in range(6)] + [_429("x", 10.1)]
        recs = [_ok("early", 0.0), *recs]
        six = _rl("rate_limits: {requests_per_minute: 600, concurrent_streams_per_key: 6}",
                  recs)
        assert six.status == "ok" and "concurrent streams limit" in six.reason
        assert six.measured is not None and six.measured.at_rejection.in_flight == 6


class TestPartialWindow:
    """The run began less than a window before its first 429."""

    def test_unreconciled_when_even_the_rate_offered_was_below_the_claim(self) -> None:
        """30 requests in 3 s is 600/min offered: below a claim of 1,000/min either way."""
        j = _rl("rate_limits: {requests_per_minute: 1000}", BURST_30)
        assert j.status == "unreconciled"
        assert j.reason.startswith("Rejected from 30 requests/min; claimed 1,000 requests/min")
        assert "had seen 3 s of the 60 s window" in j.reason
        assert "the rate it offered then (600 requests/min) is below the claim" in j.reason

    def test_undecided_when_the_offered_rate_reached_the_claim(self) -> None:
        """600/min offered, 30 counted: a claim of 600/min is neither confirmed nor
        refuted by 3 s, and never reads ok (fail closed)."""
        j = _rl("rate_limits: {requests_per_minute: 600}", BURST_30)
        assert j.status == "unverified"
        assert "saw only part of that window" in j.reason and "not decided" in j.reason
        assert "(600 requests/min) reached the claim" in j.reason

    def test_ok_when_the_count_alone_reaches_the_claim(self) -> None:
        assert _rl("rate_limits: {requests_per_minute: 30}", BURST_30).status == "ok"

    def test_a_later_whole_window_decides(self) -> None:
        """Burst-rejected at 3 s, then rejected again a minute on at 30/min: that whole
        window decides, against the claim of 600."""
        recs = [*BURST_30, *[_ok(f"s{k}", 4.6 + 2 * k) for k in range(30)], _429("z", 64.5)]
        j = _rl("rate_limits: {requests_per_minute: 600}", recs)
        assert j.status == "unreconciled"
        assert j.reason.startswith("Rejected from 30 requests/min; claimed 600")


#: a window of 4 s, 2 admitted per window, 429s that took 4 ms (`_429`'s end_s). The first
#: request sent 2 ms before the window that ends at the 429 begins: the endpoint, whose
#: clock stamps arrivals, may have counted it
EDGE_BEFORE = [_ok("a", 0.0), _ok("b", 2.0), _429("x", 4.002)]
#: ...and the first sent 2 ms after it began: the endpoint may not have
EDGE_INSIDE = [_ok("z", 0.0), _ok("a", 1.002), _ok("b", 3.0), _429("x", 5.0)]
#: a whole second clear of the edge either way
EDGE_CLEAR = [_ok("a", 1.0), _ok("b", 2.0), _429("x", 4.0)]


class TestTheWindowsEdge:
    def test_a_count_that_turns_on_the_edge_is_unverified_either_way(self) -> None:
        for recs in (EDGE_BEFORE, EDGE_INSIDE):
            j = _rl("rate_limits: {requests_per_minute: 30}", recs, window_s=4.0)
            assert j.status == "unverified", j.reason
            assert "of that window's start" in j.reason and "30 requests/min with them" \
                in j.reason

    def test_clear_of_the_edge_the_count_decides(self) -> None:
        assert _rl("rate_limits: {requests_per_minute: 30}", EDGE_CLEAR,
                   window_s=4.0).status == "ok"
        assert _rl("rate_limits: {requests_per_minute: 60}", EDGE_CLEAR,
                   window_s=4.0).status == "unreconciled"

    def test_a_claim_beyond_even_the_edge_is_unreconciled(self) -> None:
        j = _rl("rate_limits: {requests_per_minute: 60}", EDGE_BEFORE, window_s=4.0)
        assert j.status == "unreconciled" and j.reason.startswith("Rejected from 15 ")

    def test_an_older_summary_without_the_edge_is_judged_on_its_count(self) -> None:
        s = _summary(EDGE_INSIDE, 4.0)
        del s["rate_limits"]["onset"]["edge"]
        j = judge("rate_limits: {requests_per_minute: 30}", s).rate_limits
        assert j is not None and j.status == "ok"


class TestHeaders:
    def test_a_header_stating_another_limit_is_unreconciled_without_a_429(self) -> None:
        recs = [_ok(f"h{i}", float(i), {"x-ratelimit-limit-requests": "30"})
                for i in range(5)]
        j = _rl("rate_limits: {requests_per_minute: 600}", recs)
        assert j.status == "unreconciled"
        assert ("x-ratelimit-limit-requests header says 30, the questionnaire claims 600 "
                "requests/min") in j.reason
        same = _rl("rate_limits: {requests_per_minute: 35}", recs)  # within ±25 %
        assert same.status == "unverified"

    def test_a_header_mismatch_spoils_an_ok(self) -> None:
        recs = [_ok(f"r{k}", 2.0 * k, {"x-ratelimit-limit-tokens": "99999"})
                for k in range(36)] + [_429("x", 70.5)]
        j = _rl("rate_limits: {requests_per_minute: 30, tokens_per_minute: 5000}", recs)
        assert j.status == "unreconciled" and "reaching the claimed requests/min" in j.reason


class TestNothingToJudge:
    def test_unanswered_says_what_the_run_met(self) -> None:
        j = _rl("vendor: x\n", STEADY_30)
        assert j.status == "unanswered"
        assert "first 429 came at 30 requests/min" in j.reason

    def test_unanswerable_without_a_number(self) -> None:
        j = _rl("rate_limits: {scope: per_key, notes: generous}", STEADY_30)
        assert j.status == "unanswerable"

    def test_claims_only_and_another_endpoint_are_unverified(self) -> None:
        text = "rate_limits: {requests_per_minute: 600}"
        alone = reconcile(q(text), None, None, RUN).rate_limits
        assert alone is not None and alone.status == "unverified"
        assert "claims-only review" in alone.reason
        other = reconcile(q(text), typed(_summary(STEADY_30)), None,
                          RunTarget(RUN.model, "https://elsewhere.example/v1")).rate_limits
        assert other is not None and other.status == "unverified"
        assert "elsewhere.example" in other.reason

    def test_an_older_summary_without_the_section_is_unverified(self) -> None:
        j = judge("rate_limits: {requests_per_minute: 600}", SUMMARY).rate_limits
        assert j is not None and j.status == "unverified"
        assert "no rate_limits section" in j.reason

    def test_an_invalid_run_still_measured_its_rejections(self) -> None:
        s = _summary(STEADY_30)
        s["validity"] = {"status": "invalid", "reasons": ["too many rejections"]}
        j = reconcile(q("rate_limits: {requests_per_minute: 600}"), typed(s), None,
                      RUN).rate_limits
        assert j is not None and j.status == "unreconciled"


class TestScorecard:
    def test_scorecard_json_row_and_read_back(self) -> None:
        card = build_card(q("rate_limits: {requests_per_minute: 600, scope: per_key}"),
                          typed(_summary(STEADY_30)), Tolerances(), RUN)
        doc = card.to_json()
        row = doc["rate_limits"]
        assert {"status", "reason", "claimed", "measured"} <= set(row)
        assert row["status"] == "unreconciled"
        assert row["claimed"] == {"requests_per_minute": 600, "scope": "per_key"}
        assert row["measured"]["rejected_429"] == 2
        assert "rate_limits" not in doc["questions"]  # not one of the six
        back = Scorecard.from_json(json.loads(json.dumps(doc)))
        assert back.rate_limits is not None and back.rate_limits.to_json() == row
        assert Scorecard.from_json({}).rate_limits is None

    def test_it_stays_outside_the_verdict(self) -> None:
        honest = judge("rate_limits: {requests_per_minute: 30}", _summary(STEADY_30))
        liar = judge("rate_limits: {requests_per_minute: 600}", _summary(STEADY_30))
        assert honest.verdict == liar.verdict


SECTIONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
              st.text(max_size=5), st.just(10**400)),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(
        ["onset", "onset_full_window", "full_window", "window_s", "at_s", "requests",
         "requests_per_minute", "tokens_per_minute", "output_tokens_per_minute", "in_flight",
         "header_limits", "requests", "tokens", "retry_after_s", "min", "median", "max",
         "peak", "rejected_429"]), kids, max_size=6)),
    max_leaves=30)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["onset", "onset_full_window", "window_s", "peak",
                                        "header_limits", "retry_after_s"]), SECTIONISH,
                       max_size=6))
def test_any_section_gives_a_json_judgement(section: dict[str, Any]) -> None:
    """Whatever summary.json's rate_limits holds (it is a file), a status and JSON."""
    answer = RateLimitsAnswer(requests_per_minute=600, output_tokens_per_minute=9000,
                              concurrent_streams_per_key=4)
    j = judge_rate_limits(answer, read_as(RateLimits, section), None, Tolerances())
    assert j.status in STATUSES and j.reason
    card = build_card(q("rate_limits: {requests_per_minute: 600}"),
                      typed({**SUMMARY, "rate_limits": section}), Tolerances(), RUN)
    json.dumps(card.to_json(), allow_nan=False)


# ------------------------------------------------------ against the reference endpoint


def _run_against(srv: ReferenceServer, seconds: float, every_s: float
                 ) -> list[RequestRecord]:
    """One request every `every_s` for `seconds`, one at a time (like a steady client)."""

    async def run() -> list[RequestRecord]:
        target = Target(srv.base_url, srv.model, tag_requests=True, timeout_s=30)
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            out, began, i = [], time.perf_counter(), 0
            while time.perf_counter() - began < seconds:
                due = began + i * every_s
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                out.append(await prober.stream(synthetic(32, 3, f"p{i}"), "baseline", 1))
                i += 1
            return out

    return asyncio.run(run())


@pytest.fixture
def limited(reference: Callable[..., ReferenceServer]) -> tuple[ReferenceServer,
                                                                 list[RequestRecord]]:
    """The reference endpoint at 30 requests/min over a 4 s window (2 per 4 s), sent one
    request every 0.3 s for 5.5 s: rejected from the third request on, admitted again
    once the first two have left the window (at 4.2 and 4.5 s), rejected at 4.8 s. What
    it checks is the window's count scaled by 60 / 4, not a minute's wait.

    Not every 0.25 s: then the 17th request goes exactly one window after the first, and
    whether the endpoint still counted the first turns on microseconds of transit (CI
    once read 1 of 2 there; the analysis now calls such a count on the window's edge)."""
    srv = reference(mode="thread", rate_limit_rpm=30, rate_limit_window_s=4,
                    request_overhead_ms=0)
    return srv, _run_against(srv, 5.5, 0.3)


def _card(srv: ReferenceServer, records: list[RequestRecord], claim: str,
          window_s: float = 4.0) -> Judgement:
    summary = summarize(records, {"thresholds": {"rate_limit_window_s": window_s}})
    questionnaire = q(f"model: {srv.model}\nendpoint: {srv.base_url}\n{claim}")
    j = reconcile(questionnaire, typed(summary), None,
                  RunTarget(srv.model, srv.base_url)).rate_limits
    assert j is not None
    return j


@pytest.mark.slow  # real HTTP for a few seconds: outside the mutation runs' selection
class TestAgainstTheReference:
    def test_a_claim_20_times_the_limit_is_unreconciled(self, limited: Any) -> None:
        srv, recs = limited
        truth = srv.truth()
        rejected = [t for t in truth if t.get("rejected_by")]
        assert len(rejected) == sum(r.outcome == "rejected" for r in recs) > 0
        j = _card(srv, recs, "rate_limits: {requests_per_minute: 600, source: production}")
        assert j.status == "unreconciled", j.reason
        assert "30 requests/min" in j.reason and "600 requests/min" in j.reason
        assert j.measured is not None
        at = j.measured.at_rejection
        # the truth log's admitted requests in the 4 s before that 429: the allowance, 2
        assert at is not None and at.full_window is True and at.requests == 2
        assert at.requests_per_minute == 30.0
        # ...and the header said so too
        assert j.measured.stated_limits["requests"] == 30.0
        assert "x-ratelimit-limit-requests header says 30" in j.reason
        retry = j.measured.retry_after_s
        assert retry is not None and retry.min is not None and retry.max is not None
        assert 1 <= retry.min <= retry.max <= 4

    def test_an_honest_claim_is_ok(self, limited: Any) -> None:
        srv, recs = limited
        j = _card(srv, recs, "rate_limits: {requests_per_minute: 30, source: production}")
        assert j.status == "ok", j.reason

    def test_a_run_that_never_hits_the_limit_is_unverified(
            self, reference: Callable[..., ReferenceServer]) -> None:
        srv = reference(mode="thread", rate_limit_rpm=600, rate_limit_window_s=4,
                        request_overhead_ms=0)  # 40 per 4 s
        recs = _run_against(srv, 2.0, 0.25)
        assert all(r.outcome == "ok" for r in recs)
        j = _card(srv, recs, "rate_limits: {requests_per_minute: 600}")
        assert j.status == "unverified" and "never rejected" in j.reason
