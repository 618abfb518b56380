"""The scorecard's charts, as one list: a new chart is one function here and one line
in `CHARTS`.

    CHARTS                      each chart's drawing, in the page's order
    draw_charts(inputs)         -> (Chart, ...): every chart there is data for

A chart function takes `ChartInputs` (the typed scorecard, the run's typed summary, the
records' digest, each use case's SLO profile) and returns its caption and SVG (the SVG
None: nothing to draw this time, and the figure is left out), or None when the chart is
not one this run has at all (the raster without records); figures are numbered on the
page in the order drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from markupsafe import Markup

from evalkit.analysis.summary import Summary, as_number
from evalkit.analysis.summary_checks import VendorMetrics
from evalkit.analysis.summary_levels import Level, Pct
from evalkit.analysis.summary_sections import Prefill, Ramp
from evalkit.analysis.thresholds import SloProfile
from evalkit.fmt import fmt_num
from evalkit.render.charts import captions, figures, kit, ramp, raster
from evalkit.render.charts.precision import precision_chart
from evalkit.render.charts.voice import VOICE_CAPTION, voice_chart
from evalkit.review.claimed import PanelClaim
from evalkit.review.scorecard import Scorecard
from evalkit.rundir.digest import RecordDigest


@dataclass(frozen=True)
class ChartInputs:
    """What every chart is drawn from."""

    card: Scorecard
    summary: Summary | None
    digest: RecordDigest
    #: each use case's SLO profile, as the scorecard was judged with it
    slo_limits: Mapping[str, SloProfile]


@dataclass(frozen=True)
class Chart:
    """A chart on the page: its caption and its inline SVG (ids namespaced per figure)."""

    caption: str
    svg: Markup


Drawing = tuple[str, str | None]


def claims(i: ChartInputs) -> Drawing:
    """The vendor's headline and panel beside our per-stream rates."""
    q6 = i.card.question("Q6").claimed  # the vendor's Q6 answer, with its headline
    claim = q6 if isinstance(q6, PanelClaim) else None
    rates = claim.output_tokens_per_s if claim is not None and claim.panel_numbers else None
    panel = None if rates is None else Pct(p50=rates.p50, p90=rates.p90, p99=rates.p99)
    return (captions.CLAIMS_CAPTION, figures.claims_vs_measured(
        as_number(claim.headline) if claim is not None else None, panel,
        figures.measured_rows(i.summary),
        headline_unit=claim.headline_unit if claim is not None else None))


def latency(i: ChartInputs) -> Drawing:
    """TTFT and ITL per level: boxes from the records, else the summary's percentiles."""
    samples = {level: {"ttft": i.digest.ttft_values("ramp", level),
                       "itl": i.digest.itl.get(level, [])} for level in i.digest.levels}
    dist = ramp.latency_distributions(samples)
    connect = i.summary.sections.connect if i.summary is not None else None
    tpc = connect.tokens_per_chunk.p50 if connect else None
    return (captions.distributions_caption(fmt_num(tpc), boxes=dist is not None),
            dist or ramp.latency_percentiles(_levels(i)))


def throughput(i: ChartInputs) -> Drawing:
    """Output tokens/s per level, the max sustained level, the vendor's queue under it."""
    section = i.summary.sections.ramp if i.summary is not None else None
    held = section or Ramp()
    vendor = i.summary.sections.vendor_metrics if i.summary is not None else None
    vendor = None if vendor == VendorMetrics() else vendor  # an empty section scraped nothing
    return (captions.throughput_caption(held.thresholds if section else None, vendor),
            ramp.throughput_vs_concurrency(_levels(i), held.max_sustained_concurrency,
                                           held.first_degraded, vendor))


def prefill(i: ChartInputs) -> Drawing:
    """TTFT against prompt length, with the fit."""
    pre = (i.summary.sections.prefill if i.summary is not None else None) or Prefill()
    points = list(i.digest.prefill_points)
    if pre.lengths_from == "counted_prompt_tokens":  # the fit's lengths are ours
        points = [(c, t) for c, (_, t) in zip(i.digest.prefill_counted, points, strict=True)
                  if math.isfinite(c)]
    if not points:
        points = [(p.prompt_tokens, p.ttft_s) for p in pre.points
                  if p.prompt_tokens and p.ttft_s]
    return (captions.PREFILL_CAPTION,
            figures.prefill_fit(points, pre.overhead_s, pre.tokens_per_s, pre.r2))


def streams(i: ChartInputs) -> Drawing | None:
    """The top level's streams, one row each (None: the run kept no records)."""
    if not i.digest.raster:
        return None
    top = max(i.digest.raster)
    rows = [raster.Stream(t0, times, outcome, top)
            for t0, times, outcome in i.digest.raster_streams(top)]
    return captions.raster_caption(len(rows), top), raster.stream_raster(rows)


def use_cases(i: ChartInputs) -> Drawing:
    """Each use case's limits against the ramp."""
    return (captions.USE_CASE_CAPTION,
            figures.use_case_fit(_levels(i), i.slo_limits, i.card.tolerances,
                                i.card.reading_speed))


def precision(i: ChartInputs) -> Drawing:
    """Canary match rates per level."""
    section = i.summary.sections.precision if i.summary is not None else None
    return captions.PRECISION_CAPTION, precision_chart(section)


def voice(i: ChartInputs) -> Drawing | None:
    """A voice run's calls: judged TTFA p90 and underruns by concurrent calls."""
    section = i.summary.voice if i.summary is not None else None
    return None if section is None else (VOICE_CAPTION, voice_chart(section))


#: the page's charts, in order: a new chart joins with one line
CHARTS: tuple[Callable[[ChartInputs], Drawing | None], ...] = (
    claims, latency, throughput, prefill, streams, use_cases, precision, voice)


def draw_charts(inputs: ChartInputs) -> tuple[Chart, ...]:
    """Every chart there is data for, in `CHARTS`' order."""
    drawn = [d for d in (chart(inputs) for chart in CHARTS) if d is not None]
    return tuple(Chart(caption, Markup(kit.namespaced(svg, f"fig{n}")))
                 for n, (caption, svg) in enumerate(drawn) if svg)


def _levels(i: ChartInputs) -> tuple[Level, ...]:
    return i.summary.ramp if i.summary is not None else ()
