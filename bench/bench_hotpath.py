"""Benchmark: the prober's own CPU per content chunk and per request, and where it goes.

The reference endpoint runs in its own process (a fixed-step engine: TTFT ~200 ms, 20 ms
a token, `bench_send.SERVER`), placed by `--where` as in `bench_send.py` (`nice`: the
server at nice -10, root only, so the other jobs of a shared machine take their CPU from
the client, not from the server being timed). The prober drives it with the real closed
loop, every record appended to a real `requests.jsonl`, and this process's CPU
(`time.process_time`) is read around the loop alone (imports, connections and the
tokenizer's tables are before it). Per level and output length it reports:

- CPU per content chunk (all of the loop's CPU over the chunks timed) and per request,
- the marginal CPU of one more chunk and the fixed cost of one request, from two output
  lengths (`tokens`, e.g. `64,16`: a least-squares line of CPU against chunks over the
  runs),
- the event-loop lag p99, the client's self-check verdict, and the TTFT error against the
  server's truth log (our TTFT minus the handler's start to its first write), p50/p99.

`--profile` samples this process with py-spy (`pip install py-spy`; nonblocking, at
400 Hz, so it costs the probe little; only samples holding the GIL, so a wait in epoll,
or for a core on a loaded machine, is not CPU) and splits the loop's CPU by where it went (HTTP
framing, SSE, JSON, stamping, record building, tokenizer, event loop, bookkeeping:
`CATEGORIES`), in µs per content chunk: each category's share of the samples times the
CPU measured per chunk.

Run: `.venv/bin/python bench/bench_hotpath.py [levels] [rounds] [tokens] [runs]
[--where shared|nice] [--loop asyncio|uvloop] [--read pumped|by-read|h11]
[--tls own|asyncio] [--http lean|httpcore] [--profile]`, default `256 3 64,16 3
--where shared`. `--read` says
how a body is read: pumped in the socket's reader callback (the prober's own way), read by
read through `body_parts`, or framed by h11, to compare them. `--tls` serves HTTPS (a
throwaway certificate made with the `openssl` command; every vendor is https) and says
whose TLS the client runs: its own on the stamped stream (`kernel_stream.KERNEL_TLS`, the
prober's way) or asyncio's SSL transport, to compare them. `--http` says who writes the
request head and parses the response's: the lean transport (`evalkit.probe.wire.http11`, the
prober's way) or httpcore's pool and h11, as before. Figures depend on the machine
and on what else runs on it: each run's load average is printed. Each run also says how
many of the streams the server saw (its truth log) joined to an ok record: every request
kept, or not. `--loop uvloop` runs the client on uvloop (`pip install uvloop`; not a dependency,
docs/benchmarks.md says why).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench_send import SERVER, place  # this folder: run as bench/bench_*.py
from truth import announce, arguments, joined

from evalkit.probe.client.clients import Target
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.client.selfcheck import judge_client, window_end, window_start
from evalkit.probe.client.stream import Prober
from evalkit.probe.load.loops import closed_loop
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.plan.settings import profile_settings
from evalkit.probe.wire import chunked, http11, kernel_stream
from evalkit.reference.server import ReferenceServer
from evalkit.rundir.store import RunStore

#: where a sample's CPU went: the category of its innermost frame that is not generic
#: plumbing (`GENERIC`: those count for their caller), by file and function
CATEGORIES: list[tuple[str, str]] = [
    ("HTTP framing (h11, httpcore, httpx, chunked.py)",
     r"\((h11|httpcore|httpx|httptools|anyio|sniffio)/|\(evalkit/probe/wire/(chunked|http11)\.py"),
    ("SSE parsing (sse.py)", r"\(evalkit/probe/wire/sse\.py"),
    ("JSON (json, adapters' parse, chunkscan.py)",
     r"\(json/|\(evalkit/probe/apis/(base|chunkscan)\.py"),
    ("stamping (stamping, kernel_stream, transport)",
     r"\(evalkit/probe/wire/(stamping|kernel_stream|transport)\.py"),
    ("record building (_record, records, store)",
     r"^Prober\._record|\(evalkit/records\.py|\(evalkit/rundir/store\.py"),
    ("tokenizer (count_tokens)", r"\(evalkit/probe/plan/prompts\.py|tiktoken"),
    ("event loop (asyncio, selectors)", r"\(asyncio/|\(selectors\.py"),
    ("bookkeeping (stream, load, the rest)", r""),
]
#: the innermost frames of every sample (printed with BENCH_PROFILE_TOP=N)
TOP: Counter[str] = Counter()
#: plumbing that counts for its caller: context managers, a dataclass's generated __init__
GENERIC = r"\((contextlib|typing|enum|abc|functools|_weakrefset)\.py|\(re/|\(<string>"
#: (certificate, key) the server serves HTTPS with (`--tls`); None: plain HTTP
TLS: tuple[Path, Path] | None = None


def throwaway_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and 127.0.0.1, valid for a day."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def _category(stack: list[str]) -> str:
    for frame in reversed(stack):  # innermost first
        if re.search(GENERIC, frame):
            continue
        for name, pattern in CATEGORIES:
            if pattern and re.search(pattern, frame):
                return name
        return CATEGORIES[-1][0]
    return CATEGORIES[-1][0]


def breakdown(raw: Path, top: Counter[str] | None = None) -> dict[str, int]:
    """Samples per category of `CATEGORIES`, from py-spy's raw (collapsed) stacks of the
    event loop (`run_until_complete`) but not of the driver's own task (`_drive`: opening
    connections before the loop, reading the records back after it); `top` counts the
    innermost frames too."""
    out = dict.fromkeys((name for name, _ in CATEGORIES), 0)
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if "run_until_complete" in stack and "_drive (" not in stack and count.isdigit():
            frames = stack.split(";")
            out[_category(frames)] += int(count)
            if top is not None:
                top[frames[-1]] += int(count)
    return out


def _spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling this process (nonblocking: it never pauses us) until SIGINT."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    proc = subprocess.Popen([spy, "record", "--pid", str(pid), "--rate", "400",
                             "--nonblocking", "--gil", "--format", "raw", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    return proc


async def _drive(srv: ReferenceServer, streams: int, rounds: int, tokens: int, out: Path
                 ) -> dict[str, Any]:
    target = Target(srv.base_url, srv.model, timeout_s=120, tag_requests=True)
    store = RunStore(out, {"bench": "hotpath"})
    origin = time.perf_counter_ns()
    async with Prober(target, origin, f"h{streams}") as prober, LoopMonitor() as mon:
        await prober.clients.prepare(streams)  # connections open before the clock starts
        n = 0

        def prompt() -> Any:
            nonlocal n
            n += 1
            return synthetic(64, tokens, f"h{streams}-{tokens}-{n}")

        mark = window_start(mon, prober)
        cpu0 = time.process_time()
        await closed_loop(prober, prompt, store.append, phase="ramp", level=streams,
                          workers=streams, duration_s=None, max_requests=rounds * streams)
        cpu = time.process_time() - cpu0
        check = judge_client(window_end(mon, prober, mark),
                             profile_settings("quick").client_check)
    store.close()
    return {"origin": origin, "records": store.records, "check": check, "cpu_s": cpu,
            "chunks": check["content_chunks"]}


def _loop_factory(loop: str) -> Any:
    """asyncio's own loop (None) or uvloop's (`--loop uvloop`: `pip install uvloop`)."""
    if loop == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def run_once(streams: int, rounds: int, tokens: int, tmp: Path, where: str,
             profiled: bool, loop: str = "asyncio") -> dict[str, Any]:
    """One run on a fresh server: CPU, chunks, requests, the self-check, TTFT errors."""
    run = f"{streams}-{tokens}-{time.monotonic_ns()}"
    raw = tmp / f"spy-{run}.txt"
    # a truth log of this run alone (the server appends): every line in it is one to keep
    with ReferenceServer("gpu", SERVER, truth_log=tmp / f"truth-{run}.jsonl", tls=TLS) as srv:
        place(srv.pid, where)
        spy = _spy(os.getpid(), raw) if profiled else None
        try:
            with asyncio.Runner(loop_factory=_loop_factory(loop)) as runner:
                got = runner.run(_drive(srv, streams, rounds, tokens,
                                        tmp / f"run-{streams}-{tokens}"))
        finally:
            place(None, "shared")
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(30)
        truth = srv.truth()
    pairs = list(joined(got["origin"], got["records"], truth))
    errs = [(r.ttft_s * 1e9 - (t["first_write_ns"] - t["received_ns"])) / 1e6
            for r, t, _t0 in pairs if r.ttft_s is not None]
    errs.sort()
    recs = got["records"]
    return {"streams": streams, "tokens": tokens, "requests": len(recs),
            "ok": sum(r.outcome == "ok" for r in recs), "chunks": got["chunks"],
            # every request kept: the server's truth lines each joined to an ok record
            "truth": sum(t.get("path", "").endswith("/completions") for t in truth),
            "joined": len(pairs),
            "cpu_s": got["cpu_s"], "check": got["check"],
            "ttft_err_p50_ms": errs[len(errs) // 2] if errs else float("nan"),
            "ttft_err_p99_ms": errs[min(int(0.99 * len(errs)), len(errs) - 1)]
            if errs else float("nan"),
            "load": os.getloadavg()[0],
            "profile": _kept(breakdown(raw, TOP), raw) if profiled else None}


def _kept(split: dict[str, int], raw: Path) -> dict[str, int]:
    """`split`, the raw stacks copied to $BENCH_PROFILE_RAW (a folder) if it is set: to
    read who called a hot frame (the folded stacks, one line per distinct stack)."""
    if keep := os.environ.get("BENCH_PROFILE_RAW"):
        shutil.copy(raw, Path(keep) / raw.name)
    return split


def fit(rows: list[dict[str, Any]]) -> tuple[float, float] | None:
    """(µs per chunk, µs per request) from a least-squares line of CPU per request
    against chunks per request over the runs (two output lengths or more)."""
    xs = [r["chunks"] / r["requests"] for r in rows if r["requests"]]
    ys = [r["cpu_s"] * 1e6 / r["requests"] for r in rows if r["requests"]]
    if len(set(round(x) for x in xs)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
             / sum((x - mx) ** 2 for x in xs))
    return slope, my - slope * mx


def main(argv: list[str]) -> int:
    """Run the levels; print CPU per chunk and per request (and the profile's split)."""
    profiled = "--profile" in argv
    argv = [a for a in argv if a != "--profile"]
    where = "shared"
    if "--where" in argv:
        at = argv.index("--where")
        where, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    loop = "asyncio"
    if "--loop" in argv:
        at = argv.index("--loop")
        loop, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    read = "pumped"
    if "--read" in argv:  # how a body is read, to compare: pumped (the default),
        at = argv.index("--read")  # read by read (`body_parts`), or framed by h11
        read, argv = argv[at + 1], argv[:at] + argv[at + 2:]
        chunked.PUMP, chunked.DIRECT = read == "pumped", read != "h11"
        http11.LEAN = http11.LEAN and read != "h11"
    http = "lean"
    if "--http" in argv:  # who frames the heads: the lean transport or httpcore and h11
        at = argv.index("--http")
        http, argv = argv[at + 1], argv[:at] + argv[at + 2:]
        if http not in ("lean", "httpcore"):
            sys.exit(f"--http takes lean or httpcore, not {http!r}")
        http11.LEAN = http == "lean" and read != "h11"
    tls = "off"
    if "--tls" in argv:  # HTTPS, on our own TLS (the default) or asyncio's transport
        at = argv.index("--tls")
        tls, argv = argv[at + 1], argv[:at] + argv[at + 2:]
        if tls not in ("own", "asyncio"):
            sys.exit(f"--tls takes own or asyncio, not {tls!r}")
        kernel_stream.KERNEL_TLS = tls == "own"
    levels, (rounds_s, tokens_s, runs_s) = arguments(argv, "256 3 64,16 3")
    rounds, runs = int(rounds_s), int(runs_s)
    lengths = [int(t) for t in tokens_s.split(",")]
    announce(f"TTFT ~200 ms, 20 ms a token, {tokens_s} tokens; closed loop, {rounds} "
             f"requests per stream, {runs} runs per length, server placed: {where}, "
             f"client loop: {loop}, body read: {read}, TLS: {tls}, HTTP/1.1 heads: "
             f"{'lean' if http11.LEAN else 'httpcore'}"
             + ("; sampled by py-spy" if profiled else ""))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        global TLS
        TLS = throwaway_certificate(Path(tmp)) if tls != "off" else None
        if TLS is not None:  # trusted as a CA bundle would be (httpx reads SSL_CERT_FILE)
            os.environ["SSL_CERT_FILE"] = str(TLS[0])
        # a first, uncounted run: lazy imports and first-call caches are not per chunk
        run_once(min(levels), 1, min(lengths), Path(tmp), where, False, loop)
        for _ in range(runs):  # the lengths interleaved: each sees the same load
            for n in levels:
                for tokens in lengths:
                    rows.append(run_once(n, rounds, tokens, Path(tmp), where, profiled,
                                         loop))
                    r = rows[-1]
                    c = r["check"]
                    print(f"{n:>5} streams {tokens:>3} tokens: {r['ok']}/{r['requests']} ok, "
                          f"{r['joined']}/{r['truth']} of the server's streams joined ok, "
                          f"{r['chunks']} chunks, CPU {r['cpu_s']:.2f} s = "
                          f"{r['cpu_s'] * 1e6 / max(r['chunks'], 1):.1f} µs/chunk, "
                          f"{r['cpu_s'] * 1e6 / max(r['requests'], 1):.0f} µs/request; "
                          f"loop lag p99 {(c.get('loop_lag_p99_s') or 0) * 1e3:.1f} ms; "
                          f"CPU {c.get('cpu_fraction')} of a core; late reads "
                          f"{c.get('coalesced_fraction')}; client-bound {c['client_bound']} "
                          f"{c.get('client_bound_reasons') or ''}; TTFT error p50/p99 "
                          f"{r['ttft_err_p50_ms']:+.2f}/{r['ttft_err_p99_ms']:+.2f} ms; "
                          f"load {r['load']:.2f}", flush=True)
    for n in levels:
        for tokens in lengths:
            mine = [r for r in rows if r["streams"] == n and r["tokens"] == tokens]
            per_chunk = statistics.median(r["cpu_s"] * 1e6 / max(r["chunks"], 1) for r in mine)
            lag = statistics.median((r["check"].get("loop_lag_p99_s") or 0) * 1e3 for r in mine)
            p99 = statistics.median(r["ttft_err_p99_ms"] for r in mine)
            print(f"median of {len(mine)}: {n} streams, {tokens} tokens: {per_chunk:.1f} µs "
                  f"CPU per content chunk (all in), loop lag p99 {lag:.1f} ms, TTFT error "
                  f"p99 {p99:+.2f} ms, client-bound in "
                  f"{sum(bool(r['check']['client_bound']) for r in mine)} of {len(mine)}")
        line = fit([r for r in rows if r["streams"] == n])
        if line is not None:
            print(f"{n} streams: {line[0]:.1f} µs per content chunk (marginal), "
                  f"{line[1]:.0f} µs per request (fixed), least squares over {runs} runs x "
                  f"{len(lengths)} lengths")
        if profiled:
            mine = [r for r in rows if r["streams"] == n]
            chunks = sum(r["chunks"] for r in mine)
            total = {name: sum(r["profile"][name] for r in mine) for name, _ in CATEGORIES}
            cpu = sum(r["cpu_s"] for r in mine)
            samples = max(sum(total.values()), 1)
            print(f"{n} streams: the loop's CPU per content chunk by where it went "
                  f"(py-spy, {samples} samples; {chunks} chunks, {cpu:.2f} s CPU):")
            for name, count in total.items():
                print(f"  {name:<48} {cpu * 1e6 * count / samples / chunks:>7.1f} µs "
                      f"({count / samples:.0%})")
    for frame, count in TOP.most_common(int(os.environ.get("BENCH_PROFILE_TOP") or 0)):
        print(f"{count:>7} {frame}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
