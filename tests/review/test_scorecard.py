"""`scorecard.json` (`evalkit.review.scorecard`): the review as plain, JSON-safe data."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.analysis.thresholds import Tolerances, tolerances_from_dict
from evalkit.errors import InputError
from evalkit.questionnaire.load import load_questionnaire
from evalkit.review.rules import RunTarget
from evalkit.review.scorecard import build_scorecard
from tests.review.helpers import RUN, SAMPLES, SUMMARY, make_summary, typed


class TestScorecard:
    def test_scorecard_contract_and_json_safety(self) -> None:
        """The SPEC's keys are present, JSON has no NaN, and each judgement shows its tolerance."""
        summary = make_summary()
        summary["prefill"]["tokens_per_s"] = math.nan
        headline = load_questionnaire(SAMPLES / "headline.yaml")
        card = build_scorecard(headline, typed(summary), Tolerances(),
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


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 600), st.floats(allow_nan=True),
              st.text(max_size=5), st.just(10**400)),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(st.sampled_from(
            ["ramp", "levels", "concurrency", "ttft_s", "tpot_s", "itl_s", "p50", "p90", "p99",
             "stream_tokens_per_s", "aggregate_tokens_per_s", "outcomes", "ok", "requests",
             "baseline", "prefill", "tokens_per_s", "client", "client_bound",
             "max_sustained_concurrency", "first_degraded", "first_breach_concurrency",
             "rate_limits", "onset", "onset_full_window", "full_window", "window_s",
             "requests_per_minute", "header_limits", "retry_after_s", "peak", "in_flight"]),
            kids, max_size=5)),
    max_leaves=25)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSONISH, st.sampled_from(["forthright", "evasive", "headline"]))
def test_any_summary_gives_a_json_scorecard(summary: Any, name: str) -> None:
    """Whatever a summary holds, the scorecard is built, JSON-safe, with valid statuses
    (a document that is not a JSON object reads as the empty one)."""
    card = build_scorecard(load_questionnaire(SAMPLES / f"{name}.yaml"),
                           typed(summary if isinstance(summary, dict) else {}), None, RUN)
    json.dumps(card, allow_nan=False)
    statuses = {e["status"] for e in card["questions"].values()}
    assert statuses <= {"ok", "unverified", "unanswered", "unanswerable", "unreconciled"}
    # the samples name another endpoint than RUN: whatever the summary says, only
    # claims that need no measurement (Q5's honest gaps) may be ok
    assert all(e["status"] != "ok" or q == "Q5" for q, e in card["questions"].items())
    assert all(uc["fit"] in (True, False, None) for uc in card["use_cases"].values())
    assert card["rate_limits"]["status"] in ("unverified", "unanswered", "unreconciled")


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
        card = build_scorecard(load_questionnaire(SAMPLES / f"{sample}.yaml"), typed(SUMMARY), tol)
        json.dumps(card, allow_nan=False)
