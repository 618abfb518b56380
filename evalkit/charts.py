"""Vector charts for the scorecard: data in, an inline `<svg>` string out.

Every chart is drawn for print and greyscale: black and greys only, and every series is
told apart by line style, marker or hatch, never by colour alone. Matplotlib renders
with the Agg-free SVG writer and draws text as paths, so the PDF needs no font and
nothing is fetched. A chart whose data is missing is `None`, never an empty frame.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display, ever; must precede any pyplot import elsewhere

from matplotlib.figure import Figure

#: Greyscale-safe styles, in the order series are drawn.
STYLES: tuple[dict[str, Any], ...] = (
    {"color": "black", "linestyle": "-", "marker": "o"},
    {"color": "0.35", "linestyle": "--", "marker": "s"},
    {"color": "0.55", "linestyle": ":", "marker": "^"},
    {"color": "0.2", "linestyle": "-.", "marker": "D"},
)
_HATCHES = ("", "///", "...", "xx")
_RC: Any = {  # Any: matplotlib types rcParams keys as a Literal union
    "font.family": "DejaVu Sans",  # bundled with matplotlib: local, never downloaded
    "font.size": 8,
    "axes.edgecolor": "black",
    "axes.grid": True,
    "grid.color": "0.85",
    "grid.linewidth": 0.5,
    "svg.fonttype": "none",  # text stays text: smaller, faster, searchable in the PDF
    "svg.hashsalt": "evalkit",  # stable ids: the same data gives the same SVG
}


@dataclass(frozen=True)
class Stream:
    """One request as the raster draws it: when it was sent and when its chunks came."""

    t0_s: float
    arrivals_s: tuple[float, ...]  # offsets from t0
    outcome: str = "ok"
    level: int | None = None


def new_figure(width_in: float = 6.6, height_in: float = 2.6, ncols: int = 1) -> Figure:
    """A page-width figure with `ncols` panels; pyplot-free, so no global state leaks."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    fig.subplots(1, ncols)
    return fig


def levels_axis(ax: Any, levels: Sequence[float]) -> None:
    """Log-2 concurrency axis labelled with the levels themselves (1, 2, 4 ... not 2^k)."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(set(levels))))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("concurrent streams")


def to_svg(fig: Figure) -> str:
    """Serialise a figure to an `<svg>` element ready to inline in HTML."""
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def namespaced(svg: str, prefix: str) -> str:
    """Prefix every id (and every reference to one) so several SVGs can share one page.

    Matplotlib numbers its ids per figure; inlined side by side, two charts would both
    define `#m0b35…` and the second would draw the first one's markers.
    """
    ids = set(re.findall(r'\bid="([^"]+)"', svg))

    def ref(m: re.Match[str]) -> str:
        name = m.group(2)
        return f"{m.group(1)}{prefix}-{name}" if name in ids else m.group(0)

    svg = re.sub(r'(\bid=")([^"]+)', ref, svg)
    return re.sub(r'((?:href="|url\()#)([^")]+)', ref, svg)


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def claims_vs_measured(headline: float | None, panel: Mapping[str, Any] | None,
                       measured: Mapping[str, Any] | None, unit: str = "tokens/s") -> str | None:
    """Headline figure, the vendor's production panel and our measurement on one axis."""
    rows: list[tuple[str, list[tuple[str, float]]]] = []
    if _finite(headline):
        rows.append(("vendor headline", [("headline", float(headline))]))  # type: ignore[arg-type]
    for label, dist in (("vendor production panel", panel), ("our measurement", measured)):
        vals = [(q, float(dist[q])) for q in ("p50", "p90", "p99")
                if dist and _finite(dist.get(q))]
        if vals:
            rows.append((label, vals))
    if not rows:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=0.55 * len(rows) + 1.0)
        ax = fig.axes[0]
        markers = {"headline": "*", "p50": "o", "p90": "s", "p99": "^"}
        for y, (_label, vals) in enumerate(reversed(rows)):
            xs = [v for _, v in vals]
            ax.hlines(y, min(xs), max(xs), color="0.6", linewidth=3)
            for i, (q, v) in enumerate(vals):
                ax.plot(v, y, marker=markers[q], color="black", markersize=7,
                        markerfacecolor="white" if q == "p90" else "black", linestyle="none")
                # alternate above/below so close percentiles do not print on each other
                ax.annotate(f"{q} {v:,.0f}", (v, y), textcoords="offset points",
                            xytext=(0, 7 if i % 2 == 0 else -13), ha="center", fontsize=7)
        ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel(f"output {unit} per stream")
        ax.set_xlim(left=0)
        ax.set_title("Headline vs production panel vs our measurement", loc="left")
        return to_svg(fig)


