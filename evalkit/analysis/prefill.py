"""The prefill fit: TTFT against prompt length, whose slope is the prefill rate."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalkit.analysis.intervals import (
    ols,
)


def prefill_fit(df: pd.DataFrame, counted: bool = False) -> dict[str, Any]:
    """TTFT = a + b·prompt_tokens over the prefill phase's ok requests; rate = 1/b.

    Fitted on the median TTFT per prompt length (robust to outliers, equal weight per
    length). Nones when it cannot be fitted: fewer than 2 distinct lengths, or b ≤ 0.
    `counted`: the lengths are our count of each prompt (`counted_prompt_tokens`), not the
    vendor's prompt_tokens: a vendor reporting 3x its prompts would otherwise read 3x as
    fast (`evalkit.analysis.checks.prompt_honesty` says when they disagree).
    """
    column = "counted_prompt_tokens" if counted else "prompt_tokens"
    m = (df["phase"] == "prefill") & df["ok"] & df[column].notna() & df["ttft_s"].notna()
    sub = df.loc[m, [column, "ttft_s"]].rename(columns={column: "prompt_tokens"})
    per = sub.groupby("prompt_tokens")["ttft_s"].agg(["median", "count"]).sort_index()
    points = [{"prompt_tokens": int(p), "ttft_s": float(r["median"]), "n": int(r["count"])}
              for p, r in per.iterrows()]
    out: dict[str, Any] = {"tokens_per_s": None, "overhead_s": None, "r2": None,
                           "slope_s_per_token": None, "points": points,
                           "lengths": len(points), "requests": len(sub),
                           "prompt_tokens_estimated":
                               counted or bool(df.loc[m, "prompt_tokens_estimated"].any()),
                           # the record field the lengths are (the vendor's usage where
                           # it reported some, or always our count)
                           "lengths_from": column,
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
    y_mean = math.fsum(y.tolist()) / len(y)
    ss_tot = math.fsum((v - y_mean) ** 2 for v in y.tolist())
    ss_res = math.fsum((v - (a + b * u)) ** 2 for u, v in zip(x.tolist(), y.tolist(),
                                                               strict=True))
    out["slope_s_per_token"] = float(b)
    out["slope_ci"], out["overhead_s_ci"] = fit["slope_ci"], fit["intercept_ci"]
    out["r2"] = 1.0 - ss_res / ss_tot if ss_tot > 0 else None
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
