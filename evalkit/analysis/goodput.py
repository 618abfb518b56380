"""Goodput at the SLO: the share of a level's requests that each met a use case's limits
on their own latencies, and the output tokens/s those requests carried. Pure: frames in,
figures out.

The use-case profiles (`default_slo_profiles`) set limits on percentiles (TTFT p90, TPOT
p90, ITL p99); goodput asks the buyer's other question, how many requests a user would
have been content with, so each limit is applied to each request's own figure:

- **first answer**: the request's time to its first answer token (TTFA) at a level where
  reasoning came first (a reasoning chunk sent at once must not pass a voice agent, as in
  `Level.answer_latency`), its TTFT otherwise, ≤ the profile's `ttft_p90_s`;
- **TPOT**: the request's own (E2E − TTFT) / (tokens after the first chunk) ≤
  `tpot_p90_s`;
- **the longest in-stream gap**: the largest gap between two of the request's content
  chunks ≤ `itl_p99_s` (the gap a voice agent's listener hears as silence);
- **reading speed** (interactive chat): the request's 1 / TPOT ≥ the reading speed.

Fail closed: every request of the level is in the denominator, and a request that did
not end ok, or whose figure a limit needs is missing (one chunk carried its whole output:
no TPOT, no gap), missed the SLO. A profile with no latency limit (batch) has as goodput
the share of requests that ended ok.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.frames import _lookup_size, _num, _rows_mask
from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.thresholds import SloProfile

#: statuses of a level against the goodput target, lowest first in how well it did
GOODPUT_STATUSES = ("met", "tie", "missed", "no_data")

GOODPUT_RULE = ("a request meets a use case's SLO when it ended ok and its own first-answer "
                "time (TTFA where reasoning came first, else TTFT), TPOT and longest "
                "in-stream gap are each within the profile's limit (and its 1/TPOT at or "
                "above reading speed where the profile asks for it); every request of the "
                "level counts, a failure as a miss. A level meets the goodput target when "
                "its observed share is at or above it, misses when the share's whole 95 % "
                "interval lies below it, and is a tie otherwise. The highest level within "
                "the SLO is the top of the unbroken run of levels that met it from the "
                "lowest: a tie, a miss, a client-bound, under-loaded or empty level ends "
                "the climb")


def profile_limits(profile: SloProfile, reading_speed: float) -> dict[str, float | None]:
    """The per-request limits a profile sets, as summary.json echoes them."""
    return {"first_answer_s": profile.ttft_p90_s, "tpot_s": profile.tpot_p90_s,
            "max_gap_s": profile.itl_p99_s,
            "min_stream_tokens_per_s": reading_speed if profile.above_reading_speed else None}


def request_gaps(req: pd.DataFrame, chunks: pd.DataFrame) -> np.ndarray:
    """Each request's longest in-stream gap (s), NaN for one with fewer than two chunks;
    aligned with `req`'s rows."""
    rid = chunks["rid"].to_numpy()
    size = _lookup_size(req, rid)
    inside = _rows_mask(req.index, rid, size)
    gap = chunks["gap_s"].to_numpy()[inside]
    owner = rid[inside]
    top = np.full(size, -np.inf)
    has = np.isfinite(gap)
    np.maximum.at(top, owner[has], gap[has])
    out = top[req.index.to_numpy()]
    return np.where(np.isfinite(out), out, np.nan)


