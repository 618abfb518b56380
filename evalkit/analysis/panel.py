"""Our own production panel: many light samples of one vendor pooled over a window
(`panel.json`). Pure: the samples' figures in, the panel out.

A sample's figures are taken from its records under the probe's own definitions
(`evalkit.analysis.frames`): TTFT and per-stream rate of the ok requests of the level it
held, the failures among every request it sent, the output length achieved against the
length asked for. The panel pools the requests, not the samples' medians, so a p50 is
the p50 of every request in the window and its interval is the distribution-free one of
`evalkit.analysis.stats.percentiles`. Coverage is stated, never smoothed over: every
sample is listed, invalid, missing and edited ones counted, and every gap between
samples longer than 1.5 sampling intervals (at least one sample missed) is named.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from evalkit.analysis.frames import records_frame
from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.jsonread import Json
from evalkit.analysis.stats import percentiles
from evalkit.records import RequestRecord

SCHEMA = "evalkit.panel/1"
#: a gap is a spacing longer than this many sampling intervals: at least one sample missed
GAP_FACTOR = 1.5
#: the phase whose ok requests a sample's figures are drawn from: the level it held
SAMPLE_PHASE = "ramp"


@dataclass(frozen=True)
class SampleFigures:
    """One sample's figures, from its records."""

    ttft_s: tuple[float, ...] = ()
    stream_tokens_per_s: tuple[float, ...] = ()
    #: every request the sample sent (connect and baseline included), and the failed ones
    requests: int = 0
    failed: int = 0
    output_tokens: tuple[float, ...] = ()
    requested_tokens: tuple[float, ...] = ()


@dataclass(frozen=True)
class PanelSample:
    """A sample as the catalog lists it, with its figures when they could be read."""

    id: int
    #: when it started, seconds since the epoch (UTC)
    started_s: float
    #: the catalog's state of its files: present, missing or edited
    state: str
    validity: str | None
    path: str
    figures: SampleFigures | None = None
    #: why its figures are not pooled (None: they are)
    excluded: str | None = None
    concurrency: int | None = None


def sample_figures(records: Iterable[RequestRecord]) -> SampleFigures:
    """A sample's figures from its records (the probe's definitions of TTFT and rate)."""
    req = records_frame(list(records))
    if req.empty:
        return SampleFigures()
    level = req[(req["phase"] == SAMPLE_PHASE) & req["ok"]]

    def finite(col: str) -> tuple[float, ...]:
        a = level[col].to_numpy(dtype=np.float64)
        return tuple(float(x) for x in a[np.isfinite(a)])

    asked = level["requested_output_tokens"].to_numpy(dtype=np.float64)
    got = level["output_tokens"].to_numpy(dtype=np.float64)
    both = np.isfinite(asked) & np.isfinite(got) & (asked > 0)
    return SampleFigures(finite("ttft_s"), finite("stream_tokens_per_s"), len(req),
                         int((~req["ok"]).sum()), tuple(float(x) for x in got[both]),
                         tuple(float(x) for x in asked[both]))


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")


def _brief(values: Sequence[float]) -> dict[str, Any]:
    """p50 and p90 with their intervals and n: a chart's point, not a page's table."""
    p = percentiles(values)
    return {k: p[k] for k in ("n", "p50", "p50_ci", "p90", "p90_ci")}


@dataclass
class _Pool:
    ttft: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    requests: int = 0
    failed: int = 0
    got: list[float] = field(default_factory=list)
    asked: list[float] = field(default_factory=list)
    samples: int = 0

    def add(self, f: SampleFigures) -> None:
        self.ttft.extend(f.ttft_s)
        self.rate.extend(f.stream_tokens_per_s)
        self.requests += f.requests
        self.failed += f.failed
        self.got.extend(f.output_tokens)
        self.asked.extend(f.requested_tokens)
        self.samples += 1

    def failure_rate(self) -> dict[str, Any]:
        return {"value": self.failed / self.requests if self.requests else None,
                "ci": proportion_interval(self.failed, self.requests),
                "failed": self.failed, "requests": self.requests}

    def achieved_length(self) -> dict[str, Any]:
        ratio = [g / a for g, a in zip(self.got, self.asked, strict=True)]
        return {"output_tokens": percentiles(self.got),
                "requested_tokens_p50": float(np.median(self.asked)) if self.asked else None,
                "ratio": percentiles(ratio),
                "short_share": (sum(r < 0.95 for r in ratio) / len(ratio)) if ratio else None}

    def brief(self) -> dict[str, Any]:
        return {"samples": self.samples, "ttft_s": _brief(self.ttft),
                "stream_tokens_per_s": _brief(self.rate), "failure_rate": self.failure_rate()}


