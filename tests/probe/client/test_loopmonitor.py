"""The loop monitor's sample store: the newest samples, exactly, in memory that never grows."""

from __future__ import annotations

import itertools
import random
import tracemalloc
from collections import deque

import pytest

from evalkit.probe.client.loopmonitor import LoopMonitor, Ring


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
