"""What a PDF page draws, read for comparison with the same page drawn again.

    PageDrawing.read(page, index, digests)  a page: geometry, content, resources, annotations
    PageDrawing.marks()                     its operators, and where each one draws what

A page draws its content stream's operators with its resources (fonts, images, forms,
graphics states) and lays its annotations over them. Two pages draw the same when their
operators, their resources' bytes and their annotations are the same: the content is
compared as operators (one number written two ways is the same), resources by a digest of
everything they hold, object numbers aside. To name where two pages part, `marks()` runs
the operators through the graphics state and says, for each one that draws, what it draws
(text and the words it shows, a filled shape and its colour, an image, a form) and where on
the page, in PDF points. A page is input like any other: its parts are read with pypdf,
bounded, and what cannot be read is said so, which differs from anything drawn.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.verify.objects import Digests, operand

Box = tuple[float, float, float, float]
Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
#: operators that paint a path, and how a reader would call the result
_PAINT = {b"S": "stroked line", b"s": "stroked line", b"f": "filled shape",
          b"F": "filled shape", b"f*": "filled shape", b"B": "filled shape",
          b"B*": "filled shape", b"b": "filled shape", b"b*": "filled shape", b"n": ""}
_SHOW = (b"Tj", b"TJ", b"'", b'"')
#: a page that draws more than this is compared only as far (a scorecard page draws ~2,000)
MAX_OPERATORS = 200_000
#: a text mark's width in text space, per character, as a share of the font size (only for
#: naming a place: the content, not this, decides whether two pages differ)
_EM = 0.55


def _mul(m: Matrix, n: Matrix) -> Matrix:
    """m then n (PDF's row-vector order: a point goes through m first)."""
    a, b, c, d, e, f = m
    p, q, r, s, t, u = n
    return (a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s,
            e * p + f * r + t, e * q + f * s + u)


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _bounds(points: list[tuple[float, float]]) -> Box:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


def _num(x: Any, default: float = 0.0) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def _matrix(ops: Any) -> Matrix | None:
    if not isinstance(ops, list | tuple) or len(ops) < 6:
        return None
    a, b, c, d, e, f = (_num(v) for v in ops[:6])
    return (a, b, c, d, e, f)


# --------------------------------------------------------------------------- fonts


def _unicode(hexes: str) -> str:
    try:
        return bytes.fromhex(hexes).decode("utf-16-be", errors="replace")
    except ValueError:
        return "?"


@dataclass(frozen=True)
class _Font:
    """Enough of a font to say what words its codes show (its ToUnicode map)."""

    code_bytes: int
    chars: Mapping[int, str]

    @classmethod
    def of(cls, font: Any) -> _Font:
        try:
            wide = str(font.get("/Subtype")) == "/Type0"
            cmap = font.get("/ToUnicode")
            text = cmap.get_object().get_data()[:1 << 20].decode("latin-1") if cmap else ""
        except Exception:
            return cls(1, {})
        chars: dict[int, str] = {}
        for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
            for code, uni in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>", block):
                chars[int(code, 16)] = _unicode(uni)
        for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
            for lo, hi, first in re.findall(
                    r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
                start, base = int(lo, 16), int(first, 16)
                for code in range(start, min(int(hi, 16), start + 4096) + 1):
                    chars[code] = chr(min(base + code - start, 0x10FFFF))
        return cls(2 if wide else 1, chars)

    def text(self, data: bytes) -> str:
        """The words a string of codes shows ('?' for a code the map does not name)."""
        if self.code_bytes == 1 and not self.chars:
            return data.decode("latin-1")
        step = self.code_bytes
        return "".join(self.chars.get(int.from_bytes(data[i:i + step], "big"), "?")
                       for i in range(0, len(data) - step + 1, step))


# --------------------------------------------------------------------------- marks


@dataclass(frozen=True)
class Mark:
    """What one operator draws, and where: its kind, its box on the page (PDF points
    from the bottom left), the words of a text mark, the colour it paints in."""

    kind: str
    box: Box
    text: str = ""
    colour: str = ""
    #: the resource it draws (an image's or form's name), for naming a changed resource
    resource: str = ""
    #: every setting it is drawn with (exact colours, font, line, clip, graphics state):
    #: two marks are the same drawing only when this is the same too
    state: int = 0

    def describe(self) -> str:
        """The mark as a reader is told it."""
        if self.kind == "text":
            shown = self.text if len(self.text) <= 60 else self.text[:59] + "…"
            return f"{self.colour + ' ' if self.colour not in ('', 'black') else ''}" \
                   f"text {shown!r}"
        x1, y1, x2, y2 = self.box
        size = f"{(x2 - x1) / 72 * 25.4:.0f} × {(y2 - y1) / 72 * 25.4:.0f} mm"
        colour = f"{self.colour}, " if self.colour else ""
        return f"{self.kind} ({colour}{size})"


def _covers(outer: Box, inner: Box, slack: float = 1.0) -> bool:
    return (outer[0] <= inner[0] + slack and outer[1] <= inner[1] + slack
            and outer[2] >= inner[2] - slack and outer[3] >= inner[3] - slack)


def _colour(values: list[Any]) -> str:
    """A fill colour in words: what a reader needs to tell a white box from a black one."""
    comps = [_num(v, -1.0) for v in values if isinstance(v, int | float)]
    if not comps or any(c < 0 for c in comps):
        return "a pattern or colour"
    if len(comps) == 4:  # CMYK: white is no ink at all
        comps = [1 - min(1.0, c + comps[3]) for c in comps[:3]]
    if min(comps) >= 0.99:
        return "white"
    if max(comps) <= 0.01:
        return "black"
    return "grey" if max(comps) - min(comps) < 0.02 else "colour"


#: operators that set the state a mark is drawn with, by the setting each one sets
_SETTINGS = {op: op for op in (b"w", b"J", b"j", b"M", b"d", b"ri", b"i", b"gs", b"Tc",
                               b"Tw", b"Tz", b"TL", b"Tf", b"Tr", b"Ts")} | {
    op: b"fill" for op in (b"rg", b"g", b"k", b"sc", b"scn")} | {
    op: b"stroke" for op in (b"RG", b"G", b"K", b"SC", b"SCN")} | {
    b"cs": b"fill space", b"CS": b"stroke space"}


@dataclass
class _State:
    ctm: Matrix = _IDENTITY
    fill: str = "black"
    stroke: str = "black"
    font: str = ""
    size: float = 0.0
    leading: float = 0.0
    render: int = 0
    #: each setting's exact operands, and the clips in force (their paths, nested)
    settings: dict[bytes, Any] = field(default_factory=dict)
    clip: int = 0

    def copy(self) -> _State:
        return _State(self.ctm, self.fill, self.stroke, self.font, self.size,
                      self.leading, self.render, dict(self.settings), self.clip)

    def fingerprint(self) -> int:
        return hash((tuple(sorted(self.settings.items())), self.clip))


@dataclass
class _Interpreter:
    """Runs a page's operators through the graphics state, naming what each one draws."""

    fonts: Mapping[str, _Font]
    xobjects: Mapping[str, Any]
    #: the page's media box: a clip that takes all of it in hides nothing
    page: Box = (0.0, 0.0, 0.0, 0.0)
    state: _State = field(default_factory=_State)
    stack: list[_State] = field(default_factory=list)
    tm: Matrix = _IDENTITY
    tlm: Matrix = _IDENTITY
    path: list[tuple[float, float]] = field(default_factory=list)
    clip: bool = False

    def run(self, operands: list[Any], op: bytes) -> Mark | None:
        """One operator: the state it sets, or what it draws."""
        s = self.state
        if op in _SETTINGS:
            s.settings[_SETTINGS[op]] = (op, tuple(operand(v) for v in operands))
        if op == b"q":
            self.stack.append(s.copy())
        elif op == b"Q":
            if self.stack:
                self.state = self.stack.pop()
        elif op == b"cm":
            if (m := _matrix(operands)) is not None:
                s.ctm = _mul(m, s.ctm)
        elif op in (b"rg", b"g", b"k", b"sc", b"scn"):
            s.fill = _colour(operands)
        elif op in (b"RG", b"G", b"K", b"SC", b"SCN"):
            s.stroke = _colour(operands)
        elif op in (b"m", b"l"):
            self._points(operands[:2])
        elif op in (b"c", b"v", b"y"):
            self._points(operands)
        elif op == b"re" and len(operands) == 4:
            x, y, w, h = (_num(v) for v in operands)
            self._points([x, y, x + w, y, x + w, y + h, x, y + h])
        elif op in (b"W", b"W*"):
            self.clip = True
        elif op in _PAINT:
            return self._paint(op)
        elif op == b"BT":
            self.tm = self.tlm = _IDENTITY
        elif op == b"Tf" and len(operands) == 2:
            s.font, s.size = str(operands[0]), _num(operands[1])
        elif op == b"TL" and operands:
            s.leading = _num(operands[0])
        elif op == b"Tr" and operands:
            s.render = int(_num(operands[0]))
        elif op in (b"Td", b"TD") and len(operands) == 2:
            if op == b"TD":
                s.leading = -_num(operands[1])
            self.tm = self.tlm = _mul((1, 0, 0, 1, _num(operands[0]), _num(operands[1])),
                                      self.tlm)
        elif op == b"Tm":
            if (m := _matrix(operands)) is not None:
                self.tm = self.tlm = m
        elif op == b"T*":
            self.tm = self.tlm = _mul((1, 0, 0, 1, 0, -s.leading), self.tlm)
        elif op in _SHOW:
            return self._show(operands, op)
        elif op == b"Do" and operands:
            return self._xobject(str(operands[0]))
        elif op == b"sh":
            return Mark("shading", _bounds([_apply(s.ctm, x, y) for x, y in
                                             ((0, 0), (1, 1))]),
                        resource=str(operands[0]) if operands else "",
                        state=s.fingerprint())
        elif op == b"INLINE IMAGE":
            return Mark("image", self._unit_square(), state=s.fingerprint())
        return None

    def _points(self, values: list[Any]) -> None:
        nums = [_num(v) for v in values]
        self.path += [_apply(self.state.ctm, nums[i], nums[i + 1])
                      for i in range(0, len(nums) - 1, 2)]

    def _paint(self, op: bytes) -> Mark | None:
        points, clip = self.path, self.clip
        self.path, self.clip = [], False
        if not points:
            return None
        box = _bounds(points)
        if clip and _covers(box, self.page):  # a stamping tool's frame: hides nothing
            clip = False
            if op == b"n":
                return None
        if clip:  # what is drawn from here on is drawn through this path too
            self.state.clip = hash((self.state.clip, tuple(
                (round(x, 2), round(y, 2)) for x, y in points)))
        kind = "clip" if clip and op == b"n" else _PAINT[op]
        if not kind:
            return None
        colour = "" if kind == "clip" else (
            self.state.stroke if kind == "stroked line" else self.state.fill)
        return Mark(kind, box, colour=colour, state=self.state.fingerprint())

    def _unit_square(self) -> Box:
        return _bounds([_apply(self.state.ctm, x, y) for x, y in
                        ((0, 0), (1, 0), (0, 1), (1, 1))])

    def _xobject(self, name: str) -> Mark:
        xobj: Any = self.xobjects.get(name)
        try:
            if xobj is not None and str(xobj.get("/Subtype")) == "/Form":
                x1, y1, x2, y2 = (_num(v) for v in xobj["/BBox"][:4])
                m = _mul(_matrix(xobj.get("/Matrix")) or _IDENTITY, self.state.ctm)
                box = _bounds([_apply(m, x, y) for x, y in ((x1, y1), (x2, y2),
                                                             (x1, y2), (x2, y1))])
                return Mark("drawing", box, resource=name, state=self.state.fingerprint())
        except Exception:  # a broken form is still drawn here: said as an image would be
            pass
        return Mark("image", self._unit_square(), resource=name,
                    state=self.state.fingerprint())

    def _show(self, operands: list[Any], op: bytes) -> Mark:
        s = self.state
        if op in (b"'", b'"'):
            self.tm = self.tlm = _mul((1, 0, 0, 1, 0, -s.leading), self.tlm)
        strings = operands[-1:] if op != b"TJ" else (
            operands[0] if operands and isinstance(operands[0], list) else [])
        font = self.fonts.get(s.font, _Font(1, {}))
        text = "".join(font.text(bytes(getattr(x, "original_bytes", b"") or (
            x if isinstance(x, bytes) else b""))) for x in strings if not isinstance(
                x, int | float))
        width = _EM * len(text)
        m = _mul(self.tm, s.ctm)
        corners = [_apply(m, x * s.size, y * s.size) for x, y in
                   ((0, 0), (width, 0), (0, 0.8), (width, 0.8))]
        self.tm = _mul((1, 0, 0, 1, width * s.size, 0), self.tm)
        colour = "invisible" if s.render in (3, 7) else s.fill
        return Mark("text", _bounds(corners), text=text, colour=colour,
                    state=s.fingerprint())


# --------------------------------------------------------------------------- pages


@dataclass(frozen=True)
class Annotation:
    """An annotation of a page: what it is, where, and its digest."""

    subtype: str
    rect: Box
    digest: bytes
    #: a signature's widget: drawn by the signer into the box page one reserves
    signature: bool


def _signature_widget(annot: Any) -> bool:
    """A signature field's widget that holds a signature (/V): an empty one drawing its
    own appearance would be a signer's block that no signature stands behind."""
    try:
        if str(annot.get("/Subtype")) != "/Widget":
            return False
        parent = annot.get("/Parent")
        field = annot if "/FT" in annot else parent
        return field is not None and str(field.get("/FT")) == "/Sig" and field.get(
            "/V") is not None
    except Exception:
        return False


def _resolved(obj: Any) -> Any:
    return obj.get_object() if hasattr(obj, "get_object") else obj


@dataclass
class PageDrawing:
    """A page as read for comparison (see the module)."""

    index: int
    geometry: dict[str, tuple[float, ...]]
    #: the content streams' decoded bytes, joined
    content: bytes
    #: "/Font /F1" -> digest, for every resource the page could draw with
    resources: dict[str, bytes]
    annotations: list[Annotation]
    page: Any = None
    _marks: tuple[list[Any], list[Mark | None]] | None = None

    @classmethod
    def read(cls, page: Any, index: int, digests: Digests) -> PageDrawing:
        """Page `index` (0-based) of a pypdf document, with the document's digests."""
        geometry = {}
        for name in ("mediabox", "cropbox", "bleedbox", "trimbox", "artbox"):
            try:
                box = getattr(page, name)
                geometry[name] = tuple(round(float(v), 2) for v in (
                    box.left, box.bottom, box.right, box.top))
            except Exception:
                geometry[name] = (float("nan"),)
        geometry["rotate"] = (_num(page.get("/Rotate"), 0.0),)
        geometry["userunit"] = (_num(page.get("/UserUnit"), 1.0),)
        resources = {}
        res: Any = _resolved(page.get("/Resources")) or {}
        for category in res:
            if isinstance(_resolved(res.raw_get(category)), Mapping):
                for name, ref in _entries(res, category):
                    resources[f"{category} {name}"] = digests.of(ref)
            else:
                resources[str(category)] = digests.of(res.raw_get(category))
        if "/Group" in page:
            resources["/Group"] = digests.of(page.raw_get("/Group"))
        annots = []
        for ref in _resolved(page.get("/Annots")) or []:
            annot = _resolved(ref)
            rect = [_num(v) for v in list(annot.get("/Rect") or [])[:4]] + [0.0] * 4
            x1, y1, x2, y2 = rect[:4]
            annots.append(Annotation(str(annot.get("/Subtype")), (
                min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)), digests.of(annot),
                _signature_widget(annot)))
        return cls(index, geometry, _content(page), resources, annots, page)

    def marks(self) -> tuple[list[Any], list[Mark | None]]:
        """Every operator as a comparable key, and what each one draws (None: it sets
        the state the next ones draw with)."""
        if self._marks is None:
            self._marks = _interpret(self.page, self.content)
        return self._marks

    def text(self) -> str:
        """Every word the page draws, in drawing order."""
        return " ".join(m.text for m in self.marks()[1] if m and m.kind == "text")


def _content(page: Any) -> bytes:
    """The page's content streams, decoded and joined as a reader draws them."""
    contents = _resolved(page.get("/Contents"))
    streams = contents if isinstance(contents, list) else [] if contents is None else [contents]
    out = []
    for stream in streams:
        try:
            out.append(_resolved(stream).get_data())
        except Exception as exc:
            out.append(f"<undecodable {type(exc).__name__}>".encode())
    return b"\n".join(out)


def _interpret(page: Any, content: bytes) -> tuple[list[Any], list[Mark | None]]:
    from pypdf.generic import ContentStream, DecodedStreamObject

    keys: list[Any] = []
    marks: list[Mark | None] = []
    try:
        res = _resolved(page.get("/Resources")) or {}
        fonts = {str(k): _Font.of(_resolved(v)) for k, v in _entries(res, "/Font")}
        box = page.mediabox
        machine = _Interpreter(fonts, {str(k): _resolved(v)
                                       for k, v in _entries(res, "/XObject")},
                               (float(box.left), float(box.bottom), float(box.right),
                                float(box.top)))
        stream = DecodedStreamObject()
        stream.set_data(content)
        for operands, op in ContentStream(stream, None).operations:
            if len(keys) >= MAX_OPERATORS:
                raise ValueError(f"more than {MAX_OPERATORS:,} operators")
            if op == b"INLINE IMAGE":
                keys.append((op, operand(operands.get("settings")),
                             hashlib.sha256(bytes(operands.get("data") or b"")).digest()))
            else:
                keys.append((op, tuple(operand(v) for v in operands)))
            marks.append(machine.run(list(operands) if op != b"INLINE IMAGE" else [], op))
    except Exception as exc:  # unreadable (or nested past recursion): a key matching nothing
        keys.append(("unreadable", type(exc).__name__))
        marks.append(None)
    return keys, marks


def _entries(res: Any, category: str) -> Iterator[tuple[Any, Any]]:
    entries = _resolved(res.get(category)) if isinstance(res, Mapping) else None
    if isinstance(entries, Mapping):
        for name in entries:
            yield name, entries.raw_get(name) if hasattr(entries, "raw_get") else entries[name]
