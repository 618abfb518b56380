"""The pages drawn again from the evidence, and compared with what the document draws.

    redraw(doc, card, run, manifest, signed)   -> Redrawn: the differences, page by page

`verify` re-derives the scorecard from the attached evidence; this draws its pages again
from that scorecard through the code `report` drew them with (`build_page`,
`render_drawn`), with the document's own stamp (`evalkit.render.drawn.PageStamp`: the
time, version and digest the page prints), and compares the two documents page by page:
the page's size, its operators, the resources it draws with, its annotations. Anything
added on top (a box, an image, new words), removed or moved is a difference, named by its
page and the innermost marked field around it ("page 1: the verdict"), or by its place in
millimetres where no field is. The only annotation the evidence does not draw that a page
may carry is a signature's widget inside the box page one reserved for it: the signature
check (`evalkit.verify.signature`) says who drew it.

This compares drawing, not appearance: two pages that would look alike but are drawn by
other operators differ (white words on white, a form swapped for a look-alike), and a
renderer of another version may lay the same page out otherwise; the note says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from evalkit.render.drawn import (
    Box,
    Drawn,
    Field,
    PageStamp,
    renderer_versions,
)
from evalkit.review.recheck import Difference
from evalkit.verify.drawing import Mark, PageDrawing
from evalkit.verify.objects import Digests, resource_names

if TYPE_CHECKING:
    from evalkit.review.scorecard import Scorecard
    from evalkit.rundir.run import RunDir
    from evalkit.verify.document import Document

_MM = 25.4 / 72
_SHOWN = 5  # marks named per difference; the rest are counted
_PLACES = 8  # places named per page; the rest are counted
#: the pages last drawn, by a digest of everything they are drawn from (the scorecard, the
#: attachments, the stamp): one process verifying copies of one document (a test suite,
#: a reviewer's batch) draws them once. The drawing is a function of these alone.
_DRAWN: dict[bytes, Drawn] = {}
_KEEP = 4


@dataclass
class Redrawn:
    """What drawing the pages again found."""

    pages: int = 0
    fields: int = 0
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def redraw(doc: Document, card: Scorecard, run: RunDir | None,
           manifest: Mapping[str, Any], signed: bool) -> Redrawn:
    """The document's pages against the same pages drawn from `card` and `run`."""
    import pypdf

    from evalkit.render.page import build_page, page_fields
    from evalkit.render.pdf import AssetFetcher, render_drawn, render_html

    stamp, wrong = PageStamp.from_manifest(manifest, signed)
    out = Redrawn()
    out.differences += [Difference("manifest.json", what=w) for w in wrong]
    key = hashlib.sha256(json.dumps(
        [card.to_json(), doc.digests, run.requests_sha256 if run else None,
         dataclasses.asdict(stamp), manifest], sort_keys=True, default=str).encode()).digest()
    drawn = _DRAWN.pop(key, None)
    if drawn is None:
        page = build_page(card, run, doc.digests, stamp, manifest)
        drawn = render_drawn(render_html(page_fields(page)), {}, AssetFetcher())
    _DRAWN[key] = drawn
    while len(_DRAWN) > _KEEP:
        del _DRAWN[next(iter(_DRAWN))]
    ours = pypdf.PdfReader(io.BytesIO(drawn.pdf))
    out.pages, out.fields = len(ours.pages), len(drawn.fields)
    out.differences += compare_documents(doc.reader, ours, drawn.fields,
                                         drawn.signature_box if signed else None)
    now = renderer_versions()
    if stamp.renderer and dict(stamp.renderer) != now and out.differences:
        said = ", ".join(f"{k} {v}" for k, v in sorted(stamp.renderer.items()))
        mine = ", ".join(f"{k} {v}" for k, v in sorted(now.items()))
        out.notes.append(f"the pages were drawn with {said}; this verify draws them with "
                         f"{mine}: a difference in the drawing may come from that alone "
                         "(verify with the versions that drew it)")
    return out


def _page_numbers(reader: Any) -> dict[tuple[int, int], int]:
    out = {}
    for i, page in enumerate(reader.pages):
        ref = getattr(page, "indirect_reference", None)
        if ref is not None:
            out[(ref.idnum, ref.generation)] = i + 1
    return out


