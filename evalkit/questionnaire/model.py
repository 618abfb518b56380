"""The questionnaire as typed objects: what a vendor answered, every field possibly empty.

Built from data that already passed the schema (`questionnaire_from_dict`), so nothing
here re-checks types. Whether the numbers agree with each other (a p50 above its p90,
percentiles out of order) is not a file error but a finding about the vendor: `disorders`
lists them, and the reconciler shows them to the reviewer (docs/questionnaire.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, cast


@dataclass(frozen=True)
class Distribution:
    """Percentiles of one quantity over a window, as the vendor reported them."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    window: str | None = None


@dataclass(frozen=True)
class Contact:
    """Who answers for the questionnaire."""

    name: str | None = None
    email: str | None = None
    role: str | None = None


@dataclass(frozen=True)
class Headline:
    """The marketed figure (value, unit) and where it was published."""

    value: float | None = None
    unit: str | None = None
    source: str | None = None
    published: str | None = None
    notes: str | None = None


@dataclass(frozen=True)
class Answer:
    """Fields every answer may carry: provenance and free text."""

    source: str | None = None
    evidence: tuple[str, ...] = ()
    notes: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The fields the vendor filled in (empty ones left out), for scorecard.json."""
        return dict(_prune(asdict(self)))


@dataclass(frozen=True)
class TtftAnswer(Answer):
    """Q1: TTFT p50/p90 under load."""

    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    at_concurrency: int | None = None
    prompt_tokens: int | None = None
    window: str | None = None
    #: a voice product's claim: time to first audio (from the end of the caller's speech,
    #: less the VAD silence window), at concurrent realtime calls, with who ends the
    #: caller's turn and the silence window the VAD waits (`evalkit.review.voiceclaims`)
    voice_ttfa_p50_ms: float | None = None
    voice_ttfa_p90_ms: float | None = None
    voice_at_calls: int | None = None
    voice_turn_detection: str | None = None
    voice_silence_ms: int | None = None

    @property
    def voice(self) -> bool:
        """Any voice claim is made."""
        return any(v is not None for v in (
            self.voice_ttfa_p50_ms, self.voice_ttfa_p90_ms, self.voice_at_calls,
            self.voice_turn_detection, self.voice_silence_ms))


@dataclass(frozen=True)
class ThroughputAnswer(Answer):
    """Q2: sustained output tokens/s per GPU at the concurrency sold."""

    output_tokens_per_s_per_gpu: float | None = None
    at_concurrency: int | None = None
    gpus: int | None = None
    distribution: Distribution | None = None
    window: str | None = None


@dataclass(frozen=True)
class PricingAnswer(Answer):
    """Q3: prefill and decode in pricing and in the capacity model."""

    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    blended_price_per_mtok: float | None = None
    #: a price per GPU-hour of the GPUs behind the endpoint (Q2's `gpus`)
    price_per_gpu_hour: float | None = None
    #: audio (a realtime voice product): per minute of audio sent and received, or per
    #: million audio tokens with the audio tokens a second of audio counts as
    audio_input_price_per_minute: float | None = None
    audio_output_price_per_minute: float | None = None
    audio_input_price_per_mtok: float | None = None
    audio_output_price_per_mtok: float | None = None
    audio_input_tokens_per_s: float | None = None
    audio_output_tokens_per_s: float | None = None
    currency: str | None = None
    capacity_model: str | None = None
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s_per_stream: float | None = None


@dataclass(frozen=True)
class ConcurrencyAnswer(Answer):
    """Q4: maximum concurrent streams per node, and what degrades first."""

    max_concurrent_streams_per_node: int | None = None
    nodes: int | None = None
    first_degrades: str | None = None
    window: str | None = None
    #: a voice product's limit: concurrent realtime calls per node, and what a caller
    #: suffers first near it (ttfa | underruns | admission | failures)
    voice_max_calls_per_node: int | None = None
    voice_first_degrades: str | None = None

    @property
    def voice(self) -> bool:
        """Any voice claim is made."""
        return self.voice_max_calls_per_node is not None or self.voice_first_degrades is not None


@dataclass(frozen=True)
class ObservabilityAnswer(Answer):
    """Q5: per-stream inter-arrival times, or only request-level histograms."""

    observability: str | None = None
    export: str | None = None
    metrics_url: str | None = None


@dataclass(frozen=True)
class PanelAnswer(Answer):
    """Q6: last week's production panel and its written reconciliation with the headline."""

    output_tokens_per_s: Distribution | None = None
    latency_s: Distribution | None = None
    window: str | None = None
    panel_url: str | None = None
    reconciliation: str | None = None


@dataclass(frozen=True)
class RateLimitsAnswer(Answer):
    """The vendor's rate limits (not one of the six questions; optional): what a customer
    may send per minute and hold at once before the endpoint answers 429."""

    requests_per_minute: int | None = None
    #: input and output together, as a single tokens-per-minute limit is usually quoted
    tokens_per_minute: int | None = None
    input_tokens_per_minute: int | None = None
    output_tokens_per_minute: int | None = None
    concurrent_streams_per_key: int | None = None
    #: per_key | per_organisation
    scope: str | None = None


