"""Benchmark: where evalkit's TTFT error comes from, split against the server's own stamps.

The reference endpoint runs in its own process and logs, per request, the kernel's
receive stamp of the request's bytes (`kernel_ns`, SO_TIMESTAMPNS: on loopback it is
taken inside our `send`), when its event loop's poll that reported them began and
returned (`poll_began_ns`, `polled_ns`), when the loop handed them to the HTTP protocol
(`arrived_ns`), when its handler began (`received_ns`, where truth TTFT starts) and when
it wrote the first token (`first_write_ns`). The prober drives it with the real closed
loop (`closed_loop`, each worker sending its next request when its last one ends, every
record appended to a real `requests.jsonl`) and each request is joined to its truth line
by its X-Request-ID. Our TTFT minus the server's then splits exactly into

    send      t0 (our stamp: the bytes handed to the socket) -> the server's loop has them
              (`arrived_ns`), itself split into
      t0 -> kernel   our send syscall and loopback: the client's part, by the kernel's word
      kernel -> loop the server's process alone, split into
        busy      its loop still busy with other work when the bytes came (-> its poll)
        CPU wait  ready in the kernel inside the server's poll, its process waiting for a
                  CPU (on a shared machine: other jobs, or us)
        queue     the loop's other ready callbacks first (poll return -> `arrived_ns`)
    server    `arrived_ns` -> the handler starts (HTTP parsing, task dispatch)
    receive   the server writes the first token -> our stamp of its arrival

and, beside it, the error against a TTFT that starts when the kernel had the request
(`kernel_ns`) instead of the handler: what is left of our error once the server's own
delays are not counted. The send lag (our send stamp minus when the worker meant to send:
when the bytes that ended its previous request arrived) says how fast the next request
of a herd leaves: when all the streams of one decode step end together, the last of them
to send again has waited for the others. It is the client's, but not in the TTFT error.

`--where` runs each level with the client and the server placed differently (interleaved,
so each placement sees the same load): `shared` (both on every core, with whatever else
runs there), `pinned` (each on a core of its own, as a vendor's server has its own
machine), `nice` (the server at nice -10, root only: ahead of the other jobs),
`pinned-nice`, and `nice-both` (the client at nice -10 too: as on a machine where only
the two of them run). Per level and placement it prints mean / p50 / p99 / max (ms) of
each part over all runs, the client's self-check per run, and what the cores did
meanwhile: busy in all, and how much of it was the server, the client and everything
else. Run:
`.venv/bin/python bench/bench_send.py [levels] [rounds] [tokens] [runs] [--where P,...]
[--json FILE] [--http lean|httpcore]`, default `1,32,256 4 32 2 --where shared` (each
level sends rounds x streams requests per run, on a fresh server; truth TTFT ~200 ms, 20
ms per token);
`--json` also writes every request's parts (ms), to pool runs made apart. Figures depend
on the machine and on what else runs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# this folder: run as bench/bench_*.py
from truth import announce, arguments, cpu_model, joined, stats

from evalkit.probe.client.clients import Target
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.client.selfcheck import judge_client, window_end, window_start
from evalkit.probe.client.stream import Prober
from evalkit.probe.load.loops import closed_loop
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.plan.settings import profile_settings
from evalkit.probe.wire import http11
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer
from evalkit.rundir.store import RunStore

#: a fixed-step engine: TTFT ~200 ms (overhead + prefill + one step), 20 ms per token
SERVER = {"request_overhead_ms": 175.0, "prefill_overhead_ms": 1.0, "decode_base_ms": 20.0,
          "decode_per_stream_ms": 0.0, "jitter_ms": 0.0, "max_batch": 4096}


#: the parts, in the order printed
NAMES = {"total": "TTFT error vs truth", "send": "send: t0 -> server loop has bytes",
         "kernel": "  t0 -> the kernel has them", "woke": "  kernel -> server loop has them",
         "busy": "    server loop busy (-> its poll)", "cpu_wait": "    in its poll: CPU wait",
         "queue": "    poll -> our callback", "server": "server: bytes -> handler",
         "receive": "receive: write -> our stamp",
         "vs_kernel": "TTFT error vs kernel arrival",
         "send_lag": "send lag: meant to send -> t0"}

#: where the client and the server run: sharing both cores with every other job (as
#: the suite's own tests do); each on its own core, as a vendor's server has its own
#: machine ("pinned"); the server at a higher priority than the other jobs ("nice",
#: root only); both ("pinned-nice"); or the server and the client ahead of the other
#: jobs ("nice-both"), as on a machine where only the two of them run
PLACES = ("shared", "pinned", "nice", "pinned-nice", "nice-both")
NICE = -10


def _renice(pid: int, nice: int, how: str) -> None:
    """Every thread of process `pid` at `nice`."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.setpriority(os.PRIO_PROCESS, int(task.name), nice)
        except ProcessLookupError:
            pass  # a thread that ended meanwhile
        except PermissionError:
            raise SystemExit(f"--where {how}: raising a priority needs root "
                             "(CAP_SYS_NICE)") from None


