"""The rate limits' row on page one in words: when the 429s began, the Retry-After, and
the limit the endpoint's headers state (the appendix prints every field)."""

from __future__ import annotations

from evalkit.fmt import fmt_count, number
from evalkit.review.measured import Measured, RateLimitsMeasured


def _figure(x: float | None) -> str:
    """A figure as reasons say it (`evalkit.fmt.number`: 30, 2.5, 1,200); "—" if none."""
    return "—" if x is None else number(x)


def rate_limits_text(measured: Measured | None) -> str:
    """What the run met, briefly: the first 429's figures per minute over the window before
    it (partial windows said so), Retry-After, the headers' limits; "—" for nothing (or
    for another row's figures)."""
    m = measured
    if not isinstance(m, RateLimitsMeasured):
        return "—"
    parts = []
    at = m.at_rejection
    window = _figure(m.sliding_window_s)
    if at is not None:
        said = f"first 429 at {_figure(at.requests_per_minute)} requests/min"
        if at.tokens_per_minute is not None:
            said += f", {fmt_count(at.tokens_per_minute)} tokens/min"
        said += f" (over the {window} s before it"
        if not at.full_window:
            said += (f"; the run saw {_figure(at.window_s)} s of it, "
                     f"{_figure(at.offered_requests_per_minute)} requests/min offered")
        parts.append(said + ")")
        parts.append(f"{fmt_count(m.rejected_429)} × 429")
    else:
        peak = m.peak
        parts.append("no 429" + (f"; at most {_figure(peak.requests_per_minute)} "
                                 "requests/min sent" if peak is not None else ""))
    retry = m.retry_after_s
    if retry is not None:
        lo, hi = _figure(retry.min), _figure(retry.max)
        parts.append(f"Retry-After {lo} s" if lo == hi else f"Retry-After {lo}–{hi} s")
    limits = m.stated_limits
    if limits:
        parts.append("headers: " + ", ".join(f"{_figure(v)} {k.replace('_', ' ')}/min"
                                             for k, v in limits.items()))
    return "; ".join(parts)
