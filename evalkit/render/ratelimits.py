"""The rate limits' row on page one in words: when the 429s began, the Retry-After, and
the limit the endpoint's headers state (the appendix prints every field)."""

from __future__ import annotations

from typing import Any

from evalkit.analysis.summary import as_mapping
from evalkit.analysis.summary import as_number as _num
from evalkit.fmt import fmt_count, number


def _figure(x: Any) -> str:
    """A figure as reasons say it (`evalkit.fmt.number`: 30, 2.5, 1,200); "—" if none."""
    v = _num(x)
    return "—" if v is None else number(v)


def rate_limits_text(measured: Any) -> str:
    """What the run met, briefly: the first 429's figures per minute over the window before
    it (partial windows said so), Retry-After, the headers' limits; "—" for nothing."""
    m = as_mapping(measured)
    if not m:
        return "—"
    parts = []
    at = as_mapping(m.get("at_rejection"))
    window = _figure(m.get("sliding_window_s"))
    if at:
        said = f"first 429 at {_figure(at.get('requests_per_minute'))} requests/min"
        tokens = _num(at.get("tokens_per_minute"))
        if tokens is not None:
            said += f", {fmt_count(tokens)} tokens/min"
        said += f" (over the {window} s before it"
        if at.get("full_window") is not True:
            said += (f"; the run saw {_figure(at.get('window_s'))} s of it, "
                     f"{_figure(at.get('offered_requests_per_minute'))} requests/min offered")
        parts.append(said + ")")
        parts.append(f"{fmt_count(m.get('rejected_429'))} × 429")
    else:
        peak = as_mapping(m.get("peak"))
        parts.append("no 429" + (f"; at most {_figure(peak.get('requests_per_minute'))} "
                                 "requests/min sent" if peak else ""))
    retry = as_mapping(m.get("retry_after_s"))
    if retry:
        lo, hi = _figure(retry.get("min")), _figure(retry.get("max"))
        parts.append(f"Retry-After {lo} s" if lo == hi else f"Retry-After {lo}–{hi} s")
    limits = {k: v for k, v in as_mapping(m.get("header_limits")).items()
              if _num(v) is not None}
    if limits:
        parts.append("headers: " + ", ".join(f"{_figure(v)} {k.replace('_', ' ')}/min"
                                             for k, v in limits.items()))
    return "; ".join(parts)
