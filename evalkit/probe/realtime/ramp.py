"""Calls under load: levels of concurrent calls, closed loop, each watched by the client's
self-check, for `evalkit probe --api openai-realtime` and `--api gemini-live`
(`evalkit.probe.realtime.voicerun` runs it and writes the run up); `run_ramp` hands back
one frozen `LevelRun` a level.

A level of c keeps c calls in flight: c slots, each starting a new call when its last one
ends, until the level has run `duration_s` and `min_turns` turns have ended (bounded at
three times the duration); the calls in flight then finish. Each turn's record goes to
`emit` as its call ends, so a run cut short keeps what it measured.

The client checks itself over each level: its event loop's lag (`LoopMonitor`), its CPU,
and the frames' pace (the latest any frame of a turn left after its tick). A level where
the loop lagged past `VoiceClientLimits.loop_lag_p99_s`, the process took a core, or the
frames left a frame late at the p99 is client-bound: a vendor's pause cannot be judged
by a client that paused itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalkit.errors import UsageError
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.realtime.session import Call, CallPlan
from evalkit.voice.records import TurnRecord

#: the least time between the starts of a slot's calls after one that failed
REDIAL_S = 1.0
#: a level's first calls start spread over this (at most a quarter of the level's time)
ARRIVALS_S = 1.0


@dataclass(frozen=True)
class VoiceClientLimits:
    """When the client, not the vendor, set a call's rhythm."""

    #: event-loop lag p99: a frame's tick is 20 ms, so the loop must keep time to a few
    loop_lag_p99_s: float = 0.010
    #: the process's share of one core
    cpu_fraction: float = 0.90
    #: frames late past their tick, p99 over the level's turns, in frames
    pace_late_frames: float = 1.0


@dataclass(frozen=True)
class LevelRun:
    """One level of concurrent calls as it ran."""

    concurrency: int
    calls: int
    records: tuple[TurnRecord, ...]
    wall_s: float
    loop_lag_p99_s: float | None
    cpu_fraction: float | None
    #: p99 over the level's turns of the latest frame's lateness (s)
    pace_late_p99_s: float | None
    #: why the client was the bottleneck (empty: it was not)
    client_bound: tuple[str, ...]

    @property
    def cpu_per_call(self) -> float | None:
        """The client's share of a core per concurrent call."""
        return None if self.cpu_fraction is None else self.cpu_fraction / self.concurrency


async def run_level(plan: CallPlan, concurrency: int, duration_s: float, min_turns: int,
                    emit: Callable[[TurnRecord], None], monitor: LoopMonitor,
                    first_call: int = 0,
                    limits: VoiceClientLimits | None = None) -> LevelRun:
    """Keep `concurrency` calls in flight for `duration_s` (and `min_turns` turns)."""
    limits = limits or VoiceClientLimits()
    records: list[TurnRecord] = []
    began = time.monotonic()
    hard_end = began + 3 * duration_s
    numbers = iter(range(first_call, first_call + 1_000_000))

    def keep(record: TurnRecord) -> None:
        records.append(record)
        emit(record)

    def more() -> bool:
        now = time.monotonic()
        return now < hard_end and (now < began + duration_s or len(records) < min_turns)

    async def slot(k: int) -> None:
        # calls of a level arrive spread over ARRIVALS_S, as a phone system's do: 64
        # handshakes in one instant held every first frame ~200 ms late (client-bound)
        await asyncio.sleep(k * min(ARRIVALS_S, duration_s / 4) / concurrency)
        while more():
            start, before = time.monotonic(), len(records)
            await Call(plan, next(numbers), concurrency, keep).run()
            if not any(r.outcome == "ok" for r in records[before:]):
                # a refused or failed call: the next one waits, as a caller redials,
                # so a vendor that refuses at once is not hammered by our loop
                await asyncio.sleep(max(0.0, REDIAL_S - (time.monotonic() - start)))

    mark = monitor.start_window()
    await asyncio.gather(*(slot(k) for k in range(concurrency)))
    check = monitor.end_window(mark)
    late = sorted(r.pace_late_max_s for r in records if r.pace_late_max_s is not None)
    pace_p99 = late[min(int(0.99 * len(late)), len(late) - 1)] if late else None
    lag, cpu = check.get("loop_lag_p99_s"), check.get("cpu_fraction")
    bound = []
    if lag is not None and lag > limits.loop_lag_p99_s:
        bound.append(f"event-loop lag p99 {lag * 1000:.1f} ms > "
                     f"{limits.loop_lag_p99_s * 1000:g} ms")
    if cpu is not None and cpu > limits.cpu_fraction:
        bound.append(f"CPU {cpu:.0%} of a core")
    if pace_p99 is not None and pace_p99 > limits.pace_late_frames * plan.frame_ms / 1000:
        bound.append(f"frames {pace_p99 * 1000:.0f} ms late at the p99")
    return LevelRun(concurrency=concurrency, calls=len({r.call for r in records}),
                    records=tuple(records), wall_s=round(time.monotonic() - began, 4),
                    loop_lag_p99_s=lag, cpu_fraction=cpu, pace_late_p99_s=pace_p99,
                    client_bound=tuple(bound))


async def run_ramp(plan: CallPlan, levels: Sequence[int], duration_s: float,
                   min_turns: int, emit: Callable[[TurnRecord], None],
                   limits: VoiceClientLimits | None = None) -> list[LevelRun]:
    """Every level in turn (the whole list: which degrades first is analysis's to say)."""
    if not levels or any(c < 1 for c in levels) or duration_s <= 0 or min_turns < 0:
        raise UsageError("levels of at least one call, a positive duration")
    runs: list[LevelRun] = []
    async with LoopMonitor() as monitor:
        for concurrency in levels:
            first = sum(r.calls for r in runs)
            runs.append(await run_level(plan, concurrency, duration_s, min_turns,
                                        emit, monitor, first_call=first, limits=limits))
    return runs
