"""Vendor text made safe to keep and to show: bounded, one line, no control characters.

A vendor's error body, model id or reason phrase may hold terminal escapes (clear the
screen, set the window title, a fake "all ok" line), bidi overrides that reorder what is
printed around them, or megabytes of anything. Everything we keep in a record or print
passes through `clean` first; the PDF adds its own glyph check (`report.printable`).
`rate_limit_headers` is what a record keeps of a response's headers: the rate-limit ones.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

#: Bidi overrides and isolates: vendor text must not reorder what is printed around it.
_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))


#: character categories that show nothing on their own: controls, format characters
#: (zero-width spaces and joiners, U+2060, the BOM), separators, lone combining marks
_SHOWS_NOTHING = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me"})
#: letters and symbols that render blank (the Braille blank, the Hangul fillers)
_BLANK_GLYPHS = frozenset("\u2800\u3164\u115f\u1160\uffa0")


def shows_nothing(text: str) -> bool:
    """Whether `text` would show a reader nothing: white space, and the characters that
    `str.strip` keeps but no screen shows (a vendor's zero-width space sent at once
    would otherwise be timed as the first token of an answer that came a second later)."""
    return all(c.isspace() or c in _BLANK_GLYPHS
               or unicodedata.category(c) in _SHOWS_NOTHING for c in text)


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
    kept = text[: limit * 4 + 64]
    if not (kept.isascii() and kept.isprintable()):  # printable ASCII has nothing to blank
        kept = "".join(" " if (unicodedata.category(c) in ("Cc", "Cf") and c != "\u200d")
                       or ord(c) in _BIDI else c for c in kept)
    flat = " ".join(kept.split())
    if len(flat) > limit:
        return flat[:limit] + "… [cut]"
    return flat


#: the headers a record keeps (lower case): these prefixes, and retry-after itself
RATE_LIMIT_PREFIXES = ("x-ratelimit-limit-", "x-ratelimit-remaining-", "x-ratelimit-reset-")
#: at most this many of them a response, each name and value at most this long
MAX_HEADERS = 12
MAX_HEADER_NAME = 64
MAX_HEADER_VALUE = 40


def rate_limit_headers(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The rate-limit headers of one response (`x-ratelimit-limit-*`, `-remaining-*`,
    `-reset-*`, `retry-after`), a few, each value cleaned and short: the vendor's own word
    on its limits, kept on every record (`evalkit.analysis.ratelimits` reads them); None
    when it sent none. A repeated header keeps its first value."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        key = name.strip().lower()
        if key in kept or len(key) > MAX_HEADER_NAME or (
                key != "retry-after" and not key.startswith(RATE_LIMIT_PREFIXES)):
            continue
        kept[clean(key, MAX_HEADER_NAME)] = clean(value, MAX_HEADER_VALUE)
        if len(kept) >= MAX_HEADERS:
            break
    return kept or None
