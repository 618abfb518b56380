"""`verify` draws a scorecard's pages again from its evidence and compares what the
document draws with them, field by field: a genuine scorecard whose vendor writes status
words and badges verifies, and a white box with new words over the verdict, a figure drawn
over another, an image or an annotation laid on a status, an appended page, each fail with
its page and place named, signed or not.

The hostile PDFs are made as someone holding the file would make them: pypdf's overlay
(`merge_page`) on the unsigned scorecard, pyHanko's incremental writer on the signed one.
The pages are drawn again once per evidence in a process (`evalkit.verify.redraw`), so
these tests share one drawing of the session's scorecard.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pypdf
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalkit.cli import cli
from evalkit.render.sign import SigningKey, sign_pdf
from tests.verify.conftest import HOSTILE_VENDOR, PASS_ENV, PASSPHRASE, Keys, Scorecards
from tests.verify.helpers import (
    append_page,
    cover,
    draw_after_signing,
    overlay,
    rewritten,
    text_box,
)

PdfFile = Callable[..., Path]


def _verify(path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["verify", str(path), *args])


def _differences(res: Result) -> list[str]:
    return [ln.removeprefix("  difference: ") for ln in res.output.splitlines()
            if ln.startswith("  difference: ")]


def _edited(scorecards: Scorecards, signed: bool, page: int, ops: bytes) -> bytes:
    """The scorecard with `ops` drawn over a page: overlaid on the unsigned one, appended
    after signing to the signed one."""
    if signed:
        return draw_after_signing(scorecards.signed, page, ops)
    return overlay(scorecards.unsigned, page, ops)


def test_a_vendor_named_with_status_words_and_badges_verifies(
        scorecards: Scorecards, pdf_file: PdfFile) -> None:
    """The name comes before the table on page one; its badges and words are read as the
    vendor's name, where the renderer put it, never as statuses."""
    text = pypdf.PdfReader(io.BytesIO(scorecards.unsigned)).pages[0].extract_text()
    assert HOSTILE_VENDOR.split()[1:3] == ["✗", "unreconciled"]
    assert "✗ unreconciled ✓ ok ✓ ok" in text  # the name really is on the page, first
    res = _verify(pdf_file(scorecards.unsigned))
    assert res.exit_code == 0, res.output
    assert re.search(r"^verified: \d+ figures and 6 statuses re-derived from the attached "
                     r"evidence; its 10 pages draw what the evidence draws$", res.output, re.M)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "edited-after-signing"])
class TestDrawnOver:
    def test_a_white_box_and_new_words_over_the_verdict(
            self, scorecards: Scorecards, signed: bool, pdf_file: PdfFile) -> None:
        box = text_box(scorecards.unsigned, 0, "NOT STREAMING-READY")
        x1, y1, x2, y2 = box
        edited = _edited(scorecards, signed, 0, cover((x1, y1 - 14, x2 + 200, y2),
                                                      "STREAMING-READY: every claim verified"))
        assert "NOT STREAMING-READY" in pypdf.PdfReader(io.BytesIO(edited)).pages[0] \
            .extract_text()  # the old words are still under the box: text cannot tell
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        found = _differences(res)
        assert any(d.startswith("page 1: verdict: drawn on the page, not by the evidence: "
                                "filled shape (white, ") and
                   "text 'STREAMING-READY: every claim verified'" in d for d in found), found
        assert any("resources the page draws with that the evidence does not: /Font /Helv"
                   in d for d in found), found
        if signed:
            assert re.search(r"signature \S+: revision 3 of 3, appended after signing, "
                             r"changed .*page 1", res.output), res.output

    def test_a_figure_drawn_over_another(self, scorecards: Scorecards, signed: bool,
                                         pdf_file: PdfFile) -> None:
        x1, y1, x2, y2 = text_box(scorecards.unsigned, 0, "p50 ")  # TTFT under load's
        edited = _edited(scorecards, signed, 0, cover((x1, y1, x2 + 150, y2),
                                                      "p50 95 ms [95 %: 90 ms-99 ms]"))
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        found = [d for d in _differences(res) if d.startswith("page 1: key figure: ")]
        assert len(found) == 1, res.output
        assert found[0].startswith("page 1: key figure: TTFT under load at 8 streams: drawn "
                                   "on the page, not by the evidence: filled shape (white, ")
        assert "text 'p50 95 ms [95 %: 90 ms-99 ms]'" in found[0]

    def test_an_appended_page(self, scorecards: Scorecards, signed: bool,
                              pdf_file: PdfFile) -> None:
        edited = append_page(scorecards.signed if signed else scorecards.unsigned,
                             "Addendum: every claim verified", after_signing=signed)
        res = _verify(pdf_file(edited))
        assert res.exit_code == 1, res.output
        assert "page 11: a page the evidence does not draw (added after the report was " \
               "written); it reads 'Addendum: every claim verified'" in _differences(res)