def place(pid: int | None, how: str) -> None:
    """Put the server process (every thread of it) and this one where `how` says;
    `place(None, "shared")` puts this process back (every core, its usual priority)."""
    cores = sorted(os.sched_getaffinity(0) | set(range(os.cpu_count() or 1)))
    os.sched_setaffinity(0, cores)
    if os.getpriority(os.PRIO_PROCESS, 0) != 0:
        _renice(os.getpid(), 0, how)
    if how == "shared" or pid is None:
        return
    if how.startswith("pinned") and len(cores) > 1:
        os.sched_setaffinity(0, {cores[0]})
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(task.name), {cores[1]})
    if "nice" in how:
        _renice(pid, NICE, how)
    if how == "nice-both":
        _renice(os.getpid(), NICE, how)


def _cpu_times(pid: int | None) -> tuple[float, float, float]:
    """(machine busy, machine total, the server process's) CPU time so far, in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8]) / tick
    busy = total - (fields[3] + fields[4]) / tick  # all but idle and iowait
    server = 0.0
    if pid is not None:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        server = (int(stat[11]) + int(stat[12])) / tick  # utime, stime
    return busy, total, server


async def _drive(srv: ReferenceServer, streams: int, rounds: int, tokens: int, out: Path
                 ) -> tuple[int, list[RequestRecord], dict[str, Any]]:
    target = Target(srv.base_url, srv.model, timeout_s=120, tag_requests=True)
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


def split(origin: int, recs: list[RequestRecord], truth: list[dict[str, Any]],
          parts: dict[str, list[float]]) -> None:
    """Add the error parts (ms) of every ok request joined to its truth line to `parts`."""
    for r, t, t0 in joined(origin, recs, truth):
        if r.ttft_s is None:
            continue
        first = t0 + r.ttft_s * 1e9
        parts["total"].append((first - t0 - (t["first_write_ns"] - t["received_ns"])) / 1e6)
        parts["receive"].append((first - t["first_write_ns"]) / 1e6)
        if t.get("arrived_ns") is not None:
            parts["send"].append((t["arrived_ns"] - t0) / 1e6)
            parts["server"].append((t["received_ns"] - t["arrived_ns"]) / 1e6)
        ready = t0  # when the bytes were there for the server to read
        if t.get("kernel_ns") is not None:
            ready = t["kernel_ns"]
            parts["kernel"].append((ready - t0) / 1e6)
            parts["woke"].append((t["arrived_ns"] - ready) / 1e6)
            parts["vs_kernel"].append((first - t0 - (t["first_write_ns"] - ready)) / 1e6)
        if t.get("polled_ns") is not None:
            began = max(t["poll_began_ns"], ready)
            parts["busy"].append((began - ready) / 1e6)
            parts["cpu_wait"].append((t["polled_ns"] - began) / 1e6)
            parts["queue"].append((t["arrived_ns"] - t["polled_ns"]) / 1e6)
        if r.send_lag_s is not None:
            parts["send_lag"].append(r.send_lag_s * 1e3)


def run_level(streams: int, rounds: int, tokens: int, runs: int, tmp: Path,
              where: str = "shared") -> dict[str, Any]:
    """`runs` runs, each on a fresh server (no state carried over); every request's split,
    and what the machine's cores did meanwhile (ours, the server's, everyone else's)."""
    parts: dict[str, list[float]] = {k: [] for k in NAMES}
    checks, requests, ok, cores = [], 0, 0, []
    for run in range(runs):
        truth_log = tmp / f"truth-{streams}-{run}.jsonl"
        with ReferenceServer("gpu", SERVER, truth_log=truth_log) as srv:
            place(srv.pid, where)
            busy0, total0, server0 = _cpu_times(srv.pid)
            client0 = time.process_time()
            try:
                origin, recs, check = asyncio.run(_drive(srv, streams, rounds, tokens,
                                                         tmp / f"run-{streams}-{run}"))
            finally:
                place(None, "shared")
            busy1, total1, server1 = _cpu_times(srv.pid)
            wall = (total1 - total0) / (os.cpu_count() or 1)
            used = {"machine": (busy1 - busy0) / wall, "server": (server1 - server0) / wall,
                    "client": (time.process_time() - client0) / wall}
            used["others"] = max(used["machine"] - used["server"] - used["client"], 0.0)
            cores.append(used)
            split(origin, recs, srv.truth(), parts)
        checks.append(check)
        requests += len(recs)
        ok += sum(r.outcome == "ok" for r in recs)
    return {"streams": streams, "where": where, "requests": requests, "ok": ok,
            "parts": parts, "split": {k: stats(v) for k, v in parts.items()},
            "checks": checks, "cores": cores, "load": os.getloadavg()[0]}


