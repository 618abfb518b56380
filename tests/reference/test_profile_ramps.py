"""Each profile degrades its own metric first under a closed-loop ramp, over real HTTP.

A small closed-loop httpx driver (workers start together, as a prober's do) runs the
quick suite's shape (256-token prompts, 32 output tokens) at concurrency 1 and at the
level where the profile is built to breach, and the result is judged with the ramp's
default thresholds: 2x TTFT p90, 2x per-token latency (TPOT) p90, 1% rejected.
The full 1..64 ramp is checked in virtual time in test_engine.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import numpy as np
import pytest

from evalkit.reference.server import ReferenceServer

PROMPT = " ".join(["the"] * 255)


@dataclass
class Level:
    """What the driver measured at one concurrency."""

    ttft_p90: float
    tpot_p90: float
    rejected: float
    n: int


async def _closed_loop(srv: ReferenceServer, workers: int, duration_s: float) -> Level:
    body = {"model": srv.model, "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 32, "ignore_eos": True, "stream": True}
    ttfts: list[float] = []
    tpots: list[float] = []
    outcomes: list[bool] = []
    deadline = time.perf_counter() + duration_s
    limits = httpx.Limits(max_connections=workers + 4)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                stamps: list[float] = []
                async with client.stream("POST", srv.base_url + "/chat/completions",
                                         json=body) as r:
                    if r.status_code == 429:
                        outcomes.append(False)
                        await r.aread()
                        await asyncio.sleep(0.01)
                        continue
                    async for data in r.aiter_raw():
                        if b'"content":" ' in data:
                            stamps.extend([time.perf_counter()] * data.count(b'"content":" '))
                outcomes.append(True)
                ttfts.append(stamps[0] - t0)
                tpots.append((stamps[-1] - stamps[0]) / (len(stamps) - 1))

        await asyncio.gather(*(worker() for _ in range(workers)))
    return Level(float(np.percentile(ttfts, 90)), float(np.percentile(tpots, 90)),
                 1 - sum(outcomes) / len(outcomes), len(ttfts))


def _ratios(srv: ReferenceServer, level: int, duration_s: float) -> dict[str, float]:
    base = asyncio.run(_closed_loop(srv, 1, 0.8))
    load = asyncio.run(_closed_loop(srv, level, duration_s))
    return {"ttft": load.ttft_p90 / base.ttft_p90, "itl": load.tpot_p90 / base.tpot_p90,
            "admission": load.rejected}


LIMITS = {"ttft": 2.0, "itl": 2.0, "admission": 0.01}


@pytest.mark.slow
@pytest.mark.parametrize(("profile", "metric", "level", "duration_s"), [
    ("gpu", "itl", 8, 2.0), ("headline", "itl", 4, 0.6), ("queueing", "ttft", 8, 0.6),
    ("admission", "admission", 8, 0.6)])
def test_profile_breaches_its_own_metric_first(
        reference: Callable[..., ReferenceServer], profile: str, metric: str, level: int,
        duration_s: float) -> None:
    """At the breach level the profile's metric is well past its limit, the others well
    inside theirs (so a prober's `first_degraded` names it without a coin toss)."""
    ratios = _ratios(reference(profile), level, duration_s)
    assert ratios[metric] > 1.15 * LIMITS[metric], ratios
    for other in set(LIMITS) - {metric}:
        assert ratios[other] < 0.9 * LIMITS[other], (other, ratios)
