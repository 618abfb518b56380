"""Records as two frames (one row a request, one row a content chunk): the
shape every figure of the summary is computed from."""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from evalkit.records import Chunks, RequestRecord

# --------------------------------------------------------------------------- frames

_NUMERIC = ("t0_s", "level", "prompt_tokens", "counted_prompt_tokens",
            "requested_output_tokens", "output_tokens",
            "counted_output_tokens", "usage_completion_tokens", "ttft_s", "ttfa_s", "e2e_s",
            "sent_s", "connect_s", "tls_s",
            "http_status", "send_lag_s", "end_s", "retry_after_s", "turn", "step",
            "planned_turns", "cached_prompt_tokens", "reconnects", "engine_prompt_tokens",
            "engine_cached_tokens", "engine_prompt_s", "engine_output_tokens", "engine_decode_s")
_TEXT = ("id", "phase", "outcome", "finish_reason", "error", "prompt_id", "canary", "model",
         "system_fingerprint", "output_sha256", "answer_text", "answer_tokens",
         "answer_logprobs", "rate_limit_headers", "shape", "session", "prompt_source")
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
    offset, tokens = _chunk_columns(recs, total)
    rid = np.repeat(np.arange(n), lens)
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
    per_chunk = _tokens_per_chunk(tokens, rid, lens, chunk_tokens, out,
                                  cols["usage_completion_tokens"])
    with np.errstate(all="ignore"):  # 0/0 and x/0 become NaN/inf, filtered below
        # tokens that arrived after the first chunk: out - 1 when chunks carry one token
        # (the SPEC's formula); out - k when the first chunk bundles k, else TPOT reads low.
        first_tokens = np.ones(n)
        first_tokens[has] = per_chunk[first[has]]
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
        "scaled_tokens": per_chunk,
        "gap_s": gap,
    })
    return req, chunks


def _chunk_columns(recs: list[RequestRecord], total: int) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk's arrival offset and tokens, record after record: straight from the
    flat arrays of records read back (`Chunks`), else pair by pair (a probe's lists)."""
    read_back = [c for r in recs if isinstance(c := r.chunks, Chunks)]
    if len(read_back) == len(recs):
        times = [np.frombuffer(c.times, dtype=np.float64) for c in read_back if len(c)]
        if not times:
            return np.empty(0), np.empty(0)
        counts = [np.frombuffer(c.tokens, dtype=np.int64) for c in read_back if len(c)]
        return np.concatenate(times), np.concatenate(counts).astype(np.float64)
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(r.chunks for r in recs)),
                       dtype=np.float64, count=2 * total).reshape(total, 2)
    return flat[:, 0], flat[:, 1]


def _tokens_per_chunk(tokens: np.ndarray, rid: np.ndarray, lens: np.ndarray,
                      counted: np.ndarray, out: np.ndarray, usage: np.ndarray) -> np.ndarray:
    """Each content chunk's tokens in the server's count.

    With usage reported, a request's chunks each carry its completion_tokens over its
    content chunks: our tokenizer is not the vendor's, so our count of one chunk's text
    says nothing exact about it (scaling each chunk's count one by one read exactly one
    token a chunk as 0.8, and three as 3.2). Without usage our own count of each chunk
    is all there is, scaled to the request's output tokens where those are known.
    """
    with np.errstate(all="ignore"):  # 0/0 and x/0 become NaN/inf, replaced below
        even = np.where(np.isfinite(usage) & (lens > 0), out / lens, np.nan)
        scale = np.where((counted > 0) & np.isfinite(out), out / counted, 1.0)
    own = tokens * scale[rid]
    spread = even[rid]
    result: np.ndarray = np.where(np.isfinite(spread), spread, own)
    return result


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


def _ratio(num: float | None, den: float | None) -> float | None:
    """num / den, or None when either is missing or the result is not a finite number."""
    return _num(num / den) if num is not None and den is not None and den > 0 else None


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
