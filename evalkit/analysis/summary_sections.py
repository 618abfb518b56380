"""summary.json's sections read as typed data: connect, prefill, the ramp, the canaries,
configuration findings, the prompts' text and the rate limits (the phases' statistics
are `evalkit.analysis.summary_levels`, the checks `summary_checks`, the buyer's workload
`summary_workload`).

Each is a frozen dataclass whose fields are summary.json's keys (docs/methodology.md says
what each means), read by `evalkit.analysis.jsonread.read_as` unless it needs more: a new
figure is one field here, read wherever the section is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from evalkit.analysis.jsonread import Interval, Json, as_count, as_mapping, read_as
from evalkit.analysis.ramp import DEGRADATION_METRICS
from evalkit.analysis.summary_levels import (
    Canaries,
    Connections,
    GroupValidity,
    Level,
    Pct,
    read_level,
)


@dataclass(frozen=True)
class Connect:
    """The connect gate's one stream: format, usage, tokens per chunk, round trip."""

    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    ttft_s: float | None = None
    usage_reported: bool | None = None
    tokens_per_chunk: Pct = field(default_factory=Pct)
    rtt_s: float | None = None
    output_tokens_estimated: bool = False
    validity: GroupValidity | None = None
    #: the connection the stream opened in its send (None: none)
    connections: Connections | None = None


@dataclass(frozen=True)
class PrefillPoint:
    """One prompt length of the prefill fit: its TTFT (median) over n requests."""

    prompt_tokens: float | None = None
    ttft_s: float | None = None
    n: int | None = None


@dataclass(frozen=True)
class Prefill:
    """The prefill fit: TTFT = overhead + prompt tokens ÷ rate, at concurrency 1."""

    tokens_per_s: float | None = None
    #: the rate's 95 % interval (from the fit's slope); None where the summary gives none
    tokens_per_s_ci: Interval | None = None
    #: when the slope is indistinguishable from zero: only "faster than this"
    tokens_per_s_at_least: float | None = None
    overhead_s: float | None = None
    overhead_s_ci: Interval | None = None
    slope_s_per_token: float | None = None
    slope_ci: Interval | None = None
    r2: float | None = None
    #: prompt lengths the fit rests on, and whose count they are (ours or the vendor's)
    lengths: int | None = None
    lengths_from: str | None = None
    points: tuple[PrefillPoint, ...] = ()
    requests: int | None = None
    low_confidence: bool | None = None
    prompt_tokens_estimated: bool | None = None
    #: why no rate was fitted
    reason: str | None = None
    validity: GroupValidity | None = None
    #: a current summary whose fit gave no interval (fewer than 3 prompt lengths): then
    #: the rate decides nothing (a summary from before intervals has no key at all)
    ci_missing: bool = False

    @classmethod
    def from_json(cls, value: object) -> Prefill:
        """The section; `ci_missing` when it names an interval of null."""
        base = read_as(cls, value)
        doc = as_mapping(value)
        missing = "tokens_per_s_ci" in doc and doc.get("tokens_per_s_ci") is None
        return base if not missing else replace(base, ci_missing=True)


@dataclass(frozen=True)
class RampThresholds:
    """The limits the ramp judged its levels by (`Thresholds`' ramp part)."""

    ttft_p90_ratio: float | None = None
    tpot_p90_ratio: float | None = None
    admission_failure_rate: float | None = None
    length_tolerance: float | None = None
    precision_match_tolerance: float | None = None


@dataclass(frozen=True)
class GoodputLimits:
    """One use case's SLO as the ramp's goodput applied it (None: no such limit)."""

    first_answer_s: float | None = None
    tpot_s: float | None = None
    max_gap_s: float | None = None
    min_stream_tokens_per_s: float | None = None

    @property
    def any(self) -> bool:
        """The profile limits latency at all (batch does not: its goodput is the ok share)."""
        return any(v is not None for v in (self.first_answer_s, self.tpot_s, self.max_gap_s,
                                           self.min_stream_tokens_per_s))


