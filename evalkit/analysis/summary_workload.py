"""summary.json's `workload` and `trace` read as typed data: the buyer's traffic shapes
level by level (users in flight), each shape's turns or an agent's steps, and the trace
replayed at its times (`evalkit.analysis.workload` writes them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from evalkit.analysis.jsonread import Json, as_mapping, read_as
from evalkit.analysis.summary_levels import Goodput, Pct, TokenSums, read_token_sums


@dataclass(frozen=True)
class SourceFile:
    """The file a workload or trace came from: its name and SHA-256."""

    name: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class DescribedShape:
    """A shape as the workload file describes it (its name and kind)."""

    name: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class Described:
    """What the workload or trace phase ran (run.json's `workload`, named here)."""

    name: str | None = None
    source: SourceFile | None = None
    shapes: tuple[DescribedShape, ...] = ()
    #: the trace's replay speed (2: in half its time)
    speed: float | None = None
    entries: int | None = None


@dataclass(frozen=True)
class TurnStats:
    """One turn (a session's) or step (an agent's) index of a shape, beside a cold prompt."""

    turn: int | None = None
    step: int | None = None
    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    prompt_tokens_p50: float | None = None
    cached_prompt_tokens_p50: float | None = None
    ttft_s: Pct = field(default_factory=Pct)
    tpot_s: Pct = field(default_factory=Pct)
    cold_ttft_s: float | None = None
    ttft_vs_cold: float | None = None


@dataclass(frozen=True)
class Tasks:
    """An agent shape's complete tasks: their end-to-end time and slowest step."""

    complete: int | None = None
    e2e_s: Pct = field(default_factory=Pct)
    slowest_step_s: Pct = field(default_factory=Pct)
    slowest_step_ttft_s: Pct = field(default_factory=Pct)


@dataclass(frozen=True)
class ShapeStats:
    """One shape of the buyer's workload at one level."""

    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    #: units (sessions, tasks, conversations) begun, and those that ran to their end
    units: int | None = None
    units_complete: int | None = None
    prompt_tokens: Pct = field(default_factory=Pct)
    output_tokens: Pct = field(default_factory=Pct)
    ttft_s: Pct = field(default_factory=Pct)
    tpot_s: Pct = field(default_factory=Pct)
    e2e_s: Pct = field(default_factory=Pct)
    stream_tokens_per_s: Pct = field(default_factory=Pct)
    goodput: Mapping[str, Goodput] = field(default_factory=dict)
    #: the complete units' token sums, and the failed ones' (what their turns cost)
    unit_tokens: TokenSums | None = None
    unit_tokens_failed: TokenSums | None = None
    #: a session's turns, or an agent's steps (None: the shape has none of that kind)
    turns: tuple[TurnStats, ...] | None = None
    steps: tuple[TurnStats, ...] | None = None
    tasks: Tasks | None = None

    @classmethod
    def from_json(cls, value: object) -> ShapeStats:
        """The entry; token sums read as `read_token_sums` reads them."""
        doc = as_mapping(value)
        base = read_as(cls, {k: v for k, v in doc.items()
                             if k not in ("unit_tokens", "unit_tokens_failed")})
        return replace(base, unit_tokens=read_token_sums(doc.get("unit_tokens")),
                       unit_tokens_failed=read_token_sums(doc.get("unit_tokens_failed")))


@dataclass(frozen=True)
class WorkloadLevel:
    """One workload level: so many users in flight, and each shape's figures there."""

    users: int | None = None
    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    #: None: the summary does not say (read as bound: nothing is verified then)
    client_bound: bool | None = None
    shapes: Mapping[str, ShapeStats] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkloadSection:
    """The buyer's workload, run level by level."""

    described: Described | None = None
    levels: tuple[WorkloadLevel, ...] = ()
    #: how a later turn's "cold" TTFT was estimated (from the prefill fit)
    cold_basis: str | None = None


@dataclass(frozen=True)
class TraceSection:
    """A Mooncake trace replayed open-loop at its times."""

    described: Described | None = None
    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    planned: int | None = None
    complete: bool | None = None
    #: None: the summary does not say (read as bound: nothing is verified then)
    client_bound: bool | None = None
    send_lag_s: Pct = field(default_factory=Pct)
    prompt_tokens_sent: float | None = None
    output_tokens_asked: float | None = None
    output_tokens_received: float | None = None
    cached_prompt_tokens: float | None = None
    ttft_s: Pct = field(default_factory=Pct)
    tpot_s: Pct = field(default_factory=Pct)
    e2e_s: Pct = field(default_factory=Pct)
    goodput: Mapping[str, Goodput] = field(default_factory=dict)
    #: anything else the section carries (free-form)
    extra: Json | None = None
