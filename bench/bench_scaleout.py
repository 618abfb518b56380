"""Benchmark: one process's ceiling vs the same levels split over Ray actors (`--ray auto`).

The reference endpoint runs in its own process with its truth log on and a fixed decode
step (chunks/s = streams / step). Each level is driven three ways with the code the suite
runs (`evalkit.probe.load.shard.shard_level`, a closed loop for a fixed time):

- one process on asyncio's own event loop (the default);
- one process on uvloop (is the per-process ceiling higher on it?);
- `--ray auto` with 2 actors (`evalkit.probe.load.scaleout.RayPool.run_level`), records put on the
  driver's timeline with each actor's measured clock offset.

Per level and way it reports: requests ended ok, chunks/s timed, the worst client CPU and
loop lag of any process, whether the self-check called it client-bound, and every chunk's
arrival against the server's write (|error| p50, error p99, ms; and the TTFT error mean
and p99). Within 2 ms p50 / 10 ms p99 is the accuracy the SPEC asks.

Run: `.venv/bin/python bench/bench_scaleout.py [streams,...] [seconds] [step_ms] [tokens]`
     default `256,512,1024 6 50 40`; needs `pip install 'evalkit[ray]' uvloop`.
     Numbers depend on the machine and what else runs on it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from truth import announce, arguments, chunk_errors, joined

from evalkit.probe.load.shard import ShardTask, shard_level
from evalkit.probe.plan.settings import profile_settings
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer


def _task(srv: ReferenceServer, streams: int, seconds: float, tokens: int, origin_ns: int,
          start_ns: int, shard: int = 0, shards: int = 1) -> ShardTask:
    from evalkit.probe.client.clients import Target

    target = Target(srv.base_url, srv.model, timeout_s=120, tag_requests=True)
    return ShardTask(target, origin_ns, "bench",
                     shard, shards, "ramp", streams, seconds, start_ns, 32, tokens,
                     client_limits=profile_settings("quick").client_check)


def one_process(srv: ReferenceServer, streams: int, seconds: float, tokens: int,
                loop: str) -> tuple[int, list[RequestRecord], list[dict[str, Any]], float]:
    """The level in this process, on asyncio's loop or uvloop's."""
    origin = time.perf_counter_ns()
    task = _task(srv, streams, seconds, tokens, origin, origin + 200_000_000)
    factory = None
    if loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    t = time.perf_counter()
    with asyncio.Runner(loop_factory=factory) as runner:
        result = runner.run(shard_level(task))
    return origin, list(result.records), [result.check], time.perf_counter() - t


def on_ray(pool: Any, srv: ReferenceServer, streams: int, seconds: float, tokens: int
           ) -> tuple[int, list[RequestRecord], list[dict[str, Any]], float]:
    """The level split over the pool's actors, as `evalkit probe --ray` runs it."""
    origin = time.perf_counter_ns()
    records: list[RequestRecord] = []

    def make(shard: int, shards: int, offset_ns: int, start_ns: int) -> ShardTask:
        return _task(srv, streams, seconds, tokens, origin + offset_ns, start_ns, shard, shards)

    t = time.perf_counter()
    reports, lost = asyncio.run(pool.run_level(make, records.append, streams))
    assert not lost, lost
    return origin, records, [r["check"] for r in reports], time.perf_counter() - t


def _held_rate(recs: list[RequestRecord], seconds: float) -> float:
    """Chunks/s while the level was held: from its first send, for its hold time."""
    if not recs:
        return 0.0
    start = min(r.t0_s for r in recs)
    times = np.array([r.t0_s + off for r in recs for off, _ in r.chunks])
    return float(((times >= start) & (times < start + seconds)).sum()) / seconds


def score(srv: ReferenceServer, way: str, streams: int, seconds: float, origin: int,
          recs: list[RequestRecord], checks: list[dict[str, Any]], wall: float
          ) -> dict[str, Any]:
    truth = srv.truth()
    errs = chunk_errors(origin, recs, truth)
    ttft = [(t0 + r.ttft_s * 1e9 - t["first_write_ns"]) / 1e6
            for r, t, t0 in joined(origin, recs, truth) if r.ttft_s is not None]
    e = np.array(errs) if errs else np.array([np.nan])
    tt = np.array(ttft) if ttft else np.array([np.nan])
    p50, p99 = float(np.percentile(np.abs(e), 50)), float(np.percentile(e, 99))
    return {"way": way, "streams": streams, "ok": sum(r.outcome == "ok" for r in recs),
            "chunks_per_s": _held_rate(recs, seconds), "wall_s": wall,
            "cpu": max(c.get("cpu_fraction") or 0 for c in checks),
            "lag_p99_ms": max(c.get("loop_lag_p99_s") or 0 for c in checks) * 1000,
            "bound": any(c.get("client_bound") for c in checks),
            "err_p50": p50, "err_p99": p99, "ttft_mean": float(np.mean(tt)),
            "ttft_p99": float(np.percentile(tt, 99)), "within": p50 <= 2.0 and p99 <= 10.0}


def main(argv: list[str]) -> int:
    """Each level three ways; one table; exit 0 (a ceiling is a finding, not a failure)."""
    levels, (hold, step, count) = arguments(argv, "256,512,1024 6 50 40")
    seconds, step_ms, tokens = float(hold), float(step), int(count)
    announce(f"decode step {step_ms:g} ms (chunks/s = streams x {1000 / step_ms:g}), "
             f"{tokens} tokens per request, each level held {seconds:g} s")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from evalkit.probe.load.scaleout import RayPool

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {"decode_base_ms": step_ms, "decode_per_stream_ms": 0.0,
                     "request_overhead_ms": 5.0, "prefill_overhead_ms": 0.5,
                     "max_batch": 4096, "jitter_ms": 0.0}
        with ReferenceServer("gpu", overrides, truth_log=Path(tmp) / "truth.jsonl") as srv, \
                RayPool("auto", 2) as pool:
            for n in levels:
                for way in ("asyncio", "uvloop"):
                    rows.append(score(srv, f"1 process, {way}", n, seconds,
                                      *one_process(srv, n, seconds, tokens, way)))
                rows.append(score(srv, "ray auto, 2 actors", n, seconds,
                                  *on_ray(pool, srv, n, seconds, tokens)))
    print(f"{'streams':>7} {'way':<20} {'ok':>6} {'chunks/s':>9} {'cpu':>5} {'lag p99':>8} "
          f"{'err p50':>8} {'err p99':>8} {'ttft err mean/p99':>18}  verdict")
    for r in rows:
        verdict = ("within 2/10 ms" if r["within"] else "OUT of bounds") + (
            "; self-check: client-bound" if r["bound"] else "")
        print(f"{r['streams']:>7} {r['way']:<20} {r['ok']:>6} {r['chunks_per_s']:>9.0f} "
              f"{r['cpu']:>5.2f} {r['lag_p99_ms']:>6.1f}ms {r['err_p50']:>6.2f}ms "
              f"{r['err_p99']:>6.2f}ms {r['ttft_mean']:>+8.2f}/{r['ttft_p99']:>+7.2f}ms  "
              f"{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
