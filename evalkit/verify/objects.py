"""A PDF's objects as comparable values: what `verify` compares two documents' pages by.

    operand(x)         a content-stream operand as a plain, comparable value
    Digests.of(obj)    a digest of everything an object holds, object numbers aside

Two documents written by the same code hold the same objects under other numbers, so an
object is compared by what it holds: dictionaries by their keys and values, streams by
their decoded bytes, references followed (each object digested once). A page met on the
way is "page N", never walked; the keys that point back up the tree are left out. The
one thing a font program's bytes hold that is not a glyph, the time it was subset, is
cleared (`font_program`): the same glyphs subset a second later are the same font.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

#: keys that point back up the tree (to a page, a field): what an object draws is below it
_BACK = frozenset({"/Parent", "/P"})
_DEPTH = 64
#: a font program's keys: its bytes carry the time it was subset (`font_program`)
_FONT_FILES = frozenset({"/FontFile", "/FontFile2", "/FontFile3"})


def operand(x: Any) -> Any:
    """An operand as a comparable value: a string by its bytes, a name by its name, a
    number rounded past what a page can show."""
    raw = getattr(x, "original_bytes", None)
    if raw is not None:
        return ("s", bytes(raw))
    if isinstance(x, bytes):
        return ("s", bytes(x))
    if isinstance(x, str):
        return ("n", str(x))
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, int | float):
        return round(float(x), 4)
    if isinstance(x, Mapping):
        return ("d", tuple(sorted((str(k), operand(v)) for k, v in x.items())))
    if isinstance(x, list | tuple):
        return tuple(operand(v) for v in x)
    return ("?", repr(x)[:200])


# --------------------------------------------------------------------------- digests


def _key(obj: Any) -> tuple[int, int] | None:
    """An indirect reference's (number, generation); None for a direct object."""
    idnum = getattr(obj, "idnum", None)
    if isinstance(idnum, int) and hasattr(obj, "get_object"):
        return idnum, int(getattr(obj, "generation", 0))
    return None


def resource_names(pages: Any) -> dict[tuple[int, int], str]:
    """Every object the pages name as a resource, by reference: "/Font /F1" (the first
    name a page gives it), and a category's dictionary when the pages share it with the
    forms they draw ("/Font (every entry)": each entry is compared on its own)."""
    out: dict[tuple[int, int], str] = {}
    for page in pages:
        try:
            res = page.get("/Resources")
            res = res.get_object() if hasattr(res, "get_object") else res
            for category in res or {}:
                if (key := _key(res.raw_get(category))) is not None:  # shared by forms too
                    out.setdefault(key, f"{category} (every entry)")
                entries = res[category]
                if not isinstance(entries, Mapping):
                    continue
                for name in entries:
                    key = _key(entries.raw_get(name)) if hasattr(entries, "raw_get") else None
                    if key is not None:
                        out.setdefault(key, f"{category} {name}")
        except Exception:  # a page whose resources cannot be read names none
            continue
    return out


class Digests:
    """Digests of a document's objects, by everything they hold (object numbers aside),
    each object digested once; a page met on the way is "page N", never walked.

    `resources` names the objects the pages hold as resources ("/Font /F1"): met inside
    another object (a form that draws with the page's font) such an object is its name,
    for it is compared on its own. One font redrawn is then one difference, not every
    drawing that writes with it."""

    def __init__(self, page_numbers: Mapping[tuple[int, int], int],
                 resources: Mapping[tuple[int, int], str] | None = None) -> None:
        self.pages = dict(page_numbers)
        self.resources = dict(resources or {})
        self.memo: dict[tuple[int, int], bytes] = {}

    def of(self, obj: Any) -> bytes:
        """The digest of a PDF object (indirect or not), by what it holds."""
        h = hashlib.sha256()
        self._feed(obj, h, 0, named=False)  # itself, even when it is a resource
        return h.digest()

    def _feed(self, obj: Any, h: Any, depth: int, font: bool = False,
              named: bool = True) -> None:
        if depth > _DEPTH:
            h.update(b"<too deep>")
            return
        key = _key(obj)
        if key is not None:
            if key in self.pages:
                h.update(b"page %d" % self.pages[key])
                return
            if named and key in self.resources:
                h.update(b"resource " + self.resources[key].encode())
                return
            if key not in self.memo:
                self.memo[key] = b"<cycle>"
                inner = hashlib.sha256()
                try:
                    self._feed(obj.get_object(), inner, depth + 1, font)
                except Exception as exc:  # a broken object is said, and differs
                    inner.update(f"<unreadable {type(exc).__name__}>".encode())
                self.memo[key] = inner.digest()
            h.update(self.memo[key])
            return
        if isinstance(obj, Mapping):
            h.update(b"<<")
            for k in sorted(str(k) for k in obj):
                if k in _BACK:
                    continue
                h.update(k.encode() + b" ")
                self._feed(obj.raw_get(k) if hasattr(obj, "raw_get") else obj[k], h,
                           depth + 1, k in _FONT_FILES)
            h.update(b">>")
            if hasattr(obj, "get_data"):
                try:
                    data = obj.get_data()
                except Exception as exc:
                    data = f"<undecodable {type(exc).__name__}>".encode()
                if font:
                    data = font_program(data)
                h.update(b"stream %d " % len(data) + hashlib.sha256(data).digest())
            return
        if isinstance(obj, list | tuple):
            h.update(b"[")
            for item in obj:
                self._feed(item, h, depth + 1)
            h.update(b"]")
            return
        h.update(repr(operand(obj)).encode() + b" ")


def font_program(data: bytes) -> bytes:
    """A TrueType or OpenType font program without the time it was written: the subsetter
    stamps its `head` table with the time it ran (and the checksums that cover it), so the
    same glyphs subset a second later are other bytes. Only those 16 bytes are cleared: a
    glyph drawn otherwise still differs."""
    if len(data) < 12 or data[:4] not in (b"\x00\x01\x00\x00", b"OTTO", b"true"):
        return data
    out = bytearray(data)
    tables = int.from_bytes(data[4:6], "big")
    for i in range(min(tables, 256)):
        entry = 12 + 16 * i
        if data[entry:entry + 4] == b"head" and entry + 16 <= len(data):
            start = int.from_bytes(data[entry + 8:entry + 12], "big")
            if start + 36 <= len(data):
                out[entry + 4:entry + 8] = bytes(4)  # the table's checksum
                out[start + 8:start + 12] = bytes(4)  # checkSumAdjustment
                out[start + 28:start + 36] = bytes(8)  # modified
    return bytes(out)