def meets_slo(req: pd.DataFrame, gaps: np.ndarray, limits: Mapping[str, float | None]
              ) -> np.ndarray:
    """Which requests met every limit (a boolean per row of `req`). A missing figure
    compares False against any limit, so it misses (NaN <= x is False)."""
    ok = req["ok"].to_numpy(dtype=bool)
    ttft = req["ttft_s"].to_numpy(dtype=np.float64)
    ttfa = req["ttfa_s"].to_numpy(dtype=np.float64)
    reasoning_first = bool(((ttfa > ttft) & ok).any())
    # reasoning came first somewhere at this level: the answer's time is what a user
    # waits for, and a request that never sent an answer has none
    answer = ttfa if reasoning_first else np.where(np.isnan(ttfa), ttft, ttfa)
    tpot = req["tpot_s"].to_numpy(dtype=np.float64)
    met = ok.copy()
    with np.errstate(invalid="ignore"):
        if (lim := limits.get("first_answer_s")) is not None:
            met &= answer <= lim
        if (lim := limits.get("tpot_s")) is not None:
            met &= tpot <= lim
        if (lim := limits.get("max_gap_s")) is not None:
            met &= gaps <= lim
        if (lim := limits.get("min_stream_tokens_per_s")) is not None:
            met &= (tpot > 0) & (1.0 / np.where(tpot > 0, tpot, np.nan) >= lim)
    result: np.ndarray = met
    return result


def _call(met: int, n: int, ci: list[float] | None, target: float) -> str:
    """The level against the target: met (observed share ≥ target), missed (the whole
    interval below), tie (observed below, the interval reaching it)."""
    if n == 0 or ci is None:
        return "no_data"
    if met / n >= target:
        return "met"
    return "missed" if ci[1] < target else "tie"


def level_goodput(req: pd.DataFrame, chunks: pd.DataFrame,
                  window: Mapping[str, Any] | None,
                  profiles: Mapping[str, SloProfile], reading_speed: float,
                  target: float) -> dict[str, dict[str, Any]]:
    """Goodput of one level (its request rows, the whole chunk frame, its steady-state
    window from `phase_stats`) for every profile: the share of requests that met it with
    its exact 95 % interval, and the output tokens/s of those requests' chunks inside the
    window (the aggregate rate's own window, so it is at most that rate)."""
    n = len(req)
    gaps = request_gaps(req, chunks)
    rid = chunks["rid"].to_numpy()
    size = _lookup_size(req, rid)
    out_tokens = req["output_tokens"].to_numpy(dtype=np.float64)
    t = chunks["t_s"].to_numpy()
    tokens = chunks["scaled_tokens"].to_numpy()
    start, end = ((window or {}).get("start_s"), (window or {}).get("end_s"))
    span = (end - start) if isinstance(start, float | int) and isinstance(end, float | int) \
        else None
    out: dict[str, dict[str, Any]] = {}
    for name, profile in profiles.items():
        limits = profile_limits(profile, reading_speed)
        met = meets_slo(req, gaps, limits)
        k = int(met.sum())
        ci = proportion_interval(k, n)
        rate: float | None = None
        if span is not None and span > 0:
            inside = _rows_mask(req.index[met], rid, size) & (t > start) & (t <= end)
            rate = _num(float(tokens[inside].sum()) / span)
        out[name] = {"fraction": k / n if n else None, "fraction_ci": ci,
                     "tokens_per_s": rate, "met": k, "requests": n,
                     # what those requests carried in all: what a price per token buys
                     # that met the SLO (`evalkit.review.cost`)
                     "output_tokens": float(np.nansum(out_tokens[met])),
                     "status": _call(k, n, ci, target)}
    return out


def max_goodput(levels: Sequence[Mapping[str, Any]], names: Sequence[str]
                ) -> dict[str, Any]:
    """For each profile, the highest level within the SLO (the top of the unbroken run of
    levels that met the target from the lowest), whether that is only a lower bound (every
    level tried met it), and the level that ended the climb."""
    best: dict[str, int | None] = {}
    lower: dict[str, bool] = {}
    stopped: dict[str, int | None] = {}
    ordered = sorted(levels, key=lambda d: d["concurrency"])
    for name in names:
        held: int | None = None
        stop: int | None = None
        for lvl in ordered:
            g = (lvl.get("goodput") or {}).get(name) or {}
            judged = lvl.get("status") not in ("client_bound", "underloaded", "no_data")
            if not judged or g.get("status") != "met":
                stop = int(lvl["concurrency"])
                break
            held = int(lvl["concurrency"])
        best[name], stopped[name] = held, stop
        lower[name] = held is not None and stop is None
    return {"max_goodput_concurrency": best, "max_goodput_is_lower_bound": lower,
            "goodput_stopped_at": stopped}
