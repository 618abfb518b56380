"""The report's sentences (`evalkit.render.pagetext`): the client check in words."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.analysis.jsonread import read_as
from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_checks import Client


@pytest.mark.parametrize(("client", "expected"), [
    ({"client_bound": True, "capacity_judgement_affected": True},
     "CLIENT-BOUND: no capacity judgement is drawn from this run"),
    ({"client_bound": True, "capacity_judgement_affected": False,
      "client_bound_phases": ["connect"], "client_bound_levels": [64]},
     "client-bound in connect, level 64 only; the capacity judgement is unaffected"),
    ({"client_bound": True}, "CLIENT-BOUND: no capacity judgement is drawn from this run"),
    ({"client_bound": False}, "the client was not the bottleneck"),
    ({}, "not checked"),
])
def test_client_verdict_separates_a_void_judgement_from_a_confined_bound(
        client: dict[str, Any], expected: str) -> None:
    """Page one and the appendix say the same thing, from the same function."""
    from evalkit.render.pagetext import client_verdict

    assert client_verdict(read_as(Client, client)) == expected


@pytest.mark.parametrize(("first", "says"), [
    ("incomplete", "2 streams; cut streams (incomplete) degraded first at 4 streams"),
    ("admission", "2 streams; rejected requests (admission) degraded first at 4 streams"),
    ("timeout", "streams timed out after they began degraded first"),
    ("error", "failed requests (errors) degraded first"),
])
def test_a_failure_breach_is_said_by_what_failed(first: str, says: str) -> None:
    """Cut streams are not refusals: the page names the failure the ramp saw."""
    from evalkit.render.pagetext import max_sustained_text

    summary = {"ramp": {"max_sustained_concurrency": 2, "first_degraded": first,
                        "first_breach_concurrency": 4}}
    assert says in max_sustained_text(Summary.from_json(summary))


def test_a_level_short_of_its_load_is_said_judged_or_not() -> None:
    """The page says which levels held fewer streams than their name, and whether each was
    left unjudged or judged at its breach all the same."""
    from evalkit.render.pagetext import max_sustained_text

    def level(c: int, status: str, mean: float) -> dict[str, Any]:
        return {"concurrency": c, "status": status, "achieved_concurrency": {
            "mean": mean, "nominal": c, "underloaded": mean < 0.9 * c}}

    summary = {"ramp": {"max_sustained_concurrency": 2, "first_degraded": "admission",
                        "first_breach_concurrency": 8,
                        "levels": [level(2, "sustained", 2.0), level(4, "underloaded", 2.9),
                                   level(8, "breached", 5.5)]}}
    text = max_sustained_text(Summary.from_json(summary))
    assert "level 4 held a mean of 2.9 streams in flight: not judged at 4" in text
    assert "level 8 held a mean of 5.5 streams in flight and breached all the same" in text
    assert "level 2 held" not in text


def test_page_one_shows_the_highest_level_within_each_slo() -> None:
    from evalkit.analysis.summarize import summarize
    from evalkit.render.pagetext import key_figures
    from tests.analysis.helpers import closed_loop

    recs = closed_loop("ramp", 1, 20) + closed_loop("ramp", 2, 10, t_start=50.0)
    figs = dict(key_figures(Summary.from_json(summarize(recs))))
    label = "Highest level within each SLO (≥ 99% of requests meeting it)"
    assert figs[label] == ("voice agent: ≥ 2 streams · live suggestions: ≥ 2 streams · "
                           "interactive chat: ≥ 2 streams")
    doc = summarize(recs)
    doc["ramp"]["max_goodput_concurrency"]["voice_agent"] = None
    doc["ramp"]["max_goodput_is_lower_bound"]["live_suggestions"] = False
    assert dict(key_figures(Summary.from_json(doc)))[label].startswith(
        "voice agent: none (not even the lowest level) · live suggestions: 2 streams")
    del doc["ramp"]["max_goodput_concurrency"]
    assert dict(key_figures(Summary.from_json(doc)))[label].startswith("not measured")
