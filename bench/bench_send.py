"""Benchmark: where evalkit's TTFT error comes from, split against the server's own stamps.

The reference endpoint runs in its own process and logs, per request, when its event
loop's poll that reported the request's bytes began and returned (`poll_began_ns`,
`polled_ns`), when the loop handed them to the HTTP protocol (`arrived_ns`), when its
handler began (`received_ns`, where truth TTFT starts) and when it wrote the first token
(`first_write_ns`). The prober drives it with the real closed loop (`closed_loop`, each
worker sending its next request when its last one ends, every record appended to a real
`requests.jsonl`) and each request is joined to its truth line by its X-Request-ID. Our
TTFT minus the server's then splits exactly into

    send      t0 (our stamp: the bytes handed to the socket) -> the server's loop has them
              (`arrived_ns`), itself split into
      busy      the server's loop still busy with other work when they came (t0 -> poll)
      CPU wait  ready in the kernel inside the server's poll, its process waiting for a
                CPU (on loopback the kernel's own part is a few microseconds)
      queue     the loop's other ready callbacks first (poll return -> `arrived_ns`)
    server    `arrived_ns` -> the handler starts (HTTP parsing, task dispatch)
    receive   the server writes the first token -> our stamp of its arrival

and the send lag (our send stamp minus when the worker meant to send: when its previous
request ended) says how fast the next request of a herd leaves: when all the streams of
one decode step end together, the last of them to send again has waited for the others.
Only the send lag is the client's: every other part of the send side is the server's
process (busy, or not scheduled on a shared machine).

Per level it prints mean / p50 / p99 / max (ms) of each over all runs, the client's
self-check per run, and the machine. Run:
`.venv/bin/python bench/bench_send.py [levels] [rounds] [tokens] [runs] [--json FILE]`,
default `1,32,256 4 32 2` (each level sends rounds x streams requests per run, on a fresh
server; truth TTFT ~200 ms, 20 ms per token); `--json` also writes every request's parts
(ms), to pool runs made apart. Figures depend on the machine and on what else runs on
it: the load average is printed after each level.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_prober import cpu_model, machine  # this folder: run as bench/bench_*.py

from evalkit.prober import LoopMonitor, Prober, Target, closed_loop
from evalkit.prompts import count_tokens, synthetic
from evalkit.records import RequestRecord
from evalkit.reference import ReferenceServer
from evalkit.runstore import RunStore
from evalkit.selfcheck import judge_client, window_end, window_start
from evalkit.settings import profile_settings

#: a fixed-step engine: TTFT ~200 ms (overhead + prefill + one step), 20 ms per token
SERVER = {"request_overhead_ms": 175.0, "prefill_overhead_ms": 1.0, "decode_base_ms": 20.0,
          "decode_per_stream_ms": 0.0, "jitter_ms": 0.0, "max_batch": 4096}


#: the parts, in the order printed
NAMES = {"total": "TTFT error vs truth", "send": "send: t0 -> server loop has bytes",
         "busy": "  server loop busy (t0 -> its poll)", "cpu_wait": "  in its poll: CPU wait",
         "queue": "  poll -> our callback", "server": "server: bytes -> handler",
         "receive": "receive: write -> our stamp", "send_lag": "send lag: meant to send -> t0"}


async def _drive(srv: ReferenceServer, streams: int, rounds: int, tokens: int, out: Path
                 ) -> tuple[int, list[RequestRecord], dict[str, Any]]:
    target = Target(srv.base_url, srv.model, timeout_s=120)
    store = RunStore(out, {"bench": "send"})
    origin = time.perf_counter_ns()
    async with Prober(target, origin, f"s{streams}") as prober, LoopMonitor() as mon:
        await prober.clients.prepare(streams)  # connections open before the clock starts
        n = 0

        def prompt() -> Any:
            nonlocal n
            n += 1
            return synthetic(64, tokens, f"s{streams}-{n}")

        mark = window_start(mon, prober)
        await closed_loop(prober, prompt, store.append, phase="ramp", level=streams,
                          workers=streams, duration_s=None, max_requests=rounds * streams)
        check = judge_client(window_end(mon, prober, mark),
                             profile_settings("quick").client_check)
    store.close()
    return origin, store.records, check


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0, "mean": float("nan"), "p50": float("nan"), "p99": float("nan"),
                "max": float("nan")}
    a = np.array(values)
    return {"n": len(a), "mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def split(origin: int, recs: list[RequestRecord], truth: list[dict[str, Any]],
          parts: dict[str, list[float]]) -> None:
    """Add the error parts (ms) of every ok request joined to its truth line to `parts`."""
    by_id = {t["request_id"]: t for t in truth}
    for r in recs:
        t = by_id.get(r.id)
        if t is None or r.outcome != "ok" or r.ttft_s is None:
            continue
        t0 = origin + r.t0_s * 1e9
        first = t0 + r.ttft_s * 1e9
        parts["total"].append((first - t0 - (t["first_write_ns"] - t["received_ns"])) / 1e6)
        parts["receive"].append((first - t["first_write_ns"]) / 1e6)
        if t.get("arrived_ns") is not None:
            parts["send"].append((t["arrived_ns"] - t0) / 1e6)
            parts["server"].append((t["received_ns"] - t["arrived_ns"]) / 1e6)
        if t.get("polled_ns") is not None:
            began = max(t["poll_began_ns"], t0)
            parts["busy"].append((began - t0) / 1e6)
            parts["cpu_wait"].append((t["polled_ns"] - began) / 1e6)
            parts["queue"].append((t["arrived_ns"] - t["polled_ns"]) / 1e6)
        if r.send_lag_s is not None:
            parts["send_lag"].append(r.send_lag_s * 1e3)


def run_level(streams: int, rounds: int, tokens: int, runs: int, tmp: Path
              ) -> dict[str, Any]:
    """`runs` runs, each on a fresh server (no state carried over); every request's split."""
    parts: dict[str, list[float]] = {k: [] for k in NAMES}
    checks, requests, ok = [], 0, 0
    for run in range(runs):
        truth_log = tmp / f"truth-{streams}-{run}.jsonl"
        with ReferenceServer("gpu", SERVER, truth_log=truth_log) as srv:
            origin, recs, check = asyncio.run(_drive(srv, streams, rounds, tokens,
                                                     tmp / f"run-{streams}-{run}"))
            split(origin, recs, srv.truth(), parts)
        checks.append(check)
        requests += len(recs)
        ok += sum(r.outcome == "ok" for r in recs)
    return {"streams": streams, "requests": requests, "ok": ok, "parts": parts,
            "split": {k: _stats(v) for k, v in parts.items()}, "checks": checks,
            "load": os.getloadavg()[0]}


