"""The engine model: a continuous-batching inference engine, as pure scheduling logic.

No clock and no I/O here: the caller passes `now_ns` in and sleeps until the step end it
gets back, so the same core drives the HTTP server (real monotonic time) and
`simulate_closed_loop` (virtual time, used to tune and check the profiles in milliseconds).

One step: admit waiting requests up to `max_batch`; the step lasts
    decode_base_ms + decode_per_stream_ms x batch
    + (if any request is admitted) prefill_overhead_ms + their prefill tokens / prefill_tokens_per_s
    + seeded jitter + an occasional seeded stall,
where a request's prefill tokens are its prompt tokens, those the prefix cache served
(`cached_tokens`, `evalkit.reference.prefix`) counted at `prefix_cache_cost` each,
so prefill of newcomers delays the decode of every running stream, as in real engines.
The prefill overhead is paid once per step, not per request: a GPU batches newcomers'
prefills into one pass whose floor is reading the weights, so a burst of short prompts
costs little more than one (a newcomer's prompt tokens are capped by `max_prefill_tokens`
per step; the rest wait for the next step).
At the step end every running stream gets one token (newcomers their first).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from evalkit.reference.params import Profile

MS = 1_000_000
#: if the caller wakes this late after a step's scheduled end, the next step starts at
#: "now" instead of catching up with a burst of short steps
RESYNC_NS = 5 * MS
#: an idle engine woken up to this late by a new request starts its step at the
#: request's arrival on the model's timeline (the lateness shows as write timing error)
IDLE_RESYNC_NS = 20 * MS


@dataclass(eq=False)
class Seq:
    """Engine-side state of one request (mutable: the engine advances it)."""

    prompt_tokens: int
    target_tokens: int
    generated: int = 0
    #: prompt tokens the prefix cache served (0: none, or the cache is off)
    cached_tokens: int = 0
    admitted_ns: int | None = None
    #: when the request reached the engine on the model's timeline (the engine may wake late)
    ready_ns: int | None = None
    cancelled: bool = False
    sink: Any = None  # the edge's per-stream object, opaque to the engine

    @property
    def done(self) -> bool:
        """All tokens generated."""
        return self.generated >= self.target_tokens


@dataclass(frozen=True)
class Step:
    """One planned decode step on the absolute monotonic timeline."""

    start_ns: int
    end_ns: int
    batch: int
    admitted: tuple[Seq, ...]
    stalled: bool


class EngineCore:
    """Admission, queueing, batching and step timing of one engine; no clock inside."""

    def __init__(self, profile: Profile, seed: int = 0) -> None:
        self.p = profile
        self.rng = random.Random(f"engine:{seed}")
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.last_end_ns: int | None = None

    @property
    def in_system(self) -> int:
        """Requests held: running plus waiting."""
        return len(self.running) + len(self.waiting)

    def would_queue(self) -> bool:
        """A request arriving now would have to wait for a free batch slot."""
        return self.in_system >= int(self.p["max_batch"])

    def submit(self, seq: Seq) -> bool:
        """Queue a request; False means rejected by the admission limit (429)."""
        limit = int(self.p["admission_limit"])
        if limit and self.in_system >= limit:
            return False
        self.waiting.append(seq)
        return True

    def prefill_ns(self, prompt_tokens: float) -> int:
        """Prefill cost of newcomers' prompts in one step (their prefill tokens summed)."""
        return int(prompt_tokens * self._per_token_ns()
                   + float(self.p["prefill_overhead_ms"]) * MS)

    def _per_token_ns(self) -> float:
        rate = float(self.p["prefill_tokens_per_s"])
        return 1e9 / rate if rate > 0 else 0.0

    def prefill_tokens(self, seq: Seq) -> float:
        """The tokens a request's prefill costs: uncached ones in full, cached ones at
        `prefix_cache_cost` each."""
        cached = seq.cached_tokens
        return seq.prompt_tokens - cached + float(self.p["prefix_cache_cost"]) * cached

    def prefill_s(self, seq: Seq) -> float:
        """This request's share of its admitting step's prefill (the step's fixed
        overhead apart), in seconds: what the truth log's `prefill_s` says."""
        return self.prefill_tokens(seq) * self._per_token_ns() / 1e9

    def plan_step(self, now_ns: int) -> Step | None:
        """Admit and schedule the next step; None when there is nothing to run."""
        self.running = [s for s in self.running if not s.cancelled]
        max_batch = max(1, int(self.p["max_batch"]))
        budget = int(self.p["max_prefill_tokens"]) or None
        admitted: list[Seq] = []
        while self.waiting and len(self.running) < max_batch:
            seq = self.waiting[0]
            # the budget counts tokens to compute, as vLLM's does: cached ones are not
            if budget is not None and admitted and seq.prompt_tokens - seq.cached_tokens > budget:
                break  # prefill budget of this step spent: the rest wait for the next
            self.waiting.popleft()
            if seq.cancelled:
                continue
            if budget is not None:
                budget -= seq.prompt_tokens - seq.cached_tokens
            self.running.append(seq)
            admitted.append(seq)
        if not self.running:
            self.last_end_ns = None
            return None
        start = now_ns
        ready = [s.ready_ns for s in admitted if s.ready_ns is not None]
        if self.last_end_ns is not None and now_ns - self.last_end_ns <= RESYNC_NS:
            start = self.last_end_ns  # busy: steps follow each other on the timeline
        elif ready and 0 <= now_ns - max(ready) <= IDLE_RESYNC_NS:
            start = max(ready)  # idle: start when the request arrived, not when we woke
        for seq in admitted:
            seq.admitted_ns = start
        batch = len(self.running)
        ms = float(self.p["decode_base_ms"]) + float(self.p["decode_per_stream_ms"]) * batch
        ms += self.rng.uniform(0.0, float(self.p["jitter_ms"]))
        stalled = self.rng.random() < float(self.p["stall_prob"])
        if stalled:
            ms += float(self.p["stall_ms"])
        duration = int(ms * MS)
        if admitted:
            duration += self.prefill_ns(sum(self.prefill_tokens(s) for s in admitted))
        end = start + max(duration, 1)
        self.last_end_ns = end
        return Step(start, end, batch, tuple(admitted), stalled)

    def finish_step(self) -> tuple[list[Seq], list[Seq]]:
        """Give every running stream one token; return (streams that got one, finished)."""
        emitted: list[Seq] = []
        for seq in self.running:
            if seq.cancelled:
                continue
            seq.generated += 1
            emitted.append(seq)
        finished = [s for s in emitted if s.done]
        if finished:
            self.running = [s for s in self.running if not s.done and not s.cancelled]
        return emitted, finished


