"""Benchmark: how many concurrent streams the reference endpoint holds, and how exactly.

The endpoint runs in its own process with its truth log on; this process drives it with
a lean raw-socket asyncio client (no HTTP library, no SSE parsing: it only reads bytes
until the chunked terminator). For 100, 500 and 1,000 concurrent streams it reports:
streams held to the end, tokens/s the server wrote, and its own timing error, i.e. each
write's actual time minus the time the engine model scheduled it (p50/p99/max), from the
server's ground-truth log. Also: the client-side delay from server write to arrival.

Run: `.venv/bin/python bench/bench_reference.py [levels] [tokens] [step_ms]`
     e.g. `... 100,500,1000 40 100`.  `make bench` runs it with the defaults.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from truth import cpu_model  # this folder: run as bench/bench_*.py

from evalkit.reference.server import ReferenceServer


async def one_stream(host: str, port: int, body: bytes, rid: str,
                     arrivals: dict[str, list[int]]) -> bool:
    """One streamed request over a raw socket; True if it ended with the terminator."""
    reader, writer = await asyncio.open_connection(host, port)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"x-request-id: {rid}\r\nconnection: close\r\n\r\n").encode()
    writer.write(head + body)
    stamps: list[int] = []
    tail = b""
    ok = False
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            stamps.append(time.perf_counter_ns())
            tail = (tail + data)[-16:]
            if tail.endswith(b"0\r\n\r\n"):
                ok = True
                break
    finally:
        writer.close()
    arrivals[rid] = stamps
    return ok


async def drive(host: str, port: int, streams: int, tokens: int) -> tuple[int, float]:
    """Start `streams` requests at once; return (held to the end, wall seconds)."""
    body = json.dumps({"model": "evalkit-reference", "stream": True, "ignore_eos": True,
                       "max_tokens": tokens,
                       "messages": [{"role": "user", "content": "the " * 64}]}).encode()
    arrivals: dict[str, list[int]] = {}
    t = time.perf_counter()
    done = await asyncio.gather(*(one_stream(host, port, body, f"s{i}", arrivals)
                                  for i in range(streams)), return_exceptions=True)
    return sum(1 for d in done if d is True), time.perf_counter() - t


def analyse(truth: list[dict], streams: int) -> dict[str, float]:
    """Server tokens/s over the span all streams were open, and write timing error."""
    content = [w for t in truth for w in t["writes"] if w[3] == "content"]
    actual = np.array([w[0] for w in content], dtype=np.int64)
    sched = np.array([w[1] for w in content], dtype=np.int64)
    err_ms = (actual - sched) / 1e6
    # steady window, on the engine's own timeline (it stretches when the server cannot keep
    # up, so tokens over it is what the server sustained, free of write-burst edges): from
    # the last stream's first token to the first stream's last token
    firsts = [min(w[1] for w in t["writes"] if w[3] == "content") for t in truth
              if t["first_write_ns"]]
    lasts = [max(w[1] for w in t["writes"] if w[3] == "content") for t in truth
             if t["first_write_ns"]]
    start, end = max(firsts), min(lasts)
    inside = (sched > start) & (sched <= end)
    window_s = max((end - start) / 1e9, 1e-9)
    steady = err_ms[inside] if inside.any() else err_ms
    return {"tokens_per_s": float(inside.sum() / window_s), "window_s": window_s,
            "err_p50_ms": float(np.percentile(err_ms, 50)),
            "err_p99_ms": float(np.percentile(err_ms, 99)), "err_max_ms": float(err_ms.max()),
            "steady_p50_ms": float(np.percentile(steady, 50)),
            "steady_p99_ms": float(np.percentile(steady, 99)),
            "ok": sum(1 for t in truth if t["outcome"] == "ok")}


def main() -> None:
    levels = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "100,500,1000").split(",")]
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    step_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
    print(f"bench_reference: {os.cpu_count()} cores, {cpu_model()}, Python "
          f"{platform.python_version()}; {tokens} tokens per stream, 1 token per chunk, "
          f"decode step {step_ms:g} ms (flat: the model, not the batch, sets the pace)")
    print("timing error = actual write - scheduled write (ms), over all writes and over the "
          "steady window (every stream open)")
    print(f"{'streams':>8} {'held':>6} {'wall_s':>7} {'tok/s':>8} {'ideal':>8} "
          f"{'err_p50':>8} {'err_p99':>8} {'err_max':>8} {'steady50':>8} {'steady99':>8}")
    for n in levels:
        with tempfile.TemporaryDirectory() as tmp:
            truth_log = Path(tmp) / "truth.jsonl"
            overrides = {"decode_base_ms": step_ms, "decode_per_stream_ms": 0.0,
                         "max_batch": 100_000, "request_overhead_ms": 0.0,
                         "max_prefill_tokens": 0, "prefill_overhead_ms": 1.0,
                         "prefill_tokens_per_s": 1e7, "jitter_ms": 0.0,
                         "fault_role_first_chunk": 0.0}
            with ReferenceServer("gpu", overrides, truth_log=truth_log) as srv:
                host, port = srv.root_url.removeprefix("http://").rsplit(":", 1)
                held, wall = asyncio.run(drive(host, int(port), n, tokens))
                stats = analyse(srv.truth(timeout_s=60), n)
        ideal = n * 1000 / step_ms
        print(f"{n:>8} {held:>6} {wall:>7.1f} {stats['tokens_per_s']:>8.0f} {ideal:>8.0f} "
              f"{stats['err_p50_ms']:>8.2f} {stats['err_p99_ms']:>8.2f} "
              f"{stats['err_max_ms']:>8.2f} {stats['steady_p50_ms']:>8.2f} "
              f"{stats['steady_p99_ms']:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
