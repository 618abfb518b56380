"""95 % intervals for the figures a judgement rests on. Pure numpy, no I/O.

A claim is set against our measurement, and both are estimates: a p99 from 16 samples
must not reconcile a claim like one from 10,000. Three kinds, each the standard one:

- **Percentiles**: distribution-free, from order statistics. The number K of samples
  below the true q-quantile is Binomial(n, q), so [x(l), x(u)] covers it with
  probability P(l <= K < u); l and u are chosen so that each tail is at most 2.5 %.
  Exact for any n (the binomial is summed, not approximated, up to 20,000 samples);
  an end is None where n is too small to bound it at all (a p90 needs 29 samples).
- **A fitted slope and intercept**: ordinary least squares with Student-t intervals.
- **A rate over a window**: batch means (10 equal sub-windows) with a Student-t interval,
  since tokens in neighbouring moments are not independent samples.
- **A share of requests** (the failure rate a ramp level is judged on): exact
  (Clopper-Pearson), the binomial inverted by bisection; no normal approximation, which
  fails exactly where it matters (0 or 2 failures out of 20).
- **Sizing**: `quantile_width` is the interval's width in quantile terms ((u - l) / n:
  0.06 means "between about the p87 and the p93"), a function of n alone, so a run can
  be sized for it before a single request is sent (evalkit.probe.plan.claims).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

CONFIDENCE = 0.95
#: two-sided 97.5 % Student-t quantiles for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
         2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
         2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
#: beyond this many samples the binomial is summed by its normal approximation
_EXACT_N = 20_000
BATCHES = 10


def t975(dof: int) -> float:
    """The 97.5 % quantile of Student's t (a two-sided 95 % interval's half-width factor)."""
    if dof < 1:
        return math.inf
    if dof <= len(_T975):
        return _T975[dof - 1]
    return 2.0 if dof <= 60 else 1.96


def _binomial_cdf(n: int, q: float) -> np.ndarray:
    """P(K <= k) for k = 0..n, K ~ Binomial(n, q), summed in log space (no overflow)."""
    k = np.arange(n + 1, dtype=np.float64)
    steps = np.log(np.maximum(n - k[:-1], 1e-300)) - np.log(k[:-1] + 1)
    log_pmf = np.concatenate([[n * math.log1p(-q)],
                              n * math.log1p(-q) + np.cumsum(steps + math.log(q / (1 - q)))])
    pmf = np.exp(log_pmf - log_pmf.max())
    return np.asarray(np.cumsum(pmf / pmf.sum()))


def samples_for(q: float, confidence: float = CONFIDENCE) -> int:
    """Samples needed before a 95 % interval for the q-quantile has both ends."""
    tail = (1 - confidence) / 2
    return max(math.ceil(math.log(tail) / math.log(max(q, 1 - q)) - 1e-9), 1)


def quantile_ranks(n: int, q: float, confidence: float = CONFIDENCE
                   ) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the order statistics bounding the q-quantile; None for an
    end that n samples cannot bound."""
    if n <= 0 or not 0 < q < 1:
        return None, None
    tail = (1 - confidence) / 2
    if n > _EXACT_N:
        half = 1.959964 * math.sqrt(n * q * (1 - q))
        low, high = math.floor(n * q - half), math.ceil(n * q + half) + 1
        return (low if low >= 1 else None), (high if high <= n else None)
    cdf = _binomial_cdf(n, q)
    # lower: the largest l with P(K <= l - 1) <= tail; upper: the smallest u with
    # P(K <= u - 1) >= 1 - tail
    below = np.flatnonzero(cdf <= tail)
    above = np.flatnonzero(cdf >= 1 - tail)
    lo = int(below[-1]) + 1 if below.size else None
    hi = int(above[0]) + 1 if above.size else None
    return lo, (hi if hi is not None and hi <= n else None)