@dataclass(frozen=True)
class Questionnaire:
    """One vendor's validated questionnaire; every field may be empty (`None`)."""

    vendor: str | None = None
    model: str | None = None
    endpoint: str | None = None
    date: str | None = None
    contact: Contact = field(default_factory=Contact)
    headline: Headline = field(default_factory=Headline)
    q1: TtftAnswer = field(default_factory=TtftAnswer)
    q2: ThroughputAnswer = field(default_factory=ThroughputAnswer)
    q3: PricingAnswer = field(default_factory=PricingAnswer)
    q4: ConcurrencyAnswer = field(default_factory=ConcurrencyAnswer)
    q5: ObservabilityAnswer = field(default_factory=ObservabilityAnswer)
    q6: PanelAnswer = field(default_factory=PanelAnswer)
    rate_limits: RateLimitsAnswer = field(default_factory=RateLimitsAnswer)
    #: the workload its claims hold for, as written (plain data; the workload stage reads
    #: and checks it: `evalkit.workload.load.workload_from_document`), None: not named
    workload: dict[str, object] | None = None
    #: where it was read from (the report embeds that file), None when built in memory
    path: str | None = None

    @property
    def questions(self) -> dict[str, Answer]:
        """Q1..Q6 by id, in order."""
        return {"Q1": self.q1, "Q2": self.q2, "Q3": self.q3,
                "Q4": self.q4, "Q5": self.q5, "Q6": self.q6}


def _prune(value: Any) -> Any:
    """Drop empty fields recursively so 'claimed' shows only what the vendor said."""
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, (), [], {})}
    if isinstance(value, list | tuple):
        return [_prune(v) for v in value]
    return value


_ANSWER_TYPES: dict[str, type[Answer]] = {
    "Q1": TtftAnswer, "Q2": ThroughputAnswer, "Q3": PricingAnswer,
    "Q4": ConcurrencyAnswer, "Q5": ObservabilityAnswer, "Q6": PanelAnswer,
}
_DISTRIBUTION_FIELDS = {"distribution", "output_tokens_per_s", "latency_s"}


def _answer(cls: type[Answer], data: dict[str, Any] | None) -> Answer:
    kwargs: dict[str, Any] = {}
    for key, value in (data or {}).items():
        if key in _DISTRIBUTION_FIELDS:
            value = Distribution(**value) if value is not None else None
        elif key == "evidence":
            value = tuple(value or ())
        kwargs[key] = value
    return cls(**kwargs)


def questionnaire_from_dict(data: dict[str, Any], path: str | None = None) -> Questionnaire:
    """Build the object from data that already passed the schema."""
    answers: dict[str, Any] = {qid.lower(): _answer(cls, data.get(qid))
                               for qid, cls in _ANSWER_TYPES.items()}
    return Questionnaire(
        vendor=data.get("vendor"), model=data.get("model"),
        endpoint=data.get("endpoint"), date=data.get("date"),
        contact=Contact(**(data.get("contact") or {})),
        headline=Headline(**(data.get("headline") or {})),
        rate_limits=cast(RateLimitsAnswer, _answer(RateLimitsAnswer, data.get("rate_limits"))),
        workload=data.get("workload"),
        path=path,
        **answers,
    )


def _figure(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 else f"{x:.3g}"


def disorders(answer: Answer) -> list[str]:
    """Where one answer's own percentiles contradict each other (a p50 above its p90, a
    distribution not in increasing order), one sentence each; [] when they agree.

    Not a file error: a well-formed file may say inconsistent things, and that is a
    finding about the vendor, which the reconciler reports whatever else it judges.
    """
    found: list[str] = []
    if isinstance(answer, TtftAnswer):
        p50, p90 = answer.ttft_p50_ms, answer.ttft_p90_ms
        if p50 is not None and p90 is not None and p50 > p90:
            found.append(f"TTFT p50 {_figure(p50)} ms is above p90 {_figure(p90)} ms")
        p50, p90 = answer.voice_ttfa_p50_ms, answer.voice_ttfa_p90_ms
        if p50 is not None and p90 is not None and p50 > p90:
            found.append(f"voice TTFA p50 {_figure(p50)} ms is above p90 {_figure(p90)} ms")
    for name in sorted(_DISTRIBUTION_FIELDS):
        d = getattr(answer, name, None)
        if not isinstance(d, Distribution):
            continue
        values = [v for v in (d.p50, d.p90, d.p99) if v is not None]
        if values != sorted(values):
            said = " / ".join(f"{k} {_figure(v)}" for k in ("p50", "p90", "p99")
                              if (v := getattr(d, k)) is not None)
            found.append(f"{name} {said} is not in increasing order")
    return found
