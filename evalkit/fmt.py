"""Numbers as a reader sees them: one home for every formatter the PDFs and judges use.

Pure and dependency-free. Two families, kept apart on purpose because their words differ:

- the page's figures (`fmt_num`, `fmt_ms`, `fmt_rate`, `fmt_pct`, `fmt_p`, `ci_text`):
  about three significant figures, "—" where nothing was measured, "tok/s";
- the judges' sentences (`fmt_s`, `fmt_tokens_per_s`): "not measured" where nothing was,
  "tokens/s", as a reason reads aloud.

A figure is never printed with more precision than it carries: `fmt_num` keeps about
three significant figures, so 50,023.2 tokens/s reads "50,023" and 0.30412 s "304 ms".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from evalkit.analysis.summary import as_number

#: A formatter of one number (or anything, shown as "—" when it is not a number).
Formatter = Callable[[Any], str]


def num(x: Any) -> float | None:
    """x as a finite float, or None: input JSON may hold anything anywhere (bool is not a
    number here, although Python says it is; nor is an integer beyond float range)."""
    return as_number(x)


def fmt_num(x: Any, digits: int = 3) -> str:
    """A number with about `digits` significant figures; missing is an em dash."""
    v = num(x)
    if v is None:
        return "—"
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    # round to the significant figures first: 99.99 is "100", not "100.0"
    v = float(f"{v:.{digits - 1}e}")
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def fmt_ms(seconds: Any) -> str:
    """Seconds shown as milliseconds."""
    v = num(seconds)
    return "—" if v is None else f"{fmt_num(v * 1000)} ms"


def fmt_rate(x: Any) -> str:
    """Tokens per second."""
    v = num(x)
    return "—" if v is None else f"{fmt_num(v)} tok/s"


def fmt_pct(share: Any) -> str:
    """A share (0.25) as a percentage (25%)."""
    v = num(share)
    if v is None:
        return "—"
    pct = v * 100
    return f"{round(pct)}%" if abs(pct - round(pct)) < 1e-9 else f"{fmt_num(pct, 2)}%"


def fmt_count(x: Any) -> str:
    """A whole number with thousands separators ("—" when it is not a number)."""
    v = num(x)
    return "—" if v is None else f"{round(v):,}"


def fmt_p(p: Any, fmt: Formatter = fmt_ms) -> str:
    """p50 / p90 / p99 with the sample count; a p99 from fewer than 100 samples is marked."""
    if not isinstance(p, Mapping):
        return "—"
    n = p.get("n")
    low = isinstance(n, int) and n < 100
    p99 = fmt(p.get("p99")) + (" (low confidence)" if low and num(p.get("p99")) else "")
    count = n if n is not None else "—"
    return f"p50 {fmt(p.get('p50'))} · p90 {fmt(p.get('p90'))} · p99 {p99} · n={count}"


def ci_text(ci: Any, fmt: Formatter = fmt_num) -> str:
    """' [95 %: low–high]' for an interval; an end n cannot bound reads 'open'."""
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return ""
    lo, hi = (fmt(v) if num(v) is not None else "open" for v in ci)
    return f" [95 %: {lo}–{hi}]"


def n_mark(p: Mapping[str, Any]) -> str:
    """The sample count behind a percentile, marked when it is too few to lean on."""
    n = p.get("n")
    if not isinstance(n, int):
        return ""
    return f" (n={n}, low confidence)" if n < 100 else f" (n={n})"


def fmt_pct_ci(p: Any, pct: str, fmt: Formatter = fmt_ms, n: bool = True) -> str:
    """One percentile of a distribution with its 95 % interval and n: 'p90 324 ms
    [95 %: 300–350 ms] (n=32, low confidence)'; the interval is left out when the
    summary carries none (an older run), the figure reads '—' when it is missing; `n`
    False leaves the count to a figure printed beside it."""
    p = p if isinstance(p, Mapping) else {}
    return f"{pct} {fmt(p.get(pct))}{ci_text(p.get(pct + '_ci'), fmt)}{n_mark(p) if n else ''}"


def fmt_unit(value: float | None, unit: str) -> str:
    """A comparison's figure in its unit: seconds as ms, streams as a count, tokens/s."""
    if value is None:
        return "—"
    if unit == "s":
        return fmt_ms(value)
    if unit == "streams":
        return fmt_count(value)
    if unit == "tok/s":
        return fmt_rate(value)
    return fmt_num(value)


# ------------------------------------------------------------------ the judges' words


def fmt_s(seconds: float | None) -> str:
    """A duration the way a reviewer reads it: ms below a second, else seconds."""
    if seconds is None:
        return "not measured"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_tokens_per_s(rate: float | None) -> str:
    """Tokens/s with sensible precision."""
    if rate is None:
        return "not measured"
    return f"{rate:,.0f} tokens/s" if rate >= 100 else f"{rate:.1f} tokens/s"
