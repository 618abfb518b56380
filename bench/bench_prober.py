"""Benchmark: the prober's own ceiling on this machine, per process.

How many concurrent streams, and how many chunks per second, can one evalkit process
time within the accuracy the SPEC asks (chunk arrival within 2 ms of the server's write
at p50, 10 ms at p99)? The reference endpoint runs in its own process with its truth
log on, with a fixed decode step (so chunks/s = streams / step); this process drives it
with the real prober and compares every chunk's arrival with the server's write.

Per level it reports: streams that ended ok, chunks/s, client CPU (share of one core),
event-loop lag p99, share of late (coalesced) reads, error p50/p99/max (ms), and whether
the client's self-check called the level client-bound. It also runs the default httpx
socket reader at one level, to show what the stamping backend buys.

Run: `.venv/bin/python bench/bench_prober.py [streams,...] [step_ms] [tokens]`
     default `64,256,512,1024 50 40`. Numbers depend on the machine and on what else
     runs on it: run it on a quiet machine.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from truth import announce, arguments, chunk_errors  # this folder: run as bench/bench_*.py

from evalkit.probe.client.clients import Target
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.client.selfcheck import judge_client, window_end, window_start
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.plan.settings import profile_settings
from evalkit.reference.server import ReferenceServer


async def _drive(srv: ReferenceServer, streams: int, tokens: int, stamped: bool
                 ) -> tuple[int, list[Any], dict[str, Any], float]:
    target = Target(srv.base_url, srv.model, timeout_s=120, tag_requests=True)
    async with Prober(target, time.perf_counter_ns(), f"b{streams}", stamped=stamped) as p, \
            LoopMonitor() as mon:
        prompts = [synthetic(32, tokens, f"b{streams}-{i}") for i in range(streams)]
        await p.clients.prepare(streams)  # connections open before the clock starts

        async def one(i: int) -> Any:
            await asyncio.sleep(i * 0.0005)  # the suite's closed-loop stagger
            return await p.stream(prompts[i], "bench", streams)

        mark = window_start(mon, p)
        t = time.perf_counter()
        recs = await asyncio.gather(*(one(i) for i in range(streams)))
        wall = time.perf_counter() - t
        check = judge_client(window_end(mon, p, mark), profile_settings("quick").client_check)
        return p.origin_ns, list(recs), check, wall


def run_level(srv: ReferenceServer, streams: int, tokens: int, stamped: bool = True
              ) -> dict[str, Any]:
    """Drive `streams` concurrent streams once; compare every chunk with the truth log."""
    origin, recs, check, wall = asyncio.run(_drive(srv, streams, tokens, stamped))
    errs = chunk_errors(origin, recs, srv.truth())
    e = np.array(errs) if errs else np.array([np.nan])
    chunks = sum(len(r.chunks) for r in recs)
    p50, p99 = float(np.percentile(np.abs(e), 50)), float(np.percentile(e, 99))
    return {"streams": streams, "ok": sum(r.outcome == "ok" for r in recs),
            "chunks_per_s": chunks / wall, "cpu": check.get("cpu_fraction"),
            "lag_p99_ms": (check.get("loop_lag_p99_s") or 0) * 1000,
            "late_reads": check.get("coalesced_fraction"),
            "err_p50_ms": p50, "err_p99_ms": p99, "err_max_ms": float(np.max(e)),
            "within": p50 <= 2.0 and p99 <= 10.0, "client_bound": check["client_bound"],
            "stamped": stamped}


def main(argv: list[str]) -> int:
    """Run the levels; print one table; exit 0 (a ceiling is a finding, not a failure)."""
    levels, (step, count) = arguments(argv, "64,256,512,1024 50 40")
    step_ms, tokens = float(step), int(count)
    announce(f"decode step {step_ms:g} ms (chunks/s = streams x {1000 / step_ms:g}), "
             f"{tokens} tokens per stream")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {"decode_base_ms": step_ms, "decode_per_stream_ms": 0.0,
                     "request_overhead_ms": 5.0, "prefill_overhead_ms": 0.5,
                     "max_batch": 4096, "jitter_ms": 0.0}
        with ReferenceServer("gpu", overrides, truth_log=Path(tmp) / "truth.jsonl") as srv:
            for n in levels:
                rows.append(run_level(srv, n, tokens))
            rows.append(run_level(srv, levels[min(1, len(levels) - 1)], tokens,
                                  stamped=False))
    head = (f"{'streams':>8} {'reader':>8} {'ok':>6} {'chunks/s':>9} {'cpu':>5} "
            f"{'lag p99':>8} {'late':>6} {'err p50':>8} {'err p99':>8} {'err max':>8}  verdict")
    print(head)
    for r in rows:
        verdict = ("within 2/10 ms" if r["within"] else "OUT of bounds") + (
            "; self-check: client-bound" if r["client_bound"] else "")
        late = "-" if r["late_reads"] is None else f"{r['late_reads']:.1%}"
        print(f"{r['streams']:>8} {'stamped' if r['stamped'] else 'httpx':>8} {r['ok']:>6} "
              f"{r['chunks_per_s']:>9.0f} {r['cpu'] or 0:>5.2f} {r['lag_p99_ms']:>6.1f}ms "
              f"{late:>6} {r['err_p50_ms']:>6.2f}ms {r['err_p99_ms']:>6.2f}ms "
              f"{r['err_max_ms']:>6.1f}ms  {verdict}")
    good = [r for r in rows if r["stamped"] and r["within"] and r["ok"] == r["streams"]]
    if good:
        best = max(good, key=lambda r: r["streams"])
        print(f"ceiling (one process, this machine, now): {best['streams']} concurrent "
              f"streams, {best['chunks_per_s']:.0f} chunks/s timed within 2 ms p50 / 10 ms p99")
    else:
        print("ceiling: no level was timed within bounds on this machine right now")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
