"""Typed reads of the values in a vendor's JSON: the shape checked, anything else is none.

Why apart: every adapter (`evalkit.probe.apis.base`) and the logprob readers
(`evalkit.probe.apis.logprobs`) read hostile events field by field, and one reading of "a
count", "a name" or "an object" keeps them judging a value alike.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from evalkit.records import MAX_COUNT, MAX_SECONDS

#: the longest model name or fingerprint kept (a vendor string: bounded, then sanitised
#: where it is shown)
NAME_MAX = 120


def as_dict(value: Any) -> dict[str, Any]:
    """The object, or an empty one for anything else (so `.get` chains never raise)."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    """The string, or "" for anything else."""
    return value if isinstance(value, str) else ""


def as_count(value: Any) -> int | None:
    """A vendor's count, or None: not whole, negative, or past any a request can make (a
    record holding one would not be read back: `evalkit.records.MAX_COUNT`)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if ok else None


def as_name(value: Any) -> str | None:
    """A model name or fingerprint, cut to `NAME_MAX`; None for an empty or a non-string."""
    return value[:NAME_MAX] if isinstance(value, str) and value else None


def as_ms_in_seconds(value: Any) -> float | None:
    """A vendor's duration in milliseconds, as seconds; None: not a finite number of
    them from 0 to any a record may hold (`evalkit.records.MAX_SECONDS`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = value / 1000.0
    except OverflowError:  # an int of hundreds of digits
        return None
    return seconds if math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS else None


class EngineTimings(NamedTuple):
    """An engine's own account of one response: llama.cpp's `timings` object (sent in
    its last stream chunk), read field by field; a field it did not send, or sent as
    something else, is None."""

    #: `prompt_n`: the prompt tokens it processed (those served from its cache excluded)
    prompt_tokens: int | None = None
    #: `cache_n`: the prompt tokens its cache served
    cached_tokens: int | None = None
    #: `prompt_ms`: from when a slot took the request to the prompt's last batch
    prompt_s: float | None = None
    #: `predicted_n` and `predicted_ms`: the tokens it generated, and the time from the
    #: prompt's end to the last of them
    output_tokens: int | None = None
    decode_s: float | None = None


def engine_timings(value: Any) -> EngineTimings | None:
    """llama.cpp's `timings` object read defensively; None when it holds none of them."""
    d = as_dict(value)
    if not d:
        return None
    timings = EngineTimings(as_count(d.get("prompt_n")), as_count(d.get("cache_n")),
                            as_ms_in_seconds(d.get("prompt_ms")),
                            as_count(d.get("predicted_n")),
                            as_ms_in_seconds(d.get("predicted_ms")))
    return timings if any(v is not None for v in timings) else None
