"""The pure metrics core: request records in, the `summary.json` dict out. No I/O.

Records become two frames once (`frames`): one row per request (`records_frame`) and one
row per content chunk (`chunks_frame`); every metric below is vectorised over them
(numpy/pandas), with Python loops only over the handful of phases and levels.
`summarize(records, meta)` adds what the prober knows beyond the records (`SummaryMeta`:
versions, the client's self-checks, the `Thresholds`) and gives the whole document.

What each figure means, which requests it counts, the steady-state window, the ramp's
breach rule and every key of `summary.json` are in docs/methodology.md ("From records to
summary.json"): change a definition here and there together.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from evalkit import SUITE_VERSION, __version__
from evalkit.intervals import (
    ols,
    proportion_interval,
    quantile_interval,
    rate_interval,
    samples_for,
)
from evalkit.records import OUTCOMES, RequestRecord
from evalkit.tolerances import Thresholds
from evalkit.validity import MOSTLY_FAILED_OK_SHARE, group_validity, run_validity

SCHEMA = "evalkit.summary/1"
#: A p99 from fewer samples than this is marked low-confidence (SPEC).
LOW_CONFIDENCE_N = 100
#: A steady-state window shorter than this share of the phase is not trusted.
MIN_WINDOW_FRACTION = 0.10
#: Phases run at concurrency 1 by construction, whatever their records' `level`.
SERIAL_PHASES = ("connect", "baseline", "prefill", "cache", "rtt")
#: The ramp metrics, in the contract's vocabulary.
DEGRADATION_METRICS = ("ttft", "itl", "admission")


@dataclass(frozen=True)
class ClientCheck:
    """The client's self-check over one phase or level: was it the bottleneck?"""

    loop_lag_p99_s: float | None = None
    cpu_fraction: float | None = None
    client_bound: bool = False
    #: client workers lost meanwhile (scale-out on Ray), in words
    lost: tuple[str, ...] = ()
    #: the client's own delay in sending (p99, s) and the share of the load it held back
    #: that way: a herd that sends again one after another, or an open loop behind its
    #: schedule, grows both, as a client that cannot keep up does
    send_lag_p99_s: float | None = None
    send_lag_fraction: float | None = None
    #: why the check called it client-bound (cpu, loop_lag, send_lag, late_reads)
    client_bound_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class SummaryMeta:
    """What the prober knows beyond the records: versions and client self-checks
    (`summarize` takes a plain dict of the same shape too, as read back from JSON)."""

    tool_version: str = __version__
    suite_version: str = SUITE_VERSION
    phases: Mapping[str, ClientCheck] = field(default_factory=dict)
    levels: Mapping[int, ClientCheck] = field(default_factory=dict)
    #: the network round trip (s), used only when the run has no `rtt` records
    rtt_s: float | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: how the run ended (complete, failed, interrupted, crashed), for its validity
    run_status: str | None = None
    #: why it failed, when the connect gate stopped it
    run_error: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SummaryMeta:
        """Build from plain data (level keys may be strings, as after a JSON round trip)."""

        def check(v: Mapping[str, Any]) -> ClientCheck:
            return ClientCheck(
                loop_lag_p99_s=v.get("loop_lag_p99_s"),
                cpu_fraction=v.get("cpu_fraction"),
                client_bound=bool(v.get("client_bound", False)),
                lost=tuple(str(x) for x in v.get("lost") or ()),
                send_lag_p99_s=v.get("send_lag_p99_s"),
                send_lag_fraction=v.get("send_lag_fraction"),
                client_bound_reasons=tuple(str(x) for x in v.get("client_bound_reasons") or ()),
            )

        return cls(
            tool_version=str(d.get("tool_version", __version__)),
            suite_version=str(d.get("suite_version", SUITE_VERSION)),
            phases={str(k): check(v) for k, v in (d.get("phases") or {}).items()},
            levels={int(k): check(v) for k, v in (d.get("levels") or {}).items()},
            rtt_s=d.get("rtt_s"),
            thresholds=Thresholds.from_dict(d.get("thresholds") or {}),
            run_status=d.get("run_status"),
            run_error=d.get("run_error"),
        )


@dataclass(frozen=True)
class Window:
    """A steady-state window on the run clock, and how it was found."""

    start_s: float
    end_s: float
    #: "plateau" | "peak" | "arrivals" | "whole"
    basis: str
    target_inflight: int | None
    max_inflight: int

    @property
    def duration_s(self) -> float:
        """Length of the window."""
        return self.end_s - self.start_s


# --------------------------------------------------------------------------- frames

_NUMERIC = ("t0_s", "level", "prompt_tokens", "requested_output_tokens", "output_tokens",
            "counted_output_tokens", "usage_completion_tokens", "ttft_s", "ttfa_s", "e2e_s",
            "http_status", "send_lag_s", "end_s")
_TEXT = ("id", "phase", "outcome", "finish_reason", "error", "prompt_id")
_FLAGS = ("prompt_tokens_estimated", "output_tokens_estimated")