@dataclass(frozen=True)
class SimRequest:
    """What a zero-overhead closed-loop client would have measured for one request."""

    client: int
    send_ns: int
    rejected: bool
    ttft_ns: int | None = None
    tpot_ns: float | None = None
    tokens: int = 0


@dataclass
class _SimSeqState:
    client: int
    send_ns: int
    first_ns: int | None = None
    last_ns: int | None = None


def simulate_closed_loop(
    profile: Profile,
    concurrency: int,
    duration_ns: int,
    prompt_tokens: int,
    output_tokens: int,
    seed: int = 0,
    rtt_ns: int = 1 * MS,
    start_spread_ns: int = 0,
) -> list[SimRequest]:
    """Run `concurrency` closed-loop clients in virtual time for `duration_ns`, then drain.

    Clients start evenly over `start_spread_ns` (0: all at once, a burst, as a prober's
    workers usually do).
    """
    core = EngineCore(profile, seed)
    gap = start_spread_ns // concurrency
    sends: list[tuple[int, int]] = [(i * (gap or 1000), i) for i in range(concurrency)]
    heapq.heapify(sends)
    out: list[SimRequest] = []
    step: Step | None = None
    while sends or step is not None:
        if step is None or (sends and sends[0][0] < step.end_ns):
            t, client = heapq.heappop(sends)
            if client >= 0:  # the request reaches the engine after the gateway's overhead
                heapq.heappush(sends, (t + int(float(profile["request_overhead_ms"]) * MS),
                                       -1 - client))
                continue
            client = -1 - client
            t_sent = t - int(float(profile["request_overhead_ms"]) * MS)
            state = _SimSeqState(client, t_sent)
            seq = Seq(prompt_tokens, output_tokens, sink=state)
            if not core.submit(seq):
                out.append(SimRequest(client, t_sent, rejected=True))
                if t + rtt_ns < duration_ns:
                    heapq.heappush(sends, (t + rtt_ns, client))
                continue
            if step is None:
                step = core.plan_step(t)
            continue
        now = step.end_ns
        emitted, finished = core.finish_step()
        for seq in emitted:
            st: _SimSeqState = seq.sink
            if st.first_ns is None:
                st.first_ns = now
            st.last_ns = now
        for seq in finished:
            st = seq.sink
            assert st.first_ns is not None and st.last_ns is not None
            tpot = (st.last_ns - st.first_ns) / (seq.generated - 1) if seq.generated > 1 else None
            out.append(SimRequest(st.client, st.send_ns, False, st.first_ns - st.send_ns,
                                  tpot, seq.generated))
            if now + rtt_ns < duration_ns:
                heapq.heappush(sends, (now + rtt_ns, st.client))
        step = core.plan_step(now)
    return out
