"""Numbers as a reader sees them: the one home of how a value is written, for the PDFs'
pages, their charts and the judges' reasons.

Pure. Three families, kept apart on purpose because their words differ:

- the page's figures (`fmt_num`, `fmt_ms`, `fmt_rate`, `fmt_pct`, `fmt_p`, `ci_text`):
  about three significant figures, "—" where nothing was measured, "tok/s";
- the charts' labels (`chart_num`, `chart_whole`, `level_span`): powers of ten as
  `1.5×10⁷`, never e-notation or an axis offset;
- the judges' sentences (`fmt_s`, `fmt_tokens_per_s`, `number`, `price`, `times`): "not
  measured" where nothing was, "tokens/s", as a reason reads aloud.

A figure is never printed with more precision than it carries: `fmt_num` keeps about
three significant figures, so 50,023.2 tokens/s reads "50,023" and 0.30412 s "304 ms".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from evalkit.analysis.summary import as_number

#: A formatter of one number (or anything, shown as "—" when it is not a number).
Formatter = Callable[[object], str]


def fmt_num(x: object, digits: int = 3) -> str:
    """A number with about `digits` significant figures; missing is an em dash."""
    v = as_number(x)
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


def fmt_ms(seconds: object) -> str:
    """Seconds shown as milliseconds."""
    v = as_number(seconds)
    return "—" if v is None else f"{fmt_num(v * 1000)} ms"


def fmt_rate(x: object) -> str:
    """Tokens per second."""
    v = as_number(x)
    return "—" if v is None else f"{fmt_num(v)} tok/s"


def fmt_pct(share: object) -> str:
    """A share (0.25) as a percentage (25%)."""
    v = as_number(share)
    if v is None:
        return "—"
    pct = v * 100
    return f"{round(pct)}%" if abs(pct - round(pct)) < 1e-9 else f"{fmt_num(pct, 2)}%"


def fmt_count(x: object) -> str:
    """A whole number with thousands separators ("—" when it is not a number)."""
    v = as_number(x)
    return "—" if v is None else f"{round(v):,}"


def fmt_p(p: object, fmt: Formatter = fmt_ms) -> str:
    """p50 / p90 / p99 with the sample count; a p99 from fewer than 100 samples is marked."""
    if not isinstance(p, Mapping):
        return "—"
    n = p.get("n")
    low = isinstance(n, int) and n < 100
    p99 = fmt(p.get("p99")) + (" (low confidence)" if low and as_number(p.get("p99")) else "")
    count = n if n is not None else "—"
    return f"p50 {fmt(p.get('p50'))} · p90 {fmt(p.get('p90'))} · p99 {p99} · n={count}"


def ci_text(ci: object, fmt: Formatter = fmt_num) -> str:
    """' [95 %: low–high]' for an interval; an end n cannot bound reads 'open'."""
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return ""
    lo, hi = (fmt(v) if as_number(v) is not None else "open" for v in ci)
    return f" [95 %: {lo}–{hi}]"


def n_mark(p: Mapping[str, object]) -> str:
    """The sample count behind a percentile, marked when it is too few to lean on."""
    n = p.get("n")
    if not isinstance(n, int):
        return ""
    return f" (n={n}, low confidence)" if n < 100 else f" (n={n})"


def fmt_pct_ci(p: object, pct: str, fmt: Formatter = fmt_ms, n: bool = True) -> str:
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
    if unit in ("streams", "calls"):
        return fmt_count(value)
    if unit == "tok/s":
        return fmt_rate(value)
    if unit == "share":
        return fmt_pct(value)
    return fmt_num(value)  # money: the row's title names the currency


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


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def chart_num(v: float) -> str:
    """A number as a chart prints it: about three significant figures, thousands
    separated, a power of ten (`1.5×10⁷`) instead of e-notation or an axis offset."""
    if not math.isfinite(v):
        return "—"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6 or a < 1e-3:
        exp = math.floor(math.log10(a))
        mant = float(f"{v / 10 ** exp:.3g}")
        if abs(mant) >= 10:
            mant, exp = mant / 10, exp + 1
        return f"{mant:g}×10{str(exp).translate(_SUPERSCRIPT)}"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}".removesuffix(".0")
    if a >= 1:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.2g}"


def chart_whole(v: float) -> str:
    """A figure a vendor quotes (ms, tokens/s): whole units when it has
    any, else `chart_num`."""
    return f"{v:,.0f}" if 1 <= abs(v) < 1e6 else chart_num(v)


def level_span(levels: Sequence[float]) -> str:
    """'1 stream', '8 streams', '1–64 streams': the levels a chart covers, for its title."""
    vals = sorted({int(c) for c in levels if isinstance(c, int | float) and math.isfinite(c)})
    if not vals:
        return "no level"
    if len(vals) == 1:
        return f"{vals[0]} stream{'s' if vals[0] != 1 else ''}"
    return f"{vals[0]}–{vals[-1]:,} streams"


# ------------------------------------------------------------------------ format


def number(x: float) -> str:
    """A figure in a reason: whole above 100 or when whole, else two or three digits."""
    return f"{x:,.0f}" if abs(x) >= 100 or x == int(x) else f"{x:.2g}" if x < 1 else f"{x:.1f}"


def price(x: float) -> str:
    """A price per million tokens: cents below 1,000."""
    return f"{x:,.2f}" if x < 1000 else f"{x:,.0f}"


def times(ratio: float) -> str:
    """How many times a claim misses ("1.5×"); a claim of nothing misses infinitely, and a
    claim of next to nothing (1e-300 ms) by a power of ten, not a 300-digit number."""
    if not math.isfinite(ratio):
        return "infinitely"
    return f"{ratio:.1f}×" if abs(ratio) < 1e6 else f"{ratio:.1e}×"


def fmt_money(x: object, currency: str | None) -> str:
    """An amount in the questionnaire's currency (never converted), three significant
    figures: a session can cost 0.0000384 USD; no currency stated says so."""
    v = as_number(x)
    if v is None:
        return "—"
    return f"{fmt_num(v)} {currency}" if currency else f"{fmt_num(v)} (currency not stated)"
