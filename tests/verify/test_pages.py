"""The page comparison on small hand-made PDFs (no renderer, milliseconds): what a page
draws is read by the graphics state, compared operator by operator with the same page
drawn again, and each place they part is named by the innermost field around it."""

from __future__ import annotations

import io
from typing import Any

import pypdf
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
    NumberObject,
)

from evalkit.render.drawn import Field
from evalkit.verify.drawing import PageDrawing
from evalkit.verify.objects import Digests, font_program
from evalkit.verify.redraw import compare_documents

#: a page like ours: flipped to CSS px from the top left (and left so), then the words
PAGE = (b"1 0 0 -1 0 842 cm q 0.75 0 0 0.75 0 0 cm "
        b"q 0 0 0 rg BT /Helv 12 Tf 1 0 0 -1 80 100 Tm (NOT STREAMING-READY) Tj ET Q "
        b"q 0 0 0 rg BT /Helv 10 Tf 1 0 0 -1 80 300 Tm (p50 305 ms) Tj ET Q Q")
#: the page wrapped in q ... Q, as a tool stamping over it does, so that what is stamped
#: after it is drawn in the page's own coordinates
WRAPPED = b"q " + PAGE + b" Q "
#: the verdict and a key figure, where the layout put them (PDF points)
FIELDS = (Field(0, "verdict", (50, 740, 550, 800)),
          Field(0, "key figure: TTFT", (50, 600, 550, 640)))


def _pdf(content: bytes, *, pages: int = 1, annots: list[dict[str, Any]] = ()) -> Any:
    writer = pypdf.PdfWriter()
    font = writer._add_object(DictionaryObject({NameObject(k): NameObject(v) for k, v in (
        ("/Type", "/Font"), ("/Subtype", "/Type1"), ("/BaseFont", "/Helvetica"))}))
    for _ in range(pages):
        page = writer.add_blank_page(595, 842)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/Helv"): font})})
        stream = DecodedStreamObject()
        stream.set_data(content)
        page[NameObject("/Contents")] = writer._add_object(stream)
        for annot in annots:
            writer.add_annotation(0, DictionaryObject(annot))
    buf = io.BytesIO()
    writer.write(buf)
    return pypdf.PdfReader(buf)


def _said(theirs: Any, ours: Any, box: Any = None) -> list[str]:
    return [d.sentence() for d in compare_documents(theirs, ours, FIELDS, box)]


def test_the_same_page_written_otherwise_is_no_difference() -> None:
    """One number written two ways, spaces and line breaks: the same operators."""
    assert _said(_pdf(PAGE.replace(b"0.75 0 0", b"0.750 0.0 0").replace(b" q ", b"\nq\n")),
                 _pdf(PAGE)) == []


def test_a_box_and_words_over_the_verdict_are_named_by_its_field() -> None:
    painted = WRAPPED + b"q 1 1 1 rg 60 745 300 40 re f 0 0 0 rg BT /Helv 12 Tf 65 770 Td " \
                        b"(STREAMING-READY) Tj ET Q"
    assert _said(_pdf(painted), _pdf(PAGE)) == [
        "page 1: verdict: drawn on the page, not by the evidence: filled shape (white, "
        "106 × 14 mm), text 'STREAMING-READY'"]


def test_a_figure_changed_in_place_says_both() -> None:
    assert _said(_pdf(PAGE.replace(b"(p50 305 ms)", b"(p50 95 ms)")), _pdf(PAGE)) == [
        "page 1: key figure: TTFT: the page draws 'p50 95 ms' where the evidence draws "
        "'p50 305 ms'"]


def test_white_words_are_drawn_otherwise() -> None:
    """Words made white stay in the text; the drawing says so."""
    whitened = PAGE.replace(b"q 0 0 0 rg BT /Helv 12", b"q 1 1 1 rg BT /Helv 12")
    assert _said(_pdf(whitened), _pdf(PAGE)) == [
        "page 1: verdict: drawn in another colour, font, line or clip: white text 'NOT "
        "STREAMING-READY', where the evidence draws text 'NOT STREAMING-READY'"]


def test_a_font_swapped_for_another_of_the_page_is_drawn_otherwise() -> None:
    """The same words in another of the page's own fonts: no resource added, the words
    the same; the drawing is not."""
    swapped = PAGE.replace(b"/Helv 10 Tf", b"/Helv 14 Tf")
    assert _said(_pdf(swapped), _pdf(PAGE)) == [
        "page 1: key figure: TTFT: drawn in another colour, font, line or clip: text 'p50 "
        "305 ms', where the evidence draws text 'p50 305 ms'"]


