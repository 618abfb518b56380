"""The precision chart: each load level's canary match rate with its 95 % interval,
against the rate alone and the floor below which a level breaches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib

from evalkit.render.charts.kit import (
    _RC,
    _finite,
    _handles,
    legend_below,
    levels_axis,
    new_figure,
    to_svg,
)

#: marker per status: held, tie, breach (told apart by shape, never by colour alone)
_MARKERS = {"held": ("o", "black"), "tie": ("s", "white"), "breach": ("X", "black")}


def precision_chart(precision: Mapping[str, Any] | None) -> str | None:
    """Match rate (%) by concurrency with interval bars; None without compared canaries."""
    levels = [lv for lv in (precision or {}).get("levels") or []
              if isinstance(lv, Mapping) and _finite(lv.get("match_rate"))]
    if not levels:
        return None
    alone = (precision or {}).get("alone") or {}
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.5)
        ax = fig.axes[0]
        for status, (marker, face) in _MARKERS.items():
            pts = [lv for lv in levels if lv.get("status") == status]
            if not pts:
                continue
            xs = [lv["concurrency"] for lv in pts]
            ys = [lv["match_rate"] * 100 for lv in pts]
            ci = [lv.get("match_rate_ci") or [lv["match_rate"]] * 2 for lv in pts]
            err = [[y - lo * 100 for y, (lo, _) in zip(ys, ci, strict=True)],
                   [hi * 100 - y for y, (_, hi) in zip(ys, ci, strict=True)]]
            ax.errorbar(xs, ys, yerr=err, linestyle="none", marker=marker, color="black",
                        markerfacecolor=face, capsize=3, label=f"level {status}")
        if _finite(alone.get("match_rate")):
            ax.axhline(alone["match_rate"] * 100, color="0.35", linestyle="--",
                       label="match rate alone (concurrency 1)")
        floor = next((lv.get("floor") for lv in levels if _finite(lv.get("floor"))), None)
        if _finite(floor):
            ax.axhline(floor * 100, color="0.55", linestyle=":",
                       label="breach floor (alone less the tolerance)")
        levels_axis(ax, [lv["concurrency"] for lv in levels])
        ax.set_ylim(-5, 105)
        ax.set_ylabel("canaries matching (%)")
        legend_below(fig, *_handles(ax))
        ax.set_title("Canary answers identical to their answers alone (%), by concurrent "
                     "streams, with 95 % intervals", loc="left")
        return to_svg(fig)
