"""The reference endpoint's own TLS (`evalkit.reference.tlssocket`), over real sockets.

Over HTTPS the endpoint runs TLS on its stamped socket inside asyncio's plain transport
(issue 43: asyncio's SSL transport made its write bursts, and every client's TTFT tail,
longer). What must hold: every request's kernel stamp, a connection's first included; and
every byte of a large answer to a client that reads late, in order, then the close.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.records import RequestRecord
from evalkit.reference import ReferenceServer
from evalkit.reference.tlssocket import TLSSocket, server_context
from tests.certificates import throwaway_certificate


def test_every_https_request_has_its_kernel_stamp_a_connections_first_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request opens its own connection (no warm-up), so each is its connection's
    first, sent right after the handshake: asyncio's SSL transport had no stamp for most
    of them (the request came in the handshake's last read). Each now has the stamp of
    the read that completed it, after our send and before the server's loop saw it."""
    cert, key = throwaway_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    truth_log = tmp_path / "truth.jsonl"
    with ReferenceServer("gpu", {"request_overhead_ms": 5}, truth_log, mode="thread",
                         host="localhost", tls=(cert, key)) as srv:
        async def run() -> list[tuple[int, RequestRecord]]:
            recs = []
            for i in range(4):  # a prober each: a new connection each
                async with Prober(Target(srv.base_url, srv.model, tag_requests=True),
                                  time.perf_counter_ns(), "first") as prober:
                    rec = await prober.stream(synthetic(32, 4, f"f-{i}"), "baseline", 1)
                    recs.append((prober.origin_ns, rec))
            return recs
        pairs = asyncio.run(run())
        truth = {t["request_id"]: t for t in srv.truth()}
    for origin, rec in pairs:
        assert rec.outcome == "ok" and rec.connect_s is not None  # its connection's first
        t = truth[rec.id]
        t0 = origin + round(rec.t0_s * 1e9)
        assert isinstance(t["kernel_ns"], int), t
        assert t0 - 1_000_000 < t["kernel_ns"] <= t["arrived_ns"] <= t["received_ns"]


def test_a_client_that_reads_late_gets_every_byte_in_order_then_the_close(
        tmp_path: Path) -> None:
    """4 MiB written in 64 KiB writes and the connection closed at once, to a client that
    reads nothing for 0.3 s, over small socket buffers: the kernel takes part of a write,
    the rest waits here (the transport kept one byte back, so its buffer, flow control
    and close wait too), and every byte arrives in order before the close."""
    cert, key = throwaway_certificate(tmp_path)
    payload = bytes(range(256)) * (4 * 4096)  # 4 MiB, every offset's byte known
    paused: list[bool] = []
    port: list[int] = []
    ready = threading.Event()

    class Writer(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            raw = transport.get_extra_info("socket")
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)  # the kernel takes
            transport._sock = TLSSocket(transport._sock, context)  # type: ignore[attr-defined]
            self.transport = transport

        def data_received(self, data: bytes) -> None:  # the client's hello: answer it all
            for at in range(0, len(payload), 65536):
                self.transport.write(payload[at:at + 65536])
            self.transport.close()

        def pause_writing(self) -> None:
            paused.append(True)

    async def serve() -> None:
        server = await asyncio.get_running_loop().create_server(Writer, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        ready.set()
        await asyncio.sleep(10)
        server.close()

    context = server_context(cert, key)
    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert ready.wait(5)
    client = ssl.create_default_context(cafile=str(cert))
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # little at a time
    raw.settimeout(10)
    raw.connect(("127.0.0.1", port[0]))
    with raw, client.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"hello")
        time.sleep(0.3)  # the server's writes pile up meanwhile
        got = bytearray()
        while True:
            try:
                piece = tls.recv(65536)
            except ssl.SSLEOFError:  # the server closes without close_notify
                break
            if not piece:
                break
            got += piece
    assert len(got) == len(payload)
    assert got == payload
    assert paused  # the transport's buffer held the rest: its flow control saw it

