"""Typed reads of the values in a vendor's JSON: the shape checked, anything else is none.

Why apart: every adapter (`evalkit.probe.api`) and the logprob readers
(`evalkit.probe.logprobs`) read hostile events field by field, and one reading of "a
count", "a name" or "an object" keeps them judging a value alike.
"""

from __future__ import annotations

from typing import Any

from evalkit.rundir.store import MAX_COUNT

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
    record holding one would not be read back: `evalkit.rundir.store.MAX_COUNT`)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if ok else None


def as_name(value: Any) -> str | None:
    """A model name or fingerprint, cut to `NAME_MAX`; None for an empty or a non-string."""
    return value[:NAME_MAX] if isinstance(value, str) and value else None
