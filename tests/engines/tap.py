"""A recording TCP proxy: what went over the wire, byte for byte, and when.

Run as a process of its own (so the test process's GIL never delays it):

    tap = Tap(upstream_port, log_path).start()   # forwards 127.0.0.1:tap.port → upstream
    ...                                          # point a client at tap.base_url
    exchanges = tap.stop()                       # every HTTP exchange, parsed

Every read is stamped with `time.perf_counter_ns()` (CLOCK_MONOTONIC, the same clock in
every process on the machine, and the one evalkit's records use) right after it returns,
before the bytes are forwarded, so a stamp here is always earlier than the client's
arrival time of the same bytes. `exchanges` re-parses the recorded bytes with h11 and
splits SSE bodies into events, each stamped with the read that completed it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11


@dataclass
class SSEEvent:
    data: str
    ns: int


@dataclass
class Exchange:
    """One request/response on one connection, as the proxy saw it."""

    conn: int
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    #: when the request's last byte reached the proxy
    request_end_ns: int
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""
    events: list[SSEEvent] = field(default_factory=list)
    comments: int = 0

    def json(self) -> Any:
        return json.loads(self.body)


class Tap:
    """The proxy process, and the parse of what it recorded."""

    def __init__(self, upstream_port: int, log_path: Path) -> None:
        self.upstream_port = upstream_port
        self.log_path = Path(log_path)
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, deadline_s: float = 20.0) -> Tap:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, str(self.upstream_port), str(self.log_path)],
            stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = _readline_with_deadline(self._proc, deadline_s)
        self.port = int(line)
        return self

    def stop(self) -> list[Exchange]:
        """Stop the proxy (it writes its log on SIGTERM) and parse the log."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
                raise AssertionError("the tap did not stop within 20 s") from None
            finally:
                if self._proc.stdout is not None:
                    self._proc.stdout.close()
            self._proc = None
        return exchanges(self.log_path)


def _readline_with_deadline(proc: subprocess.Popen[str], deadline_s: float) -> str:
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout=deadline_s):
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"the tap did not start within {deadline_s:g} s")
    line = proc.stdout.readline().strip()
    if not line:
        raise AssertionError(f"the tap exited at start (code {proc.wait(timeout=10)})")
    return line


# --------------------------------------------------------------------------- parsing

def exchanges(log_path: Path) -> list[Exchange]:
    """Every exchange in the log, in the order their requests ended."""
    pieces: dict[int, dict[str, list[tuple[int, bytes]]]] = {}
    for line in Path(log_path).read_text().splitlines():
        rec = json.loads(line)
        pieces.setdefault(rec["conn"], {"c2s": [], "s2c": []})[rec["dir"]].append(
            (rec["ns"], base64.b64decode(rec["b64"])))
    out: list[Exchange] = []
    for conn, dirs in pieces.items():
        out += _parse_connection(conn, dirs["c2s"], dirs["s2c"])
    return sorted(out, key=lambda x: x.request_end_ns)


def _parse_connection(conn: int, c2s: list[tuple[int, bytes]],
                      s2c: list[tuple[int, bytes]]) -> list[Exchange]:
    requests: list[Exchange] = []
    srv = h11.Connection(h11.SERVER)
    current: Exchange | None = None
    for ns, data in c2s:
        srv.receive_data(data)
        while True:
            ev = srv.next_event()
            if ev is h11.NEED_DATA or ev is h11.PAUSED:
                break
            if isinstance(ev, h11.Request):
                current = Exchange(conn, ev.method.decode(), ev.target.decode(),
                                   {k.decode().lower(): v.decode() for k, v in ev.headers},
                                   b"", 0)
            elif isinstance(ev, h11.Data) and current is not None:
                current.body += bytes(ev.data)
            elif isinstance(ev, h11.EndOfMessage) and current is not None:
                current.request_end_ns = ns
                requests.append(current)
                current = None
                # answer on our side so the parser moves on to the next request
                srv.send(h11.Response(status_code=200, headers=[("content-length", "0")]))
                srv.send(h11.EndOfMessage())
                srv.start_next_cycle()
    cli = h11.Connection(h11.CLIENT)
    pending = iter(requests)
    ex = next(pending, None)

    def send_request(x: Exchange) -> None:
        cli.send(h11.Request(method=x.method, target=x.target,
                             headers=[("host", "tap"), ("content-length", str(len(x.body)))]))
        if x.body:
            cli.send(h11.Data(data=x.body))
        cli.send(h11.EndOfMessage())

    if ex is not None:
        send_request(ex)
    sse = _SSESplitter()
    for ns, data in s2c:
        cli.receive_data(data)
        while ex is not None:
            ev = cli.next_event()
            if ev is h11.NEED_DATA or ev is h11.PAUSED:
                break
            if isinstance(ev, h11.Response):
                ex.status = ev.status_code
                ex.response_headers = {k.decode().lower(): v.decode() for k, v in ev.headers}
            elif isinstance(ev, h11.Data):
                ex.response_body += bytes(ev.data)
                if ex.response_headers.get("content-type", "").startswith("text/event-stream"):
                    ex.events += [SSEEvent(d, ns) for d in sse.feed(bytes(ev.data))]
            elif isinstance(ev, h11.EndOfMessage):
                ex.comments, sse = sse.comments, _SSESplitter()
                ex = next(pending, None)
                if ex is None:
                    break
                cli.start_next_cycle()
                send_request(ex)
    return requests


class _SSESplitter:
    """Just enough SSE: events end at a blank line; `data:` lines joined; comments counted."""

    def __init__(self) -> None:
        self._buf = ""
        self.comments = 0

    def feed(self, data: bytes) -> list[str]:
        self._buf += data.decode("utf-8").replace("\r\n", "\n")
        out = []
        while "\n\n" in self._buf:
            block, self._buf = self._buf.split("\n\n", 1)
            lines = block.split("\n")
            self.comments += sum(x.startswith(":") for x in lines)
            datas = [x[5:].removeprefix(" ") for x in lines if x.startswith("data:")]
            if datas:
                out.append("\n".join(datas))
        return out


# --------------------------------------------------------------------------- the proxy

async def _serve(upstream_port: int, log_path: Path) -> None:
    records: list[tuple[int, str, int, bytes]] = []
    ids = itertools.count(1)

    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, conn: int,
                   direction: str) -> None:
        try:
            while data := await src.read(65536):
                records.append((conn, direction, time.perf_counter_ns(), data))
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                dst.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = next(ids)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            writer.close()
            return
        for w in (writer, up_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(pump(reader, up_writer, conn, "c2s"),
                             pump(up_reader, writer, conn, "s2c"))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await stop.wait()
    server.close()
    with open(log_path, "w", encoding="utf-8") as f:
        for conn, direction, ns, data in records:
            f.write(json.dumps({"conn": conn, "dir": direction, "ns": ns,
                                "b64": base64.b64encode(data).decode()}) + "\n")


if __name__ == "__main__":
    # stdout carries the port only; SIGTERM from the parent stops us and writes the log
    asyncio.run(_serve(int(sys.argv[1]), Path(sys.argv[2])))
