"""The scorecard's figures of claims and fits: claims beside measurements, the
prefill fit, and each use case's limits against the ramp."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib
from matplotlib.lines import Line2D

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_levels import Level, Pct
from evalkit.analysis.thresholds import SloProfile, Tolerances
from evalkit.fmt import chart_num, chart_whole, level_span
from evalkit.render.charts.kit import (
    _RC,
    HEADLINE_UNITS,
    LIMIT_STYLES,
    STYLES,
    _finite,
    _handles,
    _log_numbers,
    _place_tags,
    _positive,
    _Tag,
    figure_title,
    legend_below,
    levels_axis,
    new_figure,
    number_ticks,
    plain,
    to_svg,
)
from evalkit.render.charts.ramp import BOUND_LABEL, _hollow
from evalkit.review.scorecard import ReadingSpeedCard

#: the reading speed a use case's streams must stay above (tokens/s; None: not known)
#: and the percentile it is judged at
ReadingSpeed = tuple[float | None, str]

# --------------------------------------------------------------------------- charts


def measured_rows(summary: Summary | None) -> list[tuple[str, Pct, int | None]]:
    """Our per-stream rates for the claims chart, each with the level it was measured at:
    one stream alone (the baseline, which the Q6 text quotes) and the max sustained level
    (else the highest measured: `Summary.under_load`, the level page one quotes)."""
    if summary is None:
        return []
    rows: list[tuple[str, Pct, int | None]] = []
    base = summary.sections.baseline
    if base is not None and base.stream_tokens_per_s != Pct():
        rows.append(("ours, 1 stream alone (baseline)", base.stream_tokens_per_s, 1))
    load = summary.under_load()
    if load is not None:
        level, why = load
        c, dist = level.concurrency, level.stream_tokens_per_s
        if dist != Pct():
            rows.append((f"ours at {c} stream{'s' if c != 1 else ''} ({why})", dist, c))
    return rows


def claims_vs_measured(headline: float | None, panel: Pct | None,
                       measured: Pct | Sequence[tuple[str, Pct, int | None]] | None,
                       unit: str = "tokens/s", headline_unit: str | None = None) -> str | None:
    """The vendor's headline and production panel beside our per-stream rates, one row
    each, every row naming its figures and (ours) the level they were measured at.

    `measured` is `measured_rows(summary)` (or one distribution, labelled "ours"). A
    headline that is not per stream (per GPU, per node) cannot share the axis: its row
    says so and draws nothing.
    """
    marks = {"headline": ("*", "black", 10), "p50": ("o", "black", 6),
             "p90": ("s", "white", 6), "p99": ("^", "black", 6)}
    rows: list[tuple[str, list[tuple[str, float]]]] = []
    if _finite(headline):
        per = HEADLINE_UNITS.get(headline_unit or "output_tokens_per_s",
                                 plain(str(headline_unit)))
        if per == "per stream":
            rows.append((f"vendor headline\n{chart_whole(headline)} {unit}",
                         [("headline", float(headline))]))
        else:
            rows.append((f"vendor headline {chart_whole(headline)} {unit} {per}\n"
                         f"(not per stream: not drawn)", []))
    ours: list[tuple[str, Pct | None, int | None]] = (
        [("ours", measured, None)] if isinstance(measured, Pct) else list(measured or []))
    levels = []
    for label, dist, level in [("vendor production panel", panel, None), *ours]:
        vals = [(q, float(v)) for q in ("p50", "p90", "p99")
                if dist is not None and _finite(v := dist.get(q))]
        if vals:
            rows.append((f"{label}\n" + " · ".join(f"{q} {chart_whole(v)}" for q, v in vals), vals))
            levels += [level] if level else []
        elif dist is not None and dist is not panel:
            rows.append((f"{label}\nnot measured: no request succeeded", []))
    if not any(vals for _, vals in rows):
        return None
    values = [v for _, vals in rows for _, v in vals]
    log = min(values) > 0 and max(values) / min(values) > 100
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=0.5 * len(rows) + 1.1)
        ax = fig.axes[0]
        n = len(rows)
        for y, (_label, vals) in zip(range(n - 1, -1, -1), rows, strict=True):
            if not vals:
                continue
            xs = [v for _, v in vals]
            if len(xs) > 1:
                ax.plot([min(xs), max(xs)], [y, y], color="0.75", linewidth=3,
                        solid_capstyle="butt")
            for q, v in vals:
                marker, face, size = marks[q]
                ax.plot([v], [y], marker=marker, color="black", markerfacecolor=face,
                        markersize=size, linestyle="none")
        ax.set_yticks(range(n), [label for label, _ in reversed(rows)])
        ax.tick_params(axis="y", length=0)
        ax.grid(False, axis="y")
        ax.set_ylim(-0.6, n - 0.4)
        if log:
            ax.set_xscale("log")
            _log_numbers(ax.xaxis, min(values), max(values))
            ax.set_xlim(min(values) / 2, max(values) * 2)
        else:
            number_ticks(ax.xaxis)
            ax.set_xlim(0, max(values) * 1.08)
        ax.set_xlabel(f"output {unit} per stream{' (log scale)' if log else ''}")
        at = (f" at {' and '.join(f'{c:,}' for c in dict.fromkeys(levels))} "
              f"stream{'s' if levels[-1] != 1 else ''}") if levels else ""
        # the figure's title: the row labels leave the plot too narrow for it
        figure_title(fig, f"Output {unit} per stream: the vendor's figures vs ours{at}")
        shown = {q for _, vals in rows for q, _ in vals}
        keys = [(q, Line2D([], [], marker=marks[q][0], color="black", linestyle="none",
                           markerfacecolor=marks[q][1], markersize=marks[q][2]))
                for q in ("p50", "p90", "p99", "headline") if q in shown]
        legend_below(fig, [h for _, h in keys],
                     ["the vendor's headline" if q == "headline" else q for q, _ in keys])
        return to_svg(fig)


def prefill_fit(points: Sequence[tuple[float, float]], overhead_s: float | None,
                tokens_per_s: float | None, r2: float | None) -> str | None:
    """TTFT against prompt length with the fitted line TTFT = a + n / rate."""
    pts = [(n, t) for n, t in points if _finite(n) and _finite(t)]
    if not pts:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.7)
        ax = fig.axes[0]
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, [y * 1000 for y in ys], linestyle="none", marker="o", color="black",
                markerfacecolor="white", label="measured TTFT, one request at a time")
        if _finite(overhead_s) and _finite(tokens_per_s) and tokens_per_s:
            lo, hi = 0.0, max(xs) * 1.05
            fit = [(overhead_s + x / tokens_per_s) * 1000 for x in (lo, hi)]
            quality = f", r² {r2:.3f}" if _finite(r2) else ""
            ax.plot([lo, hi], fit, color="0.35", linestyle="--",
                    label=f"fit: {chart_whole(overhead_s * 1000)} ms + n / "
                          f"{chart_whole(tokens_per_s)} tok/s{quality}")
        number_ticks(ax.xaxis)
        number_ticks(ax.yaxis)
        ax.set_xlabel("prompt tokens (n)")
        ax.set_ylabel("TTFT (ms)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        legend_below(fig, *_handles(ax))
        ax.set_title("TTFT (ms) vs prompt length (tokens), at 1 stream", loc="left")
        return to_svg(fig)


#: The use-case chart's panels: summary metric, percentile, SLO profile key, label.
#: each latency panel: the level's figure, its percentile, the use case's limit on it,
#: the panel's title, and whether the reading speed is drawn on it
FIT_PANELS: tuple[tuple[str, str, Callable[[SloProfile], float | None], str, bool], ...] = (
    ("ttft_s", "p90", lambda p: p.ttft_p90_s, "TTFT p90", False),
    ("tpot_s", "p90", lambda p: p.tpot_p90_s, "TPOT p90", True),
    ("itl_s", "p99", lambda p: p.itl_p99_s, "ITL p99, gap between chunks", False))


def _limit_lines(limits: Mapping[str, SloProfile], limit: Callable[[SloProfile], float | None],
                 reading: ReadingSpeed | None) -> list[tuple[str, float, Mapping[str, Any]]]:
    """(label, ms, line style) of each limit a panel draws, highest first; use cases that
    share a limit share a line, and a use case has one style in every panel. The TPOT
    panel's reading-speed line is the reading speed the review judged by (`reading`),
    drawn when it is judged at p90, the percentile the panel shows (None: not the TPOT
    panel)."""
    by_value: dict[float, list[tuple[int, str]]] = {}
    for i, (name, profile) in enumerate(limits.items()):
        value = limit(profile)
        if _positive(value):
            label = plain(profile.shown_as(str(name)))
            by_value.setdefault(float(value) * 1000, []).append((i, label))
    out = [(f"{', '.join(n for _, n in names)} {chart_whole(v)} ms", v,
            LIMIT_STYLES[names[0][0] % (len(LIMIT_STYLES) - 2)])
           for v, names in by_value.items()]
    if reading is not None:
        speed, percentile = reading
        if _positive(speed) and percentile == "p90":
            readers = [plain(p.shown_as(str(n))) for n, p in limits.items()
                       if p.above_reading_speed]
            if readers:
                out.append((f"{', '.join(readers)}: reading speed {chart_num(speed)} tokens/s = "
                            f"{chart_whole(1000 / speed)} ms", 1000 / speed, LIMIT_STYLES[-2]))
    return sorted(out, key=lambda t: -t[1])


def use_case_fit(levels: Sequence[Level],
                 limits: Mapping[str, SloProfile],
                 tolerances: Tolerances | None = None,
                 reading: ReadingSpeedCard | None = None) -> str | None:
    """Every limit a use case sets, per level: TTFT p90, TPOT p90 (and the reading
    speed), ITL p99 (the voice agent's no-stall limit) and the share of failed requests.

    `limits` maps a use case to its SLO profile (`ttft_p90_s`, `tpot_p90_s`,
    `itl_p99_s`, `above_reading_speed`, `label`); `tolerances` (the scorecard's) gives
    the failure limit, and `reading` (the scorecard's typed reading-speed card) the
    reading speed and the percentile it is judged at (the defaults otherwise). A level
    fits a use case where the measured line stays under every one of that use case's
    lines.
    """
    tol = tolerances or Tolerances()
    speed: ReadingSpeed = ((reading.reading_speed_tokens_per_s, reading.percentile)
                           if reading is not None else
                           (Tolerances().reading_speed_tokens_per_s,
                            Tolerances().reading_speed_percentile))
    panels: list[tuple[list[tuple[float, float, bool]],
                       list[tuple[str, float, Mapping[str, Any]]], str, bool]] = []
    conc = [lv.concurrency for lv in levels]
    for key, q, limit_of, label, reads in FIT_PANELS:
        pts = [(float(lv.concurrency), float(v) * 1000, lv.client_bound) for lv in levels
               if _positive(v := getattr(lv, key).get(q))]
        if pts:
            panels.append((pts, _limit_lines(limits, limit_of, speed if reads else None), label,
                           True))
    failed = [(float(lv.concurrency), rate * 100, lv.client_bound) for lv in levels
              if (rate := lv.failure_rate) is not None]
    if failed:
        failure_limit = float(tol.max_failure_rate)
        panels.append((failed, [(f"every use case {chart_num(failure_limit * 100)} %",
                                 failure_limit * 100,
                                 LIMIT_STYLES[-1])], "Failed requests", False))
    if not panels:
        return None
    ncols = 1 if len(panels) == 1 else 2
    nrows = math.ceil(len(panels) / ncols)
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.3 * nrows + 0.5, ncols=ncols, nrows=nrows)
        for extra in fig.axes[len(panels):]:
            extra.remove()
        tags: list[_Tag] = []
        for ax, (pts, lims, label, log) in zip(fig.axes, panels, strict=False):
            xs = [c for c, _, _ in pts]
            ys = [v for _, v, _ in pts]
            ax.plot(xs, ys, label="measured at each level", **STYLES[0])
            _hollow(ax, [(c, v) for c, v, b in pts if b], STYLES[0]["marker"])
            for name, limit, style in lims:
                ax.axhline(limit, linewidth=1, **style)
                tags.append(_Tag(ax, name, limit, style))
            levels_axis(ax, conc)
            values = ys + [v for _, v, _ in lims]
            if log:
                ax.set_yscale("log")
                lo, hi = min(values), max(values)
                decades = max(math.log10(hi / lo), 1.0)
                ax.set_ylim(lo / 10 ** (0.1 * decades), hi * 10 ** (0.3 * decades))
                _log_numbers(ax.yaxis, lo, hi)
                ax.set_ylabel("ms (log scale)")
                ax.set_title(f"{label} (ms)", loc="left")
            else:
                top = max(values) * 1.35
                ax.set_ylim(-0.03 * top, top)
                number_ticks(ax.yaxis)
                ax.set_ylabel("% of requests")
                ax.set_title(f"{label} (% of requests)", loc="left")
        figure_title(fig, f"Each use case's limits per level, {level_span(conc)}")
        handles: list[Any] = [Line2D([], [], **STYLES[0])]
        labels = ["measured at each level; a use case's limits are the labelled lines"]
        if any(b for pts, *_ in panels for _, _, b in pts):
            handles.append(Line2D([], [], marker="o", color="black", markerfacecolor="white",
                                  linestyle="none"))
            labels.append(BOUND_LABEL)
        _place_tags(fig, tags, handles, labels)
        return to_svg(fig)
