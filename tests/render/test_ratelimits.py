"""The rate limits on the page: their own section beside the six questions, in words,
shown when claimed or met, escaped like all vendor text, and flagged by --fail-on."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from evalkit.analysis.thresholds import Tolerances
from evalkit.cli import cli
from evalkit.render import pdf, report
from evalkit.render.page import build_page, page_fields
from evalkit.render.ratelimits import rate_limits_text
from evalkit.review.scorecard import build_card
from tests.review.helpers import RUN, SAMPLES, SUMMARY, q, typed
from tests.review.test_ratelimits import BURST_30, STEADY_30, _summary


class TestWords:
    def test_a_whole_window(self) -> None:
        card = build_card(q("rate_limits: {requests_per_minute: 600}"), typed(_summary(STEADY_30)),
                          Tolerances(), RUN)
        assert card.rate_limits is not None
        assert rate_limits_text(card.rate_limits.measured) == (
            "first 429 at 30 requests/min, 3,300 tokens/min (over the 60 s before it); "
            "2 × 429; Retry-After 2 s")

    def test_a_partial_window_says_what_was_offered(self) -> None:
        card = build_card(q("rate_limits: {requests_per_minute: 600}"), typed(_summary(BURST_30)),
                          Tolerances(), RUN)
        assert card.rate_limits is not None
        text = rate_limits_text(card.rate_limits.measured)
        assert "the run saw 3 s of it, 600 requests/min offered" in text

    def test_nothing_measured(self) -> None:
        assert rate_limits_text(None) == "—"


class TestPage:
    def test_its_own_section_with_the_reason(self) -> None:
        card = build_card(q("rate_limits: {requests_per_minute: 600, notes: '<b>x</b>'}"),
                          typed(_summary(STEADY_30)), Tolerances(), RUN)
        ctx = build_page(card, None, {})
        assert ctx.rate_limits is not None and ctx.rate_limits.status == "unreconciled"
        html = pdf.render_html(page_fields(ctx))
        assert "<h2>Rate limits</h2>" in html
        assert "Rejected from 30 requests/min; claimed 600 requests/min" in html
        assert 'id="answer-rate-limits"' in html
        assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
        assert report.flagged(card, ["unreconciled"]) == ["rate_limits"]

    def test_not_shown_when_neither_claimed_nor_met(self) -> None:
        card = build_card(q("vendor: x\n"), typed(SUMMARY), Tolerances(), RUN)
        assert card.rate_limits is not None and card.rate_limits.status == "unanswered"
        ctx = build_page(card, None, {})
        assert ctx.rate_limits is None
        assert "Rate limits" not in pdf.render_html(page_fields(ctx))
        assert "rate_limits" not in report.flagged(card, ["unanswered"])

    def test_unverified_joins_what_the_run_did_not_verify(self) -> None:
        card = build_card(q("rate_limits: {requests_per_minute: 600}"), None, Tolerances(),
                          RUN)
        ctx = build_page(card, None, {})
        assert ctx.rate_limits is not None
        assert ("Rate limits", ctx.rate_limits.reason) in ctx.not_verified


def test_fail_on_names_the_rate_limits_row(tmp_path: Path) -> None:
    """`report --fail-on unverified` on the forthright sample, claims only: its rate limits
    are unverified too, and named as such (they are outside the verdict, not the gate)."""
    out = tmp_path / "card.pdf"
    res = CliRunner().invoke(cli, ["report", "--questionnaire",
                                   str(SAMPLES / "forthright.yaml"), "--out", str(out),
                                   "--fail-on", "unverified"])
    assert res.exit_code == 1, res.output
    assert "rate_limits unverified" in res.stderr
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["rate_limits"]["claimed"]["requests_per_minute"] == 600
    assert "claims-only review" in card["rate_limits"]["reason"]
