"""The stream raster: one row a stream, one mark a chunk, stalls drawn."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from evalkit.fmt import level_span
from evalkit.render.charts.kit import _RC, legend_below, new_figure, number_ticks, to_svg


@dataclass(frozen=True)
class Stream:
    """One request as the raster draws it: when it was sent and when its chunks came."""

    t0_s: float
    arrivals_s: tuple[float, ...]  # offsets from t0
    outcome: str = "ok"
    level: int | None = None


def stream_raster(streams: Sequence[Stream], stall_s: float = 1.0) -> str | None:
    """Token arrivals of sample streams over time: waiting shows as a thin line, stalls bold."""
    rows = sorted(streams, key=lambda s: s.t0_s)
    if not rows:
        return None
    origin = rows[0].t0_s
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=min(0.1 * len(rows) + 1.6, 4.4))
        ax = fig.axes[0]
        stalls = 0
        # One path per layer (not one per tick) keeps the SVG small and the PDF fast.
        tick_x: list[float] = []
        tick_y: list[float] = []
        wait_x: list[float] = []
        wait_y: list[float] = []
        stall_x: list[float] = []
        stall_y: list[float] = []
        fail_x: list[float] = []
        fail_y: list[float] = []
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
                fail_x.append(times[-1] if times else end)
                fail_y.append(y)
        ax.plot(wait_x, wait_y, color="0.6", linewidth=0.8)
        ax.plot(tick_x, tick_y, color="black", linewidth=0.4)
        if stall_x:
            ax.plot(stall_x, stall_y, color="black", linewidth=2.5)
        if fail_x:
            ax.plot(fail_x, fail_y, marker="x", color="black", markersize=5, linestyle="none")
        ax.set_ylim(-1, len(rows))
        ax.invert_yaxis()
        ax.yaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True))
        number_ticks(ax.xaxis)
        ax.set_xlabel("seconds since the first of these requests was sent")
        ax.set_ylabel("request, in send order")
        found = f"{stalls} in these streams" if stalls else "none in these streams"
        handles: list[Any] = [Line2D([], [], color="0.6", linewidth=0.8),
                              Line2D([], [], color="black", marker="|", markersize=7,
                                     linestyle="none"),
                              Line2D([], [], color="black", linewidth=2.5)]
        labels = ["waiting for the first token", "a chunk arrives",
                  f"stall: a gap over {stall_s:g} s ({found})"]
        if fail_x:
            handles.append(Line2D([], [], marker="x", color="black", linestyle="none"))
            labels.append("× request not ok (failed or cut short)")
        legend_below(fig, handles, labels, ncols=2)
        levels = {s.level for s in rows}
        only = levels.pop() if len(levels) == 1 else None
        at = f" at {level_span([only])}" if only is not None else ""
        ax.set_title(f"Token arrivals (s) of {len(rows)} requests{at}", loc="left")
        return to_svg(fig)