def test_a_moved_figure_and_a_whole_page_clip() -> None:
    """A clip around the whole page hides nothing (an overlay tool wraps its stamp in
    one); the figure moved off its field is named where it was and where it went."""
    moved = b"q 0 0 595 842 re W n " + PAGE.replace(b"80 300 Tm", b"80 900 Tm") + b" Q"
    assert _said(_pdf(moved), _pdf(PAGE)) == [
        "page 1 at 21 mm across, 236 mm down: moved: text 'p50 305 ms' drawn at 21 mm "
        "across, 236 mm down, where the evidence draws it at 21 mm across, 77 mm down"]


def test_pages_added_and_removed() -> None:
    assert _said(_pdf(PAGE, pages=2), _pdf(PAGE)) == [
        "page 2: a page the evidence does not draw (added after the report was written); "
        "it reads 'NOT STREAMING-READY p50 305 ms'"]
    assert _said(_pdf(PAGE), _pdf(PAGE, pages=2)) == [
        "page 2: the evidence draws this page; the document has none (removed after the "
        "report was written)"]


def _widget(value: bool) -> dict[str, Any]:
    out = {NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"):
           NameObject("/Widget"), NameObject("/FT"): NameObject("/Sig"),
           NameObject("/Rect"): ArrayObject([NumberObject(v) for v in (400, 760, 540, 800)])}
    if value:
        out[NameObject("/V")] = DictionaryObject({NameObject("/Type"): NameObject("/Sig")})
    return out


def test_only_a_signature_in_the_reserved_box_may_be_laid_on_the_page() -> None:
    box = (390.0, 750.0, 550.0, 810.0)
    assert _said(_pdf(PAGE, annots=[_widget(True)]), _pdf(PAGE), box) == []
    empty = _said(_pdf(PAGE, annots=[_widget(False)]), _pdf(PAGE), box)
    assert empty == ["page 1: verdict: an annotation (Widget) the evidence does not draw, at "
                     "141 mm across, 15 mm down: a viewer draws it over the page"]
    unsigned = _said(_pdf(PAGE, annots=[_widget(True)]), _pdf(PAGE), None)
    assert len(unsigned) == 1 and "an annotation (Widget)" in unsigned[0]


def test_a_font_redrawn_is_a_resource_difference() -> None:
    theirs = _pdf(PAGE)
    font = theirs.pages[0]["/Resources"]["/Font"]["/Helv"]
    font[NameObject("/BaseFont")] = NameObject("/Courier")
    assert _said(theirs, _pdf(PAGE)) == [
        "page 1: resources: resources that are not the ones the evidence draws with (a "
        "font's glyphs, an image or a drawing can be redrawn without a word of the page's "
        "text changing): /Font /Helv"]


def test_marks_are_placed_by_the_graphics_state() -> None:
    page = _pdf(WRAPPED + b"q 2 0 0 2 10 10 cm 0.5 g 0 0 20 10 re f Q").pages[0]
    _, marks = PageDrawing.read(page, 0, Digests({})).marks()
    drawn = [m for m in marks if m]
    assert [(m.kind, m.text, m.colour) for m in drawn] == [
        ("text", "NOT STREAMING-READY", "black"), ("text", "p50 305 ms", "black"),
        ("filled shape", "", "grey")]
    assert drawn[0].box[:2] == (60.0, 767.0)  # 80 px, 100 px down: in points from the foot
    assert drawn[2].box == (10.0, 10.0, 50.0, 30.0)


def test_a_font_program_differs_only_by_glyphs_not_by_its_subset_time() -> None:
    """A TrueType program with a head table: its modified time and checksums cleared,
    everything else kept."""
    head = bytearray(54)
    head[28:36] = (3879264564).to_bytes(8, "big")
    font = (b"\x00\x01\x00\x00" + (1).to_bytes(2, "big") + bytes(6) + b"head"
            + (12345).to_bytes(4, "big") + (28).to_bytes(4, "big") + (54).to_bytes(4, "big")
            + bytes(head) + b"glyf-data")
    later = bytearray(font)
    later[28 + 28:28 + 36] = (3879264595).to_bytes(8, "big")
    later[16:20] = (99999).to_bytes(4, "big")
    assert font != bytes(later) and font_program(font) == font_program(bytes(later))
    other = bytearray(later)
    other[-1] ^= 1
    assert font_program(bytes(other)) != font_program(font)
