"""Vendor text made safe to keep and to show: bounded, one line, no control characters.

A vendor's error body, model id or reason phrase may hold terminal escapes (clear the
screen, set the window title, a fake "all ok" line), bidi overrides that reorder what is
printed around them, or megabytes of anything. Everything we keep in a record or print
passes through `clean` first; the PDF adds its own glyph check (`report.printable`).
"""

from __future__ import annotations

import unicodedata

#: Bidi overrides and isolates: vendor text must not reorder what is printed around it.
_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))


def clean(text: str | bytes | None, limit: int = 300) -> str:
    """`text` as one printable line of at most about `limit` characters.

    Control characters (C0, C1, DEL, bidi controls) become spaces, runs of white space
    fold into one, and a cut is marked. Bytes are decoded as UTF-8
    with replacement, so a binary body cannot raise.
    """
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text[: limit * 4 + 64].decode("utf-8", errors="replace")
    kept = "".join(" " if (unicodedata.category(c) in ("Cc", "Cf") and c != "\u200d")
                   or ord(c) in _BIDI else c for c in text[: limit * 4 + 64])
    flat = " ".join(kept.split())
    if len(flat) > limit:
        return flat[:limit] + "… [cut]"
    return flat