def frames(records: Iterable[RequestRecord]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both frames in one pass over the records, so chunk rows line up with request rows."""
    recs = records if isinstance(records, list) else list(records)
    n = len(recs)
    cols: dict[str, Any] = {c: np.array([getattr(r, c) for r in recs], dtype=np.float64)
                            for c in _NUMERIC}
    for c in _TEXT:
        cols[c] = pd.Series([getattr(r, c) for r in recs], dtype=object)
    for c in _FLAGS:
        cols[c] = np.array([bool(getattr(r, c)) for r in recs], dtype=bool)

    lens = np.fromiter((len(r.chunks) for r in recs), dtype=np.int64, count=n)
    total = int(lens.sum())
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(r.chunks for r in recs)),
                       dtype=np.float64, count=2 * total).reshape(total, 2)
    rid = np.repeat(np.arange(n), lens)
    offset, tokens = flat[:, 0], flat[:, 1]
    first = np.cumsum(lens) - lens
    has = lens > 0
    first_off = np.full(n, np.nan)
    last_off = np.full(n, np.nan)
    first_off[has] = offset[first[has]]
    last_off[has] = offset[first[has] + lens[has] - 1]
    chunk_tokens = np.bincount(rid, weights=tokens, minlength=n)

    ttft = np.where(np.isnan(cols["ttft_s"]), first_off, cols["ttft_s"])
    e2e = np.where(np.isnan(cols["e2e_s"]), last_off, cols["e2e_s"])
    out = cols["output_tokens"]
    estimated = cols["output_tokens_estimated"] | np.isnan(out)
    out = np.where(np.isnan(out), cols["counted_output_tokens"], out)
    out = np.where(np.isnan(out) & has, chunk_tokens, out)
    with np.errstate(all="ignore"):  # 0/0 and x/0 become NaN/inf, filtered below
        scale = np.where((chunk_tokens > 0) & np.isfinite(out), out / chunk_tokens, 1.0)
        # tokens that arrived after the first chunk: out - 1 when chunks carry one token
        # (the SPEC's formula); out - k when the first chunk bundles k, else TPOT reads low.
        # k is our count of that chunk scaled to the server's usage, like every chunk count
        # (our tokenizer is not the vendor's).
        first_tokens = np.ones(n)
        first_tokens[has] = tokens[first[has]] * scale[has]
        after_first = out - np.fmax(first_tokens, 1.0)
        tpot = np.where((out >= 2) & (after_first > 0), (e2e - ttft) / after_first, np.nan)
        rate = np.where(tpot > 0, 1.0 / tpot, np.nan)
    outcome = cols["outcome"].to_numpy()
    ok = outcome == "ok"
    t0 = cols["t0_s"]
    req = pd.DataFrame(copy=False, data={
        **cols,
        "ttft_s": ttft,
        "e2e_s": e2e,
        "output_tokens": out,
        "output_tokens_estimated": estimated,
        "n_chunks": lens,
        "chunk_tokens": chunk_tokens,
        "tpot_s": tpot,
        "stream_tokens_per_s": rate,
        # fmax ignores NaN: the record's own end (any outcome) when the prober gave one,
        # else its last chunk, else t0 (older runs: a failure without content)
        "end_s": t0 + np.nan_to_num(np.fmax(cols["end_s"], np.fmax(e2e, last_off)), nan=0.0),
        "ok": ok,
        "served": has,
        "admission_failure": (outcome == "rejected") | ((outcome == "timeout") & ~has),
    })

    gap = np.empty(total)
    if total:
        gap[0] = np.nan
        gap[1:] = np.diff(offset)
        gap[first[has]] = np.nan
    phase_codes, phase_names = pd.factorize(req["phase"])
    chunks = pd.DataFrame(copy=False, data={
        "rid": rid,
        "id": _ids_for(req["id"], rid),
        "phase": pd.Categorical.from_codes(phase_codes[rid], categories=phase_names),
        "level": cols["level"][rid],
        "t_s": t0[rid] + offset,
        "offset_s": offset,
        "tokens": tokens,
        "scaled_tokens": tokens * scale[rid],
        "gap_s": gap,
    })
    return req, chunks


def _ids_for(ids: pd.Series, rid: np.ndarray) -> Any:
    """Request id per chunk: categorical codes when ids are unique (cheap for 5M rows)."""
    if ids.is_unique and not ids.isna().any():
        return pd.Categorical.from_codes(rid, categories=pd.Index(ids.astype(str)))
    return ids.to_numpy()[rid]


def records_frame(records: Iterable[RequestRecord]) -> pd.DataFrame:
    """One row per request, with derived TTFT/E2E/TPOT/stream rate and end time."""
    return frames(records)[0]


def chunks_frame(records: Iterable[RequestRecord]) -> pd.DataFrame:
    """One row per content chunk: request, phase, level, absolute arrival, tokens, gap."""
    return frames(records)[1]


# --------------------------------------------------------------------------- small parts


def _num(x: Any) -> float | None:
    """A computed figure as a JSON-safe float: None for missing, NaN or infinite. Not
    `summary.as_number`, which reads JSON: this takes numpy's scalars (an int64 or float32
    is no Python int or float, and would read as missing there)."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def percentiles(values: Any, extra: Sequence[float] = ()) -> dict[str, Any]:
    """p50/p90/p99 with the count beside them, so a thin tail is never read as solid, and
    each with its 95 % interval (`p90_ci`: [low, high], distribution-free; an end is None
    where n cannot bound it, evalkit.intervals)."""
    a = np.asarray(values, dtype=np.float64).ravel()
    a = np.sort(a[np.isfinite(a)])
    n = int(a.size)
    qs = (50.0, 90.0, 99.0, *extra)
    keys = [f"p{q:g}" for q in qs]
    out: dict[str, Any] = dict.fromkeys(keys)
    out.update({"n": n, "low_confidence": n < LOW_CONFIDENCE_N,
                "mean": None, "min": None, "max": None})
    out.update({f"{k}_ci": [None, None] for k in keys})
    if n:
        for k, q, v in zip(keys, qs, np.percentile(a, qs), strict=True):
            out[k] = float(v)
            out[f"{k}_ci"] = quantile_interval(a, q / 100)
        with np.errstate(over="ignore"):
            out.update(mean=_num(a.mean()), min=float(a.min()), max=float(a.max()))
    return out


def outcome_counts(outcomes: Any) -> dict[str, int]:
    """Every outcome with its count, zeros included, so a reader never guesses."""
    counts = pd.Series(np.asarray(outcomes, dtype=object)).value_counts()
    out: dict[str, int] = {o: int(counts.get(o, 0)) for o in OUTCOMES}
    for other, c in counts.items():
        if other not in out:
            out[str(other)] = int(c)
    return out


