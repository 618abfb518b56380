"""What the review measured for each question, typed: one frozen dataclass per question
(and one for the rate limits' row), each written to scorecard.json's `measured` by its
`to_json` and read back by its `from_json`. No I/O.

The keys and their order are scorecard.json's contract (schema `evalkit.scorecard/1`):
where a key is written only when the judge had the figure (Q1's percentiles, Q6's
levels), `to_json` leaves it out on None; elsewhere every key is written, null or not.
A new measured figure is one field here, written in `to_json`, and the page's words for
it (`evalkit.render.pagetext`, which dispatches on these types).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from evalkit.analysis.jsonread import Interval, Json, number_entries, read_as
from evalkit.analysis.summary_levels import Pct
from evalkit.analysis.summary_sections import RatePeak, RateWindow, RetryAfter

#: the figures of a distribution scorecard.json shows (its keys are a contract: the
#: summary's mean, min, max and low tail stay out of it)
SHOWN_FIGURES = ("p50", "p90", "p99")


def _present(pairs: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """The pairs whose value is not None, in order: keys written only when measured."""
    return {k: v for k, v in pairs if v is not None}


@dataclass(frozen=True)
class Shown:
    """A measured distribution as the scorecard shows it: p50/p90/p99 where given, n, and
    the 95 % interval of each shown percentile."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    n: int | None = None
    ci: Mapping[str, Interval] = field(default_factory=dict)

    @classmethod
    def of(cls, p: Pct) -> Shown:
        """The summary's distribution, cut to what the scorecard shows."""
        return cls(p.p50, p.p90, p.p99, p.n,
                   {k: v for k, v in p.ci.items() if k in SHOWN_FIGURES})

    @classmethod
    def from_json(cls, doc: object) -> Shown:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {**_present((("p50", self.p50), ("p90", self.p90), ("p99", self.p99),
                            ("n", self.n))), "ci": dict(self.ci)}


def _shown(value: Shown | None) -> dict[str, Any] | None:
    return value.to_json() if value is not None else None


@dataclass(frozen=True)
class TtftMeasured:
    """Q1: TTFT (and TTFA, where reasoning came first) at the level judged, in ms, each
    percentile only where it was claimed and measured."""

    concurrency: int | None = None
    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttfa_p50_ms: float | None = None
    ttfa_p90_ms: float | None = None
    #: requests whose first chunk was reasoning (None: the answer came first)
    reasoning_first: int | None = None
    #: a voice claim's check: the realtime calls' level judged, its judged time to first
    #: audio (less the silence window asked of the VAD) where claimed, and the run's turn
    #: detection and silence window (written only for a voice claim)
    voice_calls: int | None = None
    voice_ttfa_judged_p50_ms: float | None = None
    voice_ttfa_judged_p90_ms: float | None = None
    voice_turn_detection: str | None = None
    voice_silence_ms: int | None = None

    @classmethod
    def from_json(cls, doc: object) -> TtftMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return _present(tuple((f, getattr(self, f)) for f in (
            "concurrency", "ttft_p50_ms", "ttft_p90_ms", "ttfa_p50_ms", "ttfa_p90_ms",
            "reasoning_first", *VOICE_TTFA_KEYS)))


#: Q1's voice figures, in the order scorecard.json writes them
VOICE_TTFA_KEYS = ("voice_calls", "voice_ttfa_judged_p50_ms", "voice_ttfa_judged_p90_ms",
                   "voice_turn_detection", "voice_silence_ms")


@dataclass(frozen=True)
class ThroughputMeasured:
    """Q2: the per-stream p50 and the aggregate rate at the level judged."""

    concurrency: int | None = None
    stream_tokens_per_s_p50: float | None = None
    aggregate_tokens_per_s: float | None = None

    @classmethod
    def from_json(cls, doc: object) -> ThroughputMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"concurrency": self.concurrency,
                "stream_tokens_per_s_p50": self.stream_tokens_per_s_p50,
                "aggregate_tokens_per_s": self.aggregate_tokens_per_s}


@dataclass(frozen=True)
class PrefillDecodeMeasured:
    """Q3: the prefill rate (the fit's) and one stream's decode rate alone, with their
    95 % intervals."""

    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s_per_stream_p50: float | None = None
    prefill_tokens_per_s_ci: Interval | None = None
    decode_tokens_per_s_per_stream_p50_ci: Interval | None = None

    @classmethod
    def from_json(cls, doc: object) -> PrefillDecodeMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"prefill_tokens_per_s": self.prefill_tokens_per_s,
                "decode_tokens_per_s_per_stream_p50": self.decode_tokens_per_s_per_stream_p50,
                "prefill_tokens_per_s_ci": _listed(self.prefill_tokens_per_s_ci),
                "decode_tokens_per_s_per_stream_p50_ci":
                    _listed(self.decode_tokens_per_s_per_stream_p50_ci)}


