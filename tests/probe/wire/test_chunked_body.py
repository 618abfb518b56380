"""The streaming body's chunked framing, read by `evalkit.probe.wire.chunked` instead of h11.

The decoder alone, at every split of a body; then the prober against tiny raw-socket
servers that write exact bytes, well-framed and not (bad sizes, a huge size, a missing
CRLF, an endless size line, trailers, a cut mid-chunk), each read both ways (the direct
reader and h11, `chunked.DIRECT`): the records must say the same, the server counts the
connections it accepted (a body read to its end leaves a connection to reuse, any other
one is closed), and h11 must frame no chunk when the direct reader is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import h11
import pytest

from evalkit.probe.client.clients import Target, make_client
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.wire import chunked, http11
from evalkit.probe.wire.chunked import MAX_SIZE_LINE, ChunkedDecoder, read_body
from evalkit.probe.wire.kernel_stream import KernelStampedStream
from evalkit.records import RequestRecord
from tests.probe.helpers import RawServer, count_pumps


def _event(text: str, finish: str | None = None) -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


def _framed(*payloads: bytes, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in payloads) + b"0\r\n" + trailer + b"\r\n"


BODY = [_event("hi"), _event(" there"), _event("!", "stop"), b"data: [DONE]\n\n"]


class TestDecoder:
    def test_every_split_of_a_body_gives_its_data(self) -> None:
        wire = _framed(*BODY, trailer=b"x-end: 1\r\n") + b"GARBAGE"
        for cut in range(1, len(wire)):
            for second in (cut, min(cut + 7, len(wire))):
                d = ChunkedDecoder()
                got = d.feed(wire[:cut]) + d.feed(wire[cut:second]) + d.feed(wire[second:])
                assert b"".join(got) == b"".join(BODY), cut
                assert d.tail == b"0\r\nx-end: 1\r\n\r\nGARBAGE"

    def test_one_piece_per_chunk_and_extensions_ignored(self) -> None:
        d = ChunkedDecoder()
        assert d.feed(b"2;name=v \r\nab\r\n1\r\nc\r\n") == [b"ab", b"c"]
        assert d.feed(b"3\r\nxyz\r\n") == [b"xyz"] and d.tail is None

    @pytest.mark.parametrize(("wire", "why"), [
        (b"zz\r\nab\r\n", "illegal chunk header"),
        (b"-1\r\n", "illegal chunk header"),
        (b"0x2\r\nab\r\n", "illegal chunk header"),
        (b"\r\n", "illegal chunk header"),
        (b"2\r\nabXY", "malformed chunk footer"),
        (b"2\r\nab\n3\r\n", "malformed chunk footer"),
        (b"1" * MAX_SIZE_LINE, "no line end"),
    ])
    def test_bad_framing_raises_what_h11_raises(self, wire: bytes, why: str) -> None:
        d = ChunkedDecoder()
        with pytest.raises(h11.RemoteProtocolError, match=why):
            d.feed(wire)
            d.feed(b"")  # after the data before it, if any

    def test_the_data_before_bad_framing_is_read_first(self) -> None:
        d = ChunkedDecoder()
        assert d.feed(b"2\r\nabXY") == [b"ab"]
        assert d.error is not None and "malformed chunk footer" in str(d.error)
        with pytest.raises(h11.RemoteProtocolError):
            d.feed(b"\r\n")

    def test_a_huge_size_is_a_long_chunk_not_a_buffer(self) -> None:
        d = ChunkedDecoder()
        assert d.feed(b"f" * 20 + b"\r\n" + BODY[0]) == [BODY[0]]
        assert d.feed(BODY[1]) == [BODY[1]] and d._buf == b""

    def test_a_size_line_cut_short_waits_within_its_bound(self) -> None:
        d = ChunkedDecoder()
        assert d.feed(b"1" * (MAX_SIZE_LINE - 1)) == []
        with pytest.raises(h11.RemoteProtocolError, match="no line end"):
            d.feed(b"1")


def _Raw(pieces: list[bytes | float | None]) -> RawServer:
    """A raw-socket server answering every request with the same pieces (TCP_NODELAY,
    a pause between pieces: separate reads; a float piece is a longer pause), keeping the
    connection open for the next request unless the pieces end with None."""
    return RawServer(itertools.repeat(pieces), pace=0.005)


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _records(pieces: list[bytes | float | None], n: int = 2, direct: bool = True,
             timeout_s: float = 5, pump: bool = True, lean: bool | None = None
             ) -> tuple[list[RequestRecord], _Raw]:
    """n requests one after another on one prober (one connection if it is reused);
    `pump` False reads a direct body read by read (`body_parts`), not pumped; `lean`
    False reads it direct from under httpcore's h11 (default: as `direct`)."""
    server = _Raw(pieces)
    chunked.DIRECT, chunked.PUMP = direct, pump
    http11.LEAN = direct if lean is None else lean

    async def go() -> list[RequestRecord]:
        target = Target(server.base_url, "m", timeout_s=timeout_s)
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            return [await prober.stream(synthetic(16, 8, f"p{i}", 0), "baseline", 1)
                    for i in range(n)]
    try:
        return asyncio.run(go()), server
    finally:
        chunked.DIRECT = chunked.PUMP = http11.LEAN = True
        server.close()


