"""Benchmark: the least CPU one streamed chunk can cost a Python client on this machine.

Why: issue 29 asks for at most 15 µs of client CPU per content chunk at 256 streams. A
chunk costs the client at least one wake-up of its event loop and one `recvmsg` (the
kernel's work for epoll and the read is charged to the client too, as system time).
This measures that floor with no HTTP, no SSE and no evalkit record: N loopback TCP
connections, fed by a writer in another process (at nice -10 when run as root, as
`bench_send.py --where nice` places the server) with one chunk of the reference
endpoint's shape (230 bytes, an OpenAI chat token event in HTTP/1.1 chunked framing)
every 20 ms on each, and read by reader callbacks (`loop.add_reader`, as
`kernel_stream.KernelStampedStream` reads) that do, step by step:

- `recv`: `recvmsg_into` alone (the loop's dispatch and the system calls);
- `stamp`: and what the prober adds before any parsing: the clock read, the kernel's
  receive stamp read as a monotonic time (`KernelClock.arrival`), the bytes copied out;
- `parse`: and the pure per-chunk parse the prober does (the chunked frame, the SSE
  event, the adapter's token read): `bench_hotpath.py` has the rest, all in.

Each step runs on asyncio's loop, and on uvloop's when it is installed (`pip install
uvloop`; not a dependency). It reports this process's CPU (user + system, `getrusage`)
over the reads alone, per read, and how many reads the writes became (a read of two
chunks halves the cost per chunk: at 20 ms gaps there should be none).

Run: `.venv/bin/python bench/bench_floor.py [streams] [chunks] [rounds]`, default
`256 200 2`. The figures are the machine's: its line is printed first.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import resource
import socket
import statistics
import sys
import time
from collections.abc import Callable

from truth import machine  # this folder: run as bench/bench_*.py

from evalkit.kernelclock import ANC_SIZE, SO_TIMESTAMPNS, KernelClock
from evalkit.probe.apis.base import get_adapter
from evalkit.probe.wire.framing import ChunkedDecoder
from evalkit.probe.wire.sse import SSEParser

GAP_S = 0.020
STEPS = ("recv", "stamp", "parse")


def chunk() -> bytes:
    """One token chunk as the reference endpoint frames it."""
    event = json.dumps({"id": "chatcmpl-0123456789abcdef", "object": "chat.completion.chunk",
                        "created": 1764790000, "model": "ref-model",
                        "system_fingerprint": "fp_ref",
                        "choices": [{"index": 0, "delta": {"content": " token"},
                                     "logprobs": None, "finish_reason": None}]},
                       separators=(",", ":"))
    body = f"data: {event}\n\n".encode()
    return b"%x\r\n" % len(body) + body + b"\r\n"


def write(port: int, streams: int, chunks: int) -> None:
    """The writer (a child process): every connection gets one chunk each GAP_S."""
    if os.geteuid() == 0:
        os.nice(-10)
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(streams)]
    for c in conns:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = chunk()
    time.sleep(0.3)
    due = time.perf_counter()
    for _ in range(chunks):
        for c in conns:
            c.sendall(data)
        due += GAP_S
        time.sleep(max(due - time.perf_counter(), 0))
    for c in conns:
        c.close()


def reader(sock: socket.socket, step: str, counts: list[int], done: Callable[[], None],
           loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """The reader callback of one connection, doing `step`'s work per read."""
    buf = bytearray(65536)
    view = memoryview(buf)
    clock = KernelClock()
    decoder, parser, parse = ChunkedDecoder(), SSEParser(), get_adapter("openai-chat").parse
    parser.feed(b"data: start\n\n")  # past the stream's start, as the prober is
    fd = sock.fileno()

    def on_readable() -> None:
        n, anc, _flags, _addr = sock.recvmsg_into((buf,), ANC_SIZE)
        if not n:
            loop.remove_reader(fd)
            done()
            return
        counts[0] += 1
        if step == "recv":
            return
        now = time.perf_counter_ns()
        data = view[:n].tobytes()
        clock.arrival(anc, now, n == len(buf))
        if step == "parse":
            for piece in decoder.feed(data):
                for event in parser.feed(piece):
                    parse(event.data)

    return on_readable


def run(step: str, loop_kind: str, streams: int, chunks: int) -> tuple[float, float, int]:
    """(user µs, system µs) of CPU per read, and the reads, for one step on one loop."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(streams)
    pid = os.fork()
    if pid == 0:  # the writer: it never returns into this process's code
        try:
            write(listener.getsockname()[1], streams, chunks)
        finally:
            os._exit(0)
    socks = [listener.accept()[0] for _ in range(streams)]
    listener.close()
    if loop_kind == "uvloop":
        import uvloop

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    ended = loop.create_future()
    left, counts = [streams], [0]

    def done() -> None:
        left[0] -= 1
        if not left[0]:
            ended.set_result(None)

    for s in socks:
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        loop.add_reader(s.fileno(), reader(s, step, counts, done, loop))
    before = resource.getrusage(resource.RUSAGE_SELF)
    loop.run_until_complete(ended)
    after = resource.getrusage(resource.RUSAGE_SELF)
    loop.close()
    for s in socks:
        s.close()
    os.waitpid(pid, 0)
    reads = max(counts[0], 1)
    return ((after.ru_utime - before.ru_utime) / reads * 1e6,
            (after.ru_stime - before.ru_stime) / reads * 1e6, counts[0])


def main(argv: list[str]) -> int:
    """Each step on each loop, `rounds` times, alternating; the median of each."""
    streams, chunks, rounds = (int(a) for a in (argv + ["256", "200", "2"][len(argv):])[:3])
    loops = ["asyncio"] + (["uvloop"] if importlib.util.find_spec("uvloop") else [])
    print(machine())
    print(f"{streams} loopback TCP connections, one {len(chunk())}-byte chunk each "
          f"{GAP_S * 1e3:g} ms, {chunks} chunks each; loops: {', '.join(loops)}; "
          f"{rounds} rounds, alternating")
    seen: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for _ in range(rounds):
        for step in STEPS:
            for kind in loops:
                seen.setdefault((step, kind), []).append(run(step, kind, streams, chunks))
    print(f"{'step':6s} {'loop':8s} {'CPU µs/read':>12s} {'user':>6s} {'system':>7s} "
          f"{'reads/chunks':>13s}")
    for (step, kind), runs in seen.items():
        user = statistics.median(u for u, _, _ in runs)
        system = statistics.median(s for _, s, _ in runs)
        reads = statistics.median(n for _, _, n in runs) / (streams * chunks)
        print(f"{step:6s} {kind:8s} {user + system:12.1f} {user:6.1f} {system:7.1f} "
              f"{reads:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
