"""The engine loop: the pure `EngineCore` driven on the real monotonic timeline, and each
request's `Stream`, the engine's sink that queues what the request's writer will send.

One loop (an asyncio task) plans a step, sleeps until its end (the last stretch yields in
a tight loop for precision), and hands each running request its token at that end. The
engine itself holds no clock and no I/O (`evalkit.reference.engine`); this module is the
only place its steps meet real time. A slow client only slows its own stream: tokens
wait in its Stream's queue, not in the loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

from evalkit.reference.answers import PRIMARY, Answer
from evalkit.reference.engine import EngineCore, Seq, Step
from evalkit.reference.faults import RequestPlan

#: ahead of a step's end, the engine sleeps until this close, then yields in a tight loop
SPIN_NS = 1_200_000
_log = logging.getLogger("evalkit.reference")


class Stream:
    """One request's side of the engine: tokens in, chunks queued for its writer."""

    def __init__(self, plan: RequestPlan, chunk_tokens: int,
                 answer: Answer | None = None) -> None:
        self.plan = plan
        #: the words the writer sends (default: the primary model's answer to no prompt)
        self.answer = answer or Answer("", PRIMARY, plan.total_tokens)
        self.k = max(1, chunk_tokens)
        #: (kind, tokens, scheduled_ns, carries the finish_reason)
        self.items: deque[tuple[str, int, int, bool]] = deque()
        self.wake = asyncio.Event()
        self.gone = asyncio.Event()  # the client went away
        self.tokens = 0
        self.pending = 0
        self.admitted_ns: int | None = None
        #: the writer's fast path while it idles: plain chunks are written from the engine
        #: loop itself, skipping a task switch per token (the cost that sets timing error)
        self.direct: Callable[[str, int, int], None] | None = None

    def _push(self, kind: str, tokens: int, at: int, final: bool = False) -> None:
        if (self.direct is not None and not self.items and not final
                and kind in ("content", "reasoning")):
            self.direct(kind, tokens, at)
            return
        self.items.append((kind, tokens, at, final))
        self.wake.set()

    def on_admitted(self, now: int) -> None:
        """Engine admitted us: real engines send the role-only chunk now."""
        self.admitted_ns = now
        if self.plan.role_first_chunk:
            self._push("role", 0, now)

    def on_token(self, at: int, seq: Seq, batch: int = 1) -> None:
        """One more token, generated at the step end `at` in a decode batch of `batch`."""
        plan = self.plan
        if self.answer.flip_rng is not None:  # batch_variance: this token may flip
            self.answer.generated(self.tokens, batch)
        self.tokens += 1
        self.pending += 1
        reasoning_done = self.tokens == plan.reasoning_tokens
        kind = "reasoning" if self.tokens <= plan.reasoning_tokens else "content"
        last = self.tokens >= plan.total_tokens
        fault_here = self.tokens in (plan.disconnect_at, plan.malformed_at, plan.error_at,
                                     plan.stall_at)
        ends = last and self.tokens not in (plan.error_at, plan.disconnect_at)
        if self.pending >= self.k or last or reasoning_done or fault_here:
            self._push(kind, self.pending, at, final=ends)
            self.pending = 0
        if self.tokens == plan.malformed_at:
            self._push("malformed", 0, at)
        if self.tokens == plan.stall_at:
            self._push("stall", 0, at)
        if self.tokens == plan.error_at:
            seq.cancelled = True
            self._push("error", 0, at)
        elif self.tokens == plan.disconnect_at:
            seq.cancelled = True
            self._push("cut", 0, at)
        elif last:
            self._push("finish", 0, at)


class EngineLoop:
    """Steps the engine on the monotonic timeline in one task, started by the first request
    and asleep while nothing runs or waits."""

    def __init__(self, core: EngineCore) -> None:
        self.core = core
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    def wake(self) -> None:
        """A request was submitted: start the loop if it is not running, wake it if idle."""
        if self._wake is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    def stop(self) -> None:
        """Cancel the loop (server shutdown); streams still open get no more tokens."""
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        assert self._wake is not None
        core = self.core
        step = None
        while True:
            if step is None:
                if not core.running and not core.waiting:
                    self._wake.clear()
                    await self._wake.wait()
                step = core.plan_step(time.perf_counter_ns())
                if step is None:
                    continue
                self._admitted(step)
            await sleep_until(step.end_ns)
            emitted, _ = core.finish_step()
            # plan the next step at the boundary, before the writes: writing to many streams
            # takes a while, and the model's timeline must not slip by that much every step
            following = core.plan_step(time.perf_counter_ns())
            for seq in emitted:
                try:
                    seq.sink.on_token(step.end_ns, seq, step.batch)
                except Exception:  # a bug in one stream must not stop every stream
                    seq.cancelled = True
                    _log.exception("reference endpoint: stream failed; cancelled it")
            step = following
            if step is not None:
                self._admitted(step)

    @staticmethod
    def _admitted(step: Step) -> None:
        for seq in step.admitted:
            seq.sink.on_admitted(step.start_ns)


async def sleep_until(deadline_ns: int, spin: bool = True) -> None:
    """Sleep on the monotonic timeline; the last stretch yields in a loop for precision."""
    delay = deadline_ns - time.perf_counter_ns()
    if delay > SPIN_NS or (not spin and delay > 0):
        await asyncio.sleep((delay - (SPIN_NS if spin else 0)) / 1e9)
    if spin:
        while time.perf_counter_ns() < deadline_ns:
            await asyncio.sleep(0)
