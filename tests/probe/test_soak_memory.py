"""What a soak keeps per request: nothing. Its records are on disk (`RunStore`), its
samples in rings allocated once (`loopmonitor.Ring`), the vendor's pages in the scrape log
(tests/analysis/test_vendor_metrics.py); and a finished request leaves no garbage that
only the cyclic collector frees, whose sawtooth a long soak's heap kept."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic


def test_a_finished_request_leaves_nothing_for_the_cyclic_collector(reference: Any) -> None:
    """160 requests, 4 at a time, with the cyclic collector off: what it then finds is
    what refcounting could not free. httpx binds a streamed response and its body to each
    other; left so, a soak left ~13 objects a request (the response, its body, the
    request, their headers) in the collector's oldest generation, freed only when a
    quarter of the heap waited there."""
    srv = reference(mode="thread", request_overhead_ms=1, decode_base_ms=1)

    async def run() -> int:
        target = Target(srv.base_url, srv.model, timeout_s=10)
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            await prober.stream(synthetic(64, 4, "warm"), "soak", 4)  # connections, caches
            gc.collect()
            gc.disable()
            try:
                for i in range(40):
                    recs = await asyncio.gather(*(
                        prober.stream(synthetic(64, 4, f"t-{i}-{j}"), "soak", 4)
                        for j in range(4)))
                    assert all(r.outcome == "ok" for r in recs)
                return gc.collect()
            finally:
                gc.enable()

    assert asyncio.run(run()) < 40


def test_counting_ever_new_chunks_holds_a_bounded_cache() -> None:
    """A long soak against a real vendor meets ever rarer chunk texts: the token counts of
    short chunks are cached, and the cache, not the soak's length, bounds what they hold
    (40,000 distinct chunks: under 3 MB; ~6 MB when 65,536 were kept)."""
    import tracemalloc

    from evalkit.probe.plan.prompts import SHORT_COUNTS_KEPT, _count_short, count_tokens

    count_tokens("the encoding loaded")
    _count_short.cache_clear()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(40_000):
            count_tokens(f" chunk {i}")
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(
            before, "filename"))
    finally:
        tracemalloc.stop()
        _count_short.cache_clear()
    assert _count_short.cache_info().maxsize == SHORT_COUNTS_KEPT
    assert grown < 3_000_000, grown
