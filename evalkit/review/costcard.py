"""What a session costs, as the scorecard states it: scorecard.json's `cost`, typed
(`evalkit.review.cost` computes it). No I/O.

Each type's `to_json` writes its part key for key and in the contract's order;
`from_json` reads it back. A cost that was not computed (no prices, no run, nothing
costed) writes the short form: every figure null, no intervals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from evalkit.analysis.jsonread import Interval, Json, read_as, read_as_written


def _listed(ci: Interval | None) -> list[float | None] | None:
    return None if ci is None else list(ci)


@dataclass(frozen=True)
class LevelCost:
    """One level's costs, each with the 95 % interval of the measurement it rests on."""

    concurrency: int | None = None
    per_million_output_tokens: float | None = None
    per_million_output_tokens_ci: Interval | None = None
    per_session: float | None = None
    per_session_ci: Interval | None = None
    per_stream_hour: float | None = None
    per_stream_hour_ci: Interval | None = None
    #: the input tokens' part of the cost (None: a GPU-hour price does not split it)
    prefill_share: float | None = None
    #: the cost per million output tokens that met each use case's SLO, by use case
    per_million_slo_tokens: Mapping[str, float | None] = field(default_factory=dict)
    per_million_slo_tokens_ci: Mapping[str, Interval | None] = field(default_factory=dict)
    #: input tokens per output token (per-token prices)
    input_per_output: float | None = None
    #: the level's aggregate rate per GPU (a GPU-hour price)
    aggregate_tokens_per_s_per_gpu: float | None = None
    aggregate_tokens_per_s_per_gpu_ci: Interval | None = None
    #: priced per GPU-hour: the per-GPU rate is written instead of input_per_output
    per_gpu: bool = field(default=False, metadata={"key": "-"})

    @classmethod
    def from_json(cls, doc: object) -> LevelCost:
        read = read_as(cls, doc)
        gpu = isinstance(doc, Mapping) and "aggregate_tokens_per_s_per_gpu" in doc
        return replace(read, per_gpu=True) if gpu else read

    def to_json(self) -> dict[str, Json]:
        out = {"concurrency": self.concurrency, **self.figures_json(),
               "prefill_share": self.prefill_share,
               "per_million_slo_tokens": dict(self.per_million_slo_tokens),
               "per_million_slo_tokens_ci": {k: _listed(v) for k, v in
                                             self.per_million_slo_tokens_ci.items()}}
        if self.per_gpu:
            return {**out, "aggregate_tokens_per_s_per_gpu": self.aggregate_tokens_per_s_per_gpu,
                    "aggregate_tokens_per_s_per_gpu_ci":
                        _listed(self.aggregate_tokens_per_s_per_gpu_ci)}
        return {**out, "input_per_output": self.input_per_output}

    def figures_json(self) -> dict[str, Json]:
        """The three costs, each followed by its interval (a level's entry's order)."""
        return {"per_million_output_tokens": self.per_million_output_tokens,
                "per_million_output_tokens_ci": _listed(self.per_million_output_tokens_ci),
                "per_session": self.per_session, "per_session_ci": _listed(self.per_session_ci),
                "per_stream_hour": self.per_stream_hour,
                "per_stream_hour_ci": _listed(self.per_stream_hour_ci)}


@dataclass(frozen=True)
class SloCost:
    """A use case's highest level within its SLO, and the costs there."""

    concurrency: int | None = None
    #: where the level comes from: "goodput", or "use-case fit" for an older summary
    source: str | None = None
    per_million_output_tokens: float | None = None
    per_session: float | None = None
    per_stream_hour: float | None = None
    per_million_slo_tokens: float | None = None

    @classmethod
    def from_json(cls, doc: object) -> SloCost:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return asdict(self)


@dataclass(frozen=True)
class UnitCost:
    """What one unit (session, task, conversation) of the buyer's workload costs at one
    level and shape: the mean over complete units, and with the failed units' spend."""

    users: int | None = None
    shape: str | None = None
    units: int | None = None
    per_unit: float | None = None
    per_unit_ci: Interval | None = None
    input_tokens_per_unit: float | None = None
    output_tokens_per_unit: float | None = None
    #: None: an older summary that did not sum the failed units
    failed_units: int | None = None
    spent_failed: float | None = None
    per_unit_with_failed: float | None = None
    client_bound: bool = False

    @classmethod
    def from_json(cls, doc: object) -> UnitCost:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {**asdict(self), "per_unit_ci": _listed(self.per_unit_ci)}


@dataclass(frozen=True)
class BlendedRow:
    """A session at one input:output ratio, at the blended price and at separate ones."""

    ratio: str | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    blended: float | None = None
    separate: float | None = None

    @classmethod
    def from_json(cls, doc: object) -> BlendedRow:
        return read_as(cls, doc)