@pytest.fixture
def pumped() -> Iterator[list[int]]:
    """How many bodies were pumped in the reader callback (`KernelStampedStream.pump`)."""
    seen: list[int] = []
    original = KernelStampedStream.pump

    async def counting(self: KernelStampedStream, *args: Any, **kwargs: Any) -> None:
        seen.append(1)
        await original(self, *args, **kwargs)
    KernelStampedStream.pump = counting  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        KernelStampedStream.pump = original  # type: ignore[method-assign]


@pytest.fixture
def h11_frames() -> Iterator[list[int]]:
    """How many chunk pieces h11 itself framed (its ChunkedReader's Data events)."""
    seen: list[int] = []
    original = h11._readers.ChunkedReader.__call__  # type: ignore[attr-defined]

    def counting(self: Any, buf: Any) -> Any:
        event = original(self, buf)
        if isinstance(event, h11.Data):
            seen.append(len(event.data))
        return event
    h11._readers.ChunkedReader.__call__ = counting  # type: ignore[attr-defined]
    try:
        yield seen
    finally:
        h11._readers.ChunkedReader.__call__ = original  # type: ignore[attr-defined]


def _same(a: RequestRecord, b: RequestRecord) -> None:
    """Two records of one scripted stream read both ways: the same facts."""
    assert (a.outcome, a.http_status, a.finish_reason, a.output_tokens, a.output_sha256,
            len(a.chunks)) == (b.outcome, b.http_status, b.finish_reason, b.output_tokens,
                               b.output_sha256, len(b.chunks))


# the head and the first chunk in one write, a size line and a CRLF cut between writes
AWKWARD = [HEAD + b"%x\r\n" % len(BODY[0]) + BODY[0] + b"\r\n", b"%x" % len(BODY[1]),
           b"\r\n" + BODY[1] + b"\r", b"\n" + _framed(*BODY[2:])[:-5], b"0\r\n",
           b"\r\n"]


