"""The page as one typed value (`evalkit.render.page`): built once, frozen, and the
template reads the Page's fields and nothing else."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jinja2
import pytest
from markupsafe import Markup

from evalkit.render import pdf
from evalkit.render.drawn import PageStamp
from evalkit.render.page import Page, build_page, page_fields
from evalkit.review.pipeline import review
from evalkit.rundir.run import open_run

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
QUESTIONNAIRE = Path(__file__).resolve().parents[2] / "questionnaires" / "headline.yaml"
STAMP = PageStamp("2026-12-05 08:00 UTC", "9.9.9", "ab" * 32, signature_box=True)


@pytest.fixture(scope="module")
def page() -> Page:
    """The fixture run judged against the headline sample, without its charts (seconds)."""
    done = review(RUN, QUESTIONNAIRE, None)
    return build_page(done.card, done.run, {"run.json": "cd" * 32}, STAMP,
                      {"records": {"attached_as": "requests.jsonl.gz"}}, charts=False)


def _strict(page: Page) -> str:
    """The template rendered where any name that is not the Page's is an error."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(pdf.TEMPLATES_DIR),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return env.get_template("scorecard.html.j2").render(css=Markup(""), **page_fields(page))


def test_the_template_reads_only_the_pages_fields(page: Page) -> None:
    html = _strict(page)
    assert "Blazefast Cloud" in html and 'id="field:Q6 status"' in html
    claims_only = build_page(review(None, QUESTIONNAIRE, None).card, None, charts=False)
    assert "No run: this is a claims-only review." in _strict(claims_only)


def test_a_page_is_frozen_and_says_its_stamp(page: Page) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.vendor = "someone else"  # type: ignore[misc]
    assert page.appendix.tool_version == "9.9.9" and page.appendix.tool_digest == "ab" * 6
    assert page.signature_box == pdf.SIGNATURE_BOX_MM
    assert page.appendix.records_attached == "requests.jsonl.gz"
    assert page.appendix.evidence == (("run.json", "cd" * 32),)


def test_the_run_leads_the_key_figures_and_the_questions_are_in_order(page: Page) -> None:
    assert page.key_figures[0][0] == "Run validity"
    assert [q.id for q in page.questions] == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert page.questions[5].status == "unreconciled"
    assert page.date == json.loads((RUN / "run.json").read_text())["started_at"]


def test_records_not_attached_are_a_notice_on_page_one() -> None:
    run = open_run(RUN)
    done = review(None, QUESTIONNAIRE, None, run=run)
    lives = {"records": {"sha256": "ef" * 32, "records": 246, "bytes": 9, "lives_in": "/x"}}
    notices = build_page(done.card, run, {}, STAMP, lives, charts=False).notices
    assert notices[-1].startswith("The 246 request records are not attached")
    assert not any("not attached" in n for n in build_page(
        done.card, run, {}, STAMP, {}, charts=False).notices)
