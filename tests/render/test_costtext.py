"""The scorecard's words and chart on cost, from a scorecard built by hand."""

from __future__ import annotations

from typing import Any

from evalkit.render.charts.cost import cost_vs_concurrency
from evalkit.render.costtext import blended_rows, cost_context, cost_line
from evalkit.review.costcard import Cost

LABELS = {"voice_agent": "voice agent", "live_suggestions": "live suggestions"}


def _cost(**kw: Any) -> Cost:
    return Cost.from_json(_doc(**kw))


def _doc(**kw: Any) -> dict[str, Any]:
    level = {"per_session": 2e-5, "per_million_output_tokens": 0.6,
             "per_million_slo_tokens": {"voice_agent": 1.2, "live_suggestions": 0.6}}
    return {"currency": "USD", "per_million_output_tokens": 0.6,
            "per_million_output_tokens_ci": [0.59, 0.61], "per_session": 2e-5,
            "per_session_ci": [1.9e-5, 2.1e-5], "per_stream_hour": 0.08,
            "per_stream_hour_ci": [0.078, 0.081], "prefill_share": 0.25,
            "per_million_slo_tokens": {"voice_agent": 1.2, "live_suggestions": None},
            "basis": "Q3's separate prices", "concurrency": 4, "concurrency_sold": 4,
            "levels": [{"concurrency": c, **level} for c in (1, 2, 4)],
            "at_slo": {"voice_agent": {"concurrency": 2, "per_session": 2e-5,
                                       "per_stream_hour": 0.1, "per_million_slo_tokens": 1.2},
                       "live_suggestions": {"concurrency": None}}, **kw}


def test_page_one_line_at_the_concurrency_sold() -> None:
    assert cost_line(_cost()) == (
        "Cost at the 4 streams sold",
        "0.0000200 USD [95 %: 0.0000190–0.0000210] a session · 0.0800 USD "
        "[95 %: 0.0780–0.0810] a stream-hour")
    label, text = cost_line(_cost(concurrency_sold=8)) or ("", "")
    assert label.startswith("Cost at 4 streams (not the concurrency sold")
    assert text.endswith("a stream-hour")
    assert cost_line(None) is None


def test_no_prices_say_why_and_show_no_table() -> None:
    cost = Cost.from_json({"currency": None, "per_session": None,
                           "basis": "Q3 gives no price"})
    assert cost_line(cost) == ("Cost", "not costed: Q3 gives no price")
    ctx = cost_context(cost, LABELS)
    assert ctx.rows == () and ctx.at_slo == () and ctx.basis == "Q3 gives no price"


def test_section_rows_and_the_slo_levels() -> None:
    ctx = cost_context(_cost(currency="EUR <b>"), LABELS)
    rows = dict(ctx.rows)
    assert rows["Prefill (input) share of it"] == "25%"
    assert rows["Per million output tokens within the voice agent SLO"] == "1.20 EUR <b>"
    assert rows["Per million output tokens within the live suggestions SLO"] == (
        "— (no request met it)")
    at = dict(ctx.at_slo)
    assert at["live suggestions"] == "no level within the SLO"
    assert at["voice agent"].startswith("at 2 streams: 0.0000200 EUR <b> a session")


def test_blended_rows() -> None:
    cost = _cost(blended={"rows": [{"ratio": "1:4", "blended": 1e-6, "separate": 3e-6}]})
    assert blended_rows(cost) == [("1:4", "0.00000100 USD", "0.00000300 USD")]


def test_the_chart_draws_each_slo_and_its_highest_level() -> None:
    svg = cost_vs_concurrency(_cost(), LABELS) or ""
    assert "a session within the voice agent SLO" in svg
    assert "highest level within the voice agent SLO" in svg
    # live suggestions has no level within it: no vertical for it
    assert "highest level within the live suggestions SLO" not in svg
    assert cost_vs_concurrency(_cost(levels=[]), LABELS) is None
    assert cost_vs_concurrency(Cost(), LABELS) is None


def test_a_workload_session_shows_its_cost_with_its_failures_carried() -> None:
    rows = [{"users": 4, "shape": "chat", "units": 2, "per_unit": 2e-5,
             "per_unit_ci": [1.8e-5, 2.2e-5], "failed_units": 1, "spent_failed": 6e-6,
             "per_unit_with_failed": 2.3e-5, "client_bound": False},
            {"users": 8, "shape": "coder\u202e", "units": 3, "per_unit": 4e-5,
             "per_unit_ci": None, "failed_units": 0, "spent_failed": 0.0,
             "per_unit_with_failed": 4e-5, "client_bound": True},
            {"users": 8, "shape": "old", "units": 3, "per_unit": 4e-5, "per_unit_ci": None,
             "failed_units": None, "spent_failed": None, "per_unit_with_failed": None}]
    got = dict(cost_context(_cost(workload=rows), LABELS).workload)
    assert got["chat at 4 users: one complete unit (mean of 2)"] == (
        "0.0000200 USD [95 %: 0.0000180–0.0000220]; 0.0000230 USD with the 1 failed unit's "
        "served turns (0.00000600 USD) carried")
    bound = next(v for k, v in got.items() if k.startswith("coder"))
    assert bound == "0.0000400 USD"  # no failed unit: nothing to carry
    assert any("[U+202E]" in k and k.endswith("(client-bound level)") for k in got)
    assert got["old at 8 users: one complete unit (mean of 3)"].endswith(
        "(failed units not summed: an older summary)")
