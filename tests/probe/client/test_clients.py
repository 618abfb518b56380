"""The target and its HTTP client (`evalkit.probe.client.clients`): TLS to a self-signed endpoint.

Vendors are https. The stamped stream runs TLS itself over memory BIOs
(`kernel_stream.KERNEL_TLS`), so a TLS read keeps the kernel's receive stamp and its body
is pumped as a plain one; asyncio's SSL transport (stamped as the loop hands each read
over) stays behind the switch. Both are read against the reference endpoint's truth log,
over real loopback TLS with a throwaway certificate.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import json
import os
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.wire import kernel_stream
from evalkit.records import RequestRecord
from evalkit.reference import ReferenceServer
from tests.certificates import throwaway_certificate
from tests.probe.helpers import count_pumps


@pytest.fixture
def tls_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                  ) -> Iterator[tuple[str, Path]]:
    """(https base URL, truth log) of the reference endpoint serving HTTPS itself
    (`ReferenceServer(tls=...)`, TLS on its stamped socket), in a thread of this process."""
    cert, key = throwaway_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust it, as a CA bundle would
    truth = tmp_path / "truth.jsonl"
    with ReferenceServer("gpu", {"request_overhead_ms": 5}, truth, mode="thread",
                         host="localhost", tls=(cert, key)) as srv:
        assert srv.base_url.startswith("https://localhost:")
        yield srv.base_url, truth


def _three(url: str, **target: Any) -> tuple[int, list[RequestRecord]]:
    async def run() -> tuple[int, list[RequestRecord]]:
        t = Target(url, "evalkit-reference", tag_requests=True, **target)
        async with Prober(t, time.perf_counter_ns(), "tls") as prober:
            recs = list(await asyncio.gather(*(
                prober.stream(synthetic(32, 8, f"tls-{i}"), "baseline", 1) for i in range(3))))
            return prober.origin_ns, recs
    return asyncio.run(run())


class TestTLS:
    @pytest.mark.parametrize("kernel", [True, False], ids=["own-tls", "asyncio-tls"])
    def test_https_streams_are_timed_against_the_truth(
            self, tls_reference: tuple[str, Path], kernel: bool,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """Every chunk's stamp against the server's writes (one clock): after the write
        before it and a loose bound after its own (a shared machine). The server stamps a
        write once send() has returned (evalkit/reference/writer.py), then sends the next:
        a server preempted between the two (or, in a thread of this process, waiting for
        the GIL) stamps late, never early, so a chunk may be seen before its own write's
        stamp (CI saw 1.9 ms) but never before the previous one's. On our own TLS the
        stamps are the kernel's and each body is pumped."""
        import json

        url, truth_log = tls_reference
        pumped = count_pumps(monkeypatch)
        monkeypatch.setattr(kernel_stream, "KERNEL_TLS", kernel)
        origin, recs = _three(url)
        assert [(r.outcome, r.output_tokens, len(r.chunks)) for r in recs] == [("ok", 8, 8)] * 3
        truth: dict[str, Any] = {}
        for _ in range(100):  # the endpoint writes its truth lines in batches
            truth = {t["request_id"]: t for t in map(json.loads,
                                                     truth_log.read_text().splitlines())}
            if all(r.id in truth for r in recs):
                break
            time.sleep(0.05)
        for rec in recs:
            writes = [w[0] for w in truth[rec.id]["writes"] if w[3] == "content"]
            t0 = origin + round(rec.t0_s * 1e9)
            assert len(writes) == len(rec.chunks)
            for (at_s, _), written, before in zip(rec.chunks, writes, [t0, *writes],
                                                  strict=False):
                assert before < t0 + round(at_s * 1e9) < written + 50e6
            # the server stamps HTTPS requests too, where it can (see the next test)
            t = truth[rec.id]
            if t["kernel_ns"] is not None:
                assert t0 - 1e6 < t["kernel_ns"] <= t["arrived_ns"] <= t["received_ns"]
        if kernel:
            assert len(pumped) == 3 and all(pumped), pumped  # kernel-stamped, pumped
        else:
            assert pumped == []  # asyncio's transport: read by read

    def test_the_server_stamps_a_kept_alive_https_request_by_its_kernel(
            self, tls_reference: tuple[str, Path]) -> None:
        """The second request on a connection: the server's kernel had it after we sent it
        and before its loop saw it decrypted (a connection's first request too:
        tests/reference/test_tlssocket.py)."""
        import json

        url, truth_log = tls_reference

        async def run() -> tuple[int, list[RequestRecord]]:
            async with Prober(Target(url, "evalkit-reference", tag_requests=True),
                              time.perf_counter_ns(), "tls") as prober:
                recs = [await prober.stream(synthetic(32, 4, f"k-{i}"), "baseline", 1)
                        for i in range(2)]
                return prober.origin_ns, recs
        origin, recs = asyncio.run(run())
        assert [r.outcome for r in recs] == ["ok", "ok"]
        for _ in range(100):
            truth = {t["request_id"]: t for t in map(json.loads,
                                                     truth_log.read_text().splitlines())}
            if recs[1].id in truth:
                break
            time.sleep(0.05)
        t = truth[recs[1].id]
        t0 = origin + round(recs[1].t0_s * 1e9)
        assert isinstance(t["kernel_ns"], int), t
        assert t0 - 1e6 < t["kernel_ns"] <= t["arrived_ns"] <= t["received_ns"]

    def test_a_certificate_it_does_not_trust_is_a_connect_error(
            self, tls_reference: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
        """Our own TLS verifies as asyncio's did: an untrusted certificate is refused in
        the handshake, an error record that names it, never a stream read in clear."""
        url, _ = tls_reference
        monkeypatch.delenv("SSL_CERT_FILE")
        _, recs = _three(url)
        assert [r.outcome for r in recs] == ["error"] * 3
        assert all("CERTIFICATE_VERIFY_FAILED" in (r.error or "") for r in recs), recs[0].error

    def test_a_name_the_certificate_does_not_hold_is_refused(
            self, tls_reference: tuple[str, Path]) -> None:
        url, _ = tls_reference
        _, recs = _three(url.replace("localhost", "127.0.0.1"))  # the cert names localhost
        assert [r.outcome for r in recs] == ["error"] * 3
        assert all("127.0.0.1" in (r.error or "") or "match" in (r.error or "")
                   for r in recs), recs[0].error


class TestHostileTLS:
    """Our own TLS handshake against servers that do not hold up their end, over real
    sockets: each is an error record with a reason, on time, never a hang or a crash."""

    @staticmethod
    def _server(behave: str) -> tuple[str, socket.socket]:
        sock = socket.create_server(("127.0.0.1", 0))

        def serve() -> None:
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                with conn:
                    try:
                        conn.recv(65536)  # the client hello
                        if behave == "plain-http":
                            conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                        elif behave == "garbage":
                            conn.sendall(b"\x16\x03\x01\x00\x05hello" * 40)
                        elif behave == "silent":
                            time.sleep(3)
                        elif behave == "close":
                            continue  # closed at once, the hello unanswered
                        conn.recv(65536)
                    except OSError:
                        pass
        threading.Thread(target=serve, daemon=True).start()
        return f"https://localhost:{sock.getsockname()[1]}/v1", sock

    @pytest.mark.parametrize("behave", ["plain-http", "garbage", "close"])
    def test_a_server_that_is_not_tls_is_a_handshake_error(self, behave: str) -> None:
        url, sock = self._server(behave)
        try:
            _, recs = _three(url, timeout_s=5)
        finally:
            sock.close()
        assert [r.outcome for r in recs] == ["error"] * 3
        assert all("ConnectError" in (r.error or "") for r in recs), recs[0].error

    def test_a_silent_handshake_times_out_on_the_read_timeout(self) -> None:
        url, sock = self._server("silent")
        began = time.monotonic()
        try:
            _, recs = _three(url, timeout_s=1)
        finally:
            sock.close()
        assert time.monotonic() - began < 2.9  # not the server's 3 s
        assert [r.outcome for r in recs] == ["timeout"] * 3
        assert all("ConnectTimeout" in (r.error or "") for r in recs), recs[0].error


def test_a_connect_cut_by_its_deadline_closes_its_socket() -> None:
    """A vendor whose accept queue is full never completes a connect: each stream's
    connect times out, a timeout record, and its socket is closed then, not left to
    the garbage collector (an fd a timeout, over a long run)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = []  # fill the accept queue: the kernel then drops further SYNs
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        queued.append(filler)
    time.sleep(0.1)
    try:
        _, recs = _three(f"http://127.0.0.1:{port}/v1", timeout_s=0.5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.collect()
    finally:
        for filler in queued:
            filler.close()
        listener.close()
    assert [r.outcome for r in recs] == ["timeout"] * 3, [r.error for r in recs]
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


def _chat_chunk(text: str, finish: str | None = None) -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    event = f"data: {json.dumps(obj)}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(event), event)


class TestTLSRecords:
    """Our own decryption against a server that packs many TLS records into one TCP
    write, over a real socket: every record of a read is decrypted in that read, none
    left for a next read that never comes (the server then waits, its body complete)."""

    @staticmethod
    def _server(cert: Path, key: str, close: bool) -> tuple[str, socket.socket]:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), key)
        sock = socket.create_server(("127.0.0.1", 0))

        def answer(conn: socket.socket) -> None:
            with conn:
                incoming, out = ssl.MemoryBIO(), ssl.MemoryBIO()
                tls = ctx.wrap_bio(incoming, out, server_side=True)
                got = b""
                try:
                    while b"\r\n\r\n" not in got:  # the handshake, the request's head
                        try:
                            if tls.server_side and not got:
                                tls.do_handshake()
                            got += tls.read(65536)
                        except ssl.SSLWantReadError:
                            conn.sendall(out.read())
                            incoming.write(conn.recv(65536) or b"")
                    tls.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                              b"transfer-encoding: chunked\r\n\r\n")
                    for word in ("one", " two", " three", " four"):
                        tls.write(_chat_chunk(word))  # a record each
                    tls.write(_chat_chunk("", "stop"))
                    tls.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                    if close:
                        with contextlib.suppress(ssl.SSLWantReadError):
                            tls.unwrap()  # close_notify, in the same write
                    conn.sendall(out.read())  # every record in one write
                    conn.settimeout(3)
                    conn.recv(65536)  # and wait: the client must not need more
                except OSError:
                    pass

        def serve() -> None:  # a thread per connection: the client opens three
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                threading.Thread(target=answer, args=(conn,), daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
        return f"https://localhost:{sock.getsockname()[1]}/v1", sock

    @pytest.mark.parametrize("close", [False, True], ids=["kept-open", "close-notify"])
    def test_every_record_of_a_read_is_read(self, tls_reference: tuple[str, Path],
                                            close: bool) -> None:
        cert = Path(os.environ["SSL_CERT_FILE"])
        url, sock = self._server(cert, str(cert.with_name("key.pem")), close)
        began = time.monotonic()
        try:
            _, recs = _three(url, timeout_s=2)
        finally:
            sock.close()
        assert time.monotonic() - began < 1.5  # not a read timeout
        assert [r.outcome for r in recs] == ["ok"] * 3, [r.error for r in recs]
        # every content chunk, and the answer's digest is that of the whole answer
        assert all(len(r.chunks) == 4 for r in recs), [r.chunks for r in recs]
        digest = hashlib.sha256(b"one two three four").hexdigest()
        assert all(r.output_sha256 == digest for r in recs), recs[0].output_sha256

    def test_asyncio_tls_leaves_no_socket_to_a_peer_that_never_closes(
            self, tls_reference: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
        """asyncio's TLS (`KERNEL_TLS` off) against a server that never answers our
        close_notify: the run's end closes every socket; none is left for the garbage
        collector (a CI run failed on six such, after a loaded server was late to
        answer). Its head and body come in one write: asyncio's TLS stream does not pump,
        and the body's first bytes were once lost there."""
        cert = Path(os.environ["SSL_CERT_FILE"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(cert.with_name("key.pem")))
        sock = socket.create_server(("127.0.0.1", 0))
        done = threading.Event()

        def answer(conn: socket.socket) -> None:
            with ctx.wrap_socket(conn, server_side=True) as tls:
                got = b""
                while b"\r\n\r\n" not in got:
                    got += tls.recv(65536)
                tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                            b"transfer-encoding: chunked\r\n\r\n" + _chat_chunk("one")
                            + _chat_chunk("", "stop") + b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                done.wait(5)  # reads nothing more: our close_notify is never answered

        def serve() -> None:
            with contextlib.suppress(OSError):
                while True:
                    threading.Thread(target=answer, args=(sock.accept()[0],),
                                     daemon=True).start()

        threading.Thread(target=serve, daemon=True).start()
        monkeypatch.setattr(kernel_stream, "KERNEL_TLS", False)
        try:
            _, recs = _three(f"https://localhost:{sock.getsockname()[1]}/v1", timeout_s=2)
        finally:
            done.set()
            sock.close()
        assert [r.outcome for r in recs] == ["ok"] * 3, [r.error for r in recs]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.collect()
        assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


class TestConnectionCost:
    """A new connection's cost, TCP and the TLS handshake apart (issue 43): in the record
    of a request that opened its own, and in what a level's warm-up opened."""

    @pytest.mark.parametrize("kernel", [True, False], ids=["own-tls", "asyncio-tls"])
    def test_a_request_that_opened_its_connection_records_the_handshake_apart(
            self, tls_reference: tuple[str, Path], kernel: bool,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """The first request opens its connection inside its send: `connect_s` holds TCP
        and TLS, `tls_s` the handshake alone, and its t0 is its first byte sent (the
        TTFT is the server's alone). The next, on the kept-alive connection, has none."""
        monkeypatch.setattr(kernel_stream, "KERNEL_TLS", kernel)
        url, _ = tls_reference

        async def run() -> list[RequestRecord]:
            async with Prober(Target(url, "evalkit-reference"), time.perf_counter_ns(),
                              "hs") as prober:
                return [await prober.stream(synthetic(32, 4, f"hs-{i}"), "baseline", 1)
                        for i in range(2)]
        first, second = asyncio.run(run())
        assert [first.outcome, second.outcome] == ["ok", "ok"]
        assert first.connect_s is not None and first.tls_s is not None
        assert 0 < first.tls_s < first.connect_s
        assert first.sent_s == 0 and first.send_lag_s is not None
        assert first.send_lag_s >= first.connect_s  # the send waited for the connection
        assert second.connect_s is None and second.tls_s is None

    def test_the_warm_up_says_what_each_connection_it_opened_cost(
            self, tls_reference: tuple[str, Path]) -> None:
        """`prepare(n)` opens what is missing and says what each new one cost: a TLS
        handshake inside each TCP-and-TLS time; a second call opens none."""
        url, _ = tls_reference

        async def run() -> tuple[Any, Any]:
            async with Prober(Target(url, "evalkit-reference"), time.perf_counter_ns(),
                              "hs") as prober:
                return await prober.clients.prepare(3), await prober.clients.prepare(3)
        warm, again = asyncio.run(run())
        assert len(warm.connect_s) == len(warm.tls_s) == 3
        assert all(0 < tls < both for tls, both in zip(warm.tls_s, warm.connect_s,
                                                        strict=True))
        assert again.connect_s == again.tls_s == ()

    def test_plain_http_has_no_handshake(self) -> None:
        """Over plain HTTP a new connection is TCP's connect alone: no `tls_s`."""
        with ReferenceServer("gpu", {"request_overhead_ms": 5}, mode="thread") as srv:
            async def run() -> tuple[RequestRecord, Any]:
                async with Prober(Target(srv.base_url, srv.model), time.perf_counter_ns(),
                                  "hs") as prober:
                    rec = await prober.stream(synthetic(32, 4, "hs"), "baseline", 1)
                    return rec, await prober.clients.prepare(2)
            rec, warm = asyncio.run(run())
        assert rec.outcome == "ok" and rec.connect_s is not None and rec.connect_s > 0
        assert rec.tls_s is None
        assert len(warm.connect_s) == 1 and warm.tls_s == (0.0,)


class TestSplitRecord:
    @pytest.mark.parametrize("first", [20, 100], ids=["header", "header-and-data"])
    def test_a_record_split_over_two_reads_takes_the_stamp_of_the_read_that_ended_it(
            self, tls_reference: tuple[str, Path], first: int) -> None:
        """A TLS record whose bytes come in two TCP writes 150 ms apart is decrypted once
        whole, and its token is stamped with the second read: the kernel's receive time of
        the bytes that completed the event, never the first part's (issue 43). With more
        than its header in the first part, the record's text is longer than the second
        read's bytes: all of it is still taken in that read."""
        cert = Path(os.environ["SSL_CERT_FILE"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(cert.with_name("key.pem")))
        sock = socket.create_server(("127.0.0.1", 0))
        gap = 0.15

        def answer(conn: socket.socket) -> None:
            incoming, out = ssl.MemoryBIO(), ssl.MemoryBIO()
            tls = ctx.wrap_bio(incoming, out, server_side=True)
            got = b""
            with conn, contextlib.suppress(OSError):
                while b"\r\n\r\n" not in got:
                    try:
                        if not got:
                            tls.do_handshake()
                        got += tls.read(65536)
                    except ssl.SSLWantReadError:
                        conn.sendall(out.read())
                        incoming.write(conn.recv(65536) or b"")
                tls.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                          b"transfer-encoding: chunked\r\n\r\n")
                conn.sendall(out.read())
                tls.write(_chat_chunk("one"))
                record = out.read()
                conn.sendall(record[:first])  # the record's header, and some of its data
                time.sleep(gap)
                conn.sendall(record[first:])  # the rest of it, alone
                time.sleep(gap)
                tls.write(_chat_chunk(" two"))
                tls.write(_chat_chunk("", "stop"))
                tls.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
                conn.sendall(out.read())
                conn.settimeout(3)
                conn.recv(65536)

        threading.Thread(target=lambda: answer(sock.accept()[0]), daemon=True).start()

        async def run() -> RequestRecord:
            async with Prober(Target(f"https://localhost:{sock.getsockname()[1]}/v1",
                                     "evalkit-reference", timeout_s=3),
                              time.perf_counter_ns(), "split") as prober:
                return await prober.stream(synthetic(32, 4, "split"), "baseline", 1)
        try:
            rec = asyncio.run(run())
        finally:
            sock.close()
        assert rec.outcome == "ok", rec.error
        assert [n for _, n in rec.chunks] == [1, 1]
        assert rec.output_sha256 == hashlib.sha256(b"one two").hexdigest()
        one, two = (t for t, _ in rec.chunks)
        assert gap * 0.9 <= one < gap * 1.5  # the read that completed it, not the first
        assert two - one >= gap * 0.9  # part's, nor the next record's