def steady_state_window(starts: Any, ends: Any, target: int | None) -> Window | None:
    """The span where the intended concurrency is in flight: ramp-up and drain excluded."""
    s = np.asarray(starts, dtype=np.float64)
    e = np.fmax(np.asarray(ends, dtype=np.float64), s)
    if s.size == 0:
        return None
    whole = (float(s.min()), float(e.max()))
    # a request with no duration (rejected at once) is never in flight
    held = e > s
    times = np.concatenate([s[held], e[held]])
    delta = np.concatenate([np.ones(held.sum()), -np.ones(held.sum())])
    order = np.lexsort((delta, times))  # at equal times, ends before starts
    t, inflight = times[order], np.cumsum(delta[order])
    peak = int(inflight.max()) if inflight.size else 0
    if target is None:
        ws, we, basis = float(s.min()), float(s.max()), "arrivals"
    elif peak < 1:
        ws, we, basis = whole[0], whole[1], "whole"
    else:
        goal = min(int(target), peak)
        basis = "plateau" if peak >= target else "peak"
        at = np.flatnonzero(inflight >= goal)
        ws, we = float(t[at[0]]), float(t[at[-1] + 1])
    span = whole[1] - whole[0]
    if not we - ws > 0 or we - ws < MIN_WINDOW_FRACTION * span:
        ws, we, basis = whole[0], whole[1], "whole"
    if not we - ws > 0:
        return None
    return Window(ws, we, basis, None if target is None else int(target), peak)


def _rows_mask(rows: pd.Index, rid: np.ndarray, size: int) -> np.ndarray:
    """Chunk mask for a subset of request rows (a lookup, not a hash join)."""
    sel = np.zeros(size, dtype=bool)
    sel[rows.to_numpy()] = True
    mask: np.ndarray = sel[rid]
    return mask


def _lookup_size(req: pd.DataFrame, rid: np.ndarray) -> int:
    """Length of a row-id lookup table that covers both frames."""
    top = int(req.index.max()) + 1 if len(req) else 0
    return max(top, int(rid.max()) + 1 if rid.size else 0)


def output_length_check(req: pd.DataFrame, shortfall: float = 0.05) -> dict[str, Any]:
    """Achieved vs requested output length over ok requests; vendors ignore min_tokens."""
    m = req["ok"].to_numpy() & req["requested_output_tokens"].notna().to_numpy() & \
        req["output_tokens"].notna().to_numpy() & (req["requested_output_tokens"] > 0).to_numpy()
    ratio = (req["output_tokens"].to_numpy()[m] / req["requested_output_tokens"].to_numpy()[m])
    short = int((ratio < 1.0 - shortfall).sum())
    n = int(m.sum())
    return {"checked": n, "short": short,
            "short_fraction": short / n if n else None,
            "achieved_ratio": percentiles(ratio),
            "flagged": (short > 0) if n else None,
            "tolerance": shortfall}


def usage_honesty(req: pd.DataFrame, tolerance: float = 0.25) -> dict[str, Any]:
    """The vendor's completion_tokens (what it bills) against our count of the text."""
    u = req["usage_completion_tokens"].to_numpy()
    c = req["counted_output_tokens"].to_numpy()
    m = np.isfinite(u) & np.isfinite(c) & (c > 0)
    ratio = u[m] / c[m]
    n = int(m.sum())
    med = float(np.median(ratio)) if n else None
    return {"checked": n,
            "usage_over_counted": percentiles(ratio),
            "disagreeing": int((np.abs(ratio - 1.0) > tolerance).sum()),
            "flagged": (abs(med - 1.0) > tolerance) if med is not None else None,
            "tolerance": tolerance}


#: phases whose requests ask for a stream long enough to time (prefill and cache ask for
#: two tokens: their outputs say nothing about streaming)
STREAMED_PHASES = ("baseline", "ramp", "soak", "rate")
#: a request's output shorter than this (our count) is not judged on how it streamed
MIN_STREAMED_TOKENS = 4


def streaming_check(req: pd.DataFrame, chunks: pd.DataFrame,
                    tolerance: float = 0.05) -> dict[str, Any]:
    """Did the endpoint stream? The share of ok requests of the streamed phases whose
    largest chunk carried more than half their output.

    A server that buffers a whole answer and sends it as one chunk (or all but a token)
    has a TTFT but no rhythm: its TPOT is unmeasured or read off the last token alone,
    and the requests it streams least drop out of every TPOT percentile. Such a run
    measured no stream, whatever its aggregate throughput.
    """
    m = (req["ok"].to_numpy() & req["phase"].isin(STREAMED_PHASES).to_numpy()
         & (req["chunk_tokens"].to_numpy() >= MIN_STREAMED_TOKENS))
    rows = req.index[m]
    n = len(rows)
    one = 0
    if n:
        rid = chunks["rid"].to_numpy()
        mask = _rows_mask(rows, rid, _lookup_size(req, rid))
        largest = pd.Series(chunks["tokens"].to_numpy()[mask]).groupby(rid[mask]).max()
        total = req.loc[largest.index, "chunk_tokens"].to_numpy()
        one = int((largest.to_numpy() > 0.5 * total).sum())
    share = one / n if n else None
    return {"checked": n, "one_chunk": one, "one_chunk_fraction": share,
            "flagged": (share > tolerance) if share is not None else None,
            "tolerance": tolerance}


# --------------------------------------------------------------------------- phase stats