def latency_distributions(samples: Mapping[int, Mapping[str, Sequence[float]]]) -> str | None:
    """TTFT and ITL per concurrency level as box plots (box p25–p75, whiskers p1–p99)."""
    levels = sorted(c for c, s in samples.items() if s.get("ttft") or s.get("itl"))
    if not levels:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.6, ncols=2)
        for ax, key, title in zip(fig.axes, ("ttft", "itl"),
                                  ("TTFT per concurrency level", "ITL (chunk gaps) per level"),
                                  strict=True):
            data = [[v * 1000 for v in samples[c].get(key, [])] for c in levels]
            keep = [(c, d) for c, d in zip(levels, data, strict=True) if d]
            if not keep:
                ax.set_axis_off()
                continue
            ax.boxplot([d for _, d in keep], tick_labels=[str(c) for c, _ in keep],
                       whis=(1, 99), showfliers=False, patch_artist=True,
                       boxprops={"facecolor": "0.85", "edgecolor": "black"},
                       medianprops={"color": "black", "linewidth": 1.5})
            ax.set_xlabel("concurrent streams")
            ax.set_ylabel("ms")
            ax.set_title(title, loc="left")
        return to_svg(fig)


def latency_percentiles(levels: Sequence[Mapping[str, Any]]) -> str | None:
    """Fallback when per-request records are absent: p50/p90/p99 of TTFT and ITL per level."""
    conc = [lv.get("concurrency") for lv in levels]
    if not levels or not all(_finite(c) for c in conc):
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.6, ncols=2)
        drawn = False
        for ax, key, title in zip(fig.axes, ("ttft_s", "itl_s"), ("TTFT", "ITL"), strict=True):
            for style, q in zip(STYLES, ("p50", "p90", "p99"), strict=False):
                pts = [(c, lv[key][q] * 1000) for c, lv in zip(conc, levels, strict=True)
                       if isinstance(lv.get(key), Mapping) and _finite(lv[key].get(q))]
                if pts:
                    drawn = True
                    ax.plot(*zip(*pts, strict=True), label=q, **style)
            levels_axis(ax, [float(c) for c in conc])  # type: ignore[arg-type]
            ax.set_ylabel("ms")
            ax.set_title(f"{title} percentiles per level", loc="left")
            ax.legend(fontsize=7)
        return to_svg(fig) if drawn else None


def throughput_vs_concurrency(levels: Sequence[Mapping[str, Any]], max_sustained: int | None,
                              first_degraded: str | None) -> str | None:
    """Per-stream and aggregate tokens/s against concurrency, the knee marked."""
    pts = [(lv["concurrency"], lv.get("stream_tokens_per_s") or {},
            lv.get("aggregate_tokens_per_s"))
           for lv in levels if _finite(lv.get("concurrency"))]
    if not pts:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.8)
        ax = fig.axes[0]
        per = [(c, s["p50"]) for c, s, _ in pts if _finite(s.get("p50"))]
        per90 = [(c, s["p90"]) for c, s, _ in pts if _finite(s.get("p90"))]
        agg = [(c, a) for c, _, a in pts if _finite(a)]
        if per:
            ax.plot(*zip(*per, strict=True), label="per stream p50", **STYLES[0])
        if per90:
            ax.plot(*zip(*per90, strict=True), label="per stream p90", **STYLES[2])
        levels_axis(ax, [c for c, _, _ in pts])
        ax.set_ylabel("tokens/s per stream")
        ax2 = ax.twinx()
        ax2.grid(False)
        if agg:
            ax2.plot(*zip(*agg, strict=True), label="aggregate", **STYLES[1])
        ax2.set_ylabel("aggregate tokens/s")
        if _finite(max_sustained):
            ax.axvline(float(max_sustained), color="black", linewidth=1.2,  # type: ignore[arg-type]
                       linestyle=(0, (6, 2, 1, 2)))
            what = f"; first degraded: {first_degraded}" if first_degraded else ""
            ax.annotate(f"max sustained: {max_sustained}{what}", (max_sustained, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(4, -12),
                        textcoords="offset points", fontsize=7, ha="left")
        handles = ax.get_legend_handles_labels()
        handles2 = ax2.get_legend_handles_labels()
        ax.legend(handles[0] + handles2[0], handles[1] + handles2[1], fontsize=7,
                  loc="center left")
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        ax.set_title("Throughput vs concurrency", loc="left")
        return to_svg(fig)


def prefill_fit(points: Sequence[tuple[float, float]], overhead_s: float | None,
                tokens_per_s: float | None, r2: float | None) -> str | None:
    """TTFT against prompt length with the fitted line TTFT = a + n / rate."""
    pts = [(n, t) for n, t in points if _finite(n) and _finite(t)]
    if not pts:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.6)
        ax = fig.axes[0]
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, [y * 1000 for y in ys], linestyle="none", marker="o", color="black",
                markerfacecolor="white", label="measured TTFT")
        if _finite(overhead_s) and _finite(tokens_per_s) and tokens_per_s:
            lo, hi = 0.0, max(xs) * 1.05
            fit = [(overhead_s + x / tokens_per_s) * 1000 for x in (lo, hi)]  # type: ignore[operator]
            quality = f", r² {r2:.3f}" if _finite(r2) else ""
            ax.plot([lo, hi], fit, color="0.35", linestyle="--",
                    label=f"fit: {overhead_s * 1000:.0f} ms + n / {tokens_per_s:,.0f} tok/s"  # type: ignore[operator]
                          f"{quality}")
        ax.set_xlabel("prompt tokens")
        ax.set_ylabel("TTFT (ms)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left")
        ax.set_title("TTFT vs prompt length (prefill)", loc="left")
        return to_svg(fig)