class TestOverRealSockets:
    def test_a_well_framed_stream_is_read_here_and_its_connection_reused(
            self, h11_frames: list[int], pumped: list[int]) -> None:
        recs, server = _records(AWKWARD)
        assert [r.outcome for r in recs] == ["ok", "ok"]
        assert [len(r.chunks) for r in recs] == [3, 3] and recs[0].finish_reason == "stop"
        assert (server.connections, len(server.requests)) == (1, 2)  # kept alive, reused
        assert h11_frames == []  # no chunk framed by h11
        assert len(pumped) == 2  # each body pumped in the reader callback
        iterated, again = _records(AWKWARD, pump=False)
        assert len(pumped) == 2 and again.connections == 1
        slow, _ = _records(AWKWARD, direct=False)
        assert h11_frames  # the switch does send it through h11
        for a, b, c in zip(recs, iterated, slow, strict=True):
            _same(a, b)
            _same(a, c)

    def test_a_body_that_cannot_be_pumped_keeps_what_came_with_its_head(
            self, monkeypatch: pytest.MonkeyPatch, pumped: list[int]) -> None:
        """A stream whose reads the kernel did not stamp (no SO_TIMESTAMPNS, a read
        across a wall-clock step) is read read by read: the first chunk, which came in
        the head's read, is read too (it was dropped, and the body timed out)."""
        recs, _ = _records(AWKWARD)
        monkeypatch.setattr(KernelStampedStream, "pumps", property(lambda self: False))
        for lean in (True, False):  # our framing, and h11's under httpcore
            unpumped, server = _records(AWKWARD, timeout_s=2, lean=lean)
            assert [(r.outcome, len(r.chunks)) for r in unpumped] == [("ok", 3)] * 2, \
                (lean, [r.error for r in unpumped])
            assert server.connections == 1
            for a, b in zip(recs, unpumped, strict=True):
                _same(a, b)
        assert len(pumped) == 2  # the first run's; none after

    def test_a_pumped_body_is_stamped_by_the_kernel_in_order(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A kernel-stamped body is pumped (one `pump` for the body, every read after
        the head handed over in the reader callback), and each chunk's time is its
        read's stamp: the server's two pauses of 0.1 s show in the gaps, in order."""
        pumps = count_pumps(monkeypatch)
        wire = _framed(*BODY)
        pieces: list[bytes | float | None] = [HEAD + wire[:len(wire) // 3], 0.1,
                                              wire[len(wire) // 3:2 * len(wire) // 3], 0.1,
                                              wire[2 * len(wire) // 3:]]
        recs, _ = _records(pieces, n=1)
        times = [t for t, _ in recs[0].chunks]
        assert recs[0].outcome == "ok" and len(times) == 3, recs[0].error
        assert len(pumps) == 1 and pumps[0] > 0, pumps  # pumped, on kernel stamps
        assert times[0] > 0 and times == sorted(times)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert sum(0.095 < g < 0.25 for g in gaps) == 2, gaps  # each pause, as written

    @pytest.mark.parametrize("cut", [1, 2, 4], ids=["last-lf", "final-crlf", "zero-line"])
    def test_an_end_cut_between_reads_is_read_whole_and_the_connection_reused(
            self, cut: int) -> None:
        """The last chunk's line or the final CRLF in a later read: h11 reads the rest of
        the end itself, and the connection still goes back to the pool."""
        wire = HEAD + _framed(*BODY)
        recs, server = _records([wire[:-cut], 0.05, wire[-cut:]])
        assert [(r.outcome, len(r.chunks)) for r in recs] == [("ok", 3), ("ok", 3)]
        assert server.connections == 1
        slow, _ = _records([wire[:-cut], 0.05, wire[-cut:]], direct=False)
        for a, b in zip(recs, slow, strict=True):
            _same(a, b)

    def test_trailers_are_h11s_to_read_and_the_connection_is_reused(self) -> None:
        recs, server = _records([HEAD + _framed(*BODY, trailer=b"x-usage: 3\r\n")])
        assert [r.outcome for r in recs] == ["ok", "ok"]
        assert server.connections == 1

    # the framing errors the client sees at once come from a server that then waits for
    # the next request on the same connection: reusing it would show as one connection
    @pytest.mark.parametrize(("pieces", "why"), [
        ([HEAD + b"%x\r\n" % len(BODY[0]) + BODY[0] + b"\r\n", b"zz\r\n"],
         "illegal chunk header"),
        ([HEAD + b"%x\r\n" % len(BODY[0]) + BODY[0] + b"XX"], "malformed chunk footer"),
        ([HEAD + b"%x\r\n" % len(BODY[0]) + BODY[0] + b"\r\n", b"7" * 5000, None],
         "illegal chunk header"),
        ([HEAD + b"%x\r\n" % len(BODY[0]) + BODY[0] + b"\r\n", b"40\r\n" + BODY[1][:10], None],
         "incomplete chunked read"),
        ([HEAD + b"f" * 20 + b"\r\n" + BODY[0], BODY[1], None], "incomplete chunked read"),
        ([HEAD + _framed(*BODY)[:-2] + b"not a trailer line\r\n\r\n"], "header"),
    ], ids=["bad-size", "no-crlf", "endless-size-line", "cut-mid-chunk", "huge-size",
            "bad-trailer"])
    def test_bad_framing_is_an_outcome_and_its_connection_closed(
            self, pieces: list[bytes | None], why: str) -> None:
        recs, server = _records(pieces)
        for rec in recs:
            assert rec.outcome == "incomplete" and rec.http_status == 200
            assert rec.error is not None and rec.error.startswith("connection cut")
            assert re.search(why, rec.error), rec.error
        assert server.connections == 2  # never reused half-read
        slow, _ = _records(pieces, direct=False)
        iterated, again = _records(pieces, pump=False)
        assert again.connections == 2
        for a, b, c in zip(recs, slow, iterated, strict=True):
            _same(a, b)
            _same(a, c)

    @pytest.mark.parametrize("pump", [True, False], ids=["pumped", "read-by-read"])
    def test_a_silent_server_mid_body_is_a_read_timeout(self, pump: bool) -> None:
        # one chunk, then nothing (the connection held open): no bytes for timeout_s
        server = _Raw([HEAD + b"%x\r\n" % len(BODY[0]) + BODY[0] + b"\r\n"])
        chunked.PUMP = pump

        async def go() -> RequestRecord:
            target = Target(server.base_url, "m", timeout_s=1)
            async with Prober(target, time.perf_counter_ns(), "t") as prober:
                return await prober.stream(synthetic(16, 8, "p", 0), "baseline", 1)
        try:
            rec = asyncio.run(go())
        finally:
            chunked.PUMP = True
            server.close()
        assert rec.outcome == "timeout" and len(rec.chunks) == 1
        assert rec.error is not None and "ReadTimeout" in rec.error

    @pytest.mark.parametrize("pump", [True, False], ids=["pumped", "read-by-read"])
    def test_the_read_timeout_counts_from_the_last_read(self, pump: bool) -> None:
        """Three chunks 0.4 s apart, then silence: the timeout comes 1 s after the last
        read (~1.8 s in), not 1 s after the first, and not never (a deadline moved by
        the time the timer fires rather than by the read would move on for ever)."""
        pieces: list[bytes | float | None] = [HEAD + _framed(BODY[0])[:-5], 0.4]
        pieces += [_framed(BODY[1])[:-5], 0.4, _framed(BODY[2])[:-5]]
        server = _Raw(pieces)
        chunked.PUMP = pump

        async def go() -> RequestRecord:
            target = Target(server.base_url, "m", timeout_s=1)
            async with Prober(target, time.perf_counter_ns(), "t") as prober:
                return await prober.stream(synthetic(16, 8, "p", 0), "baseline", 1)
        began = time.monotonic()
        try:
            rec = asyncio.run(go())
        finally:
            chunked.PUMP = True
            server.close()
        took = time.monotonic() - began
        assert rec.outcome == "timeout" and len(rec.chunks) == 3, (rec.outcome, rec.chunks)
        assert 1.75 < took < 2.6, took

    @pytest.mark.parametrize("pump", [True, False], ids=["pumped", "read-by-read"])
    def test_gaps_shorter_than_the_read_timeout_never_time_out(self, pump: bool) -> None:
        """Each wait has its own deadline: the one read timer of a connection, armed by
        an earlier wait, fires inside a later one and must re-arm, not time it out."""
        wire = _framed(*BODY)
        cuts = [0, len(HEAD) + 60, len(HEAD) + 120, len(wire) + len(HEAD) - 10,
                len(wire) + len(HEAD)]
        whole = HEAD + wire
        pieces: list[bytes | float | None] = []
        for a, b in itertools.pairwise(cuts):
            pieces += [whole[a:b], 0.45]
        recs, _ = _records(pieces, n=1, timeout_s=1.0, pump=pump)  # 1.8 s, no gap of 1 s
        assert recs[0].outcome == "ok" and len(recs[0].chunks) == 3, recs[0].error


def test_a_fault_in_the_pumped_callback_is_raised_in_the_task_not_lost() -> None:
    """`on_piece` runs in the event loop's reader callback when pumped: what it raises
    must come out of `read_body` at once, not vanish into the loop's error log while the
    task waits for its read timeout."""
    # the head alone first: the chunk then comes in a read of its own, in the callback
    server = _Raw([HEAD, 0.05, b"%x\r\n" % len(BODY[0]) + BODY[0] + b"\r\n"])

    def boom(raw: bytes, at: int, late: int | None) -> bool:
        raise RuntimeError("a bug in the chunk handler")

    async def go() -> float:
        client = make_client(Target(server.base_url, "m", timeout_s=30), max_connections=1)
        async with client, client.stream("POST", "/chat/completions",
                                         content=b"{}") as response:
            began = time.perf_counter()
            with pytest.raises(RuntimeError, match="a bug in the chunk handler"):
                await read_body(response, boom)
            return time.perf_counter() - began
    try:
        assert asyncio.run(go()) < 5  # not the 30 s read timeout
    finally:
        server.close()


@pytest.mark.parametrize("pump", [True, False], ids=["pumped", "read-by-read"])
def test_a_flood_that_never_ends_stops_at_the_request_deadline(pump: bool) -> None:
    """A vendor that streams content as fast as the socket takes it, and never ends: the
    pumped body runs in the reader callback, read after read, yet the request's deadline
    still ends it on time, a timeout with its chunks kept, and the loop is free after.
    (max_tokens 100,000: the flood stays under the chunk cap, `max_content_chunks`, which
    stops a flood first at the few tokens usually asked for.)"""
    sock = socket.create_server(("127.0.0.1", 0))
    batch = b"".join(b"%x\r\n%s\r\n" % (len(_event("w")), _event("w")) for _ in range(50))

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(10)
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in conn.recv(65536):
                    pass
                conn.sendall(HEAD)
                until = time.monotonic() + 10
                while time.monotonic() < until:
                    conn.sendall(batch)
    threading.Thread(target=serve, daemon=True).start()
    chunked.PUMP = pump

    async def go() -> tuple[RequestRecord, float]:
        target = Target(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", "m", timeout_s=5,
                        deadline_s=1.0)
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            began = time.monotonic()
            rec = await prober.stream(synthetic(16, 100_000, "p", 0), "baseline", 1)
            took = time.monotonic() - began
            await asyncio.sleep(0)  # the loop runs other work again
            return rec, took
    try:
        rec, took = asyncio.run(go())
    finally:
        chunked.PUMP = True
        sock.close()
    assert rec.outcome == "timeout" and "deadline" in (rec.error or ""), rec.error
    assert 0.9 < took < 3.0, took
    assert len(rec.chunks) > 1000  # the flood's chunks, kept


def test_a_body_ending_as_its_stale_read_timer_fires_is_not_a_timeout() -> None:
    """The body's last read and the read timer (armed when the pump began, past its
    deadline while the loop was held) land in one turn of the loop: reader callbacks run
    first and end the pump, and the timer must then move on, not time a complete body
    out (the deadline counts from the last read: `_pumped_ns`)."""
    a, b = socket.socketpair()

    async def run() -> list[bytes]:
        a.setblocking(False)
        stream = KernelStampedStream(a, asyncio.get_running_loop())
        got: list[bytes] = []

        def sink(at: int, data: bytes, delay: int | None) -> bool:
            got.append(data)
            return data.endswith(b"END")

        async def vendor() -> None:
            await asyncio.sleep(0.05)
            b.send(b"part")
            await asyncio.sleep(0.05)
            b.send(b"END")
            time.sleep(0.4)  # the loop held past the pump's first deadline (0.3 s)
        task = asyncio.create_task(vendor())
        await stream.pump(sink, timeout=0.3)
        await task
        await stream.aclose()
        return got

    try:
        assert asyncio.run(run()) == [b"part", b"END"]
    finally:
        b.close()
