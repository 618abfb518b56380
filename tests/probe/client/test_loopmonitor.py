"""The loop monitor's sample store: the newest samples, exactly, in memory that never grows;
and a run's frozen heap: no full collection walks the caller's objects while it measures."""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
import time
import tracemalloc
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.client.loopmonitor import LoopMonitor, Ring, frozen_heap
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import arun_probe, run_probe


@pytest.mark.parametrize("size", [1, 3, 10])
def test_a_ring_keeps_what_a_bounded_deque_kept(size: int) -> None:
    rng = random.Random(size)
    ring, kept = Ring(size, "qd"), deque(maxlen=size)  # type: ignore[var-annotated]
    for n in range(4 * size + 3):
        stamp, value = rng.randrange(10**18), rng.random()
        ring.append(stamp, value)
        kept.append((stamp, value))
        assert len(ring) == len(kept) and ring.seen == n + 1
        for k in range(size + 3):
            want = list(itertools.islice(kept, max(len(kept) - k, 0), None))
            assert list(zip(ring.last(k, 0), ring.last(k, 1), strict=True)) == want


def test_its_samples_take_no_memory_beyond_what_it_took_at_the_start() -> None:
    """4 minutes of a soak at 200 samples a second: no growth (a deque of (stamp, lag)
    tuples grew ~120 bytes a sample, ~6 MB here)."""
    tracemalloc.start()
    try:
        ring = LoopMonitor()._lags
        before = tracemalloc.get_traced_memory()[0]
        for i in range(48_000):
            ring.append(10**12 + i, i / 1e6)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024
    assert ring.last(2, 1) == [47_998 / 1e6, 47_999 / 1e6]


class _Collects:
    """A run's progress that, at its first record, runs a full collection and times it."""

    def __init__(self) -> None:
        self.took_s: float | None = None
        self.frozen: int | None = None

    def record(self, rec: object) -> None:
        if self.took_s is None:
            self.frozen = gc.get_freeze_count()
            began = time.perf_counter()
            gc.collect()
            self.took_s = time.perf_counter() - began

    def phase(self, *args: object) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.mark.parametrize("on_its_loop", [False, True], ids=["run_probe", "arun_probe"])
def test_a_full_collection_mid_run_does_not_walk_the_callers_heap(
        reference: Callable[..., Any], tmp_path: Path, on_its_loop: bool) -> None:
    """A caller holding a million objects (a notebook with pandas and earlier runs): a
    full collection during the run walks the run's own objects only (the caller's heap is
    frozen while it measures), and the heap goes back to the collector after; on the
    caller's own loop (`arun_probe`, a notebook's way) as well."""
    srv = reference("gpu", mode="thread")
    held = [[i] for i in range(1_000_000)]
    began = time.perf_counter()
    gc.collect()
    unfrozen_s = time.perf_counter() - began  # what one full collection costs this heap
    assert gc.get_freeze_count() == 0
    seen = _Collects()
    config = ProbeConfig(srv.base_url, srv.model, phases=("connect",),
                         overrides={"connect": {"rtt_samples": 2}})
    if on_its_loop:
        asyncio.run(arun_probe(config, tmp_path / "run", seen))
    else:
        run_probe(config, tmp_path / "run", seen)
    assert seen.frozen is not None and seen.frozen >= len(held)
    assert seen.took_s is not None and seen.took_s < unfrozen_s / 4, (seen.took_s, unfrozen_s)
    assert gc.get_freeze_count() == 0  # handed back


def test_a_heap_the_caller_froze_stays_frozen() -> None:
    gc.freeze()
    try:
        with frozen_heap():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