@dataclass(frozen=True)
class Ramp:
    """The concurrency ramp: its levels, and its verdict (`evalkit.analysis.ramp`)."""

    #: the levels with a concurrency of at least 1, lowest first (one per concurrency)
    levels: tuple[Level, ...] = ()
    max_sustained_concurrency: int | None = None
    max_sustained_is_lower_bound: bool = False
    max_sustained_bounded_by_tie: bool | None = None
    first_breach_concurrency: int | None = None
    #: ttft, itl, admission, a failure kind, precision or length (None: none, or unknown)
    first_degraded: str | None = None
    first_degraded_metric: str | None = None
    first_degraded_tied: tuple[str, ...] = ()
    first_tie_concurrency: int | None = None
    tie_levels: tuple[int, ...] = ()
    thresholds: RampThresholds = field(default_factory=RampThresholds)
    #: the rule the levels were judged by (None: an older ramp compared point estimates)
    breach_rule: str | None = None
    goodput_target: float | None = None
    goodput_limits: Mapping[str, GoodputLimits] = field(default_factory=dict)
    goodput_rule: str | None = None
    #: the highest level within each use case's SLO, from the lowest level up (None:
    #: not even the first), and whether it is only a lower bound
    max_goodput_concurrency: Mapping[str, int | None] = field(default_factory=dict)
    max_goodput_is_lower_bound: Mapping[str, bool] = field(default_factory=dict)
    baseline_source: str | None = None
    baseline_client_bound: bool | None = None
    client_bound_levels: tuple[int, ...] = ()
    underloaded_levels: tuple[int, ...] = ()
    unlevelled_requests: int | None = None
    note: str | None = None

    @classmethod
    def from_json(cls, value: object) -> Ramp:
        """The section; its levels read by `read_level` (without a concurrency of at least
        1, left out; two of one concurrency, the later kept), first_degraded only when it
        names a metric the ramp knows, goodput's levels only when at least 1."""
        doc = as_mapping(value)
        base = read_as(cls, {k: v for k, v in doc.items() if k != "levels"})
        levels: dict[int, Level] = {}
        raw = doc.get("levels")
        for entry in raw if isinstance(raw, list) else []:
            c = as_count(as_mapping(entry).get("concurrency"))
            if c is not None and c >= 1:
                levels[c] = read_level(entry, c)
        degraded = doc.get("first_degraded")
        return replace(
            base, levels=tuple(levels[c] for c in sorted(levels)),
            first_degraded=degraded if degraded in DEGRADATION_METRICS else None,
            max_goodput_concurrency={
                str(k): as_count(v, least=1)
                for k, v in as_mapping(doc.get("max_goodput_concurrency")).items()})

    def level(self, concurrency: int | None) -> Level | None:
        """The level at `concurrency`, None when the ramp did not measure it."""
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)


@dataclass(frozen=True)
class PrecisionAlone:
    """The canaries' answers alone, in the baseline: what every level is compared with."""

    answers: int | None = None
    canaries_answered: int | None = None
    distinct: int | None = None
    match_rate: float | None = None
    models_seen: tuple[str, ...] = ()
    fingerprints_seen: tuple[str, ...] = ()


@dataclass(frozen=True)
class Precision:
    """Precision under load (`evalkit.analysis.precision`): canaries alone and at each
    level."""

    canaries: int | None = None
    alone: PrecisionAlone = field(default_factory=PrecisionAlone)
    levels: tuple[Canaries, ...] = ()
    soak: Canaries | None = None
    rate: Canaries | None = None
    degraded_at: int | None = None
    divergence_unit: str | None = None
    logprobs: bool | None = None
    #: what each kind of breach means, in words
    kinds: Mapping[str, str] = field(default_factory=dict)
    budget: int | None = None
    rule: str | None = None

    def level(self, concurrency: int | None) -> Canaries | None:
        """The canaries at a ramp level (None: none were sent there)."""
        return next((c for c in self.levels if c.concurrency == concurrency), None)


