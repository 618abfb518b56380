"""The precision chart: each load level's canary match rate with its 95 % interval,
against the rate alone and the floor below which a level breaches."""

from __future__ import annotations

import matplotlib

from evalkit.analysis.jsonread import Interval
from evalkit.analysis.summary_sections import Precision
from evalkit.render.charts.kit import (
    _RC,
    _handles,
    legend_below,
    levels_axis,
    new_figure,
    to_svg,
)

#: marker per status: held, tie, breach (told apart by shape, never by colour alone)
_MARKERS = {"held": ("o", "black"), "tie": ("s", "white"), "breach": ("X", "black")}


def precision_chart(precision: Precision | None) -> str | None:
    """Match rate (%) by concurrency with interval bars; None without compared canaries."""
    levels = [lv for lv in (precision.levels if precision else ())
              if lv.match_rate is not None and lv.concurrency is not None]
    if precision is None or not levels:
        return None
    alone = precision.alone
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.5)
        ax = fig.axes[0]
        for status, (marker, face) in _MARKERS.items():
            pts = [(float(lv.concurrency or 0), lv.match_rate or 0.0, lv.match_rate_ci)
                   for lv in levels if lv.status == status]
            if not pts:
                continue
            xs = [c for c, _, _ in pts]
            ys = [rate * 100 for _, rate, _ in pts]
            ci = [_ends(rate, interval) for _, rate, interval in pts]
            err = [[y - lo * 100 for y, (lo, _) in zip(ys, ci, strict=True)],
                   [hi * 100 - y for y, (_, hi) in zip(ys, ci, strict=True)]]
            ax.errorbar(xs, ys, yerr=err, linestyle="none", marker=marker, color="black",
                        markerfacecolor=face, capsize=3, label=f"level {status}")
        if alone.match_rate is not None:
            ax.axhline(alone.match_rate * 100, color="0.35", linestyle="--",
                       label="match rate alone (concurrency 1)")
        floor = next((lv.floor for lv in levels if lv.floor is not None), None)
        if floor is not None:
            ax.axhline(floor * 100, color="0.55", linestyle=":",
                       label="breach floor (alone less the tolerance)")
        levels_axis(ax, [float(lv.concurrency or 0) for lv in levels])
        ax.set_ylim(-5, 105)
        ax.set_ylabel("canaries matching (%)")
        legend_below(fig, *_handles(ax))
        ax.set_title("Canary answers identical to their answers alone (%), by concurrent "
                     "streams, with 95 % intervals", loc="left")
        return to_svg(fig)


def _ends(rate: float, interval: Interval | None) -> tuple[float, float]:
    """A match rate's interval bar ends; the point itself where the summary gives none."""
    if interval is None or interval[0] is None or interval[1] is None:
        return rate, rate
    return interval[0], interval[1]