def compare_documents(theirs: Any, ours: Any, fields: Sequence[Field],
                      signature_box: Box | None) -> list[Difference]:
    """Every page of `theirs` (the document) against `ours` (drawn from the evidence)."""
    mine = Digests(_page_numbers(ours), resource_names(ours.pages))
    yours = Digests(_page_numbers(theirs), resource_names(theirs.pages))
    out: list[Difference] = []
    #: (how it differs, its name) -> the pages it differs on
    resources: dict[tuple[str, str], list[int]] = {}
    #: (field or place, what, ...) -> the pages it differs on: one footer changed is said once
    drawn: dict[tuple[str, str | None, str | None, str | None], list[int]] = {}
    for i in range(max(len(theirs.pages), len(ours.pages))):
        if i >= len(theirs.pages):
            out.append(Difference(f"page {i + 1}", what="the evidence draws this page; the "
                                  "document has none (removed after the report was written)"))
            continue
        try:  # the document's page is input: one that cannot be read is said so
            t = PageDrawing.read(theirs.pages[i], i, yours)
            text = t.text() if i >= len(ours.pages) else ""
        except Exception as exc:
            out.append(Difference(f"page {i + 1}", what=f"cannot be read to compare it "
                                  f"({type(exc).__name__}: {str(exc)[:120]})"))
            continue
        if i >= len(ours.pages):
            out.append(Difference(f"page {i + 1}", what="a page the evidence does not "
                                  f"draw (added after the report was written); it reads "
                                  f"{_clip(text)!r}"))
            continue
        page_fields = [f for f in fields if f.page == i]
        o = PageDrawing.read(ours.pages[i], i, mine)
        out += _geometry(t, o)
        if t.content != o.content:
            for where, diff in _content_differences(t, o, page_fields):
                drawn.setdefault((where, diff.what, diff.attached, diff.derived),
                                 []).append(i + 1)
        for name in sorted(set(t.resources) | set(o.resources)):
            mine_, theirs_ = o.resources.get(name), t.resources.get(name)
            if mine_ != theirs_:
                how = "added" if mine_ is None else "missing" if theirs_ is None else "changed"
                resources.setdefault((how, name), []).append(i + 1)
        out += _annotations(t, o, page_fields, signature_box if i == 0 else None)
    out += [Difference(f"{_pages(pages)}{where}", attached, derived, what=what)
            for (where, what, attached, derived), pages in drawn.items()]
    return out + _resource_differences(resources)


_RESOURCES = {
    "added": "resources the page draws with that the evidence does not",
    "missing": "resources the evidence draws with that the page lacks",
    "changed": "resources that are not the ones the evidence draws with (a font's glyphs, "
               "an image or a drawing can be redrawn without a word of the page's text "
               "changing)"}


def _resource_differences(found: Mapping[tuple[str, str], list[int]]) -> list[Difference]:
    """One difference for each way resources differ on the same pages, naming them."""
    grouped: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    for (how, name), where in found.items():
        grouped.setdefault((how, tuple(where)), []).append(name)
    out = []
    for (how, pages), names in grouped.items():
        shown = ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more"
                                             if len(names) > _SHOWN else "")
        out.append(Difference(f"{_pages(list(pages))}: resources",
                              what=f"{_RESOURCES[how]}: {shown}"))
    return out


