"""A scorecard's pages as drawn, and what they print that is not evidence.

    PageStamp.now(signed)              when and by which evalkit a page is being drawn
    PageStamp.from_manifest(m, ...)    the same, as manifest.json's `page` recorded it
    Drawn                              the PDF, page one's signature box, every field's place
    FIELD_PREFIX, fields_of(pages)     the fields the template marks, read from the layout

`evalkit verify` draws a scorecard again from its evidence, through the code `report`
drew it with (the same `evalkit.render.page.Page`), and compares what the two pages
draw. Everything a page prints comes from the evidence but its stamp: the time a page
without a run is dated with, the evalkit version and package digest in every footer, and
whether page one reserves a box for a signature. `report` records the stamp in
manifest.json (`page`) and `verify` draws with it, so these are the only things that may
legitimately differ, and only in their shape.

Fields: the template marks every field a reader reads, the verdict, each status, each key
figure, each section, with one mechanism: an element whose id is `field:` and its name
(the `field()` macro in templates/scorecard.html.j2). WeasyPrint makes each id an anchor
with its box; `fields_of` keeps every `field:` anchor of every page. `verify` reads each
place the page draws differently by the innermost field around it ("page 1: Q3 status"),
never by where a word falls in the page's text. A box added to a template is read the same
way as soon as it is marked; an unmarked one is still compared, named by its position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import evalkit
from evalkit.analysis.jsonread import Json

#: an id that names a field: the rest of it is the field's name (ours, never vendor text)
FIELD_PREFIX = "field:"
#: how a stamp writes its time, and the only shape `verify` accepts for it
TIME_FORMAT = "%Y-%m-%d %H:%M UTC"
_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")
_VERSION = re.compile(r"[0-9A-Za-z.+!_-]{1,40}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_PT_PER_PX = 0.75  # CSS px are 1/96 in, PDF points 1/72 in

Box = tuple[float, float, float, float]


def renderer_versions() -> dict[str, str]:
    """The libraries a page's drawing depends on, by version: a page drawn by others may
    be laid out otherwise, and `verify` says so beside any difference in the drawing."""
    import matplotlib
    import pydyf
    import weasyprint
    from weasyprint.text.ffi import pango

    n = int(pango.pango_version())  # 15012 is 1.50.12
    return {"weasyprint": weasyprint.__version__, "pydyf": pydyf.__version__,
            "pango": f"{n // 10000}.{n // 100 % 100}.{n % 100}",
            "matplotlib": matplotlib.__version__}


@dataclass(frozen=True)
class PageStamp:
    """What a scorecard's pages print that is not evidence (see the module)."""

    #: the time a page is dated with when no run gives one (TIME_FORMAT)
    drawn_at: str
    #: the evalkit that drew it (every footer, Appendix B)
    tool_version: str
    #: its package digest (`evalkit.provenance.installed_digest`), None when unknown
    tool_sha256: str | None
    #: page one reserves the box a signature's visible block is drawn into
    signature_box: bool
    renderer: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def now(cls, signed: bool) -> PageStamp:
        """The stamp of a page drawn now, by this evalkit."""
        from evalkit.provenance import installed_digest

        return cls(datetime.now(UTC).strftime(TIME_FORMAT), evalkit.__version__,
                   installed_digest(), signed, renderer_versions())

    def to_manifest(self) -> dict[str, Json]:
        """manifest.json's `page` (the version and digest are its top-level keys)."""
        return {"drawn_at": self.drawn_at, "signature_box": self.signature_box,
                "renderer": dict(self.renderer)}

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Json], signed: bool
                      ) -> tuple[PageStamp, list[str]]:
        """The stamp a document's manifest records, and what in it is not of its shape
        (each a sentence; the value is then this evalkit's own, so the page differs where
        it prints it). `signed`: whether the document carries a signature, what a
        manifest written before stamps were recorded says instead of `signature_box`."""
        found = manifest.get("page")
        page: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        wrong: list[str] = []
        now = cls.now(signed)
        at = page.get("drawn_at", now.drawn_at) if page else now.drawn_at
        if not (isinstance(at, str) and _TIME.fullmatch(at)):
            wrong.append(f"page.drawn_at is not a time of the form {TIME_FORMAT!r}")
            at = now.drawn_at
        version = manifest.get("tool_version")
        if not (isinstance(version, str) and _VERSION.fullmatch(version)):
            wrong.append("tool_version is not a version")
            version = now.tool_version
        digest = manifest.get("tool_sha256")
        if digest is not None and not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
            wrong.append("tool_sha256 is not a SHA-256")
            digest = now.tool_sha256
        box = page.get("signature_box", signed)
        renderer = page.get("renderer")
        return cls(at, version, digest, box is True, {
            str(k)[:40]: str(v)[:40] for k, v in renderer.items()} if isinstance(
            renderer, Mapping) else {}), wrong


@dataclass(frozen=True)
class Field:
    """A marked field where the layout put it: its page (0-based), name and box in PDF
    points from the page's bottom left (x1, y1, x2, y2)."""

    page: int
    name: str
    box: Box

    def holds(self, x: float, y: float, slack: float = 0.5) -> bool:
        """The point lies in the box (within `slack` points)."""
        x1, y1, x2, y2 = self.box
        return x1 - slack <= x <= x2 + slack and y1 - slack <= y <= y2 + slack

    @property
    def area(self) -> float:
        """How much of the page the field covers (the innermost field is the smallest)."""
        x1, y1, x2, y2 = self.box
        return (x2 - x1) * (y2 - y1)


@dataclass(frozen=True)
class Drawn:
    """A document as drawn: its PDF, page one's signature box (PDF points, None when the
    page reserves none) and every marked field."""

    pdf: bytes
    signature_box: Box | None
    fields: tuple[Field, ...]


def to_points(box: Box, page_height_px: float) -> Box:
    """A box in CSS px from the page's top left, in PDF points from its bottom left."""
    x1, y1, x2, y2 = box
    return (x1 * _PT_PER_PX, (page_height_px - y2) * _PT_PER_PX,
            x2 * _PT_PER_PX, (page_height_px - y1) * _PT_PER_PX)


def fields_of(pages: Iterable[Any]) -> tuple[Field, ...]:
    """Every `field:` anchor of WeasyPrint's laid-out pages, as a Field."""
    return tuple(Field(i, name[len(FIELD_PREFIX):], to_points(tuple(box), page.height))
                 for i, page in enumerate(pages) for name, box in page.anchors.items()
                 if name.startswith(FIELD_PREFIX))