@dataclass(frozen=True)
class ConfigurationFinding:
    """A shape the endpoint refused alone as under load (`evalkit.analysis.configuration`)."""

    status: int | None = None
    message: str | None = None
    requests: int | None = None
    alone: int | None = None
    under_load: int | None = None
    phases: Mapping[str, int] = field(default_factory=dict)
    ramp_levels: Json | None = None
    smallest_refused_tokens: int | None = None
    largest_served_alone_tokens: int | None = None
    #: what to change, in words
    change: str | None = None


@dataclass(frozen=True)
class Configuration:
    """The run's configuration findings, and the rule that calls one."""

    findings: tuple[ConfigurationFinding, ...] = ()
    rule: str | None = None


@dataclass(frozen=True)
class CorpusFacts:
    """The corpus the run's prompts were cut from: its digest and size."""

    sha256: str | None = None
    origin: str | None = None
    files: int | None = None
    tokens: int | None = None
    drawn_tokens: int | None = None
    task_templates: int | None = None


@dataclass(frozen=True)
class PromptText:
    """Where the run's prompt text came from, and whether a vendor could recognise it
    (`evalkit.analysis.prompttext`)."""

    recognisable: bool | None = None
    recognisable_phases: tuple[str, ...] = ()
    note: str | None = None
    #: requests by the text they carried (corpus, public, prompts, conversations, ...)
    requests: Mapping[str, int] = field(default_factory=dict)
    corpus: CorpusFacts | None = None


@dataclass(frozen=True)
class RateFigures:
    """Requests and tokens per minute over a window."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    input_tokens_per_minute: float | None = None
    output_tokens_per_minute: float | None = None

    def per_minute(self, name: str) -> float | None:
        """A figure by its summary.json name (requests_per_minute, tokens_per_minute,
        input_tokens_per_minute, output_tokens_per_minute); None for any other name."""
        return {"requests_per_minute": self.requests_per_minute,
                "tokens_per_minute": self.tokens_per_minute,
                "input_tokens_per_minute": self.input_tokens_per_minute,
                "output_tokens_per_minute": self.output_tokens_per_minute}.get(name)


@dataclass(frozen=True)
class RateEdge:
    """The window's edge: how far one request's arrival moves the figures either way."""

    s: float | None = None
    low: RateFigures | None = None
    high: RateFigures | None = None


@dataclass(frozen=True)
class RateWindow(RateFigures):
    """The sliding window before the first 429 (`evalkit.analysis.ratelimits`)."""

    at_s: float | None = None
    window_s: float | None = None
    full_window: bool = False
    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    offered_requests_per_minute: float | None = None
    offered_tokens_per_minute: float | None = None
    in_flight: int | None = None
    edge: RateEdge | None = None


@dataclass(frozen=True)
class RatePeak:
    """The busiest window of admitted requests the run reached."""

    requests_per_minute: float | None = None
    full_window: bool = False
    window_s: float | None = None


@dataclass(frozen=True)
class RetryAfter:
    """The Retry-After values the 429s carried, in seconds."""

    n: int | None = None
    min: float | None = None
    median: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class RateLimits:
    """When the run's 429s began, and what the endpoint's headers said."""

    window_s: float | None = None
    requests: int | None = None
    rejected_429: int | None = None
    first_rejection_s: float | None = None
    onset: RateWindow | None = None
    onset_full_window: RateWindow | None = None
    peak: RatePeak | None = None
    retry_after_s: RetryAfter | None = None
    #: the rate-limit headers seen, by name (free-form: the vendor's)
    headers: Json | None = None
    #: the x-ratelimit-limit-* values seen, by limit (free-form: the vendor's)
    header_limits: Json | None = None

    @property
    def window(self) -> RateWindow | None:
        """The window a claim is judged on: the full one when the run saw one."""
        return self.onset_full_window or self.onset

