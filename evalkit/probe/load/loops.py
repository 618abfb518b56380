"""Load shapes: `closed_loop` (N workers, each sending its next request when the
previous one ends) and `open_loop` (Poisson arrivals; `t0` is the scheduled send time, so a
slow client cannot hide queueing)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Protocol

from evalkit.probe.plan.prompts import Prompt
from evalkit.records import RequestRecord

# --------------------------------------------------------------------------- load shapes

OnRecord = Callable[[RequestRecord], None]
NextPrompt = Callable[[], Prompt]


class Sender(Protocol):
    """What a load shape sends through (`evalkit.probe.client.stream.Prober`): named
    here, so a shape knows when to send and not how a stream is read."""

    #: seconds workers spent waiting after rejections and failures (`closed_loop` adds)
    paused_s: float

    async def stream(self, prompt: Prompt, phase: str, level: int | None,
                     scheduled_ns: int | None = None, *,
                     intended_ns: int | None = None,
                     after_send: Callable[[], None] | None = None) -> RequestRecord: ...

    def ended_ns(self, rec: RequestRecord) -> int | None: ...


async def closed_loop(prober: Sender, next_prompt: NextPrompt, on_record: OnRecord, *,
                      phase: str, level: int, workers: int, duration_s: float | None,
                      max_requests: int | None, reject_pause_s: float = 0.05,
                      stagger_s: float = 0.0005, max_pause_s: float = 2.0,
                      on_note: Callable[[str], None] | None = None,
                      min_requests: int = 0, overtime_s: float = 120.0,
                      settled: Callable[[], bool] | None = None,
                      stop: Callable[[], bool] | None = None,
                      undecided: Callable[[], bool] | None = None) -> None:
    """`workers` streams in flight: each sends its next request when the last one ends.

    New requests start until `duration_s` has passed or `max_requests` were started
    (whichever first), and, with `min_requests`, until that many were started too (a
    percentile claimed at this level needs them), for at most `overtime_s` past
    `duration_s` and only while `settled()` (when given) says the level is not already
    decided without them; requests in flight then finish (the drain), so no record is cut
    short by the phase ending. Past `duration_s` (and the floor), requests go on starting
    while `undecided()` (when given) asks for more to decide the level, within the same
    `overtime_s` and while the level is not `settled()`. No request starts once `stop()`
    (when given) says so. A
    worker turned away (429/503) waits what its Retry-After asked for (bounded), else
    `reject_pause_s`; one that failed before any content backs off, doubling from
    `reject_pause_s` up to `max_pause_s` while failures repeat: it still offers its load,
    without hammering a vendor in a loop (nor spinning the client's CPU on instant
    failures). The pauses are counted in `prober.paused_s`.
    A request that timed out without a single byte of content ("headers, then silence")
    ends the phase: every further request would cost the same timeout for nothing.
    Worker i starts i x `stagger_s` late (0.13 s for 256 workers): a herd of simultaneous
    first requests would stall the client's own loop for nothing.
    """
    begin = time.perf_counter()
    deadline = begin + duration_s if duration_s is not None else None
    hard = None if deadline is None else deadline + overtime_s
    started = 0
    silent = False

    def more() -> bool:
        if silent or (max_requests is not None and started >= max_requests) or (
                stop is not None and stop()):
            return False
        now = time.perf_counter()
        if deadline is None or now < deadline:
            return True
        if hard is None or now >= hard or (settled is not None and settled()):
            return False
        return started < min_requests or (undecided is not None and undecided())

    async def worker(i: int) -> None:
        nonlocal started, silent
        if i and stagger_s > 0:
            await asyncio.sleep(i * stagger_s)
        pause = reject_pause_s
        kept: list[RequestRecord] = []  # ended, not yet handed to on_record
        due: int | None = None  # when the next request is meant to leave (None: now)

        def keep() -> None:
            while kept:
                on_record(kept.pop(0))

        try:
            while more():
                started += 1
                # the last record is kept once the next request is out: a herd of streams
                # that ended together must not wait for each other's bookkeeping to send
                rec = await prober.stream(next_prompt(), phase, level, intended_ns=due,
                                          after_send=keep if kept else None)
                kept.append(rec)
                due = prober.ended_ns(rec)
                if rec.outcome == "ok" or rec.chunks:
                    pause = reject_pause_s
                    continue
                keep()
                if rec.outcome == "timeout" and not silent:
                    silent = True
                    if on_note is not None:
                        on_note(f"{phase}{f' level {level}' if level > 1 else ''}: a request "
                                f"timed out without any content ({rec.error}); no more are "
                                "sent in this phase, each would cost the same wait")
                    break
                wait = rec.retry_after_s if rec.retry_after_s is not None else pause
                if wait > 0:
                    prober.paused_s += wait
                    await asyncio.sleep(wait)
                    due = None  # the pause was meant: the next request is due after it
                if rec.outcome != "rejected" or rec.retry_after_s is None:
                    pause = min(max(pause, 0.001) * 2, max_pause_s)
        finally:
            keep()

    await asyncio.gather(*(worker(i) for i in range(workers)))


async def open_loop(prober: Sender, next_prompt: NextPrompt, on_record: OnRecord, *,
                    phase: str, rate: float, duration_s: float, seed: int = 0,
                    max_in_flight: int = 10_000) -> None:
    """Poisson arrivals at `rate` req/s for `duration_s`; t0 is each *scheduled* time."""
    rng = random.Random(seed)
    start = time.perf_counter_ns()
    end = start + int(duration_s * 1e9)
    tasks: set[asyncio.Task[None]] = set()
    sem = asyncio.Semaphore(max_in_flight)
    t = start

    async def one(at: int) -> None:
        async with sem:
            on_record(await prober.stream(next_prompt(), phase, None, scheduled_ns=at))

    while True:
        t += int(rng.expovariate(rate) * 1e9)
        if t >= end:
            break
        delay = (t - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one(t))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
