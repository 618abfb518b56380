"""The scorecard's charts as one list (`evalkit.render.charts.listed`): a chart joins
with one line, figures are numbered in that order, a chart with nothing to draw is left
out, and the raster is no chart of a run without records."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.render.charts import captions, listed
from evalkit.render.charts.listed import CHARTS, ChartInputs, draw_charts
from evalkit.render.keyfigures import slo_limits
from evalkit.review.pipeline import review
from evalkit.rundir.digest import RecordDigest

QUESTIONNAIRE = Path(__file__).resolve().parents[2] / "questionnaires" / "headline.yaml"


def test_a_new_chart_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    card = review(None, QUESTIONNAIRE, None).card
    inputs = ChartInputs(card, None, RecordDigest(), slo_limits(card))
    assert listed.streams(inputs) is None  # no records: no raster at all
    # claims only: the vendor's headline is drawn, nothing measured is
    assert [c.caption for c in draw_charts(inputs)] == [captions.CLAIMS_CAPTION]
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><g id="a"/></svg>'
    monkeypatch.setattr(listed, "CHARTS", (*CHARTS, lambda i: None, lambda i: ("mine", svg)))
    drawn = draw_charts(inputs)
    assert [c.caption for c in drawn] == [captions.CLAIMS_CAPTION, "mine"]
    assert 'id="a"' not in str(drawn[1].svg)  # its ids are its own figure's


def test_the_pages_order() -> None:
    assert [c.__name__ for c in CHARTS] == ["claims", "latency", "throughput", "prefill",
                                            "streams", "use_cases", "precision", "voice"]
