"""The ramp's figures: latency distributions and percentiles per level, the
vendor's queue, and throughput against concurrency."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from evalkit.analysis.summary_checks import VendorMetrics
from evalkit.analysis.summary_levels import Level
from evalkit.fmt import level_span
from evalkit.render.charts.kit import (
    _RC,
    DEGRADED_WORDS,
    STYLES,
    _finite,
    _handles,
    _lookup,
    _positive,
    _Spaced,
    figure_title,
    legend_below,
    levels_axis,
    new_figure,
    number_ticks,
    plain,
    to_svg,
)

YLABELS = {"TTFT": "ms to the first token", "ITL": "ms between chunks"}
TITLES = {"TTFT": "TTFT (ms)", "ITL": "ITL, gap between chunks (ms)"}
BOX_KEY = ("box: the middle half of requests (p25–p75)", "line in the box: the median (p50)",
           "whiskers: p1 to p99 (slower outliers not drawn)")


def latency_distributions(samples: Mapping[int, Mapping[str, Sequence[float]]]) -> str | None:
    """TTFT and the gaps between chunks (ITL) per concurrency level, as box plots (box
    p25–p75, line p50, whiskers p1–p99), in ms; a panel only for what was measured."""
    levels = sorted(c for c, s in samples.items() if s.get("ttft") or s.get("itl"))
    if not levels:
        return None
    panels = []
    for key, what in (("ttft", "TTFT"), ("itl", "ITL")):
        keep = [(c, [v * 1000 for v in samples[c].get(key, [])]) for c in levels]
        keep = [(c, d) for c, d in keep if d]
        if keep:
            panels.append((keep, what))
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.9, ncols=len(panels))
        for ax, (keep, what) in zip(fig.axes, panels, strict=True):
            positions = list(range(1, len(keep) + 1))
            ax.boxplot([d for _, d in keep], positions=positions, whis=(1, 99),
                       showfliers=False, patch_artist=True, widths=0.6,
                       boxprops={"facecolor": "0.85", "edgecolor": "black"},
                       medianprops={"color": "black", "linewidth": 1.5})
            names = {float(p): f"{c:,}" for p, (c, _) in zip(positions, keep, strict=True)}
            name_of = _lookup(names)
            ax.xaxis.set_major_locator(_Spaced(positions, name_of))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos, n=name_of: n(v)))
            number_ticks(ax.yaxis)
            ax.set_xlabel("concurrent streams")
            ax.set_ylabel(YLABELS[what])
            ax.set_title(TITLES[what], loc="left")
        figure_title(fig, f"TTFT and ITL per level, {level_span(levels)}")
        legend_below(fig, [Patch(facecolor="0.85", edgecolor="black"),
                           Line2D([], [], color="black", linewidth=1.5),
                           Line2D([], [], color="black", linewidth=0.8, marker="_",
                                  markersize=8)], list(BOX_KEY))
        return to_svg(fig)


def latency_percentiles(levels: Sequence[Level]) -> str | None:
    """Fallback when per-request records are absent: p50/p90/p99 of TTFT and of the gaps
    between chunks (ITL) per level, in ms."""
    conc = [lv.concurrency for lv in levels]
    if not levels:
        return None
    panels = []
    for what, dists in (("TTFT", [lv.ttft_s for lv in levels]),
                        ("ITL", [lv.itl_s for lv in levels])):
        series = []
        for style, q in zip(STYLES, ("p50", "p90", "p99"), strict=False):
            pts = [(c, float(v) * 1000) for c, d in zip(conc, dists, strict=True)
                   if _finite(v := d.get(q))]
            if pts:
                series.append((q, style, pts))
        if series:
            panels.append((what, series))
    if not panels:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.8, ncols=len(panels))
        for ax, (what, series) in zip(fig.axes, panels, strict=True):
            for q, style, pts in series:
                ax.plot(*zip(*pts, strict=True), label=q, **style)
            levels_axis(ax, [float(c) for c in conc])
            number_ticks(ax.yaxis)
            ax.set_ylabel(YLABELS[what])
            ax.set_title(f"{TITLES[what]}: p50, p90, p99", loc="left")
        figure_title(fig, f"TTFT and ITL per level, {level_span(conc)}")
        legend_below(fig, *_handles(fig.axes[0]))
        return to_svg(fig)


def _hollow(ax: Any, pts: Sequence[tuple[float, float]], marker: str) -> None:
    """White-faced markers over points the client was the bottleneck at (not judged)."""
    if pts:
        ax.plot(*zip(*pts, strict=True), linestyle="none", marker=marker, color="black",
                markerfacecolor="white", zorder=3)


BOUND_LABEL = "hollow marker: the client was the bottleneck (not judged)"
#: the vendor's gauges drawn under the ramp chart, each with its words and style
QUEUE_GAUGES = (("running", "running in its engine", 0), ("waiting", "waiting in its queue", 1))


def vendor_queue(vendor: VendorMetrics | None) -> dict[int, dict[str, tuple[float, float]]]:
    """Per ramp level, the vendor's running and waiting gauges as (mean, max): the mean
    of the samples the probe scraped while the level ran (before and after it, which see
    an idle engine, only when none was taken during it), the highest of all of them
    (`VendorGauge.load`); empty when the run scraped nothing or the page exported neither
    gauge."""
    out: dict[int, dict[str, tuple[float, float]]] = {}
    for level, window in (vendor.levels.items() if vendor is not None else ()):
        if window.phase != "ramp" or window.vendor is None or level <= 0:
            continue
        for gauge, g in (("running", window.vendor.running),
                         ("waiting", window.vendor.waiting)):
            if g is not None and (load := g.load) is not None:
                out.setdefault(level, {})[gauge] = load
    return {c: out[c] for c in sorted(out)}


def _queue_panel(ax: Any, queue: Mapping[int, Mapping[str, tuple[float, float]]],
                 levels: Sequence[float]) -> None:
    """Requests the vendor's engine ran and queued at each level: the mean of the
    samples (line) and the highest sample (a dash above it)."""
    for gauge, words, k in QUEUE_GAUGES:
        pts = [(c, *g[gauge]) for c, g in queue.items() if gauge in g]
        if not pts:
            continue
        style = STYLES[k]
        ax.plot([c for c, _, _ in pts], [m for _, m, _ in pts], label=f"{words}, mean",
                **style)
        ax.plot([c for c, _, _ in pts], [h for _, _, h in pts], linestyle="none",
                marker="_", markersize=11, markeredgewidth=1.4, color=style["color"],
                label="dash: the highest sample" if k == 0 else "_")
    levels_axis(ax, levels)
    number_ticks(ax.yaxis)
    ax.set_ylim(bottom=0, top=max(1.0, max(h for g in queue.values() for _, h in g.values())
                                  * 1.15))
    ax.set_ylabel("requests")
    ax.set_title(f"The vendor's own metrics at each level, {level_span(levels)}: "
                 "requests running and waiting (requests)", loc="left")


def throughput_vs_concurrency(levels: Sequence[Level], max_sustained: int | None,
                              first_degraded: str | None,
                              vendor: VendorMetrics | None = None) -> str | None:
    """Output tokens/s per level: per stream (p50 and p10, left axis) and all streams
    together (right axis), the max sustained level marked; under it, when the run scraped
    the vendor's metrics (`vendor`, the summary's vendor_metrics), the requests the
    vendor's engine was running and queueing at each level: why a figure degraded."""
    pts = [(lv.concurrency, lv.stream_tokens_per_s, lv.aggregate_tokens_per_s,
            lv.client_bound) for lv in levels]
    if not any(_positive(a) or _positive(s.p50) for _, s, a, _ in pts):
        return None  # nothing streamed: the failures are in the use-case chart
    run_levels = {float(c) for c, *_ in pts}
    queue = {c: g for c, g in vendor_queue(vendor).items() if float(c) in run_levels}
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=4.6 if queue else 3.0, nrows=2 if queue else 1)
        ax = fig.axes[0]
        below = fig.axes[1] if queue else None
        grid = ax.get_gridspec()
        if below is not None and grid is not None:
            grid.set_height_ratios([2.0, 1.0])
        per: list[tuple[float, float, bool]] = [
            (c, s.p50, b) for c, s, _, b in pts if s.p50 is not None]
        per10: list[tuple[float, float, bool]] = [
            (c, s.p10, b) for c, s, _, b in pts if s.p10 is not None]
        agg: list[tuple[float, float, bool]] = [(c, a, b) for c, _, a, b in pts if _finite(a)]
        for series, style, label in ((per, STYLES[0], "per stream p50 (left axis)"),
                                     (per10, STYLES[2], "per stream p10: 90 % of streams "
                                                        "were faster (left axis)")):
            if series:
                ax.plot([c for c, _, _ in series], [v for _, v, _ in series], label=label,
                        **style)
                _hollow(ax, [(c, v) for c, v, b in series if b], style["marker"])
        levels_axis(ax, [c for c, _, _, _ in pts])
        number_ticks(ax.yaxis)
        ax.set_ylabel("tokens/s per stream")
        ax2 = ax.twinx()
        ax2.grid(False)
        if agg:
            ax2.plot([c for c, _, _ in agg], [v for _, v, _ in agg],
                     label="all streams together (right axis)", **STYLES[1])
            _hollow(ax2, [(c, v) for c, v, b in agg if b], STYLES[1]["marker"])
        number_ticks(ax2.yaxis)
        ax2.set_ylabel("tokens/s, all streams")
        if below is not None:
            _queue_panel(below, queue, [c for c, _, _, _ in pts])
            ax.set_xlabel("")  # the panel under it names the axis they share
        handles, labels = _handles(ax, ax2, *([below] if below is not None else []))
        if _finite(max_sustained):
            ax.axvline(float(max_sustained), color="black", linewidth=1.2,
                       linestyle=(0, (6, 2, 1, 2)))
            what = DEGRADED_WORDS.get(str(first_degraded), plain(str(first_degraded)))
            above = f"; above it {what} degraded first" if first_degraded else ""
            handles.append(Line2D([], [], color="black", linewidth=1.2,
                                  linestyle=(0, (6, 2, 1, 2))))
            labels.append(f"max sustained: {max_sustained} streams{above}")
        if any(b for _, _, _, b in pts):
            handles.append(Line2D([], [], marker="o", color="black", markerfacecolor="white",
                                  linestyle="none"))
            labels.append(BOUND_LABEL)
        legend_below(fig, handles, labels, ncols=2)
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        ax.set_title(f"Output tokens/s per level, {level_span([c for c, *_ in pts])}",
                     loc="left")
        return to_svg(fig)