def phase_stats(req: pd.DataFrame, chunks: pd.DataFrame, target: int | None = None,
                thresholds: Thresholds | None = None) -> dict[str, Any]:
    """Latency, rhythm, throughput and outcomes of one group of requests (a phase or level).

    `req` is a row subset of the request frame (its index = row ids); `chunks` may be the
    whole chunk frame. `target` is the intended concurrency (None for open loop).
    """
    th = thresholds or Thresholds()
    n = len(req)
    rid = chunks["rid"].to_numpy()
    size = _lookup_size(req, rid)
    in_group = _rows_mask(req.index, rid, size)
    ok_rows = req.index[req["ok"].to_numpy()]
    ok_chunk = _rows_mask(ok_rows, rid, size)
    gap = chunks["gap_s"].to_numpy()
    ok_req = req[req["ok"]]

    g_gap = gap[in_group]
    stall = g_gap > th.stall_s
    window = steady_state_window(req["t0_s"].to_numpy(), req["end_s"].to_numpy(), target)
    aggregate: float | None = None
    aggregate_ci: list[float] | None = None
    if window is not None:
        t = chunks["t_s"].to_numpy()
        inside = ok_chunk & (t > window.start_s) & (t <= window.end_s)
        tokens = chunks["scaled_tokens"].to_numpy()[inside]
        aggregate = _num(float(tokens.sum()) / window.duration_s)
        aggregate_ci = rate_interval(t[inside], tokens, window.start_s, window.end_s)

    admission = int(req["admission_failure"].sum())
    failed = int((~req["ok"]).sum())
    return {
        "requests": n,
        "outcomes": outcome_counts(req["outcome"]),
        "admission_failure_rate": admission / n if n else None,
        "failure_rate": failed / n if n else None,
        # exact (Clopper-Pearson) 95 % interval: what the ramp's failure limit is judged on
        "failure_rate_ci": proportion_interval(failed, n),
        "ttft_s": percentiles(ok_req["ttft_s"]),
        "ttfa_s": percentiles(ok_req["ttfa_s"]),
        "reasoning_first": int((ok_req["ttfa_s"] > ok_req["ttft_s"]).sum()),
        "e2e_s": percentiles(ok_req["e2e_s"]),
        "tpot_s": percentiles(ok_req["tpot_s"]),
        "itl_s": percentiles(gap[ok_chunk]),
        "tokens_per_chunk": percentiles(chunks["scaled_tokens"].to_numpy()[ok_chunk]),
        "stream_tokens_per_s": percentiles(ok_req["stream_tokens_per_s"], extra=(10.0, 1.0)),
        "output_tokens": percentiles(ok_req["output_tokens"]),
        "output_tokens_estimated": bool(ok_req["output_tokens_estimated"].any()),
        "aggregate_tokens_per_s": aggregate,
        "aggregate_tokens_per_s_ci": aggregate_ci,
        "steady_state": None if window is None else {
            **asdict(window), "duration_s": window.duration_s},
        "stalls": int(stall.sum()),
        "stalled_streams": int(np.unique(rid[in_group][stall]).size),
        "max_gap_s": _num(np.nanmax(g_gap)) if np.isfinite(g_gap).any() else None,
        "stall_threshold_s": th.stall_s,
        "output_length": output_length_check(req, th.output_shortfall),
        "top_error": top_error(req),
    }


def top_error(req: pd.DataFrame) -> str | None:
    """The most frequent error of a group, with its count: what a reader fixes first."""
    errors = req.loc[~req["ok"].to_numpy(), "error"].dropna()
    if errors.empty:
        return None
    counts = errors.astype(str).str.slice(0, 120).value_counts()
    return f"{counts.index[0]} (x{int(counts.iloc[0])})"


