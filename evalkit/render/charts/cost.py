"""The scorecard's cost chart: what a session costs at each measured level, beside what a
session that met each use case's SLO costs, with the highest level within each SLO."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib

from evalkit.render.charts.kit import (
    _RC,
    LIMIT_STYLES,
    _handles,
    _positive,
    legend_below,
    levels_axis,
    new_figure,
    number_ticks,
    plain,
    series_style,
    to_svg,
)
from evalkit.review.costcard import Cost, LevelCost

#: the cost chart's caption (what each line is and where the SLO lines come from)
COST_CAPTION = ("Cost per session (one ok request of the measured shape) at each measured "
                "level, and the cost per session that met each use case's SLO (the level's "
                "spend over the requests that met it). Dashed verticals: the highest level "
                "within each SLO (goodput ≥ its target).")


def _per_met_session(lv: LevelCost, name: str) -> float | None:
    """A level's cost per session that met an SLO: per session × its SLO premium (the
    cost per SLO token over the cost per output token)."""
    slo = lv.per_million_slo_tokens.get(name)
    per_m, session = lv.per_million_output_tokens, lv.per_session
    if not (_positive(slo) and _positive(per_m) and _positive(session)):
        return None
    return session * slo / per_m


def cost_vs_concurrency(cost: Cost, labels: Mapping[str, str]) -> str | None:
    """Cost per session against concurrency (log-2 levels), with a line per latency SLO
    (the cost of a session that met it) and the highest level within each SLO; None
    without two costed levels to draw. Drawn from the scorecard's typed `Cost`, the
    figures scorecard.json states (its levels, each use case's highest level)."""
    levels = [(lv.concurrency, lv.per_session, lv) for lv in cost.levels
              if _positive(lv.concurrency) and _positive(lv.per_session)]
    if not levels:
        return None
    currency = plain(str(cost.currency or "quote currency"))
    scale, unit = 1000.0, f"{currency} per 1,000 sessions"
    with matplotlib.rc_context(_RC):
        fig = new_figure(height_in=2.6)
        ax = fig.axes[0]
        xs = [float(c) for c, _, _ in levels]
        ax.plot(xs, [session * scale for _, session, _ in levels],
                **series_style(0), label="every ok session")
        for i, name in enumerate(labels):
            pts = [(float(c), v * scale) for c, _, lv in levels
                   if (v := _per_met_session(lv, name)) is not None]
            if pts:
                px, py = zip(*pts, strict=True)
                ax.plot(px, py, **series_style(i + 1),
                        label=f"a session within the {plain(labels[name])} SLO")
        for i, name in enumerate(labels):
            at = cost.at_slo.get(name)
            c = at.concurrency if at is not None else None
            if _positive(c):
                ax.axvline(float(c), **LIMIT_STYLES[i % len(LIMIT_STYLES)], linewidth=0.8,
                           label=f"highest level within the {plain(labels[name])} SLO")
        levels_axis(ax, xs)
        number_ticks(ax.yaxis)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(unit)
        ax.set_title(f"Cost per 1,000 sessions ({currency}) vs concurrency", loc="left")
        legend_below(fig, *_handles(ax), ncols=2)
        return to_svg(fig)
