"""scorecard.json's `workload`, `trace` and `sources` as typed data: what
`evalkit.review.workload` judged of the buyer's workload, and which workload each part of
the scorecard's figures comes from.

Each class's fields are scorecard.json's keys in the contract's order: `to_json` writes
them (`dataclasses.asdict`, a tuple as a list), and `read_as` (`evalkit.analysis.jsonread`)
reads a scorecard.json back defensively, a malformed part as not stated. A new figure of
the workload's judgement is one field here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from evalkit.analysis.jsonread import Interval, Json, read_as


@dataclass(frozen=True)
class Median90:
    """A distribution as the workload's tables print it: p50 and p90."""

    p50: float | None = None
    p90: float | None = None


@dataclass(frozen=True)
class Median99:
    """A send lag as the trace's table prints it: p50 and p99."""

    p50: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class GoodputCard:
    """One SLO's goodput as the page states it: the share that met it, and its status
    (met | tie | missed | no_data | not_verified, and why not verified)."""

    fraction: float | None = None
    fraction_ci: Interval | None = None
    met: int | None = None
    requests: int | None = None
    tokens_per_s: float | None = None
    status: str = "no_data"
    reason: str | None = None


@dataclass(frozen=True)
class TurnCard:
    """One turn (or an agent's step) of a shape, beside a cold prompt of its length."""

    index: int | None = None
    requests: int | None = None
    prompt_tokens_p50: float | None = None
    cached_prompt_tokens_p50: float | None = None
    ttft_s: Median90 = field(default_factory=Median90)
    tpot_p90_s: float | None = None
    cold_ttft_s: float | None = None
    ttft_vs_cold: float | None = None


@dataclass(frozen=True)
class TasksCard:
    """An agent shape's complete tasks, end to end, and their slowest step."""

    complete: int | None = None
    e2e_s: Median90 = field(default_factory=Median90)
    slowest_step_p90_s: float | None = None
    slowest_step_ttft_p90_s: float | None = None


@dataclass(frozen=True)
class ShapeCard:
    """One shape of the buyer's workload at one level, judged."""

    name: str = "?"
    kind: str | None = None
    #: "turn" (a session's) or "step" (an agent's)
    unit: str = "turn"
    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    units: int | None = None
    units_complete: int | None = None
    ttft_s: Median90 = field(default_factory=Median90)
    tpot_p90_s: float | None = None
    #: nothing voids it (the client kept up, every unit ran to its end, the run is valid)
    verified: bool = False
    #: why it is not verified (None: it is)
    not_verified: str | None = None
    goodput: Mapping[str, GoodputCard] = field(default_factory=dict)
    turns: tuple[TurnCard, ...] = ()
    #: the later turns' median TTFT over a cold prompt's (None: no later turn has one)
    later_vs_cold: float | None = None
    tasks: TasksCard | None = None


@dataclass(frozen=True)
class WorkloadLevelCard:
    """One workload level: so many users in flight, and each shape judged there."""

    users: int | None = None
    client_bound: bool = True
    shapes: tuple[ShapeCard, ...] = ()


@dataclass(frozen=True)
class WorkloadCard:
    """scorecard.json's `workload`: the buyer's workload, level by level, and page one's
    line on it."""

    source: str = ""
    name: str | None = None
    file: str | None = None
    sha256: str | None = None
    levels: tuple[WorkloadLevelCard, ...] = ()
    cold_basis: str | None = None
    headline: str = ""

    @classmethod
    def from_json(cls, value: object) -> WorkloadCard:
        """scorecard.json's `workload` read back (a malformed part as not stated)."""
        return read_as(cls, value)

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return asdict(self)


@dataclass(frozen=True)
class TraceCard:
    """scorecard.json's `trace`: the replay's fidelity and what the vendor did under it."""

    source: str = ""
    file: str | None = None
    sha256: str | None = None
    speed: float | None = None
    requests: int | None = None
    outcomes: Mapping[str, int] = field(default_factory=dict)
    client_bound: bool = True
    not_verified: str | None = None
    send_lag_s: Median99 = field(default_factory=Median99)
    prompt_tokens_sent: float | None = None
    output_tokens_asked: float | None = None
    output_tokens_received: float | None = None
    cached_prompt_tokens: float | None = None
    ttft_s: Median90 = field(default_factory=Median90)
    tpot_p90_s: float | None = None
    goodput: Mapping[str, GoodputCard] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: object) -> TraceCard:
        """scorecard.json's `trace` read back (a malformed part as not stated)."""
        return read_as(cls, value)

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return asdict(self)


@dataclass(frozen=True)
class Sources:
    """Which workload each part of the scorecard's figures comes from (None: that part
    was not run)."""

    ramp: str | None = None
    workload: str | None = None
    trace: str | None = None

    @classmethod
    def from_json(cls, value: object) -> Sources:
        """scorecard.json's `sources` read back (anything but a string as not stated)."""
        return read_as(cls, value)

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return asdict(self)
