"""The client's own event-loop lag and CPU while a phase runs, so a run can tell
when the client, not the vendor, set the pace (`evalkit.probe.client.selfcheck.judge_client`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from array import array
from collections.abc import Iterator, Sequence
from typing import Any


class Ring:
    """The newest `size` samples of one or more series, in arrays allocated once.

    A day-long soak must hold flat memory. A deque of floats grows ~32 bytes a sample up to
    its bound, one of (int, float) tuples ~120: at the loop monitor's 200 samples a second
    that was most of a soak's growth. Here the memory is taken at the start and never
    grows; the values are the same machine numbers (array codes 'd' for float, 'q' for a
    nanosecond stamp), so every figure read from them is unchanged.
    """

    __slots__ = ("_cols", "seen", "size")

    def __init__(self, size: int, codes: str = "d") -> None:
        self.size = size
        #: samples appended ever (the oldest are overwritten past `size`)
        self.seen = 0
        self._cols: list[array[Any]] = [array(c, bytes(array(c).itemsize * size))
                                        for c in codes]

    def __len__(self) -> int:
        return min(self.seen, self.size)

    def append(self, *values: float) -> None:
        """One sample: a value per series, in the order of `codes`."""
        i = self.seen % self.size
        for col, value in zip(self._cols, values, strict=True):
            col[i] = value
        self.seen += 1

    def last(self, k: int, series: int = 0) -> list[Any]:
        """The newest `k` values of one series (at most those kept), oldest first."""
        k = min(k, len(self))
        if k <= 0:
            return []
        col, end = self._cols[series], self.seen % self.size or self.size
        if end >= k:
            return col[end - k:end].tolist()
        return col[end - k:].tolist() + col[:end].tolist()

# --------------------------------------------------------------------------- self-check

class LoopMonitor:
    """Measures event-loop lag (timer overshoot) and process CPU, per window of the run."""

    #: the samples kept (10 minutes at 5 ms): a day-long soak must hold flat memory, so a
    #: window longer than that is judged on its last 10 minutes of loop lag
    MAX_SAMPLES = 120_000

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        #: (when the sleep began, ns; how late it woke, s), the newest MAX_SAMPLES
        self._lags = Ring(self.MAX_SAMPLES, "qd")
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
            self._lags.append(before, max(late, 0) / 1e9)

    def start_window(self) -> tuple[int, int, float]:
        """Begin a window (a phase or a level); windows may nest or overlap."""
        return (self._lags.seen, time.perf_counter_ns(), time.process_time())

    def end_window(self, mark: tuple[int, int, float]) -> dict[str, Any]:
        """Lag percentiles and CPU share (of one core) since `mark`."""
        seen0, wall0, cpu0 = mark
        wall = (time.perf_counter_ns() - wall0) / 1e9
        cpu = time.process_time() - cpu0
        # a sample belongs to the window its sleep began in: a block *before* the window
        # (e.g. judging the previous level) must not count against it
        k = self._lags.seen - seen0 + 1  # and the one whose sleep the mark fell in
        lags = sorted(lag for began, lag in zip(self._lags.last(k, 0), self._lags.last(k, 1),
                                                strict=True) if began >= wall0)
        return {"loop_lag_p50_s": _pct(lags, 0.5), "loop_lag_p99_s": _pct(lags, 0.99),
                "loop_lag_max_s": lags[-1] if lags else None, "lag_samples": len(lags),
                "cpu_fraction": round(cpu / wall, 4) if wall > 0 else None,
                "wall_s": round(wall, 4)}


def _pct(sorted_values: Sequence[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(int(q * len(sorted_values)), len(sorted_values) - 1)]


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the garbage collector off what existed before a run while the run measures.

    A full collection walks every tracked object: in a notebook or a long-lived process
    that has loaded pandas, a PDF renderer and earlier runs, that is a stall of hundreds
    of milliseconds on the thread that stamps and sends, landing on whatever the run was
    timing (seen: a trace replay's requests 0.23-0.33 s late in CI's long test process).
    `gc.freeze()` moves what exists now to a generation no collection scans (the
    reference endpoint does the same at start); the run's own garbage is still collected
    as it goes. Afterwards the heap is handed back to the collector, unless the caller
    had frozen it already (then it stays as the caller left it)."""
    ours = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if ours:
            gc.unfreeze()