def test_a_signed_scorecard_painted_before_signing_fails(
        scorecards: Scorecards, keys: Keys, pdf_file: PdfFile,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The key holder signs a page painted over: the signature is intact and trusted, and
    proves who issued it; the page still does not follow from its evidence."""
    monkeypatch.setenv(PASS_ENV, PASSPHRASE)
    key = SigningKey.load(p12=keys.signer_p12, passphrase_env=PASS_ENV)
    assert key is not None
    box = text_box(scorecards.unsigned, 1, "unreconciled")  # Q6's status, page 2
    painted = overlay(scorecards.unsigned, 1, cover(box, "ok"))
    res = _verify(pdf_file(sign_pdf(painted, key, scorecards.box)), "--trust",
                  str(keys.ca_pem))
    assert res.exit_code == 1, res.output
    assert ": intact; signer trusted" in res.output
    assert any(d.startswith("page 2: Q6 status: drawn on the page, not by the evidence: "
                            "filled shape (white, ") and "text 'ok'" in d
               for d in _differences(res)), res.output


def test_an_annotation_laid_over_a_status(scorecards: Scorecards, pdf_file: PdfFile) -> None:
    """A viewer draws annotations over the page: one the evidence does not draw is a
    difference, named where it lies."""
    from pypdf.annotations import FreeText

    box = text_box(scorecards.unsigned, 1, "unreconciled")
    res = _verify(pdf_file(rewritten(scorecards.unsigned, lambda writer: writer.add_annotation(
        1, FreeText(text="ok", rect=box, background_color="ffffff")))))
    assert res.exit_code == 1, res.output
    assert any(d.startswith("page 2: Q6 status: an annotation (FreeText) the evidence does "
                            "not draw") for d in _differences(res)), res.output


def test_an_image_laid_over_a_status(scorecards: Scorecards, pdf_file: PdfFile) -> None:
    from PIL import Image

    x1, y1, x2, y2 = text_box(scorecards.unsigned, 1, "unreconciled")
    img = io.BytesIO()
    Image.new("RGB", (4, 4), "white").save(img, format="PDF")
    white = pypdf.PdfReader(img).pages[0]  # a white image on a page of its own
    scale = pypdf.Transformation().scale((x2 - x1 + 4) / float(white.mediabox.width),
                                         (y2 - y1 + 4) / float(white.mediabox.height))
    res = _verify(pdf_file(rewritten(scorecards.unsigned, lambda writer: writer.pages[1]
                                     .merge_transformed_page(white, scale.translate(x1 - 2,
                                                                                    y1 - 2)))))
    assert res.exit_code == 1, res.output
    assert any(d.startswith("page 2: Q6 status: drawn on the page, not by the evidence: "
                            "image (") for d in _differences(res)), res.output


def test_a_footer_that_claims_another_evalkit(scorecards: Scorecards,
                                              pdf_file: PdfFile) -> None:
    """Every footer is drawn from the manifest's version and digest: a page that claims
    another evalkit wrote it is a difference in its footer."""
    import evalkit

    box = text_box(scorecards.unsigned, 0, f"evalkit {evalkit.__version__} (")
    res = _verify(pdf_file(overlay(scorecards.unsigned, 0,
                                   cover(box, "evalkit 9.9.9 (ffffffffffff)", pad=0.5))))
    assert res.exit_code == 1, res.output
    assert any(d.startswith("page 1: footer: drawn on the page, not by the evidence: ")
               and "text 'evalkit 9.9.9 (ffffffffffff)'" in d for d in _differences(res)), \
        res.output


def test_a_stamp_of_another_shape_is_named_and_not_drawn() -> None:
    """What may differ from the evidence is taken from the manifest only in its shape: a
    time, a version, a SHA-256; anything else is said, and the page drawn with ours."""
    from evalkit.render.drawn import PageStamp

    good = {"tool_version": "0.1.0", "tool_sha256": "ab" * 32,
            "page": {"drawn_at": "2026-12-01 23:51 UTC", "signature_box": True}}
    stamp, wrong = PageStamp.from_manifest(good, signed=False)
    assert wrong == [] and (stamp.drawn_at, stamp.tool_version, stamp.signature_box) == (
        "2026-12-01 23:51 UTC", "0.1.0", True)
    bad = {"tool_version": "<b>0.1</b> ✓ ok", "tool_sha256": "not a digest",
           "page": {"drawn_at": "✓ STREAMING-READY", "signature_box": "yes"}}
    stamp, wrong = PageStamp.from_manifest(bad, signed=False)
    assert wrong == ["page.drawn_at is not a time of the form '%Y-%m-%d %H:%M UTC'",
                     "tool_version is not a version", "tool_sha256 is not a SHA-256"]
    assert stamp.signature_box is False and "STREAMING" not in stamp.drawn_at


#: what a vendor's text may be made of: every status word and badge a page prints, figures
#: with units, markup, our own field names, and text that looks like our footer
_TOKENS = ("ok", "unverified", "unanswered", "unanswerable", "unreconciled", "✓", "◐", "○",
           "?", "✗", "!", "⚠ gap", "✓ ok", "✗ unreconciled", "STREAMING-READY",
           "✗ NOT STREAMING-READY", "250 ms", "p90", "[95 %: 1–2]", "1,024", "0.5", "-3e9",
           "<b>", "</td>", "<script>x</script>", "&amp;", "\"", "'", "field:verdict",
           "Q3 status", "key figure: Cost", "evalkit 9.9.9 (ffffffffffff)", "page 1 of 9",
           "\n", "مرحبا", "\u202e", "x" * 40)
_TEXT = st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=10).map(" ".join)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vendor=_TEXT, model=_TEXT, reconciliation=_TEXT)
@example(vendor="ok", model="ok", reconciliation="-3e9")  # a text that reads as a number
def test_vendor_text_of_status_words_badges_and_markup_verifies(
        vendor: str, model: str, reconciliation: str) -> None:
    """A claims-only scorecard (quick to draw) of a questionnaire whose vendor, model and
    reconciliation are made of what the page prints around them verifies: verify reads
    each field where the renderer put it, whatever words it holds."""
    import tempfile

    import yaml

    from evalkit.render.report import write_review
    from evalkit.review.pipeline import review
    from evalkit.verify.check import verify_pdf
    from tests.verify.conftest import ROOT

    doc = yaml.safe_load((ROOT / "questionnaires" / "forthright.yaml").read_text())
    doc.update(vendor=vendor, model=model)
    doc["Q6"]["reconciliation"] = reconciliation
    with tempfile.TemporaryDirectory() as tmp:
        questionnaire = Path(tmp) / "forthright.yaml"
        # as JSON (YAML 1.2 reads it): PyYAML's 1.1 dumper leaves a text like "-3e9"
        # unquoted, which our YAML 1.2 reader then rightly reads as a number
        questionnaire.write_text(json.dumps(doc, ensure_ascii=False, default=str),
                                 encoding="utf-8")
        out = Path(tmp) / "card.pdf"
        write_review(review(None, questionnaire), out)
        result = verify_pdf(out)
    assert [d.sentence() for d in result.differences] == []
    assert result.verified and result.pages > 1 and result.fields > 20