@dataclass(frozen=True)
class BlendedTable:
    """What a blended price hides: a session across input:output ratios."""

    #: the blended price as the questionnaire wrote it
    per_million_tokens: float | None = None
    rows: tuple[BlendedRow, ...] = ()
    separate_basis: str | None = None
    measured_ratio: float | None = None
    separate_input_per_mtok: float | None = None
    separate_output_per_mtok: float | None = None

    @classmethod
    def from_json(cls, doc: object) -> BlendedTable:
        return read_as_written(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {**asdict(self), "rows": [asdict(r) for r in self.rows]}


@dataclass(frozen=True)
class VoiceLevelCost:
    """What a realtime call costs at one level of concurrent calls, at Q3's audio prices:
    per minute on the line and per call, from the audio its calls sent and heard."""

    calls: int | None = None
    per_call_minute: float | None = None
    per_call: float | None = None
    #: per call of the measured shape: its minutes on the line, the caller's audio sent
    #: and the answer audio heard (seconds)
    call_s: float | None = None
    input_audio_s: float | None = None
    output_audio_s: float | None = None

    @classmethod
    def from_json(cls, doc: object) -> VoiceLevelCost:
        return read_as(cls, doc)


@dataclass(frozen=True)
class VoiceCost:
    """A realtime call's cost (`evalkit.review.voicecost`): at the level costed and at
    each level, or why it was not computed (`basis`)."""

    currency: str | None = None
    basis: str = ""
    #: Q3's audio prices per minute of audio, input and output, as costed (a price per
    #: audio token converted at Q3's tokens per second); None: not stated
    input_per_minute: float | None = None
    output_per_minute: float | None = None
    at: VoiceLevelCost | None = None
    levels: tuple[VoiceLevelCost, ...] = ()

    @classmethod
    def from_json(cls, doc: object) -> VoiceCost:
        return read_as(cls, doc)

    def to_json(self) -> dict[str, Json]:
        return {"currency": self.currency, "basis": self.basis,
                "input_per_minute": self.input_per_minute,
                "output_per_minute": self.output_per_minute,
                "at": asdict(self.at) if self.at is not None else None,
                "levels": [asdict(lv) for lv in self.levels]}


@dataclass(frozen=True)
class Cost:
    """scorecard.json's `cost`: at the level costed (the concurrency sold, else the
    'under load' level), at each level, at each use case's highest level within its SLO,
    the buyer's workload, and a blended price's table; `basis` says how, or why not."""

    currency: str | None = None
    basis: str = ""
    #: separate | blended | gpu_hour (None: no prices)
    pricing: str | None = None
    #: the level costed (None: nothing was costed; the figures are null)
    at: LevelCost | None = None
    concurrency_sold: int | None = None
    levels: tuple[LevelCost, ...] = ()
    at_slo: Mapping[str, SloCost] = field(default_factory=dict)
    workload: tuple[UnitCost, ...] = ()
    blended: BlendedTable | None = None
    #: a realtime call's cost at Q3's audio prices (None: a text run and no audio price:
    #: the key is not written)
    voice: VoiceCost | None = None

    @classmethod
    def from_json(cls, doc: object) -> Cost:
        """The cost read back; the level costed is its entry among the levels where that
        says what the top level says (else the top level's figures, as written)."""
        read = read_as(cls, doc)
        top = LevelCost.from_json(doc)  # the top level's figures, read as a level's
        if top.concurrency is None and all(v is None for v in (
                top.per_million_output_tokens, top.per_session, top.per_stream_hour)):
            return read  # nothing was costed
        at = next((lv for lv in read.levels if lv.concurrency == top.concurrency), None)
        same = at is not None and replace(
            at, input_per_output=None, aggregate_tokens_per_s_per_gpu=None,
            aggregate_tokens_per_s_per_gpu_ci=None, per_gpu=False) == top
        return replace(read, at=at if same else top)

    def to_json(self) -> dict[str, Json]:
        out = self._text_json()
        if self.voice is not None:
            out["voice"] = self.voice.to_json()
        return out

    def _text_json(self) -> dict[str, Any]:
        tail = {"levels": [lv.to_json() for lv in self.levels],
                "at_slo": {k: v.to_json() for k, v in self.at_slo.items()}}
        workload = [u.to_json() for u in self.workload]
        blended = self.blended.to_json() if self.blended is not None else None
        at = self.at
        if at is None:
            return {"currency": self.currency, "per_million_output_tokens": None,
                    "per_session": None, "per_stream_hour": None, "prefill_share": None,
                    "per_million_slo_tokens": {}, "basis": self.basis,
                    "pricing": self.pricing, "concurrency": None, **tail,
                    "blended": blended, "workload": workload}
        figures = at.figures_json()
        return {"currency": self.currency,
                **{k: figures[k] for k in _FIGURES}, **{f"{k}_ci": figures[f"{k}_ci"]
                                                        for k in _FIGURES},
                "prefill_share": at.prefill_share,
                "per_million_slo_tokens": dict(at.per_million_slo_tokens),
                "per_million_slo_tokens_ci": {k: _listed(v) for k, v in
                                              at.per_million_slo_tokens_ci.items()},
                "basis": self.basis, "pricing": self.pricing, "concurrency": at.concurrency,
                "concurrency_sold": self.concurrency_sold, **tail, "workload": workload,
                "blended": blended}


#: the three costs a level gives, in the order scorecard.json writes them
_FIGURES = ("per_million_output_tokens", "per_session", "per_stream_hour")