def main(argv: list[str]) -> int:
    """Run the levels and print the split; exit 0 (figures, not a pass/fail)."""
    out: Path | None = None
    if "--json" in argv:
        at = argv.index("--json")
        out, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2:]
    levels = [int(x) for x in (argv[0] if argv else "1,32,256").split(",")]
    rounds = int(argv[1]) if len(argv) > 1 else 4
    tokens = int(argv[2]) if len(argv) > 2 else 32
    runs = int(argv[3]) if len(argv) > 3 else 2
    count_tokens("warm up")
    print(machine())
    print(f"server: reference endpoint in its own process, TTFT ~200 ms, 20 ms per token, "
          f"{tokens} tokens; closed loop, {rounds} requests per stream, {runs} runs")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in levels:
            rows.append(run_level(n, rounds, tokens, runs, Path(tmp)))
    print(f"{'streams':>7} {'part (ms)':<36} {'mean':>7} {'p50':>7} {'p99':>7} {'max':>7}")
    for row in rows:
        for key, label in NAMES.items():
            s = row["split"][key]
            print(f"{row['streams']:>7} {label:<36} {s['mean']:>+7.2f} {s['p50']:>+7.2f} "
                  f"{s['p99']:>+7.2f} {s['max']:>+7.2f}")
        print(f"{'':>7} {row['ok']}/{row['requests']} ok; load average after "
              f"{row['load']:.2f}")
        for c in row["checks"]:
            print(f"{'':>7} client: CPU {c.get('cpu_fraction')}, loop lag p99 "
                  f"{(c.get('loop_lag_p99_s') or 0) * 1e3:.1f} ms, send lag "
                  f"{c.get('send_lag_fraction')} of the load, late reads "
                  f"{c.get('coalesced_fraction')}, client-bound {c['client_bound']} "
                  f"{c.get('client_bound_reasons') or ''}")
    if out is not None:
        out.write_text(json.dumps({"machine": f"{os.cpu_count()} cores, {cpu_model()}",
                                   "rows": rows}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
