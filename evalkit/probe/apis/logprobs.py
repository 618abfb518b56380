"""The logprobs an OpenAI-style event carries, read as (token, logprob) pairs, bounded.

Why apart: the adapters (`evalkit.probe.apis.chat`, `.completions`) read them for canary
prompts only, and a hostile event may send any shape or size here: every entry is
checked, and one event adds at most `LOGPROBS_MAX` of them to a record.
"""

from __future__ import annotations

import math
from typing import Any

#: the most logprob entries one event may add (a hostile event cannot bloat a record)
LOGPROBS_MAX = 256


def _logprob(token: Any, value: Any) -> tuple[str, float] | None:
    if not isinstance(token, str) or not isinstance(value, int | float) or \
            isinstance(value, bool) or not math.isfinite(value):
        return None
    return token[:64], float(value)


def chat_logprobs(lp: Any) -> tuple[tuple[str, float], ...] | None:
    """OpenAI chat: `logprobs.content` is a list of {token, logprob, ...}."""
    content = _as_dict(lp).get("content")
    if not isinstance(content, list):
        return None
    pairs = (_logprob(_as_dict(e).get("token"), _as_dict(e).get("logprob"))
             for e in content[:LOGPROBS_MAX])
    return tuple(p for p in pairs if p is not None)


def completion_logprobs(lp: Any) -> tuple[tuple[str, float], ...] | None:
    """OpenAI completions: parallel lists `tokens` and `token_logprobs`."""
    tokens, values = _as_dict(lp).get("tokens"), _as_dict(lp).get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list):
        return None
    pairs = (_logprob(t, v) for t, v in zip(tokens[:LOGPROBS_MAX], values, strict=False))
    return tuple(p for p in pairs if p is not None)


def _as_dict(value: Any) -> dict[str, Any]:
    """The object, or an empty one: `evalkit.probe.apis.fields.as_dict`'s rule, repeated
    so that this module, as fields, imports none of the probe's (the adapters stand on
    both, and probe/ may stand on 8 floors: `tests/test_layers.py`)."""
    return value if isinstance(value, dict) else {}