def sampling_interval(starts: Sequence[float]) -> float | None:
    """The sampling interval the samples show: the median spacing (None: fewer than 2)."""
    s = sorted(starts)
    spacing = [b - a for a, b in itertools.pairwise(s) if b > a]
    return float(np.median(spacing)) if spacing else None


def gaps(starts: Sequence[float], start_s: float, end_s: float,
         interval_s: float | None) -> list[dict[str, Any]]:
    """Every stretch of the window longer than GAP_FACTOR intervals without a sample
    (from the window's start to the first, between two, from the last to its end)."""
    if interval_s is None or interval_s <= 0:
        return []
    points = [start_s, *sorted(s for s in starts if start_s <= s <= end_s), end_s]
    out = []
    for a, b in itertools.pairwise(points):
        if b - a > GAP_FACTOR * interval_s:
            out.append({"from": _iso(a), "to": _iso(b), "seconds": round(b - a, 1),
                        "missed": max(1, math.floor((b - a) / interval_s) - 1)})
    return out


def _grouped(samples: Sequence[PanelSample], key: Callable[[PanelSample], Any]
             ) -> dict[Any, _Pool]:
    out: dict[Any, _Pool] = {}
    for s in samples:
        if s.figures is not None:
            out.setdefault(key(s), _Pool()).add(s.figures)
    return dict(sorted(out.items()))


def pool_panel(samples: Sequence[PanelSample], *, vendor: str, model: str | None,
               start_s: float, end_s: float, interval_s: float | None = None
               ) -> dict[str, Json]:
    """panel.json's dict: the pooled figures over [start_s, end_s), by hour of day and by
    day, and the coverage (every sample listed; none dropped)."""
    inside = sorted((s for s in samples if start_s <= s.started_s < end_s),
                    key=lambda s: (s.started_s, s.id))
    pooled = [s for s in inside if s.figures is not None and s.excluded is None]
    pooled_ids = {s.id for s in pooled}
    total = _Pool()
    for s in pooled:
        assert s.figures is not None
        total.add(s.figures)
    basis = "given" if interval_s is not None else "median spacing of the samples"
    interval = interval_s if interval_s is not None else sampling_interval(
        [s.started_s for s in inside])
    holes = gaps([s.started_s for s in inside], start_s, end_s, interval)

    def hour(s: PanelSample) -> int:
        return datetime.fromtimestamp(s.started_s, UTC).hour

    def day(s: PanelSample) -> str:
        return datetime.fromtimestamp(s.started_s, UTC).date().isoformat()

    return {
        "schema": SCHEMA, "vendor": vendor, "model": model,
        "window": {"start": _iso(start_s), "end": _iso(end_s),
                   "days": round((end_s - start_s) / 86400, 3)},
        "samples": len(inside),
        "pooled_samples": len(pooled),
        "ttft_s": percentiles(total.ttft),
        "stream_tokens_per_s": percentiles(total.rate),
        "failure_rate": total.failure_rate(),
        "achieved_length": total.achieved_length(),
        "concurrency": sorted({s.concurrency for s in pooled if s.concurrency is not None}),
        "by_hour": [{"hour": h, **p.brief()} for h, p in _grouped(pooled, hour).items()],
        "by_day": [{"day": d, **p.brief()} for d, p in _grouped(pooled, day).items()],
        "coverage": {
            "samples": len(inside), "pooled": len(pooled),
            "valid": sum(s.validity == "valid" for s in inside),
            "degraded": sum(s.validity == "degraded" for s in inside),
            "invalid": sum(s.validity not in ("valid", "degraded") for s in inside),
            "missing": sum(s.state == "missing" for s in inside),
            "edited": sum(s.state == "edited" for s in inside),
            "interval_s": interval, "interval_basis": basis if interval is not None else None,
            "gap_factor": GAP_FACTOR, "gap_count": len(holes), "gaps": holes,
            "list": [{"id": s.id, "started": _iso(s.started_s), "validity": s.validity,
                      "state": s.state, "pooled": s.id in pooled_ids, "excluded": s.excluded,
                      "requests": s.figures.requests if s.figures else None,
                      "path": s.path} for s in inside],
        },
    }
