"""Rate limits as the run met them: when the 429s began, what the endpoint had been sent
in the sliding window before, the Retry-After it asked for, and what its rate-limit
headers said. Pure: the request frame in, summary.json's `rate_limits` out.

A rate limit is where admission degrades first, and a vendor's quoted limit is a claim
like any other (`evalkit.review.ratelimits` reconciles it). The onset is counted over the
sliding window `Thresholds.rate_limit_window_s` (60 s: limits are quoted per minute)
that ends at the first 429: the requests the endpoint admitted in it, and their input
and output tokens, scaled by 60 / window to per-minute figures.

A run shorter than the window before its first 429 saw only part of it. Its counts are
still the whole window's (the run sent nothing before it began), so `requests_per_minute`
is still count × 60 / window; beside it, `offered_requests_per_minute` scales the count
to the part observed (count × 60 / observed), the rate the run was sending at, and
`full_window` is false. Neither alone decides a claim then (a burst of 30 in 3 s is
600/min offered and 30 in the minute), so the reconciler judges a partial window
conservatively: see docs/methodology.md ("Rate limits"). The first 429 whose window lies
wholly inside the run is reported too (`onset_full_window`): a run that goes on being
rejected for a window measures the limit with no such doubt.

The window's start is only known to within the rejected request's own round trip: the
endpoint stamps arrivals, we stamp sends, and a request sent just before (or just after)
`at - window` may or may not have been in the endpoint's window. So each window also
gives `edge`: the rates counted with the requests sent within that round trip (capped at
a tenth of the window) of its start left out (`low`) and let in (`high`). The reconciler
calls a claim held only on `low`, and contradicted only on `high`; between, it is on the
edge and unverified. This matters for small windows and counts (a limit of 2 per 4 s);
at a real minute's hundreds of requests one request is within the tolerance.

Only HTTP 429 counts as a rate limit; a 503 is an overloaded endpoint, not a quota.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.frames import _num

#: the window start's uncertainty is at most this share of the window (a vendor that
#: stalls its 429s widens the edge, and a wider edge only makes more claims unverified)
MAX_EDGE_SHARE = 0.1
#: distinct values kept per rate-limit header, and headers kept, in summary.json
MAX_HEADER_VALUES = 4
MAX_HEADER_NAMES = 16
#: x-ratelimit-limit-* headers read as numbers: their suffix -> the limit they state
LIMIT_HEADERS = {"requests": "x-ratelimit-limit-requests",
                 "tokens": "x-ratelimit-limit-tokens",
                 "input_tokens": "x-ratelimit-limit-input-tokens",
                 "output_tokens": "x-ratelimit-limit-output-tokens"}


def rate_limit_section(req: pd.DataFrame, window_s: float = 60.0) -> dict[str, Any]:
    """summary.json's `rate_limits`: the onset of 429s, Retry-After, and the headers.

    `req` is the request frame (`evalkit.analysis.frames`), any phases; `window_s` the
    sliding window the onset is counted over (a minute unless a test's limiter is faster).
    """
    t0 = req["t0_s"].to_numpy(dtype=np.float64)
    status = req["http_status"].to_numpy(dtype=np.float64)
    outcome = req["outcome"].to_numpy()
    limited = (outcome == "rejected") & (status == 429)
    admitted = ~limited & (outcome != "rejected")
    start = float(np.nanmin(t0)) if len(t0) else 0.0
    order = np.argsort(np.where(np.isfinite(t0), t0, np.inf), kind="stable")
    rejected_at = t0[order][limited[order]]
    rejected_at = rejected_at[np.isfinite(rejected_at)]
    onset = full = None
    if rejected_at.size:
        onset = _window(req, admitted, float(rejected_at[0]), start, window_s)
        whole = rejected_at[rejected_at - window_s >= start]
        full = (onset if onset["full_window"] else
                _window(req, admitted, float(whole[0]), start, window_s) if whole.size else None)
    retry = req["retry_after_s"].to_numpy(dtype=np.float64)[limited]
    retry = retry[np.isfinite(retry)]
    headers = _headers(req["rate_limit_headers"])
    return {
        "window_s": float(window_s),
        "requests": len(req),
        "rejected_429": int(limited.sum()),
        "first_rejection_s": _num(rejected_at[0] - start) if rejected_at.size else None,
        "onset": onset,
        "onset_full_window": full,
        "peak": _peak(t0[admitted], window_s),
        "retry_after_s": None if not retry.size else {
            "n": int(retry.size), "min": float(retry.min()),
            "median": float(np.median(retry)), "max": float(retry.max())},
        "headers": headers,
        "header_limits": _header_limits(req["rate_limit_headers"]),
    }


def _window(req: pd.DataFrame, admitted: np.ndarray, at: float, start: float,
            window_s: float) -> dict[str, Any]:
    """What the endpoint admitted in the window [at - window_s, at), and held at `at`."""
    t0 = req["t0_s"].to_numpy(dtype=np.float64)
    end = req["end_s"].to_numpy(dtype=np.float64)
    n, tin, tout = _counted(req, admitted & (t0 >= at - window_s) & (t0 < at))
    held = int((admitted & (t0 < at) & (end > at)).sum())
    observed = min(window_s, at - start)
    full = at - window_s >= start
    per_minute = 60.0 / window_s
    offered = None if full or observed <= 0 else 60.0 / observed
    return {
        "at_s": _num(at - start), "window_s": _num(observed), "full_window": bool(full),
        "requests": n, "input_tokens": int(tin), "output_tokens": int(tout),
        "requests_per_minute": _num(n * per_minute),
        "input_tokens_per_minute": _num(tin * per_minute),
        "output_tokens_per_minute": _num(tout * per_minute),
        "tokens_per_minute": _num((tin + tout) * per_minute),
        "offered_requests_per_minute": None if offered is None else _num(n * offered),
        "offered_tokens_per_minute": None if offered is None else _num((tin + tout) * offered),
        "in_flight": held,
        "edge": _edge(req, admitted, at, window_s),
    }


def _counted(req: pd.DataFrame, inside: np.ndarray) -> tuple[int, float, float]:
    """Requests, input tokens and output tokens of the rows `inside`."""
    prompt = np.nan_to_num(req["prompt_tokens"].to_numpy(dtype=np.float64)[inside])
    output = np.nan_to_num(req["output_tokens"].to_numpy(dtype=np.float64)[inside])
    return int(inside.sum()), float(prompt.sum()), float(output.sum())


def _edge(req: pd.DataFrame, admitted: np.ndarray, at: float, window_s: float
          ) -> dict[str, Any]:
    """The window's per-minute rates with the requests sent within the rejected request's
    round trip of its start left out (`low`) and let in (`high`): see the module doc."""
    t0 = req["t0_s"].to_numpy(dtype=np.float64)
    end = req["end_s"].to_numpy(dtype=np.float64)
    at_row = np.flatnonzero((t0 == at) & ~admitted)
    trip = float(np.nanmax(end[at_row] - at)) if at_row.size else 0.0
    d = min(max(0.0 if not np.isfinite(trip) else trip, 0.0), MAX_EDGE_SHARE * window_s)
    start = at - window_s
    per_minute = 60.0 / window_s
    out: dict[str, Any] = {"s": _num(d)}
    for name, lo in (("low", start + d), ("high", start - d)):
        n, tin, tout = _counted(req, admitted & (t0 >= lo) & (t0 < at))
        out[name] = {"requests_per_minute": _num(n * per_minute),
                     "input_tokens_per_minute": _num(tin * per_minute),
                     "output_tokens_per_minute": _num(tout * per_minute),
                     "tokens_per_minute": _num((tin + tout) * per_minute)}
    return out


def _peak(sent: np.ndarray, window_s: float) -> dict[str, Any] | None:
    """The most requests admitted in any sliding window, per minute: what a run that was
    never rejected reached. A run shorter than the window is scaled to its span."""
    t = np.sort(sent[np.isfinite(sent)])
    if not t.size:
        return None
    span = float(t[-1] - t[0])
    if span < window_s:
        rate = (t.size - 1) * 60.0 / span if span > 0 else None
        return {"requests_per_minute": _num(rate), "full_window": False,
                "window_s": _num(span)}
    counts = np.searchsorted(t, t + window_s, side="left") - np.arange(t.size)
    return {"requests_per_minute": _num(float(counts.max()) * 60.0 / window_s),
            "full_window": True, "window_s": float(window_s)}


def _headers(column: pd.Series) -> dict[str, list[str]] | None:
    """Every rate-limit header seen, with its first few distinct values."""
    seen: dict[str, list[str]] = {}
    for h in column:
        if not isinstance(h, Mapping):
            continue
        for name, value in h.items():
            values = seen.get(name)
            if values is None:
                if len(seen) >= MAX_HEADER_NAMES:
                    continue
                values = seen[name] = []
            if value not in values and len(values) < MAX_HEADER_VALUES:
                values.append(str(value))
    return dict(sorted(seen.items())) or None


def _header_limits(column: pd.Series) -> dict[str, float | None] | None:
    """The limit each x-ratelimit-limit-* header states: the value most responses sent
    (a header that changes its mind is shown whole in `headers`)."""
    counts: dict[str, Counter[float]] = {k: Counter() for k in LIMIT_HEADERS}
    for h in column:
        if not isinstance(h, Mapping):
            continue
        for key, name in LIMIT_HEADERS.items():
            number = _limit_number(h.get(name))
            if number is not None:
                counts[key][number] += 1
    out = {k: (c.most_common(1)[0][0] if c else None) for k, c in counts.items()}
    return out if any(v is not None for v in out.values()) else None


def _limit_number(value: Any) -> float | None:
    """A header's limit as a positive finite number (`600`, `600.0`), else None."""
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if np.isfinite(number) and 0 < number < 1e15 else None