def _pages(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"page {numbers[0]}"
    return f"pages {numbers[0]}–{numbers[-1]}" if numbers == list(
        range(numbers[0], numbers[-1] + 1)) else "pages " + ", ".join(map(str, numbers))


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _geometry(t: PageDrawing, o: PageDrawing) -> list[Difference]:
    return [Difference(f"page {t.index + 1}: {name}", str(t.geometry[name]),
                       str(o.geometry.get(name)))
            for name in t.geometry if t.geometry[name] != o.geometry.get(name)]


def _place(box: Box, top: float) -> str:
    x1, _, _, y2 = box
    return f"{x1 * _MM:.0f} mm across, {(top - y2) * _MM:.0f} mm down"


def _innermost(fields: Sequence[Field], box: Box) -> Field | None:
    """The smallest field that holds the mark: its middle, and most of it (a mark over
    half the page is named by its place, not by the field its middle falls in)."""
    x1, y1, x2, y2 = box
    area = max((x2 - x1) * (y2 - y1), 1e-6)
    around = [f for f in fields if f.holds((x1 + x2) / 2, (y1 + y2) / 2) and (
        max(0.0, min(x2, f.box[2]) - max(x1, f.box[0]))
        * max(0.0, min(y2, f.box[3]) - max(y1, f.box[1])) >= area / 2 or area < 1)]
    return min(around, key=lambda f: f.area) if around else None


def _text_in(marks: Sequence[Mark | None], where: Field) -> str:
    return _clip(" ".join(m.text for m in marks if m and m.kind == "text"
                          and where.holds(m.box[0], m.box[1])), 200)


@dataclass
class _Change:
    """The differing operators that fall in one field (or one place)."""

    box: Box
    added: list[Mark] = field(default_factory=list)
    removed: list[Mark] = field(default_factory=list)
    #: the same operator drawing otherwise after a state set otherwise: (the page's mark,
    #: the evidence's, None when the evidence draws nothing more)
    restyled: list[tuple[Mark, Mark | None]] = field(default_factory=list)

    def sentence(self, top: float) -> str:
        parts = []
        moved = [m for m in self.added if any(
            r.kind == m.kind and r.text == m.text and r.box != m.box for r in self.removed)]
        if moved:
            parts.append("moved: " + _marks(moved, top, where=True))
        added = [m for m in self.added if m not in moved]
        removed = [m for m in self.removed if not any(
            r.kind == m.kind and r.text == m.text for r in moved)]
        if len(added) == len(removed) == 1 and added[0].kind == removed[0].kind == "text":
            ours, theirs = _parted(added[0].text, removed[0].text)
            parts.append(f"the page draws {ours!r} where the evidence draws {theirs!r}")
        elif added and removed and all(m.kind == "text" for m in added + removed):
            parts.append(f"the page draws {_marks(added, top)} where the evidence draws "
                         f"{_marks(removed, top)}")
        else:
            if added:
                parts.append("drawn on the page, not by the evidence: " + _marks(added, top))
            if removed:
                parts.append("drawn by the evidence, not on the page: " + _marks(removed, top))
        parts += [_restyled(theirs, ours, top) for theirs, ours in self.restyled[:_SHOWN]]
        return "; ".join(parts)


def _restyled(theirs: Mark, ours: Mark | None, top: float) -> str:
    """The same operator, drawn otherwise: moved, in another colour, or otherwise."""
    if ours is not None and (theirs.kind, theirs.text) == (ours.kind, ours.text):
        if theirs.colour != ours.colour or theirs.state != ours.state:
            return (f"drawn in another colour, font, line or clip: {theirs.describe()}, "
                    f"where the evidence draws {ours.describe()}")
        if theirs.box != ours.box:
            return (f"moved: {theirs.describe()} drawn at {_place(theirs.box, top)}, where "
                    f"the evidence draws it at {_place(ours.box, top)}")
    return f"drawn otherwise than the evidence draws it: {theirs.describe()}"


def _parted(a: str, b: str, limit: int = 60) -> tuple[str, str]:
    """Two texts shown from a little before where they part (a figure changed at the end
    of a long line is shown, not cut off)."""
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
             min(len(a), len(b)))
    cut = max(0, i - 20)

    def shown(t: str) -> str:
        return ("…" if cut else "") + t[cut:cut + limit] + ("…" if len(t) > cut + limit
                                                             else "")
    return shown(a), shown(b)


def _marks(marks: Sequence[Mark], top: float, where: bool = False) -> str:
    # what draws first, the clips it draws through last: "image (…), clip (…)"
    marks = sorted(marks, key=lambda m: m.kind == "clip")
    said = [m.describe() + (f" at {_place(m.box, top)}" if where else "")
            for m in marks[:_SHOWN]]
    more = len(marks) - _SHOWN
    return ", ".join(said) + (f" and {more} more" if more > 0 else "")