def quantile_interval(sorted_values: np.ndarray, q: float, confidence: float = CONFIDENCE
                      ) -> list[float | None]:
    """[low, high] bounding the true q-quantile at `confidence` (values sorted ascending)."""
    lo, hi = quantile_ranks(int(sorted_values.size), q, confidence)
    return [None if lo is None else float(sorted_values[lo - 1]),
            None if hi is None else float(sorted_values[hi - 1])]


def ols(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """y = a + b x by least squares, with 95 % intervals on a and b (None with < 3 points).

    Closed form over exactly rounded sums (math.fsum), not a BLAS/LAPACK solve: which
    kernel OpenBLAS picks (OPENBLAS_CORETYPE) changed the last digits of a published
    figure, and a figure that `verify` re-derives must not depend on the processor."""
    xs = [float(v) for v in x]
    ys = [float(v) for v in y]
    n = len(xs)
    x_mean, y_mean = math.fsum(xs) / n, math.fsum(ys) / n
    dx = [v - x_mean for v in xs]
    sxx = math.fsum(d * d for d in dx)
    b = math.fsum(d * (v - y_mean) for d, v in zip(dx, ys, strict=True)) / sxx if sxx > 0 \
        else 0.0
    a = y_mean - b * x_mean
    out: dict[str, Any] = {"slope": b, "intercept": a, "slope_ci": None,
                           "intercept_ci": None, "dof": n - 2}
    if n < 3 or sxx <= 0:
        return out
    s2 = math.fsum((v - (a + b * u)) ** 2 for u, v in zip(xs, ys, strict=True)) / (n - 2)
    t = t975(n - 2)
    se_b = math.sqrt(s2 / sxx)
    se_a = math.sqrt(s2 * (1 / n + x_mean ** 2 / sxx))
    out["slope_ci"] = [b - t * se_b, b + t * se_b]
    out["intercept_ci"] = [a - t * se_a, a + t * se_a]
    return out


def rate_interval(times: np.ndarray, amounts: np.ndarray, start: float, end: float,
                  batches: int = BATCHES) -> list[float] | None:
    """A 95 % interval for amount per second over (start, end], by batch means."""
    span = end - start
    if not span > 0 or times.size == 0:
        return None
    edges = np.linspace(start, end, batches + 1)
    which = np.clip(np.searchsorted(edges, times, side="left") - 1, 0, batches - 1)
    per = np.bincount(which, weights=amounts, minlength=batches) / (span / batches)
    mean, sd = float(per.mean()), float(per.std(ddof=1))
    half = t975(batches - 1) * sd / math.sqrt(batches)
    return [max(mean - half, 0.0), mean + half]


def _binomial_le(k: int, n: int, p: float) -> float:
    """P(K <= k) for K ~ Binomial(n, p), 0 < p < 1."""
    return float(_binomial_cdf(n, p)[k])


def proportion_interval(k: int, n: int, confidence: float = CONFIDENCE
                        ) -> list[float] | None:
    """Exact (Clopper-Pearson) interval for a share: k of n; None when n is 0.

    Each end is the share at which seeing k (or a more extreme count) has probability
    (1 - confidence) / 2, found by bisection on the exact binomial."""
    if n <= 0 or not 0 <= k <= n:
        return None
    tail = (1 - confidence) / 2

    def solve(k_: int, target: float) -> float:
        """The p at which P(K <= k_) = target (that probability falls as p grows)."""
        lo, hi = 1e-12, 1 - 1e-12
        for _ in range(60):
            mid = (lo + hi) / 2
            if _binomial_le(k_, n, mid) > target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    # low: P(K >= k) = tail, i.e. P(K <= k - 1) = 1 - tail; high: P(K <= k) = tail
    low = 0.0 if k == 0 else solve(k - 1, 1 - tail)
    high = 1.0 if k == n else solve(k, tail)
    return [low, high]


def quantile_width(n: int, q: float, confidence: float = CONFIDENCE) -> float | None:
    """The 95 % interval's width in quantile terms for n samples: (u - l) / n, where l
    and u are the bounding ranks (None while an end is still open)."""
    lo, hi = quantile_ranks(n, q, confidence)
    if lo is None or hi is None:
        return None
    return (hi - lo) / n
