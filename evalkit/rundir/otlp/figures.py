"""A run's metrics for OTLP: the GenAI client histograms, made from the records, and the
summary's figures as gauges. Pure: records and the typed `Summary` in, `RunMetrics` out.

The histograms are the conventions' (semantic-conventions v1.41, gen-ai-metrics.md) with
their bucket boundaries: `gen_ai.client.operation.duration`, `gen_ai.client.token.usage`
(the vendor's reported counts only), `gen_ai.client.operation.time_to_first_chunk`
(evalkit's TTFT: the first chunk with text) and `gen_ai.client.operation.time_per_output_chunk`
(evalkit's ITL: one sample per gap between content chunks). They are counted here, bucket by
bucket, rather than recorded one value at a time into an SDK meter: a soak's millions of
chunk gaps are a second of arithmetic, and each point is stamped with the run's own window,
not the moment it was sent.

The gauges are summary.json's figures under `evalkit.*` names, one point per phase, level
and percentile (`evalkit.stat`): what a dashboard sets beside its own latency panels.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from evalkit.analysis.summary import Level, Pct, Summary
from evalkit.records import RequestRecord
from evalkit.rundir.otlp.trace import (
    Attributes,
    AttrValue,
    RunFacts,
    error_type,
    phase_name,
)

#: the conventions' boundaries for durations (s) and token counts
SECONDS_BOUNDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                  40.96, 81.92)
TOKEN_BOUNDS = (1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0,
                1048576.0, 4194304.0, 16777216.0, 67108864.0)


@dataclass(frozen=True)
class HistogramPoint:
    """One series of a histogram: its values counted into the family's buckets."""

    attributes: Attributes
    count: int
    total: float
    least: float
    most: float
    #: one count per bucket: len(bounds) + 1 (the last is above the last bound)
    bucket_counts: tuple[int, ...]


@dataclass(frozen=True)
class GaugePoint:
    """One series of a gauge: a figure of the summary."""

    attributes: Attributes
    value: float


@dataclass(frozen=True)
class MetricFamily:
    """One metric (name, unit, description) and its points."""

    name: str
    unit: str
    description: str
    kind: Literal["histogram", "gauge"]
    points: tuple[HistogramPoint, ...] | tuple[GaugePoint, ...]
    bounds: tuple[float, ...] = ()


@dataclass(frozen=True)
class RunMetrics:
    """The run's metrics, all stamped with the run's window (Unix ns)."""

    start_ns: int
    end_ns: int
    families: tuple[MetricFamily, ...] = field(default_factory=tuple)

    @property
    def points(self) -> int:
        """How many series (points) in all."""
        return sum(len(f.points) for f in self.families)


class Counted:
    """Values counted into buckets, per series."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.series: dict[tuple[tuple[str, AttrValue], ...], list[float]] = defaultdict(
            lambda: [0, 0.0, float("inf"), float("-inf"), *([0] * (len(bounds) + 1))])

    def add(self, attrs: dict[str, AttrValue], value: float) -> None:
        s = self.series[tuple(sorted(attrs.items()))]
        s[0] += 1
        s[1] += value
        s[2] = min(s[2], value)
        s[3] = max(s[3], value)
        s[4 + bisect.bisect_left(self.bounds, value)] += 1  # bucket i: (b[i-1], b[i]]

    def points(self) -> tuple[HistogramPoint, ...]:
        return tuple(HistogramPoint(dict(key), int(s[0]), s[1], s[2], s[3],
                                    tuple(int(c) for c in s[4:]))
                     for key, s in self.series.items())


def build_metrics(facts: RunFacts, records: Iterable[RequestRecord], summary: Summary | None,
                  start_ns: int, end_ns: int) -> RunMetrics:
    """The run's histograms (from its records) and gauges (from its summary)."""
    op, provider = facts.operation
    base: dict[str, AttrValue] = {"gen_ai.operation.name": op, "gen_ai.provider.name": provider,
                                  **facts.server()}
    if facts.model:
        base["gen_ai.request.model"] = facts.model
    duration, tokens = Counted(SECONDS_BOUNDS), Counted(TOKEN_BOUNDS)
    first, per_chunk = Counted(SECONDS_BOUNDS), Counted(SECONDS_BOUNDS)
    for rec in records:
        attrs = {**base, "evalkit.phase": phase_name(rec),
                 **({"evalkit.level": rec.level} if rec.level is not None else {})}
        took = next((t for t in (rec.end_s, rec.e2e_s) if t is not None), None)
        if took is not None:
            failed = {"error.type": error_type(rec) or rec.outcome} if rec.outcome != "ok" \
                else {}
            duration.add({**attrs, **failed}, took)
        if rec.prompt_tokens is not None and not rec.prompt_tokens_estimated:
            tokens.add({**attrs, "gen_ai.token.type": "input"}, rec.prompt_tokens)
        if rec.usage_completion_tokens is not None:
            tokens.add({**attrs, "gen_ai.token.type": "output"}, rec.usage_completion_tokens)
        if rec.outcome != "ok":
            continue
        if rec.ttft_s is not None:
            first.add(attrs, rec.ttft_s)
        for a, b in zip(rec.chunks, rec.chunks[1:], strict=False):
            per_chunk.add(attrs, b[0] - a[0])
    families = [
        MetricFamily("gen_ai.client.operation.duration", "s",
                     "GenAI operation duration: each request until it ended, whatever its "
                     "outcome", "histogram", duration.points(), SECONDS_BOUNDS),
        MetricFamily("gen_ai.client.token.usage", "{token}",
                     "Tokens the vendor reported using (usage), input and output",
                     "histogram", tokens.points(), TOKEN_BOUNDS),
        MetricFamily("gen_ai.client.operation.time_to_first_chunk", "s",
                     "Time to the first chunk that carried generated text (evalkit's TTFT)",
                     "histogram", first.points(), SECONDS_BOUNDS),
        MetricFamily("gen_ai.client.operation.time_per_output_chunk", "s",
                     "Gaps between consecutive content chunks (evalkit's ITL)",
                     "histogram", per_chunk.points(), SECONDS_BOUNDS),
    ]
    families += _gauges(facts, summary, base)
    return RunMetrics(start_ns, end_ns, tuple(f for f in families if f.points))


