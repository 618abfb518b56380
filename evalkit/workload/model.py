"""What a workload is, as plain frozen data: the shapes a buyer's traffic mixes, and the
distributions their lengths and pauses are drawn from.

A capacity figure holds for one workload shape. These types say which: a workload file
(`evalkit.workload.load`), the buyer's conversations and a Mooncake trace all become
these, and the prober (`evalkit.probe.load.sessions`, `evalkit.probe.load.replay`) only reads them.
Drawing is seeded by the caller, so a run can be made again from its seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Literal

DistKind = Literal["fixed", "uniform", "lognormal", "empirical"]

#: z for the 90th percentile of a standard normal: a lognormal given by its median and
#: p90 has sigma = ln(p90 / median) / Z90
Z90 = 1.2815515655446004


@dataclass(frozen=True)
class Dist:
    """A distribution of non-negative numbers (token counts, turns, seconds).

    `fixed`: `value`; `uniform`: between `low` and `high` inclusive; `lognormal`: by its
    `median` and `p90` (how a buyer knows their lengths); `empirical`: one of `values`,
    each equally likely. `integer` draws are rounded (lengths, turns, steps), and every
    draw is clipped to [`low`, `high`] where they are set, so a lognormal tail cannot ask
    for a million tokens.
    """

    kind: DistKind
    value: float | None = None
    low: float | None = None
    high: float | None = None
    median: float | None = None
    p90: float | None = None
    values: tuple[float, ...] = ()
    integer: bool = True

    def sample(self, rng: random.Random) -> float:
        """One draw (an int-valued float when `integer`)."""
        if self.kind == "fixed":
            x = float(self.value or 0.0)
        elif self.kind == "uniform":
            lo, hi = float(self.low or 0.0), float(self.high or 0.0)
            x = float(rng.randint(int(lo), int(hi))) if self.integer else rng.uniform(lo, hi)
        elif self.kind == "lognormal":
            med, p90 = float(self.median or 0.0), float(self.p90 or 0.0)
            sigma = math.log(p90 / med) / Z90 if med > 0 and p90 > med else 0.0
            x = med * math.exp(rng.gauss(0.0, sigma)) if med > 0 else 0.0
        else:
            x = float(rng.choice(self.values)) if self.values else 0.0
        if self.kind != "uniform":
            if self.low is not None:
                x = max(x, float(self.low))
            if self.high is not None:
                x = min(x, float(self.high))
        x = max(x, 0.0)
        return float(round(x)) if self.integer else x

    def draw(self, rng: random.Random) -> int:
        """One integer draw (lengths, turns, steps)."""
        return int(self.sample(rng))

    def describe(self) -> str:
        """A short human form, for the scorecard (`lognormal median 60, p90 200`)."""
        def g(x: float | None) -> str:
            return "?" if x is None else f"{x:g}"

        if self.kind == "fixed":
            return g(self.value)
        if self.kind == "uniform":
            return f"{g(self.low)}–{g(self.high)}"
        if self.kind == "lognormal":
            return f"lognormal median {g(self.median)}, p90 {g(self.p90)}"
        shown = ", ".join(g(v) for v in self.values[:6])
        return f"one of [{shown}{', …' if len(self.values) > 6 else ''}]"

    def mean(self) -> float:
        """The distribution's mean (for planning and for the scorecard's shape line)."""
        if self.kind == "fixed":
            return float(self.value or 0.0)
        if self.kind == "uniform":
            return (float(self.low or 0.0) + float(self.high or 0.0)) / 2
        if self.kind == "lognormal":
            med, p90 = float(self.median or 0.0), float(self.p90 or 0.0)
            sigma = math.log(p90 / med) / Z90 if med > 0 and p90 > med else 0.0
            return med * math.exp(sigma * sigma / 2)
        return sum(self.values) / len(self.values) if self.values else 0.0


def fixed(x: float, integer: bool = True) -> Dist:
    """A distribution that is always `x`."""
    return Dist("fixed", value=float(x), integer=integer)


ShapeKind = Literal["single", "session", "agent", "conversations"]


@dataclass(frozen=True)
class Single:
    """Independent single-turn requests with drawn lengths."""

    name: str
    prompt_tokens: Dist
    output_tokens: Dist
    weight: float = 1.0
    kind: ShapeKind = "single"


@dataclass(frozen=True)
class Session:
    """A chat session: a system prompt shared by every session of this shape (so a
    vendor's prefix cache may serve it), then `turns` user messages, each sent with the
    whole history so far, the vendor's own answers in it, after `think_time_s`."""

    name: str
    turns: Dist
    system_prompt_tokens: int
    user_tokens: Dist
    output_tokens: Dist
    think_time_s: Dist = field(default_factory=lambda: fixed(0.0, integer=False))
    weight: float = 1.0
    kind: ShapeKind = "session"


@dataclass(frozen=True)
class Agent:
    """An agent's tool loop: a task prompt, then `steps` requests, each the history plus
    a tool result of `tool_result_tokens`, sent `tool_latency_s` after the last answer
    ended (the tool's time). Judged per step (TTFT) and per task (start to last token)."""

    name: str
    steps: Dist
    prompt_tokens: Dist
    tool_result_tokens: Dist
    output_tokens: Dist
    tool_latency_s: Dist = field(default_factory=lambda: fixed(0.0, integer=False))
    weight: float = 1.0
    kind: ShapeKind = "agent"


@dataclass(frozen=True)
class Conversation:
    """One of the buyer's conversations: OpenAI chat messages as the file had them.
    Replayed turn by turn: each user message is sent with the history so far, where the
    vendor's own answers stand in for the file's assistant messages."""

    id: str
    messages: tuple[dict[str, object], ...]

    def user_turns(self) -> int:
        """How many requests a replay sends: one per user message."""
        return sum(1 for m in self.messages if m.get("role") == "user")


@dataclass(frozen=True)
class Conversations:
    """The buyer's own conversations, replayed in file order, round-robin."""

    name: str
    conversations: tuple[Conversation, ...]
    #: each turn's max_tokens: the file's assistant message's length is not the
    #: vendor's to match, so the cap is ours
    output_tokens: Dist = field(default_factory=lambda: fixed(256))
    think_time_s: Dist = field(default_factory=lambda: fixed(0.0, integer=False))
    weight: float = 1.0
    kind: ShapeKind = "conversations"
    #: the file's name and SHA-256, for run.json and the scorecard
    source: dict[str, object] | None = None


Shape = Single | Session | Agent | Conversations


@dataclass(frozen=True)
class Workload:
    """A named mix of shapes, and how hard to run it.

    `concurrency` lists the levels: how many users are in flight at once, each running
    one unit of a shape (a request, a whole session, a whole agent task) and then the
    next, drawn by weight. Each level runs for `duration_s`, or until `units` units
    started (whichever first; at least one of the two is set)."""

    name: str
    shapes: tuple[Shape, ...]
    concurrency: tuple[int, ...] = (1,)
    duration_s: float | None = 30.0
    units: int | None = None
    #: where it came from (file name and SHA-256, or "questionnaire"), for run.json
    source: dict[str, object] | None = None

    def pick(self, rng: random.Random) -> Shape:
        """A shape drawn by weight."""
        return rng.choices(self.shapes, weights=[s.weight for s in self.shapes])[0]


@dataclass(frozen=True)
class TraceEntry:
    """One line of a Mooncake trace: when (ms from the trace's start), how long in and
    out, and the prompt's prefix blocks (equal ids: equal text, so a prefix cache can
    serve them)."""

    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] = ()
    line: int = 0


#: Mooncake's block: each hash id stands for this many prompt tokens
TRACE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class Trace:
    """A trace to replay open-loop at its offsets, `speed` times as fast."""

    entries: tuple[TraceEntry, ...]
    speed: float = 1.0
    block_tokens: int = TRACE_BLOCK_TOKENS
    source: dict[str, object] | None = None

    def offsets_s(self) -> list[float]:
        """Each entry's send time from the replay's start (s), scaled by `speed`."""
        if not self.entries:
            return []
        t0 = self.entries[0].timestamp_ms
        return [(e.timestamp_ms - t0) / 1000.0 / self.speed for e in self.entries]
