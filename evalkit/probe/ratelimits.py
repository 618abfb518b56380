"""The vendor's rate-limit headers kept from a response: which limit it says it applies,
how much of it is left, and when it resets.

Only `x-ratelimit-limit-*`, `x-ratelimit-remaining-*`, `x-ratelimit-reset-*` and
`retry-after` are kept, a few of them, each value sanitised and short: the headers are
vendor text, and a record is written for every request of a long run. The analysis reads
them back (`evalkit.analysis.ratelimits`) to set what the endpoint says beside what the
questionnaire claims.
"""

from __future__ import annotations

from collections.abc import Iterable

from evalkit.sanitize import clean

#: header names kept (lower case): these prefixes, and retry-after itself
PREFIXES = ("x-ratelimit-limit-", "x-ratelimit-remaining-", "x-ratelimit-reset-")
#: at most this many headers a response, each name and value at most this long
MAX_HEADERS = 12
MAX_NAME = 64
MAX_VALUE = 40


def rate_limit_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str] | None:
    """The rate-limit headers of one response, bounded and sanitised; None when it sent
    none (the record then stays as it was)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        key = name.strip().lower()
        if key != "retry-after" and not key.startswith(PREFIXES):
            continue
        if len(key) > MAX_NAME or key in kept:
            continue
        kept[clean(key, MAX_NAME)] = clean(value, MAX_VALUE)
        if len(kept) >= MAX_HEADERS:
            break
    return kept or None
