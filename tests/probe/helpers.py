"""A scripted loopback HTTP server, shared by the prober's tests (from the former
tests/test_prober.py)."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def http_servers() -> Iterator[Callable[[type[http.server.BaseHTTPRequestHandler]], str]]:
    """serve(handler class) -> its base URL: a threaded loopback server each call, every
    one shut down when the block ends (the hostile vendors' tests' servers)."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    try:
        yield serve
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


class _Scripted:
    """A real loopback HTTP server answering every POST with one scripted response."""

    model = "scripted"

    def __init__(self, status: int, body: list[bytes],
                 content_type: bytes = b"text/event-stream") -> None:
        import uvicorn

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", content_type)]})
            for part in body:
                await send({"type": "http.response.body", "body": part, "more_body": True})
                await asyncio.sleep(0.002)
            await send({"type": "http.response.body", "body": b""})

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> _Scripted:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(5)


def count_pumps(monkeypatch: Any) -> list[int]:
    """A list that gets, for every body pumped from here on (`KernelStampedStream.pump`),
    how many reads its connection had kernel-stamped by then."""
    from evalkit.probe.wire.kernel_stream import KernelStampedStream

    pumps: list[int] = []
    original = KernelStampedStream.pump

    async def counting(self: KernelStampedStream, *args: Any, **kwargs: Any) -> None:
        pumps.append(self.kernel_stamped)
        await original(self, *args, **kwargs)
    monkeypatch.setattr(KernelStampedStream, "pump", counting)
    return pumps


#: a raw server's answer to one request: bytes sent, a pause (s), None: close the connection
Script = list[bytes | float | None]


class RawServer:
    """Answers each request it reads (head and content-length body) with the next script,
    on whichever connection it came; counts connections and keeps each request's bytes
    and how many reads they took."""

    def __init__(self, scripts: Iterable[Script], pace: float = 0.002) -> None:
        self.scripts = iter(scripts)
        self.pace = pace  # the pause after each piece sent
        self.connections = 0
        self.requests: list[bytes] = []
        self.reads: list[int] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.base_url = self.url + "/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(10)
        buf, reads = b"", 0
        with conn:
            try:
                while True:
                    while b"\r\n\r\n" not in buf:
                        if not (more := conn.recv(65536)):
                            return
                        buf, reads = buf + more, reads + 1
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    size = next((int(v) for k, _, v in (h.partition(b":") for h in
                                 head.split(b"\r\n")[1:]) if k.lower() == b"content-length"),
                                0)
                    while len(rest) < size:
                        rest, reads = rest + conn.recv(65536), reads + 1
                    self.requests.append(head + b"\r\n\r\n" + rest[:size])
                    self.reads.append(reads)
                    buf, reads = rest[size:], 0
                    for piece in next(self.scripts, [None]):
                        if piece is None:
                            return
                        if isinstance(piece, float):
                            time.sleep(piece)
                        else:
                            conn.sendall(piece)
                            time.sleep(self.pace)
            except OSError:
                return

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()