def stream_raster(streams: Sequence[Stream], stall_s: float = 1.0) -> str | None:
    """Token arrivals of sample streams over time: waiting shows as a thin line, stalls bold."""
    rows = sorted(streams, key=lambda s: s.t0_s)
    if not rows:
        return None
    origin = rows[0].t0_s
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=min(0.12 * len(rows) + 1.2, 4.2))
        ax = fig.axes[0]
        stalls = 0
        # One path per layer (not one per tick) keeps the SVG small and the PDF fast.
        tick_x: list[float] = []
        tick_y: list[float] = []
        wait_x: list[float] = []
        wait_y: list[float] = []
        stall_x: list[float] = []
        stall_y: list[float] = []
        for y, s in enumerate(rows):
            start = s.t0_s - origin
            times = [start + a for a in s.arrivals_s]
            end = times[0] if times else start
            wait_x += [start, end, math.nan]  # sent, waiting for the first token
            wait_y += [y, y, math.nan]
            for t in times:
                tick_x += [t, t, math.nan]
                tick_y += [y - 0.35, y + 0.35, math.nan]
            for a, b in itertools.pairwise(times):
                if b - a > stall_s:
                    stalls += 1
                    stall_x += [a, b, math.nan]
                    stall_y += [y, y, math.nan]
            if s.outcome != "ok":
                ax.plot(end, y, marker="x", color="black", markersize=5)
        ax.plot(wait_x, wait_y, color="0.6", linewidth=0.8)
        ax.plot(tick_x, tick_y, color="black", linewidth=0.4)
        if stall_x:
            ax.plot(stall_x, stall_y, color="black", linewidth=2.5)
        ax.set_ylim(-1, len(rows))
        ax.invert_yaxis()
        ax.set_xlabel("seconds since the first sampled request")
        ax.set_ylabel("stream (by send time)")
        ax.set_title(f"Stream raster: grey = waiting for first token, tick = chunk, "
                     f"bold = stall > {stall_s:g} s ({stalls}), x = not ok", loc="left")
        return to_svg(fig)


#: The use-case chart's panels: summary metric key, SLO profile key, label.
FIT_PANELS = (("ttft_s", "ttft_p90_s", "TTFT p90"), ("tpot_s", "tpot_p90_s", "TPOT p90"))


def use_case_fit(levels: Sequence[Mapping[str, Any]],
                 limits: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Measured TTFT p90 and TPOT p90 per level against each use case's limits.

    `limits` maps a use case to its SLO profile (`ttft_p90_s`, `tpot_p90_s`, ...); a
    level fits a use case where the measured line stays under that use case's line.
    """
    panels = []
    for key, limit_key, label in FIT_PANELS:
        pts = [(lv["concurrency"], lv[key]["p90"]) for lv in levels
               if _finite(lv.get("concurrency")) and isinstance(lv.get(key), Mapping)
               and _finite(lv[key].get("p90"))]
        lims = sorted((n, float(p[limit_key])) for n, p in limits.items()
                      if _finite(p.get(limit_key)))
        if pts:
            panels.append((pts, lims, label))
    if not panels:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.6, ncols=len(panels))
        for ax, (pts, lims, label) in zip(fig.axes, panels, strict=True):
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, [y * 1000 for y in ys], label=f"measured {label}", **STYLES[0])
            for i, (style, (name, limit)) in enumerate(zip(STYLES[1:] * 3, lims,
                                                            strict=False)):
                ax.axhline(limit * 1000, color=style["color"], linestyle=style["linestyle"],
                           linewidth=1)
                # alternate sides so close limits (450 / 500 ms) stay readable
                ax.annotate(f"{name.replace('_', ' ')} {limit * 1000:.0f} ms",
                            (0.0 if i % 2 else 1.0, limit * 1000),
                            xycoords=("axes fraction", "data"),
                            xytext=(4 if i % 2 else -4, 2), textcoords="offset points",
                            ha="left" if i % 2 else "right", fontsize=6.5)
            levels_axis(ax, xs)
            # log scale: a 40 ms and a 2,000 ms limit must both be readable beside the data
            from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.yaxis.set_minor_formatter(NullFormatter())
            top = max([y * 1000 for y in ys] + [lim * 1000 for _, lim in lims])
            ax.set_ylim(top=top * 1.6)  # room for the highest limit's label
            ax.set_ylabel(f"{label} (ms, log scale)")
            ax.legend(fontsize=7, loc="lower right")
            ax.set_title(f"{label} vs each use case's limit", loc="left")
        return to_svg(fig)