#: (metric name, unit, description, the Level's distribution)
_DISTRIBUTIONS = (
    ("evalkit.ttft", "s", "TTFT percentiles of the phase or level (summary.json)", "ttft_s"),
    ("evalkit.ttfa", "s", "Time to the first answer token (summary.json)", "ttfa_s"),
    ("evalkit.tpot", "s", "Time per output token after the first (summary.json)", "tpot_s"),
    ("evalkit.itl", "s", "Gaps between content chunks (summary.json)", "itl_s"),
    ("evalkit.stream_rate", "{token}/s", "Per-stream output rate, 1/TPOT (summary.json)",
     "stream_tokens_per_s"),
)


def _gauges(facts: RunFacts, summary: Summary | None,
            base: dict[str, AttrValue]) -> list[MetricFamily]:
    """summary.json's figures as gauges; nothing for a figure the summary does not have."""
    if summary is None:
        return []
    run: dict[str, AttrValue] = {**base}
    for key, value in (("evalkit.run.id", facts.run_id), ("evalkit.vendor", facts.vendor)):
        if value is not None:
            run[key] = value
    groups: list[tuple[dict[str, AttrValue], Level]] = []
    if summary.baseline is not None:
        groups.append(({**run, "evalkit.phase": "baseline", "evalkit.level": 1},
                       summary.baseline))
    groups += [({**run, "evalkit.phase": "ramp", "evalkit.level": lv.concurrency}, lv)
               for lv in summary.ramp]
    out: list[MetricFamily] = []
    for name, unit, what, attr in _DISTRIBUTIONS:
        points = [GaugePoint({**g, "evalkit.stat": stat}, value)
                  for g, lv in groups for stat, value in pct_stats(getattr(lv, attr))]
        out.append(MetricFamily(name, unit, what, "gauge", tuple(points)))
    scalars: tuple[tuple[str, str, str, list[GaugePoint]], ...] = (
        ("evalkit.aggregate_throughput", "{token}/s",
         "Output tokens per second over the level's steady window (summary.json)",
         [GaugePoint(g, lv.aggregate_tokens_per_s) for g, lv in groups
          if lv.aggregate_tokens_per_s is not None]),
        ("evalkit.requests", "{request}", "Requests of the phase or level",
         [GaugePoint(g, float(lv.requests)) for g, lv in groups if lv.requests is not None]),
        ("evalkit.failed_requests", "{request}",
         "Requests that did not end ok (a configuration finding left out)",
         [GaugePoint(g, float(lv.failed)) for g, lv in groups if lv.failed is not None]),
        ("evalkit.stalls", "{stall}", "In-stream gaps above the stall threshold",
         [GaugePoint(g, float(lv.stalls)) for g, lv in groups if lv.stalls is not None]),
        ("evalkit.max_sustained_concurrency", "{stream}",
         "The ramp's highest level held within its limits (summary.json)",
         [GaugePoint(run, float(summary.max_sustained))]
         if summary.max_sustained is not None else []),
        ("evalkit.prefill_rate", "{token}/s", "Prompt tokens per second, from the prefill fit",
         [GaugePoint(run, summary.prefill_tokens_per_s)]
         if summary.prefill_tokens_per_s is not None else []),
        ("evalkit.max_goodput_concurrency", "{stream}",
         "The highest ramp level within each use case's SLO",
         [GaugePoint({**run, "evalkit.use_case": name}, float(level))
          for name, level in summary.max_goodput.items() if level is not None]),
        ("evalkit.validity", "1", "The run's validity (the point's evalkit.validity names it)",
         [GaugePoint({**run, "evalkit.validity": summary.validity}, 1.0)]),
    )
    out += [MetricFamily(name, unit, what, "gauge", tuple(points))
            for name, unit, what, points in scalars]
    return out


def pct_stats(pct: Pct) -> list[tuple[str, float]]:
    return [(stat, v) for stat in ("p50", "p90", "p99") if (v := pct.get(stat)) is not None]
