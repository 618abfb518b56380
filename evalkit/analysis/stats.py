"""Percentiles, outcome counts, the steady-state window and a phase's statistics:
the figures of one group of requests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalkit.analysis.frames import _lookup_size, _num, _rows_mask
from evalkit.analysis.intervals import (
    proportion_interval,
    quantile_interval,
    rate_interval,
)
from evalkit.analysis.jsonread import Json
from evalkit.analysis.thresholds import Thresholds
from evalkit.records import OUTCOMES

#: A p99 from fewer samples than this is marked low-confidence (SPEC).
LOW_CONFIDENCE_N = 100
#: A steady-state window shorter than this share of the phase is not trusted.
MIN_WINDOW_FRACTION = 0.10


@dataclass(frozen=True)
class Window:
    """A steady-state window on the run clock, and how it was found."""

    start_s: float
    end_s: float
    #: "plateau" | "peak" | "arrivals" | "whole"
    basis: str
    target_inflight: int | None
    max_inflight: int
    #: the in-flight count over the window, time-weighted, and its lowest: the
    #: concurrency the level achieved, which Retry-After pauses, send lag or a lost
    #: worker hold below the nominal one while max_inflight still reads it
    mean_inflight: float | None = None
    min_inflight: int | None = None

    @property
    def duration_s(self) -> float:
        """Length of the window."""
        return self.end_s - self.start_s


def percentiles(values: npt.ArrayLike, extra: Sequence[float] = ()) -> dict[str, Json]:
    """p50/p90/p99 with the count beside them, so a thin tail is never read as solid, and
    each with its 95 % interval (`p90_ci`: [low, high], distribution-free; an end is None
    where n cannot bound it, evalkit.analysis.intervals)."""
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
    mean, low = _inflight_over(t, inflight, ws, we)
    return Window(ws, we, basis, None if target is None else int(target), peak, mean, low)


def _inflight_over(t: np.ndarray, inflight: np.ndarray, ws: float, we: float
                   ) -> tuple[float, int]:
    """The time-weighted mean and the minimum of the in-flight count over [ws, we]; the
    count steps to inflight[i] at t[i] and is 0 before the first event."""
    if t.size == 0:
        return 0.0, 0
    edges = np.clip(np.append(t, we), ws, we)
    held = np.diff(edges)  # how long each step's count lasted inside the window
    lead = max(0.0, min(float(t[0]), we) - ws)  # before the first start: none in flight
    total = float(held.sum()) + lead
    mean = float((held * inflight).sum()) / total if total > 0 else 0.0
    inside = held > 0
    low = int(inflight[inside].min()) if inside.any() else 0
    return mean, 0 if lead > 0 else low


# --------------------------------------------------------------------------- phase stats


def achieved_length(ok_req: pd.DataFrame) -> dict[str, Any] | None:
    """The output the ok requests actually carried: mean, sd and count of our own count of
    the streamed text (the vendor's usage where we counted nothing), so a vendor that bills
    honestly but stops short under load is seen (the ramp's `length` metric)."""
    counted = ok_req["counted_output_tokens"].to_numpy(dtype=float)
    out = np.where(np.isnan(counted), ok_req["output_tokens"].to_numpy(dtype=float), counted)
    out = out[np.isfinite(out)]
    if not out.size:
        return None
    return {"mean": float(out.mean()), "sd": float(out.std(ddof=1)) if out.size > 1 else 0.0,
            "n": int(out.size)}


def phase_stats(req: pd.DataFrame, chunks: pd.DataFrame, target: int | None = None,
                thresholds: Thresholds | None = None) -> dict[str, Json]:
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
    # a shape the endpoint refuses alone as under load is no failure of this group's load
    # (evalkit.analysis.configuration): left out of its failure share, counted beside it
    refused = int(req["configuration"].sum()) if "configuration" in req.columns else 0
    judged = n - refused
    failed = int((~req["ok"]).sum()) - refused
    return {
        "requests": n,
        "outcomes": outcome_counts(req["outcome"]),
        # requests sent again on a fresh connection after the server closed the reused one
        # unanswered (evalkit.probe.wire.reconnect): ours, not failures
        "reconnects": int(np.nansum(req["reconnects"].to_numpy())),
        "configuration_failures": refused,
        "admission_failure_rate": admission / n if n else None,
        "failure_rate": failed / judged if judged else None,
        # exact (Clopper-Pearson) 95 % interval: what the ramp's failure limit is judged on
        "failure_rate_ci": proportion_interval(failed, judged),
        "ttft_s": percentiles(ok_req["ttft_s"]),
        "ttfa_s": percentiles(ok_req["ttfa_s"]),
        "reasoning_first": int((ok_req["ttfa_s"] > ok_req["ttft_s"]).sum()),
        "e2e_s": percentiles(ok_req["e2e_s"]),
        "tpot_s": percentiles(ok_req["tpot_s"]),
        "itl_s": percentiles(gap[ok_chunk]),
        "tokens_per_chunk": percentiles(chunks["scaled_tokens"].to_numpy()[ok_chunk]),
        "stream_tokens_per_s": percentiles(ok_req["stream_tokens_per_s"], extra=(10.0, 1.0)),
        "output_tokens": percentiles(ok_req["output_tokens"]),
        "achieved_output_tokens": achieved_length(ok_req),
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
        # the engine's own account of the same requests, where it sent one
        "engine_timings": engine_timings(ok_req),
        # connections opened inside the group's sends, beside its TTFT (None: none were)
        "connections": connection_cost(req),
    }


def engine_timings(ok_req: pd.DataFrame) -> dict[str, Any] | None:
    """The engine's own account of a group's ok requests, beside ours (None: none of
    them carried one): a second witness that is not us.

    llama.cpp's server ends every stream with its `timings` (kept per record as
    `engine_prompt_s`, `engine_decode_s` and their token counts): its prompt time, our
    TTFT of the same requests, their difference request by request, and its time per
    output token. Its prompt time runs from when a slot took the request to the
    prompt's last batch; our TTFT from when our bytes left to when the first token's
    arrived, so it adds the HTTP front (parsing, the chat template, tokenising), the
    wait for a free slot (with N slots the requests above N wait: the difference grows
    with the queue while the engine's prompt time does not), the first token's sampling
    and the network both ways. An engine's account is its own claim: compared with
    ours, never put in its place.
    """
    prompt = ok_req["engine_prompt_s"].to_numpy(dtype=np.float64)
    has = np.isfinite(prompt)
    if not has.any():
        return None
    ttft = ok_req["ttft_s"].to_numpy(dtype=np.float64)[has]
    decode = ok_req["engine_decode_s"].to_numpy(dtype=np.float64)[has]
    out = ok_req["engine_output_tokens"].to_numpy(dtype=np.float64)[has]
    with np.errstate(all="ignore"):  # fewer than 2 tokens: no time per token (NaN, dropped)
        tpot = np.where(out >= 2, decode / (out - 1), np.nan)
    return {
        "requests": int(has.sum()),
        "prompt_s": percentiles(prompt[has]),
        "ttft_s": percentiles(ttft),
        # ours minus the engine's, request by request: the slot wait, the HTTP front and
        # the network, which its account does not see
        "ttft_beyond_prompt_s": percentiles(ttft - prompt[has]),
        "tpot_s": percentiles(tpot),
    }


def token_sums(req: pd.DataFrame) -> dict[str, Any]:
    """The ok requests' input (prompt) and output token counts as sums, squares and cross
    products: what a price per token turns into a mean cost per request and its interval
    (`evalkit.review.cost`), without the records. Requests missing either count are left
    out, and counted as `uncounted`."""
    ok = req[req["ok"].to_numpy()]
    i = ok["prompt_tokens"].to_numpy(dtype=np.float64)
    o = ok["output_tokens"].to_numpy(dtype=np.float64)
    both = np.isfinite(i) & np.isfinite(o)
    i, o = i[both], o[both]
    return {"requests": int(both.sum()), "uncounted": int((~both).sum()),
            "input": float(i.sum()), "output": float(o.sum()),
            "input_sq": float((i * i).sum()), "output_sq": float((o * o).sum()),
            "input_output": float((i * o).sum())}


def top_error(req: pd.DataFrame) -> str | None:
    """The most frequent error of a group, with its count: what a reader fixes first."""
    errors = req.loc[~req["ok"].to_numpy(), "error"].dropna()
    if errors.empty:
        return None
    counts = errors.astype(str).str.slice(0, 120).value_counts()
    return f"{counts.index[0]} (x{int(counts.iloc[0])})"


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


# --------------------------------------------------------------------------- connections
# What the connections a group of requests opened cost, beside its TTFT.
#
# A real vendor's TLS handshake, and a reconnect when it closes connections, are part of
# a customer's first TTFT on a new connection. The probe opens each level's connections
# before the level starts (`target._Clients.prepare`), so a level on kept-alive
# connections carries none of it in any request; but a request that opened its own
# connection (the run's first, a keep-alive the vendor closed, an open loop outrunning the
# connections it had) records the time in its send (`connect_s`: TCP's connect and TLS's
# handshake together; `tls_s`: the handshake alone). In a closed loop that request's t0 is
# its first byte sent, after the connection opened, so its TTFT is the server's alone and
# the connection stands beside it; in an open loop t0 is the schedule, and the TTFT holds
# it already, as a customer's would.


def connection_cost(req: pd.DataFrame) -> dict[str, Any] | None:
    """The connections `req`'s requests opened inside their sends (None: none did).

    `opened` of `requests`; `connect_s` per connection (TCP and TLS), `tls_s` the TLS
    handshake's part (None over plain HTTP); `first_ttft_s`, the TTFT of the ok requests
    that opened one with their connection's time in it: what a customer's first request
    on a new connection waits (a closed loop's TTFT starts after the connection, so it is
    added there; an open loop's starts at the schedule and holds it already)."""
    connect = req["connect_s"].to_numpy(dtype=np.float64)
    opened = np.isfinite(connect) & (connect > 0)
    if not opened.any():
        return None
    tls = req["tls_s"].to_numpy(dtype=np.float64)
    has_tls = opened & np.isfinite(tls) & (tls > 0)
    sent = req["sent_s"].to_numpy(dtype=np.float64)
    # t0 after the connection (closed loop: sent_s is 0) vs t0 the schedule (open loop)
    after = np.isfinite(sent) & (sent <= 0)
    ttft = req["ttft_s"].to_numpy(dtype=np.float64)
    first = np.where(after, ttft + connect, ttft)[opened & req["ok"].to_numpy(dtype=bool)]
    return {"opened": int(opened.sum()), "requests": len(req),
            "connect_s": percentiles(connect[opened]),
            "tls_s": percentiles(tls[has_tls]) if has_tls.any() else None,
            "first_ttft_s": percentiles(first)}