def _content_differences(t: PageDrawing, o: PageDrawing,
                         fields: Sequence[Field]) -> list[tuple[str, Difference]]:
    """Where the page's operators part from the evidence's, by the innermost field around
    each part (or its place): (": FIELD" or " at PLACE", the difference)."""
    t_keys, t_marks = t.marks()
    o_keys, o_marks = o.marks()
    if t_keys == o_keys:
        return []  # the same operators, written otherwise
    top = o.geometry["mediabox"][3]
    x1, y1, x2, y2 = o.geometry["mediabox"]
    page = (x1, y1, x2, y2)
    changes: dict[str, _Change] = {}
    named: dict[str, Field | None] = {}
    # exact on a page's ~2,000 operators; on a hostile page of many, the operators it
    # repeats most cannot start a match (quadratic otherwise)
    matcher = SequenceMatcher(None, t_keys, o_keys,
                              autojunk=len(t_keys) + len(o_keys) > 40_000)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        added = [m for m in t_marks[i1:i2] if m]
        removed = [m for m in o_marks[j1:j2] if m]
        restyled: list[tuple[Mark, Mark | None]] = []
        if not added and not removed:  # a state set otherwise: the next drawing shows it
            theirs = next((m for m in t_marks[i2:] if m), None)
            ours = next((m for m in o_marks[j2:] if m), None)
            if theirs == ours:
                continue  # drawn the same all the same (a state saved and restored)
            if theirs is None:  # the evidence draws more after it: said where it differs
                continue
            restyled = [(theirs, ours)]
        for mark_list, bucket in ((added, "added"), (removed, "removed"),
                                  ([pair[0] for pair in restyled], "restyled")):
            for i, mark in enumerate(mark_list):
                where = _innermost(fields, mark.box)
                key = where.name if where else _place(mark.box, top)
                change = changes.setdefault(key, _Change(mark.box))
                named[key] = where
                if bucket == "restyled":
                    change.restyled.append(restyled[i])
                else:
                    getattr(change, bucket).append(mark)
    if not changes and [m for m in t_marks if m] != [m for m in o_marks if m]:
        changes[_place(page, top)] = _Change(page)  # parts we could not place: still parts
        named[_place(page, top)] = None
    out = []
    for n, (key, change) in enumerate(changes.items()):
        if n == _PLACES:  # a page laid out otherwise from here on: its first places say so
            out.append((" ", Difference("", what=f"and {len(changes) - n} more places where "
                                        "the page's drawing parts from the evidence's")))
            break
        where = named[key]
        sentence = change.sentence(top) or "its drawing differs from the evidence's"
        if where is None:
            out.append((f" at {key}", Difference(key, what=sentence)))
        else:
            out.append((f": {where.name}", Difference(where.name, _text_in(t_marks, where),
                                                      _text_in(o_marks, where), sentence)))
    return out


def _annotations(t: PageDrawing, o: PageDrawing, fields: Sequence[Field],
                 signature_box: Box | None) -> list[Difference]:
    top = o.geometry["mediabox"][3]
    ours = [a.digest for a in o.annotations]
    out = []
    for annot in t.annotations:
        if annot.digest in ours:
            ours.remove(annot.digest)
            continue
        if annot.signature and signature_box is not None and _inside(annot.rect,
                                                                      signature_box):
            continue  # the signer's block, in the box reserved for it
        where = _innermost(fields, annot.rect)
        name = where.name if where else _place(annot.rect, top)
        out.append(Difference(f"page {t.index + 1}: {name}", what=f"an annotation "
                              f"({annot.subtype.lstrip('/')}) the evidence does not draw, "
                              f"at {_place(annot.rect, top)}: a viewer draws it over the page"))
    for annot in o.annotations:
        if annot.digest in ours:
            ours.remove(annot.digest)
            out.append(Difference(f"page {t.index + 1} at {_place(annot.rect, top)}",
                                  what=f"the evidence's {annot.subtype.lstrip('/')} "
                                  "annotation is missing or changed"))
    return out


def _inside(inner: Box, outer: Box, slack: float = 1.0) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[2] <= outer[2] + slack and inner[3] <= outer[3] + slack)