def prefill_fit(df: pd.DataFrame) -> dict[str, Any]:
    """TTFT = a + b·prompt_tokens over the prefill phase's ok requests; rate = 1/b.

    Fitted on the median TTFT per prompt length (robust to outliers, equal weight per
    length). Nones when it cannot be fitted: fewer than 2 distinct lengths, or b ≤ 0.
    """
    m = (df["phase"] == "prefill") & df["ok"] & df["prompt_tokens"].notna() & \
        df["ttft_s"].notna()
    sub = df.loc[m, ["prompt_tokens", "ttft_s"]]
    per = sub.groupby("prompt_tokens")["ttft_s"].agg(["median", "count"]).sort_index()
    points = [{"prompt_tokens": int(p), "ttft_s": float(r["median"]), "n": int(r["count"])}
              for p, r in per.iterrows()]
    out: dict[str, Any] = {"tokens_per_s": None, "overhead_s": None, "r2": None,
                           "slope_s_per_token": None, "points": points,
                           "lengths": len(points), "requests": len(sub),
                           "prompt_tokens_estimated":
                               bool(df.loc[m, "prompt_tokens_estimated"].any()),
                           "reason": None, "low_confidence": len(points) < 3,
                           # 95 % intervals (OLS, Student t): None with fewer than 3 lengths
                           "slope_ci": None, "overhead_s_ci": None, "tokens_per_s_ci": None,
                           # a slope indistinguishable from 0 gives only a lower bound
                           "tokens_per_s_at_least": None}
    if len(points) < 2:
        out["reason"] = "fewer than 2 distinct prompt lengths"
        return out
    x = per.index.to_numpy(dtype=np.float64)
    y = per["median"].to_numpy(dtype=np.float64)
    fit = ols(x, y)
    b, a = fit["slope"], fit["intercept"]
    resid = y - (a + b * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    out["slope_s_per_token"] = float(b)
    out["slope_ci"], out["overhead_s_ci"] = fit["slope_ci"], fit["intercept_ci"]
    out["r2"] = 1.0 - float((resid ** 2).sum()) / ss_tot if ss_tot > 0 else None
    low, high = fit["slope_ci"] or (b, b)
    if high <= 0:
        out["reason"] = "TTFT does not grow with prompt length (slope ≤ 0)"
        return out
    out["overhead_s"] = float(a)
    if low <= 0 or not b > 0:
        # a slope indistinguishable from zero is no rate: only "faster than 1/high"
        out["tokens_per_s_at_least"] = 1.0 / high
        out["reason"] = (f"no measurable prefill cost: above {1.0 / high:,.0f} tokens/s (the "
                         "fit's 95 % interval for the slope includes zero)")
        return out
    out["tokens_per_s"] = 1.0 / float(b)
    out["tokens_per_s_ci"] = [1.0 / high, 1.0 / low] if fit["slope_ci"] else None
    return out


# --------------------------------------------------------------------------- ramp


def _p90(stats: Mapping[str, Any] | None, key: str) -> float | None:
    """The p90 of one distribution in a stats dict, if there is one."""
    return None if stats is None else (stats.get(key) or {}).get("p90")


def _ratio(num: float | None, den: float | None) -> float | None:
    """num / den, or None when either is missing or the result is not a finite number."""
    return _num(num / den) if num is not None and den is not None and den > 0 else None


#: what one metric's 95 % interval says against its limit
Against = tuple[str | None, list[float | None] | None]


def _latency_against(lvl: Mapping[str, Any], key: str, base: float | None, limit: float
                     ) -> tuple[float | None, list[float | None] | None, str | None]:
    """A level's p90 over the baseline's, its interval likewise, and the call against the
    limit: "breach" (the whole interval above it), "clear" (the whole interval at or
    below), "tie" (it straddles: an open end straddles too). A level dict without an
    interval (written before intervals) is judged on its point, as it was then."""
    point = _ratio(_p90(lvl, key), base)
    if point is None or base is None:
        return None, None, None
    ci = (lvl.get(key) or {}).get("p90_ci")
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return point, None, "breach" if point > limit else "clear"
    ratio_ci = [None if v is None else _ratio(v, base) for v in ci]
    lo, hi = ratio_ci
    call = ("breach" if lo is not None and lo > limit else
            "clear" if hi is not None and hi <= limit else "tie")
    return point, ratio_ci, call


def _failures_against(rate: float | None, failed: int, requests: int, limit: float,
                      given: Any) -> tuple[list[float] | None, str | None]:
    """The failure rate's exact interval and the call: a breach needs the whole interval
    above the limit; an observed rate above the limit whose interval reaches below it is
    a tie. A rate at or below the limit is clear: confirming 1 % from below would take
    367 failure-free requests at every level, and no run could sustain any level."""
    if rate is None:
        return None, None
    ci = (list(given) if isinstance(given, list | tuple) and len(given) == 2
          else proportion_interval(failed, requests))
    if ci is None or ci[0] is None:
        return ci, "breach" if rate > limit else "clear"
    return ci, ("breach" if ci[0] > limit else "tie" if rate > limit else "clear")


def _requests_to_decide(n: int, point: float, ci: Sequence[float | None] | None,
                        limit: float, share: bool) -> int | None:
    """About how many requests at the level would turn its tie into a decision, if what
    was seen holds: the interval narrows as 1/sqrt(n)."""
    if ci is None:
        return None
    if share:  # the observed failure rate above the limit, its interval's low end below
        gap = point - limit
        return max(n + 1, math.ceil(1.96 ** 2 * point * (1 - point) / gap ** 2)) if gap > 0 \
            else None
    lo, hi = ci
    if lo is None or hi is None:
        return max(n + 1, samples_for(0.9))
    gap = abs(point - limit)
    return max(n + 1, math.ceil(n * ((hi - lo) / 2 / gap) ** 2)) if gap > 0 else None


def _judge_level(lvl: Mapping[str, Any], base_ttft: float | None, base_tpot: float | None,
                 limits: Mapping[str, float], bound: bool) -> dict[str, Any]:
    """One level against the baseline: its ratios with their 95 % intervals, which limits
    it breaches (the whole interval above), which it ties (the interval straddles), and
    its status."""
    # every request that did not end ok was not served: rejected (429/503) as well as
    # errors, timeouts and cut streams (SPEC: they count toward degradation)
    requests = int(lvl.get("requests") or 0)
    ok = int((lvl.get("outcomes") or {}).get("ok", 0))
    failure_rate = lvl.get("failure_rate")
    if failure_rate is None and requests:
        failure_rate = 1 - ok / requests
    ttft, ttft_ci, ttft_call = _latency_against(lvl, "ttft_s", base_ttft, limits["ttft"])
    tpot, tpot_ci, tpot_call = _latency_against(lvl, "tpot_s", base_tpot, limits["itl"])
    failed = round(failure_rate * requests) if failure_rate is not None else requests - ok
    fail_ci, fail_call = _failures_against(failure_rate, failed, requests,
                                           limits["admission"], lvl.get("failure_rate_ci"))
    values = {"ttft": ttft, "itl": tpot, "admission": failure_rate}
    cis = {"ttft": ttft_ci, "itl": tpot_ci, "admission": fail_ci}
    calls = {"ttft": ttft_call, "itl": tpot_call, "admission": fail_call}
    excess = {k: e for k, v in values.items()
              if v is not None and (e := _num(v / limits[k])) is not None}
    excess_ci = {k: [None if x is None else _num(x / limits[k]) for x in ci]
                 for k, ci in cis.items() if ci is not None}
    breaches = [k for k in DEGRADATION_METRICS if calls[k] == "breach"]
    ties = [k for k in DEGRADATION_METRICS if calls[k] == "tie"]
    if not requests:
        status = "no_data"
    elif ok < MOSTLY_FAILED_OK_SHARE * requests:
        # mostly failed: the server's own answer, whatever the client's state
        status, breaches = "failed", ["admission"]
    elif bound:
        status = "client_bound"
    elif breaches:
        status = "breached"
    elif ties:
        status = "tie"
    else:
        status = "sustained"
    n_ok = {"ttft": (lvl.get("ttft_s") or {}).get("n") or ok,
            "itl": (lvl.get("tpot_s") or {}).get("n") or ok, "admission": requests}
    to_decide = [r for k in ties if (v := values[k]) is not None and (r := _requests_to_decide(
        int(n_ok[k]), v, cis[k], limits[k], k == "admission")) is not None]
    failures = {k: v for k, v in (lvl.get("outcomes") or {}).items() if k != "ok" and v}
    return {**lvl, "ttft_p90_ratio": ttft, "tpot_p90_ratio": tpot,
            # the level's p90 interval over the baseline's p90 (an end None: unbounded)
            "ttft_p90_ratio_ci": ttft_ci, "tpot_p90_ratio_ci": tpot_ci,
            "breaches": breaches if status in ("breached", "failed") else [],
            "would_breach": breaches if status == "client_bound" else [],
            "ties": ties if status in ("tie", "breached") else [],
            "tie_requests": max(to_decide) if status == "tie" and to_decide else None,
            "failures": failures,
            "excess": excess, "excess_ci": excess_ci, "client_bound": bound, "status": status}


def _ramp_conclusion(judged: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first confirmed breach, what degraded there, the highest level held below it,
    and the ties that keep the answer open (a tie never counts as held or as breached)."""
    first = next((d for d in judged if d["status"] in ("breached", "failed")), None)
    ranked = [] if first is None else sorted(first["breaches"], key=lambda k: -first["excess"][k])
    cap = math.inf if first is None else first["concurrency"]
    held = [d["concurrency"] for d in judged
            if d["status"] == "sustained" and d["concurrency"] < cap]
    above = [d for d in judged if d["concurrency"] > cap
             and d["status"] in ("breached", "failed", "sustained", "tie")]
    floor = max(held) if held else 0
    open_ties = [d for d in judged if d["status"] == "tie" and floor < d["concurrency"] < cap]
    tie = open_ties[0] if open_ties else None
    note: str | None
    if not held and tie is not None:
        note = (f"no level was confirmed sustained: level {tie['concurrency']} is a tie "
                f"(its 95 % interval straddles the limit on {', '.join(tie['ties'])})")
    elif not held:
        note = ("no level could be judged" if first is None else
                f"the lowest judged level ({first['concurrency']}) already breaches")
    elif first is None:
        note = "no level breached: the highest level measured is a lower bound"
    else:
        note = None
    if tie is not None:
        more = (f"; about {tie['tie_requests']} requests there would decide it"
                if tie.get("tie_requests") else "")
        bounded = (f"level {tie['concurrency']} is a tie ({', '.join(tie['ties'])}: its 95 % "
                   f"interval straddles the limit), so the max sustained level may be higher"
                   f"{more}")
        note = bounded if held else f"{note}{more}"
    metric = {"ttft": "ttft_s p90 / baseline", "itl": "tpot_s p90 / baseline",
              "admission": "failure_rate"}
    return {
        "max_sustained_concurrency": max(held) if held else None,
        "first_degraded": ranked[0] if ranked else None,
        "first_degraded_metric": metric[ranked[0]] if ranked else None,
        "first_breach_concurrency": None if first is None else first["concurrency"],
        "first_degraded_tied": ranked if len(ranked) > 1 else [],
        "first_degraded_tie_rule": "largest excess over its threshold"
        if len(ranked) > 1 else None,
        "breach_confirmed": ({"breached": True, "failed": True, "sustained": False}.get(
            above[0]["status"]) if above else None),
        "max_sustained_is_lower_bound": bool(held) and first is None,
        # what the failed requests at the first breach were, when failures breached
        "first_breach_failures": (first["failures"] or None) if first else None,
        # ties: levels whose 95 % interval straddled a limit (neither held nor breached)
        "tie_levels": [d["concurrency"] for d in judged if d["status"] == "tie"],
        # the lowest tie above the max sustained level and below the first breach: the
        # level whose re-run (more requests there) would move the answer
        "first_tie_concurrency": None if tie is None else tie["concurrency"],
        "max_sustained_bounded_by_tie": tie is not None,
        "breach_rule": "a level breaches when the 95 % interval of its p90 (TTFT, TPOT over "
                       "the baseline's p90) or of its failure rate lies wholly above the "
                       "limit; an interval that straddles the limit is a tie",
        "note": note,
    }


def judge_ramp(levels: Sequence[Mapping[str, Any]], baseline: Mapping[str, Any] | None,
               thresholds: Thresholds | None = None,
               client_bound: Iterable[int] = ()) -> dict[str, Any]:
    """Which level first degrades, on which metric, and the highest level held before it.

    A client-bound level (or one with no data) gives no capacity conclusion: it is neither
    sustained nor breached.
    """
    th = thresholds or Thresholds()
    bound = set(client_bound)
    limits = {"ttft": th.ttft_p90_ratio, "itl": th.tpot_p90_ratio,
              "admission": th.admission_failure_rate}
    base_ttft, base_tpot = _p90(baseline, "ttft_s"), _p90(baseline, "tpot_s")
    judged = [_judge_level(lvl, base_ttft, base_tpot, limits, int(lvl["concurrency"]) in bound)
              for lvl in sorted(levels, key=lambda d: d["concurrency"])]
    return {
        "levels": judged,
        **_ramp_conclusion(judged),
        "client_bound_levels": sorted(d["concurrency"] for d in judged if d["client_bound"]),
        "judged_on": [k for k, base in (("ttft", base_ttft), ("itl", base_tpot))
                      if base is not None] + ["admission"],
        "thresholds": {"ttft_p90_ratio": th.ttft_p90_ratio, "tpot_p90_ratio": th.tpot_p90_ratio,
                       "admission_failure_rate": th.admission_failure_rate},
    }


# --------------------------------------------------------------------------- other phases


def cache_check(req: pd.DataFrame, ratio_threshold: float = 0.5) -> dict[str, Any] | None:
    """Same prompt twice: a much faster repeat means a prefix cache served it."""
    sub = req[(req["phase"] == "cache") & req["ok"] & req["ttft_s"].notna() &
              req["prompt_id"].notna()]
    if not (req["phase"] == "cache").any():
        return None
    sub = sub.sort_values("t0_s", kind="stable")
    rank = sub.groupby("prompt_id").cumcount().to_numpy()
    first = sub[rank == 0].set_index("prompt_id")["ttft_s"]
    repeat = sub[rank == 1].set_index("prompt_id")["ttft_s"]
    both = pd.concat([first.rename("first"), repeat.rename("repeat")], axis=1).dropna()
    both = both[both["first"] > 0]  # a 0 s first TTFT cannot be "much faster" than
    n = len(both)
    ratio = (both["repeat"] / both["first"]).to_numpy() if n else np.array([])
    med = float(np.median(ratio)) if n else None
    return {"pairs": n,
            "first_ttft_s": _num(both["first"].median()) if n else None,
            "repeat_ttft_s": _num(both["repeat"].median()) if n else None,
            "repeat_over_first": med,
            "prefix_cache": (med < ratio_threshold) if med is not None else None,
            "threshold": ratio_threshold}


def network_share(req: pd.DataFrame, baseline_ttft_p50: float | None,
                  rtt_s: float | None = None) -> dict[str, Any] | None:
    """Round trip apart from generation, so TTFT can be told apart from the network path."""
    sub = req[(req["phase"] == "rtt") & req["ok"]]
    rtts = sub["e2e_s"].where(sub["e2e_s"].notna(), sub["ttft_s"]).to_numpy()
    dist = percentiles(rtts)
    rtt = dist["p50"] if dist["n"] else _num(rtt_s)
    if rtt is None:
        return None
    return {"rtt_s": rtt, "rtt": dist, "source": "rtt records" if dist["n"] else "meta",
            "baseline_ttft_p50_s": baseline_ttft_p50,
            "share_of_ttft": _ratio(rtt, baseline_ttft_p50)}


def connect_section(req: pd.DataFrame, chunks: pd.DataFrame, rtt_s: float | None
                    ) -> dict[str, Any]:
    """Format facts from the first stream: does it report usage, how are tokens bundled."""
    ok = req[req["ok"]]
    ok_chunk = _rows_mask(ok.index, chunks["rid"].to_numpy(),
                          _lookup_size(req, chunks["rid"].to_numpy()))
    return {"usage_reported": bool(ok["usage_completion_tokens"].notna().any())
            if len(ok) else None,
            "tokens_per_chunk": percentiles(chunks["scaled_tokens"].to_numpy()[ok_chunk]),
            "rtt_s": rtt_s,
            "requests": len(req),
            "outcomes": outcome_counts(req["outcome"]),
            "ttft_s": _num(ok["ttft_s"].median()) if len(ok) else None,
            "output_tokens_estimated": bool(ok["output_tokens_estimated"].any())}


def drift(req: pd.DataFrame, parts: int = 3) -> dict[str, Any] | None:
    """Early vs late thirds of a long hold: does the tail creep as the run goes on?"""
    ok = req[req["ok"]]
    if len(ok) < 2 * parts:
        return None
    t = ok["t0_s"].to_numpy()
    edges = np.linspace(t.min(), t.max(), parts + 1)
    part = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, parts - 1)
    ttft = [percentiles(ok["ttft_s"].to_numpy()[part == i]) for i in range(parts)]
    tpot = [percentiles(ok["tpot_s"].to_numpy()[part == i]) for i in range(parts)]
    windows = [{"start_s": float(edges[i]), "end_s": float(edges[i + 1]),
                "ttft_s": ttft[i], "tpot_s": tpot[i]} for i in range(parts)]
    return {"windows": windows,
            "ttft_p90_ratio": _ratio(ttft[-1]["p90"], ttft[0]["p90"]),
            "tpot_p90_ratio": _ratio(tpot[-1]["p90"], tpot[0]["p90"])}


def _single_level(req: pd.DataFrame) -> int | None:
    """The phase's concurrency when all its records share one, else None."""
    levels = req["level"].dropna().unique()
    return int(levels[0]) if len(levels) == 1 else None


def client_section(meta: SummaryMeta) -> dict[str, Any]:
    """The client's own health over the run: a bound client voids capacity conclusions."""
    checks = [*meta.phases.values(), *meta.levels.values()]
    lags = [c.loop_lag_p99_s for c in checks if c.loop_lag_p99_s is not None]
    cpus = [c.cpu_fraction for c in checks if c.cpu_fraction is not None]
    sends = [c.send_lag_p99_s for c in checks if c.send_lag_p99_s is not None]
    held = [c.send_lag_fraction for c in checks if c.send_lag_fraction is not None]
    return {"loop_lag_p99_s": max(lags) if lags else None,
            "cpu_fraction_max": max(cpus) if cpus else None,
            "send_lag_p99_s": max(sends) if sends else None,
            "send_lag_fraction_max": max(held) if held else None,
            "client_bound": any(c.client_bound for c in checks),
            "client_bound_reasons": sorted({r for c in checks for r in c.client_bound_reasons}),
            "client_bound_phases": sorted(p for p, c in meta.phases.items() if c.client_bound),
            "client_bound_levels": sorted(lv for lv, c in meta.levels.items()
                                          if c.client_bound),
            "phases": {p: _check_dict(c) for p, c in meta.phases.items()},
            "levels": {str(lv): _check_dict(c) for lv, c in sorted(meta.levels.items())}}


def _check_dict(check: ClientCheck) -> dict[str, Any]:
    """A self-check as summary.json shows it: `lost` only where a worker was lost."""
    d = asdict(check)
    d["client_bound_reasons"] = list(check.client_bound_reasons)
    if not check.lost:
        del d["lost"]
    return d


# --------------------------------------------------------------------------- summary


def summarize(records: Iterable[RequestRecord],
              meta: SummaryMeta | Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole `summary.json` dict (schema evalkit.summary/1), JSON-safe."""
    m = meta if isinstance(meta, SummaryMeta) else SummaryMeta.from_dict(meta or {})
    req, chunks = frames(records)
    return summarize_frames(req, chunks, m)


def summarize_frames(req: pd.DataFrame, chunks: pd.DataFrame, meta: SummaryMeta
                     ) -> dict[str, Any]:
    """`summarize` for frames already built (a notebook may filter them first)."""
    th = meta.thresholds
    phase = req["phase"].to_numpy()

    def bound(p: str) -> bool:
        check = meta.phases.get(p)
        return bool(check and check.client_bound)

    def rows(p: str) -> pd.DataFrame | None:
        sub = req[phase == p]
        return sub if len(sub) else None

    baseline_req = rows("baseline")
    baseline = None if baseline_req is None else {
        **phase_stats(baseline_req, chunks, 1, th), "client_bound": bound("baseline")}
    network = network_share(req, (baseline or {}).get("ttft_s", {}).get("p50"), meta.rtt_s)
    rtt = None if network is None else network["rtt_s"]
    connect_req = rows("connect")
    connect = None if connect_req is None else connect_section(connect_req, chunks, rtt)
    prefill = prefill_fit(req) if rows("prefill") is not None else None

    ramp_req = rows("ramp")
    ramp = None if ramp_req is None else _ramp_section(ramp_req, chunks, baseline, meta)

    soak_req = rows("soak")
    soak = None if soak_req is None else {**_soak_section(soak_req, chunks, th),
                                          "client_bound": bound("soak")}

    rate_req = rows("rate")
    rate = None if rate_req is None else {**_rate_section(rate_req, chunks, th),
                                          "client_bound": bound("rate")}

    affected = _judgement_affected(ramp, bound("baseline"))
    usage = usage_honesty(req, th.usage_disagreement)
    streaming = streaming_check(req, chunks, th.unstreamed_share)
    validity = _validity(req, ramp, meta, affected, usage, streaming)
    for section, name in ((connect, "connect"), (baseline, "baseline"), (soak, "soak"),
                          (rate, "rate"), (prefill, "prefill")):
        if section is not None:
            section["validity"] = validity["phases"][name]

    return {
        "schema": SCHEMA,
        "tool": "evalkit",
        "tool_version": meta.tool_version,
        "suite_version": meta.suite_version,
        "requests": len(req),
        "outcomes": outcome_counts(req["outcome"]),
        "output_tokens_estimated": bool(req.loc[req["ok"], "output_tokens_estimated"].any()),
        "thresholds": asdict(th),
        "connect": connect,
        "baseline": baseline,
        "prefill": prefill,
        "ramp": ramp,
        "soak": soak,
        "rate": rate,
        "checks": {
            "cache": cache_check(req, th.cache_ttft_ratio),
            "network": network,
            "output_length": output_length_check(req, th.output_shortfall),
            "usage_honesty": usage,
            "streaming": streaming,
        },
        "client": {**client_section(meta), "capacity_judgement_affected": affected},
        "validity": validity,
    }


def _validity(req: pd.DataFrame, ramp: Mapping[str, Any] | None, meta: SummaryMeta,
              affected: bool, usage: Mapping[str, Any],
              streaming: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validity of every phase and ramp level, and of the run (evalkit.validity)."""
    limit = meta.thresholds.admission_failure_rate

    def of(sub: pd.DataFrame, bound: bool, check: ClientCheck | None) -> dict[str, Any]:
        return group_validity(len(sub), outcome_counts(sub["outcome"]), max_failure_rate=limit,
                              top_error=top_error(sub), client_bound=bound,
                              lost=check.lost if check else ())

    phases = {str(p): of(sub, bool((c := meta.phases.get(str(p))) and c.client_bound), c)
              for p, sub in req.groupby("phase", sort=False) if p != "rtt"}
    levels = {}
    for lvl in (ramp or {}).get("levels") or []:
        sub = req[(req["phase"] == "ramp") & (req["level"] == lvl["concurrency"])]
        levels[str(lvl["concurrency"])] = lvl["validity"] = of(
            sub, bool(lvl["client_bound"]), meta.levels.get(int(lvl["concurrency"])))
    lost = [w for c in (*meta.phases.values(), *meta.levels.values()) for w in c.lost]
    run = run_validity(phases, run_status=meta.run_status, run_error=meta.run_error,
                       capacity_judgement_affected=affected, lost=list(dict.fromkeys(lost)),
                       usage=usage, streaming=streaming)
    return {**run, "phases": phases, "levels": levels}


def _ramp_section(ramp_req: pd.DataFrame, chunks: pd.DataFrame,
                  baseline: Mapping[str, Any] | None, meta: SummaryMeta) -> dict[str, Any]:
    """Stats per closed-loop level, judged against the baseline (or, lacking one, level 1)."""
    levels = [{"concurrency": int(lv), **phase_stats(sub, chunks, int(lv), meta.thresholds)}
              for lv, sub in ramp_req.groupby("level", sort=True)]
    base, source = baseline, "baseline"
    if base is None:
        base = next((d for d in levels if d["concurrency"] == 1), None)
        source = "ramp level 1"
    bound = meta.phases.get("baseline")
    client_bound = [lv for lv, c in meta.levels.items() if c.client_bound]
    return {**judge_ramp(levels, base, meta.thresholds, client_bound),
            "baseline_source": source if base is not None else None,
            "baseline_client_bound": bool(bound and bound.client_bound),
            "unlevelled_requests": int(ramp_req["level"].isna().sum())}


def _soak_section(soak_req: pd.DataFrame, chunks: pd.DataFrame, th: Thresholds
                  ) -> dict[str, Any]:
    """A long hold at one level: the usual stats, plus early-vs-late drift."""
    level = _single_level(soak_req)
    return {"concurrency": level, **phase_stats(soak_req, chunks, level, th),
            "drift": drift(soak_req)}


def _rate_section(rate_req: pd.DataFrame, chunks: pd.DataFrame, th: Thresholds
                  ) -> dict[str, Any]:
    """Open loop: the usual stats, plus the send lag that would otherwise hide queueing."""
    t0 = rate_req["t0_s"].to_numpy()
    span = float(t0.max() - t0.min()) if len(t0) > 1 else 0.0
    return {**phase_stats(rate_req, chunks, None, th),
            "send_lag_s": percentiles(rate_req["send_lag_s"]),
            "arrival_rps": (len(t0) - 1) / span if span > 0 else None}


def _judgement_affected(ramp: Mapping[str, Any] | None, baseline_bound: bool) -> bool:
    """Did a client bottleneck sit where the capacity conclusion is drawn (not above it)?"""
    if baseline_bound:
        return True
    if ramp is None:
        return False
    first = ramp.get("first_breach_concurrency")
    return any(lv["client_bound"] and (first is None or lv["concurrency"] <= first)
               for lv in ramp["levels"])
