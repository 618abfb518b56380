"""The workload chart: each session or agent shape's TTFT p50 by turn (or step), beside
the TTFT a cold prompt of that turn's length would have had (the prefill fit). A later
turn below its cold prompt was served faster than its length alone allows, as a prefix
cache makes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

from evalkit.render.charts.kit import (
    _RC,
    _finite,
    _handles,
    legend_below,
    new_figure,
    plain,
    series_style,
    to_svg,
)
from evalkit.sanitize import clean

WORKLOAD_CAPTION = ("TTFT p50 by turn (or agent step) of each session shape, at the fewest "
                    "users measured (solid), beside the TTFT a cold prompt of the turn's "
                    "median length would have had from the prefill fit (dotted, same "
                    "marker). Below the dotted line: faster than its length allows, as a "
                    "prefix cache makes it. Figures from the buyer's workload named above.")


def _multi(shape: Mapping[str, Any]) -> bool:
    turns = shape.get("turns") or []
    return isinstance(turns, list) and len(turns) > 1


def turns_chart(levels: Sequence[Mapping[str, Any]]) -> str | None:
    """The chart from scorecard.json's `workload.levels`; None without a shape of more
    than one turn or step."""
    if not levels:
        return None
    level = levels[0]  # the fewest users: queueing adds to every turn at more
    shapes = [s for s in level.get("shapes") or [] if isinstance(s, Mapping) and _multi(s)]
    if not shapes:
        return None
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.5)
        ax = fig.axes[0]
        drawn = False
        for i, s in enumerate(shapes):
            style = series_style(i)
            name = plain(clean(str(s.get("name") or "?"), 30))
            rows = [t for t in s["turns"] if isinstance(t, Mapping) and _finite(t.get("index"))]
            pts = [(t["index"], t["ttft_s"]["p50"] * 1000) for t in rows
                   if _finite((t.get("ttft_s") or {}).get("p50"))]
            cold = [(t["index"], t["cold_ttft_s"] * 1000) for t in rows
                    if _finite(t.get("cold_ttft_s"))]
            if pts:
                ax.plot(*zip(*pts, strict=True), **style, label=f"{name}: measured")
                drawn = True
            if cold:
                ax.plot(*zip(*cold, strict=True), color=style["color"], linestyle=":",
                        marker=style["marker"], markerfacecolor="white",
                        label=f"{name}: cold prompt of that length")
        if not drawn:
            return None
        top = max(len(s["turns"]) for s in shapes)
        ax.set_xticks(range(1, top + 1))
        ax.set_xlabel(f"turn or step (at {level.get('users')} "
                      f"user{'s' if level.get('users') != 1 else ''})")
        ax.set_ylabel("TTFT p50 (ms)")
        ax.set_ylim(bottom=0)
        legend_below(fig, *_handles(ax))
        ax.set_title("Later turns against a cold prompt of their length: TTFT p50 (ms)",
                     loc="left")
        return to_svg(fig)
