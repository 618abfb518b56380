"""The client's own event-loop lag and CPU while a phase runs, so a run can tell
when the client, not the vendor, set the pace (`evalkit.probe.selfcheck.judge_client`)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

# --------------------------------------------------------------------------- self-check

class LoopMonitor:
    """Measures event-loop lag (timer overshoot) and process CPU, per window of the run."""

    #: the samples kept (10 minutes at 5 ms): a day-long soak must hold flat memory, so a
    #: window longer than that is judged on its last 10 minutes of loop lag
    MAX_SAMPLES = 120_000

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        #: (when the sleep began, ns; how late it woke, s), the newest MAX_SAMPLES
        self._lags: deque[tuple[int, float]] = deque(maxlen=self.MAX_SAMPLES)
        self._seen = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopMonitor:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        interval_ns = int(self.interval_s * 1e9)
        while True:
            before = time.perf_counter_ns()
            await asyncio.sleep(self.interval_s)
            late = time.perf_counter_ns() - before - interval_ns
            self._lags.append((before, max(late, 0) / 1e9))
            self._seen += 1

    def start_window(self) -> tuple[int, int, float]:
        """Begin a window (a phase or a level); windows may nest or overlap."""
        return (self._seen, time.perf_counter_ns(), time.process_time())

    def end_window(self, mark: tuple[int, int, float]) -> dict[str, Any]:
        """Lag percentiles and CPU share (of one core) since `mark`."""
        seen0, wall0, cpu0 = mark
        wall = (time.perf_counter_ns() - wall0) / 1e9
        cpu = time.process_time() - cpu0
        # a sample belongs to the window its sleep began in: a block *before* the window
        # (e.g. judging the previous level) must not count against it
        recent = itertools.islice(self._lags, max(len(self._lags) - (self._seen - seen0) - 1, 0),
                                  None)
        lags = sorted(lag for began, lag in recent if began >= wall0)
        return {"loop_lag_p50_s": _pct(lags, 0.5), "loop_lag_p99_s": _pct(lags, 0.99),
                "loop_lag_max_s": lags[-1] if lags else None, "lag_samples": len(lags),
                "cpu_fraction": round(cpu / wall, 4) if wall > 0 else None,
                "wall_s": round(wall, 4)}


def _pct(sorted_values: Sequence[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(int(q * len(sorted_values)), len(sorted_values) - 1)]