def _pool(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from runs made apart (the same level and placement)."""
    parts = {k: [v for r in rows for v in r["parts"][k]] for k in NAMES}
    return {"streams": rows[0]["streams"], "where": rows[0]["where"],
            "requests": sum(r["requests"] for r in rows), "ok": sum(r["ok"] for r in rows),
            "parts": parts, "split": {k: stats(v) for k, v in parts.items()},
            "checks": [c for r in rows for c in r["checks"]],
            "cores": [c for r in rows for c in r["cores"]], "load": rows[-1]["load"]}


def main(argv: list[str]) -> int:
    """Run the levels and print the split; exit 0 (figures, not a pass/fail)."""
    out: Path | None = None
    if "--json" in argv:
        at = argv.index("--json")
        out, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2:]
    wheres = ["shared"]
    if "--where" in argv:
        at = argv.index("--where")
        wheres, argv = argv[at + 1].split(","), argv[:at] + argv[at + 2:]
        if not set(wheres) <= set(PLACES):
            raise SystemExit(f"--where takes {', '.join(PLACES)} (comma-separated)")
    if "--http" in argv:  # who frames the heads: the lean transport (the prober's way)
        at = argv.index("--http")  # or httpcore's pool and h11, as before
        http, argv = argv[at + 1], argv[:at] + argv[at + 2:]
        if http not in ("lean", "httpcore"):
            raise SystemExit(f"--http takes lean or httpcore, not {http!r}")
        http11.LEAN = http == "lean"
    levels, rest = arguments(argv, "1,32,256 4 32 2")
    rounds, tokens, runs = (int(x) for x in rest)
    announce(f"TTFT ~200 ms, 20 ms per token, {tokens} tokens; closed loop, {rounds} "
             f"requests per stream, {runs} runs; HTTP/1.1 heads: "
             f"{'lean' if http11.LEAN else 'httpcore'}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):  # the placements interleaved: the same load for each
            for n in levels:
                for where in wheres:
                    rows.append(run_level(n, rounds, tokens, 1, Path(tmp), where))
    rows = [_pool([r for r in rows if (r["streams"], r["where"]) == key])
            for key in dict.fromkeys((r["streams"], r["where"]) for r in rows)]
    print(f"{'streams':>7} {'part (ms)':<36} {'mean':>7} {'p50':>7} {'p99':>7} {'max':>7}")
    for row in rows:
        print(f"{row['streams']:>7} client and server {row['where']}")
        for key, label in NAMES.items():
            s = row["split"][key]
            print(f"{row['streams']:>7} {label:<36} {s['mean']:>+7.2f} {s['p50']:>+7.2f} "
                  f"{s['p99']:>+7.2f} {s['max']:>+7.2f}")
        print(f"{'':>7} {row['ok']}/{row['requests']} ok; load average after "
              f"{row['load']:.2f}; cores used per run (of {os.cpu_count()}): " + "; ".join(
                  f"machine {c['machine']:.2f}, server {c['server']:.2f}, client "
                  f"{c['client']:.2f}, others {c['others']:.2f}" for c in row["cores"]))
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
