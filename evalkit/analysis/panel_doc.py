"""panel.json read as typed data: our own production panel as `evalkit.analysis.panel`
writes it, for its readers (the panel page, Q6's other witness). Anything missing or
malformed reads as not stated (`read_as`): a panel.json may be old or edited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalkit.analysis.jsonread import Interval, Json
from evalkit.analysis.summary_levels import Pct


@dataclass(frozen=True)
class PanelGroup:
    """An hour's or a day's pooled figures (panel.json's `by_hour`, `by_day`)."""

    hour: int | None = None
    day: str | None = None
    ttft_s: Pct = field(default_factory=Pct)
    stream_tokens_per_s: Pct = field(default_factory=Pct)


@dataclass(frozen=True)
class PanelFailures:
    """The failed share of every request the panel's samples sent, with its interval."""

    value: float | None = None
    requests: int | None = None
    ci: Interval | None = None


@dataclass(frozen=True)
class PanelLength:
    """The output length achieved against the length asked for."""

    output_tokens: Pct = field(default_factory=Pct)
    requested_tokens_p50: float | None = None
    short_share: float | None = None


@dataclass(frozen=True)
class PanelCoverage:
    """Which samples the window holds and which were pooled, and the gaps between them."""

    samples: int | None = None
    pooled: int | None = None
    valid: int | None = None
    degraded: int | None = None
    invalid: int | None = None
    missing: int | None = None
    edited: int | None = None
    interval_s: float | None = None
    interval_basis: str | None = None
    gap_count: int | None = None
    #: free-form rows the page lists as they are (the template reads their keys)
    gaps: tuple[Mapping[str, Json | None], ...] = ()
    list: tuple[Mapping[str, Json | None], ...] = ()


@dataclass(frozen=True)
class PanelWindow:
    """The panel's window, ISO 8601 UTC."""

    start: str | None = None
    end: str | None = None


@dataclass(frozen=True)
class PanelDoc:
    """panel.json (`evalkit.analysis.panel.pool_panel`), field by field (`read_as`)."""

    vendor: str | None = None
    model: str | None = None
    window: PanelWindow = field(default_factory=PanelWindow)
    samples: int | None = None
    ttft_s: Pct = field(default_factory=Pct)
    stream_tokens_per_s: Pct = field(default_factory=Pct)
    failure_rate: PanelFailures = field(default_factory=PanelFailures)
    achieved_length: PanelLength = field(default_factory=PanelLength)
    by_hour: tuple[PanelGroup, ...] = ()
    by_day: tuple[PanelGroup, ...] = ()
    coverage: PanelCoverage = field(default_factory=PanelCoverage)
    #: the concurrency levels the pooled samples held
    concurrency: tuple[int, ...] = ()