def _listed(ci: Interval | None) -> list[float | None] | None:
    return None if ci is None else list(ci)


@dataclass(frozen=True)
class ConcurrencyMeasured:
    """Q4: what the ramp sustained, what degraded first and where it broke (or tied)."""

    max_sustained_concurrency: int | None = None
    #: the ramp's metric name (itl, ttft, admission, a failure kind, precision, length)
    first_degraded: str | None = None
    breaking_concurrency: int | None = None
    first_tie_concurrency: int | None = None
    #: a voice claim's check: the realtime calls' ramp (most calls sustained, the voice
    #: signal that degraded first and where); written only for a voice claim
    voice_max_sustained_calls: int | None = None
    voice_first_degraded: str | None = None
    voice_breaking_calls: int | None = None

    @classmethod
    def from_json(cls, doc: object) -> ConcurrencyMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"max_sustained_concurrency": self.max_sustained_concurrency,
                "first_degraded": self.first_degraded,
                "breaking_concurrency": self.breaking_concurrency,
                "first_tie_concurrency": self.first_tie_concurrency,
                **_present(tuple((f, getattr(self, f)) for f in VOICE_LIMIT_KEYS))}


#: Q4's voice figures, in the order scorecard.json writes them
VOICE_LIMIT_KEYS = ("voice_max_sustained_calls", "voice_first_degraded",
                    "voice_breaking_calls")


@dataclass(frozen=True)
class ObservabilityMeasured:
    """Q5: the probe's scrape of the vendor's metrics page."""

    url: str | None = None
    engine: str | None = None
    #: the metric families found, by role (the vendor's names)
    families: Mapping[str, str] = field(default_factory=dict)
    per_stream_itl: bool | None = None
    itl_observations: int | None = None
    scrapes_ok: int | None = None

    @classmethod
    def from_json(cls, doc: object) -> ObservabilityMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"url": self.url, "engine": self.engine, "families": dict(self.families),
                "per_stream_itl": self.per_stream_itl,
                "itl_observations": self.itl_observations, "scrapes_ok": self.scrapes_ok}


@dataclass(frozen=True)
class OurPanelMeasured:
    """Our own production panel as Q6 shows it beside the vendor's."""

    window: str | None = None
    samples: int | None = None
    pooled: int | None = None
    invalid: int | None = None
    gaps: int | None = None
    concurrency: tuple[int, ...] = ()
    stream_tokens_per_s: Shown | None = None
    ttft_s: Shown | None = None

    @classmethod
    def from_json(cls, doc: object) -> OurPanelMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"window": self.window, "samples": self.samples, "pooled": self.pooled,
                "invalid": self.invalid, "gaps": self.gaps,
                "concurrency": list(self.concurrency),
                "stream_tokens_per_s": _shown(self.stream_tokens_per_s),
                "ttft_s": _shown(self.ttft_s)}


@dataclass(frozen=True)
class AtLevel:
    """A distribution measured at one concurrency."""

    concurrency: int
    shown: Shown


_STREAM_AT = re.compile(r"^stream_tokens_per_s_at_(\d+)$")
_TTFT_AT = re.compile(r"^ttft_s_at_(\d+)$")


