"""The workload chart: each session or agent shape's TTFT p50 by turn (or step), beside
the TTFT a cold prompt of that turn's length would have had (the prefill fit). A later
turn below its cold prompt was served faster than its length alone allows, as a prefix
cache makes it."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

from evalkit.render.charts.kit import (
    _RC,
    _handles,
    legend_below,
    new_figure,
    plain,
    series_style,
    to_svg,
)
from evalkit.review.workload_card import ShapeCard, WorkloadLevelCard
from evalkit.sanitize import clean

WORKLOAD_CAPTION = ("TTFT p50 by turn (or agent step) of each session shape, at the fewest "
                    "users measured (solid), beside the TTFT a cold prompt of the turn's "
                    "median length would have had from the prefill fit (dotted, same "
                    "marker). Below the dotted line: faster than its length allows, as a "
                    "prefix cache makes it. Figures from the buyer's workload named above.")


def _multi(shape: ShapeCard) -> bool:
    return len(shape.turns) > 1


def turns_chart(levels: Sequence[WorkloadLevelCard]) -> str | None:
    """The chart from the scorecard's workload levels; None without a shape of more than
    one turn or step."""
    if not levels:
        return None
    level = levels[0]  # the fewest users: queueing adds to every turn at more
    shapes = [s for s in level.shapes if _multi(s)]
    if not shapes:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.5)
        ax = fig.axes[0]
        drawn = False
        for i, s in enumerate(shapes):
            style = series_style(i)
            name = plain(clean(s.name or "?", 30))
            rows = [(t.index, t) for t in s.turns if t.index is not None]
            pts = [(i, t.ttft_s.p50 * 1000) for i, t in rows if t.ttft_s.p50 is not None]
            cold = [(i, t.cold_ttft_s * 1000) for i, t in rows if t.cold_ttft_s is not None]
            if pts:
                ax.plot(*zip(*pts, strict=True), **style, label=f"{name}: measured")
                drawn = True
            if cold:
                ax.plot(*zip(*cold, strict=True), color=style["color"], linestyle=":",
                        marker=style["marker"], markerfacecolor="white",
                        label=f"{name}: cold prompt of that length")
        if not drawn:
            return None
        top = max(len(s.turns) for s in shapes)
        ax.set_xticks(range(1, top + 1))
        ax.set_xlabel(f"turn or step (at {level.users} "
                      f"user{'s' if level.users != 1 else ''})")
        ax.set_ylabel("TTFT p50 (ms)")
        ax.set_ylim(bottom=0)
        legend_below(fig, *_handles(ax))
        ax.set_title("Later turns against a cold prompt of their length: TTFT p50 (ms)",
                     loc="left")
        return to_svg(fig)
