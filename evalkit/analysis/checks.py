"""Data-quality checks on the records: output length, usage honesty (output and
prompt), streaming, prefix cache, network share, drift. Each flags what would make a
figure mislead."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.frames import _lookup_size, _num, _ratio, _rows_mask
from evalkit.analysis.stats import connection_cost, outcome_counts, percentiles

#: a request's usage is an outlier beyond this factor of the run's own ratio, either way,
#: and by more than `OUTLIER_SLACK` tokens (a short answer's count moves by a few)
OUTLIER_FACTOR = 1.5
OUTLIER_SLACK = 4.0


def usage_honesty(req: pd.DataFrame, tolerance: float = 0.25) -> dict[str, Any]:
    """The vendor's completion_tokens (what it bills, and what every TPOT counts) against
    our count of the text.

    Flagged when the median lies beyond `tolerance` (every request billed high), or when
    a few requests lie far from the run's own ratio (`outliers`, at least 2 and over 5 %
    of those checked): usage ten times the text on the slow streams alone read their TPOT
    ten times faster, and its tail away, while the median stayed honest. The run's ratio,
    not 1, is the yardstick: the vendor's tokenizer is not ours."""
    u = req["usage_completion_tokens"].to_numpy(dtype=np.float64)
    c = req["counted_output_tokens"].to_numpy(dtype=np.float64)
    m = np.isfinite(u) & np.isfinite(c) & (c > 0)
    ratio = u[m] / c[m]
    n = int(m.sum())
    med = float(np.median(ratio)) if n else None
    outliers = 0
    if med is not None and med > 0:
        with np.errstate(divide="ignore"):
            apart = np.maximum(ratio / med, med / ratio)
        outliers = int(((apart > OUTLIER_FACTOR)
                        & (np.abs(u[m] - c[m] * med) > OUTLIER_SLACK)).sum())
    return {"checked": n,
            "usage_over_counted": percentiles(ratio),
            "disagreeing": int((np.abs(ratio - 1.0) > tolerance).sum()),
            "outliers": outliers,
            "flagged": (abs(med - 1.0) > tolerance or (outliers >= 2 and outliers > 0.05 * n))
            if med is not None else None,
            "tolerance": tolerance}


def prompt_disagreeing(req: pd.DataFrame, tolerance: float = 0.25,
                       template_tokens: float = 128) -> np.ndarray:
    """Per request: the vendor's prompt_tokens lie beyond our count's known drift.

    The drift has two parts. Our count uses OpenAI's o200k encoding, not the vendor's
    tokenizer: like completion tokens, 10-20 % apart is normal (`tolerance`, either way).
    And a chat endpoint bills its chat template too (role headers, a default system
    prompt: 10 tokens for Llama 3, some 70 for gpt-oss's), which our count of the text we
    sent never sees: up to `template_tokens` more is allowed on top. A request with no
    usage, or none of our count, is not judged (False).
    """
    v = np.where(req["prompt_tokens_estimated"].to_numpy(), np.nan,
                 req["prompt_tokens"].to_numpy(dtype=np.float64))
    c = req["counted_prompt_tokens"].to_numpy(dtype=np.float64)
    m = np.isfinite(v) & np.isfinite(c) & (c > 0)
    with np.errstate(invalid="ignore"):
        off = (v > c * (1 + tolerance) + template_tokens) | (v < c * (1 - tolerance))
    out: np.ndarray = m & off
    return out


def prompt_honesty(req: pd.DataFrame, tolerance: float = 0.25,
                   template_tokens: float = 128) -> dict[str, Any]:
    """The vendor's prompt_tokens (what it bills, and what its prefill rate is read in)
    against our count of the prompt we sent.

    Flagged when most requests that reported usage disagree beyond the known drift
    (`prompt_disagreeing`): a vendor reporting 3x the prompt would have its prefill rate
    read 3x too fast. `prefill_disagreeing` counts the prefill phase's own: one is enough
    for the prefill fit to be drawn on our count (`evalkit.analysis.prefill`).
    """
    reported = ~req["prompt_tokens_estimated"].to_numpy()
    c = req["counted_prompt_tokens"].to_numpy(dtype=np.float64)
    m = reported & np.isfinite(c) & (c > 0)
    off = prompt_disagreeing(req, tolerance, template_tokens)
    n, bad = int(m.sum()), int(off.sum())
    ratio = req["prompt_tokens"].to_numpy(dtype=np.float64)[m] / c[m]
    prefill = (req["phase"] == "prefill").to_numpy()
    return {"checked": n,
            "usage_over_counted": percentiles(ratio),
            "disagreeing": bad,
            "prefill_disagreeing": int((off & prefill).sum()),
            "flagged": (bad > n / 2) if n else None,
            "tolerance": tolerance,
            "template_tokens": template_tokens}


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
    dist: dict[str, Any] = percentiles(rtts)  # its figures read here, where it is made
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
            "output_tokens_estimated": bool(ok["output_tokens_estimated"].any()),
            # the run's first request opens its connection: what a new one costs
            "connections": connection_cost(req)}


def drift(req: pd.DataFrame, parts: int = 3) -> dict[str, Any] | None:
    """Early vs late thirds of a long hold: does the tail creep as the run goes on?"""
    ok = req[req["ok"]]
    if len(ok) < 2 * parts:
        return None
    t = ok["t0_s"].to_numpy()
    edges = np.linspace(t.min(), t.max(), parts + 1)
    part = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, parts - 1)
    ttft: list[dict[str, Any]] = [percentiles(ok["ttft_s"].to_numpy()[part == i])
                                  for i in range(parts)]
    tpot: list[dict[str, Any]] = [percentiles(ok["tpot_s"].to_numpy()[part == i])
                                  for i in range(parts)]
    windows = [{"start_s": float(edges[i]), "end_s": float(edges[i + 1]),
                "ttft_s": ttft[i], "tpot_s": tpot[i]} for i in range(parts)]
    return {"windows": windows,
            "ttft_p90_ratio": _ratio(ttft[-1]["p90"], ttft[0]["p90"]),
            "tpot_p90_ratio": _ratio(tpot[-1]["p90"], tpot[0]["p90"])}