@dataclass(frozen=True)
class PanelMeasured:
    """Q6: our own distributions beside the vendor's panel: one stream alone, at max
    sustained load, at the concurrency sold (rate and TTFT), and our own panel."""

    #: one stream alone (None: no baseline, or a client-bound one)
    baseline: Shown | None = None
    #: the per-stream rate at the max sustained level, when that is not the level sold
    sustained: AtLevel | None = None
    #: the per-stream rate and TTFT at the concurrency sold
    sold: AtLevel | None = None
    sold_ttft: Shown | None = None
    our_panel: OurPanelMeasured | None = None

    @property
    def empty(self) -> bool:
        """Nothing to show (the scorecard writes null)."""
        return self == PanelMeasured()

    @classmethod
    def from_json(cls, doc: object) -> PanelMeasured:
        """Read back by its keys' names; a level key of the form `..._at_N` names its level."""
        if not isinstance(doc, Mapping):
            return cls()
        rates = {int(m[1]): Shown.from_json(v) for k, v in doc.items()
                 if (m := _STREAM_AT.match(str(k))) and isinstance(v, Mapping)}
        ttft = {int(m[1]): Shown.from_json(v) for k, v in doc.items()
                if (m := _TTFT_AT.match(str(k))) and isinstance(v, Mapping)}
        sold = next(iter(ttft), None)
        top = next((c for c in rates if c != sold), None)
        base, ours = doc.get("baseline_stream_tokens_per_s"), doc.get("our_panel")
        return cls(Shown.from_json(base) if isinstance(base, Mapping) else None,
                   AtLevel(top, rates[top]) if top is not None else None,
                   AtLevel(sold, rates.get(sold) or Shown()) if sold is not None else None,
                   ttft[sold] if sold is not None else None,
                   OurPanelMeasured.from_json(ours) if isinstance(ours, Mapping) else None)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Any] = {}
        if self.baseline is not None:
            out["baseline_stream_tokens_per_s"] = self.baseline.to_json()
        for at in (self.sustained, self.sold):
            if at is not None:
                out[f"stream_tokens_per_s_at_{at.concurrency}"] = at.shown.to_json()
        if self.sold is not None:
            out[f"ttft_s_at_{self.sold.concurrency}"] = _shown(self.sold_ttft)
        if self.our_panel is not None:
            out["our_panel"] = self.our_panel.to_json()
        return out


@dataclass(frozen=True)
class AtRejection:
    """The sliding window before the first 429, as the rate limits' row shows it."""

    at_s: float | None = None
    window_s: float | None = None
    full_window: bool = False
    requests: int | None = None
    requests_per_minute: float | None = None
    input_tokens_per_minute: float | None = None
    output_tokens_per_minute: float | None = None
    tokens_per_minute: float | None = None
    offered_requests_per_minute: float | None = None
    offered_tokens_per_minute: float | None = None
    in_flight: int | None = None

    @classmethod
    def of(cls, w: RateWindow) -> AtRejection:
        return cls(w.at_s, w.window_s, w.full_window, w.requests, w.requests_per_minute,
                   w.input_tokens_per_minute, w.output_tokens_per_minute,
                   w.tokens_per_minute, w.offered_requests_per_minute,
                   w.offered_tokens_per_minute, w.in_flight)

    def to_json(self) -> dict[str, Json]:
        return asdict(self)


@dataclass(frozen=True)
class RateLimitsMeasured:
    """The rate limits' row: the first 429, the window before it, Retry-After and the
    endpoint's own x-ratelimit-limit-* headers."""

    rejected_429: int | None = None
    first_rejection_s: float | None = None
    sliding_window_s: float | None = None
    at_rejection: AtRejection | None = None
    peak: RatePeak | None = None
    retry_after_s: RetryAfter | None = None
    #: the x-ratelimit-limit-* values seen, by limit (free-form: the vendor's, as written)
    header_limits: Json | None = None

    @property
    def stated_limits(self) -> dict[str, float]:
        """The headers' limits that are numbers, by limit (requests, tokens, ...)."""
        return number_entries(self.header_limits)

    @classmethod
    def from_json(cls, doc: object) -> RateLimitsMeasured:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"rejected_429": self.rejected_429,
                "first_rejection_s": self.first_rejection_s,
                "sliding_window_s": self.sliding_window_s,
                "at_rejection": self.at_rejection.to_json() if self.at_rejection else None,
                "peak": asdict(self.peak) if self.peak is not None else None,
                "retry_after_s": asdict(self.retry_after_s)
                if self.retry_after_s is not None else None,
                "header_limits": self.header_limits}


#: what any question (or the rate limits' row) measured
Measured = (TtftMeasured | ThroughputMeasured | PrefillDecodeMeasured | ConcurrencyMeasured
            | ObservabilityMeasured | PanelMeasured | RateLimitsMeasured)

#: each row's measured type, by question id (and "rate_limits"): how a scorecard.json's
#: `measured` is read back
MEASURED_TYPES: dict[str, type[Measured]] = {
    "Q1": TtftMeasured, "Q2": ThroughputMeasured, "Q3": PrefillDecodeMeasured,
    "Q4": ConcurrencyMeasured, "Q5": ObservabilityMeasured, "Q6": PanelMeasured,
    "rate_limits": RateLimitsMeasured}


def measured_from_json(row: str, doc: object) -> Measured | None:
    """A row's `measured` read back (None: null, or not a JSON object)."""
    kind = MEASURED_TYPES.get(row)
    return kind.from_json(doc) if kind is not None and isinstance(doc, Mapping) else None
