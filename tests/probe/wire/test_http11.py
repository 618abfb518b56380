"""The lean HTTP/1.1 transport (`evalkit.probe.wire.http11`): its heads, framing and reuse.

The pure parts alone (the request head, the response head, the body's framing), then the
transport against a tiny raw-socket server over real loopback TCP that writes exact
bytes and records what it was sent: heads cut into pieces, interim responses, lengths,
closes, a server that closes an idle connection, junk, and heads that never end. Every
failure must be the httpx error httpx's own transport would raise, and a connection is
reused only when its last body was read whole and nobody said close.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpcore
import httpx
import pytest

from evalkit.probe.client.clients import Target, _Clients, make_client
from evalkit.probe.client.stream import Prober
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.wire import http11
from evalkit.probe.wire.framing import (
    MAX_SIZE_LINE,
    MAX_TRAILERS,
    body_framing,
    chunked_end,
    parse_head,
    request_head,
)
from evalkit.probe.wire.http11 import MAX_HEAD
from evalkit.probe.wire.stamping import SendStamp, stamp_sends
from tests.certificates import throwaway_certificate
from tests.probe.helpers import RawServer as _Server
from tests.probe.helpers import Script

OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"


def _get(url: str, n: int = 1, timeout: float = 5, path: str = "/x"
         ) -> list[httpx.Response | Exception]:
    """n GETs one after another on one stream client (the lean transport), each body
    read whole; a failure is returned, not raised."""
    async def go() -> list[httpx.Response | Exception]:
        out: list[httpx.Response | Exception] = []
        async with make_client(Target(url, "m", timeout_s=timeout), max_connections=1) as c:
            assert isinstance(c._transport, http11.LeanTransport)
            for _ in range(n):
                try:
                    r = await c.get(path)
                    out.append(r)
                except httpx.HTTPError as exc:
                    out.append(exc)
        return out
    return asyncio.run(go())


class TestPureParts:
    def test_the_request_head_is_the_request_as_sent(self) -> None:
        req = httpx.Request("POST", "http://h:1/v1/chat?api-version=2", content=b"{}",
                            headers={"x-a": "1"})
        head = request_head(req)
        assert head.startswith(b"POST /v1/chat?api-version=2 HTTP/1.1\r\n")
        assert head.endswith(b"\r\n\r\n") and b"x-a: 1\r\n" in head
        assert b"content-length: 2\r\n" in head.lower() and b"host: h:1\r\n" in head.lower()

    @pytest.mark.parametrize(("name", "value"), [
        ("x-a", "sk-1\r\nx-evil: 1"), ("x-a", "sk-1\nx"), ("x-a", "sk-1\x00"),
        ("x a", "sk-1"), ("x:a", "sk-1")])
    def test_a_header_that_would_forge_another_is_refused_naming_only_its_name(
            self, name: str, value: str) -> None:
        req = httpx.Request("GET", "http://h/", headers={name: value})
        with pytest.raises(httpx.LocalProtocolError) as info:
            request_head(req)
        assert name in str(info.value) and value not in str(info.value)
        assert info.value.request is req  # httpx's error, on the request that raised it

    def test_a_tab_in_a_value_is_allowed(self) -> None:
        assert b"x-a: a\tb\r\n" in request_head(httpx.Request("GET", "http://h/",
                                                              headers={"x-a": "a\tb"}))

    def test_a_status_line_without_a_reason_reads_an_empty_reason(self) -> None:
        for line in (b"HTTP/1.1 200\r\n", b"HTTP/1.1 200 \r\n"):
            assert parse_head(line + b"content-length: 0\r\n\r\n")[:2] == (200, b"")

    def test_a_response_head_is_read(self) -> None:
        status, reason, headers, keep, version = parse_head(
            b"HTTP/1.1 404 Not Here\r\nX-A: 1\r\nx-b:  two \r\ncontent-length: 0\r\n\r\n")
        assert (status, reason, version, keep) == (404, b"Not Here", "1.1", True)
        assert headers[:2] == [(b"X-A", b"1"), (b"x-b", b"two")]
        assert parse_head(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0"
                          b"\r\n\r\n")[3] is False
        assert parse_head(b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\n\r\n")[3] \
            is False
        assert parse_head(b"HTTP/1.0 200 OK\r\n\r\n")[3:] == (False, "1.0")

    @pytest.mark.parametrize(("header", "keep"), [
        (b"Connection: keep-alive", True), (b"x-note: closed captions", True),
        (b"connection: Close", False), (b"Connection: upgrade, close", False)])
    def test_only_a_connection_header_saying_close_ends_the_connection(
            self, header: bytes, keep: bool) -> None:
        head = b"HTTP/1.1 200 OK\r\n" + header + b"\r\ncontent-length: 0\r\n\r\n"
        assert parse_head(head)[3] is keep

    def test_what_h11_read_and_the_rfc_allows_is_read(self) -> None:
        status, _, headers, keep, _ = parse_head(b"HTTP/1.1 200 OK\nx-a: 1\n\n")  # bare LF
        assert (status, headers, keep) == (200, [(b"x-a", b"1")], True)
        both = [(b"content-length", b"5"), (b"transfer-encoding", b"chunked")]
        assert parse_head(b"HTTP/1.1 200 OK\r\n" + b"".join(b"%s: %s\r\n" % h for h in both)
                          + b"\r\n")[2] == both
        assert body_framing("POST", 200, both) == (True, None)  # transfer-encoding wins
        assert parse_head(b"HTTP/1.2 200 OK\r\ncontent-length: 0\r\n\r\n")[4] == "1.2"

    @pytest.mark.parametrize("head", [
        b"HTTP/1.1 101 Switching\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n",
        b"HTTP/1.1 101 Switching\r\n\r\n"], ids=["upgrade", "bare"])
    def test_a_switch_of_protocols_nobody_asked_for_is_named(self, head: bytes) -> None:
        with pytest.raises(httpcore.RemoteProtocolError,
                           match=r"the server switched protocols unasked \(101\)"):
            parse_head(head)

    def test_a_bad_101_is_a_bad_head_not_a_switch(self) -> None:
        with pytest.raises(httpcore.RemoteProtocolError, match="illegal response head"):
            parse_head(b"HTTP/1.1 101 Switching\r\nnot a header\r\n\r\n")

    def test_a_chunked_request_carries_no_length(self) -> None:
        req = httpx.Request("POST", "http://h/", content=b"ab",
                            headers={"transfer-encoding": "chunked"})
        assert b"content-length" not in request_head(req, chunked=True).lower()
        assert b"content-length: 2" in request_head(req).lower()

    @pytest.mark.parametrize("head", [b"HTTQ/1.1 200 OK\r\n\r\n", b"HTTP/1.1 2x0 OK\r\n\r\n",
                                      b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n"])
    def test_a_bad_head_is_the_peers_protocol_error(self, head: bytes) -> None:
        with pytest.raises(httpcore.RemoteProtocolError, match="illegal response head"):
            parse_head(head)

    @pytest.mark.parametrize(("method", "status", "headers", "framing"), [
        ("GET", 200, [(b"Transfer-Encoding", b"chunked")], (True, None)),
        ("GET", 200, [(b"transfer-encoding", b"Chunked ")], (True, None)),
        ("GET", 200, [(b"content-length", b"12")], (False, 12)),
        ("GET", 200, [(b"content-length", b"12"), (b"Content-Length", b"12")], (False, 12)),
        ("GET", 200, [(b"content-length", b"12, 12")], (False, 12)),  # one list, one length
        ("GET", 200, [(b"content-length", b"12,12")], (False, 12)),
        ("GET", 200, [(b"content-length", b"9" * 18)], (False, int("9" * 18))),
        ("GET", 200, [], (False, None)),
        ("HEAD", 200, [(b"content-length", b"12")], (False, 0)),
        ("GET", 204, [(b"content-length", b"12")], (False, 0)),
        ("GET", 304, [], (False, 0)),
        ("GET", 100, [], (False, 0)),
    ])
    def test_a_body_is_framed_as_its_head_says(
            self, method: str, status: int, headers: list[tuple[bytes, bytes]],
            framing: tuple[bool, int | None]) -> None:
        assert body_framing(method, status, headers) == framing

    @pytest.mark.parametrize("headers", [
        [(b"transfer-encoding", b"gzip")], [(b"transfer-encoding", b"chunked, gzip")],
        [(b"transfer-encoding", b"gzip, chunked")],
        [(b"transfer-encoding", b"chunked"), (b"transfer-encoding", b"chunked")],
        [(b"content-length", b"1"), (b"content-length", b"2")], [(b"content-length", b"1, 2")],
        [(b"content-length", b"-1")], [(b"content-length", b"0x10")],
        [(b"content-length", b"9" * 19)]])
    def test_a_framing_that_cannot_be_trusted_is_refused(
            self, headers: list[tuple[bytes, bytes]]) -> None:
        with pytest.raises(httpcore.RemoteProtocolError):
            body_framing("GET", 200, headers)

    @pytest.mark.parametrize(("headers", "words"), [
        ([(b"transfer-encoding", b"GZIP,chunked")],
         "unsupported transfer-encoding b'gzip, chunked'"),
        ([(b"content-length", b"1"), (b"content-length", b" 2")],
         "bad content-length [b'1', b'2']"),
        ([(b"content-length", b"3, 1, 2")], "bad content-length [b'1', b'2']"),  # two shown
        ([(b"content-length", b"0x10")], "bad content-length [b'0x10']")])
    def test_a_refused_framing_names_what_it_said(
            self, headers: list[tuple[bytes, bytes]], words: str) -> None:
        with pytest.raises(httpcore.RemoteProtocolError) as info:
            body_framing("GET", 200, headers)
        assert str(info.value) == words


    @pytest.mark.parametrize(("tail", "end"), [
        (b"0\r\n\r\n", 5), (b"0\r\n\r\nNEXT", 5), (b"0;ext=1\r\n\r\n", 11),
        (b"0\r\nx-usage: 3\r\nx-b:\r\n\r\n", 23), (b"0\n\n", 3),
        (b"0\r\n", None), (b"0\r\nx-usage: 3\r\n", None), (b"0\r\nx-usa", None),
        (b"0", None), (b"0\r\n\r", None),
        # the bounds, at their edges: the longest last-chunk line, a cut one just short of
        # the bound, trailers one byte short of theirs, a colon inside a trailer's value
        (b"0;" + b"e" * (MAX_SIZE_LINE - 2) + b"\r\n\r\n", MAX_SIZE_LINE + 4),
        (b"0;" + b"e" * (MAX_SIZE_LINE - 2), None),
        (b"0\r\nx: " + b"a" * (MAX_TRAILERS - 3), None), (b"0\r\nx: a:b\r\n\r\n", 13)])
    def test_a_chunked_bodys_end_is_found_where_it_ends(self, tail: bytes,
                                                          end: int | None) -> None:
        assert chunked_end(tail) == end

    @pytest.mark.parametrize(("tail", "words"), [
        (b"0\r\nnot a trailer\r\n\r\n", "illegal header line"),
        (b"0\r\nx y: 1\r\n\r\n", "illegal header line"),
        (b"0\r\nx: a\x00b\r\n\r\n", "illegal header line"),
        (b"0\r\n: empty name\r\n\r\n", "illegal header line"),
        (b"0\r\nx: " + b"a" * MAX_TRAILERS, "trailers longer"),
        (b"0\r\n" + b"x: 1\r\n" * (MAX_TRAILERS // 6 + 1), "trailers longer"),
        (b"0;" + b"e" * MAX_SIZE_LINE, "does not end"),
        (b"0;" + b"e" * MAX_SIZE_LINE + b"\n\n", "does not end"),  # ends past the bound
        (b"0\r\nx: " + b"a" * MAX_TRAILERS + b"\r\n\r\n", "trailers longer")])
    def test_an_ill_formed_or_endless_end_is_refused(self, tail: bytes, words: str) -> None:
        with pytest.raises(httpcore.RemoteProtocolError, match=words):
            chunked_end(tail)


class TestOverRealSockets:
    def test_a_request_is_one_write_and_its_connection_is_reused(self) -> None:
        with _Server([[OK], [OK], [OK]]) as srv:
            got = _get(srv.url, 3)
        assert [r.status_code for r in got if isinstance(r, httpx.Response)] == [200] * 3
        assert [r.text for r in got if isinstance(r, httpx.Response)] == ["hi"] * 3
        assert srv.connections == 1 and srv.reads == [1, 1, 1]
        assert srv.requests[0].startswith(b"GET /x HTTP/1.1\r\n")

    def test_a_probe_request_goes_in_one_stamped_write(self) -> None:
        """Head and body in one write, not held for a second (the send's stamp is the
        whole request's), and the body is what content-length says."""
        async def go(url: str) -> tuple[SendStamp, httpx.Response]:
            async with make_client(Target(url, "m"), max_connections=1) as client:
                with stamp_sends(SendStamp(join=True)) as wire:
                    r = await client.post("/v1/x", content=b'{"a": 1}')
                return wire, r
        with _Server([[OK]]) as srv:
            wire, r = asyncio.run(go(srv.url))
        assert r.status_code == 200 and wire.writes == 1 and wire.first_ns is not None
        assert srv.requests[0].endswith(b'\r\n\r\n{"a": 1}')
        assert b"content-length: 8\r\n" in srv.requests[0].lower()

    def test_a_head_trickled_byte_by_byte_and_interim_answers_are_read(self) -> None:
        head = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nlink: x\r\n\r\n" + OK
        with _Server([[*(head[i:i + 1] for i in range(len(head)))], [OK]]) as srv:
            got = _get(srv.url, 2)
        assert [(r.status_code, r.text) for r in got if isinstance(r, httpx.Response)] \
            == [(200, "hi")] * 2
        assert srv.connections == 1

    @pytest.mark.parametrize("first", [
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nhi",
        b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nhi",
        OK + b"HTTP/1.1 200 OK\r\n",  # bytes after the body: nothing to trust
    ], ids=["close", "http-1.0", "junk-after"])
    def test_a_connection_is_not_reused_when_it_cannot_be(self, first: bytes) -> None:
        with _Server([[first, None], [OK]]) as srv:
            got = _get(srv.url, 2)
        assert [r.text for r in got if isinstance(r, httpx.Response)] == ["hi", "hi"]
        assert srv.connections == 2

    def test_a_body_read_to_the_close_is_read_whole(self) -> None:
        with _Server([[b"HTTP/1.1 200 OK\r\n\r\nall ", b"of it", None], [OK]]) as srv:
            got = _get(srv.url, 2)
        assert [r.text for r in got if isinstance(r, httpx.Response)] == ["all of it", "hi"]
        assert srv.connections == 2

    def test_a_connection_the_server_closed_while_idle_is_replaced_unseen(self) -> None:
        with _Server([[OK, 0.05, None], [OK]]) as srv:
            async def go() -> list[int]:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    first = await c.get("/x")
                    await asyncio.sleep(0.3)  # the server closes it meanwhile
                    second = await c.get("/x")
                    return [first.status_code, second.status_code]
            assert asyncio.run(go()) == [200, 200]
        assert srv.connections == 2

    @pytest.mark.parametrize(("script", "kind", "words"), [
        ([None], httpx.RemoteProtocolError, "Server disconnected without sending a response"),
        ([b"HTTP/1.1 200", None], httpx.RemoteProtocolError, "in the middle of the response head"),
        ([b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhi", None], httpx.RemoteProtocolError,
         "3 bytes still due"),
        ([b"SSH-2.0-OpenSSH\r\n\r\n"], httpx.RemoteProtocolError, "illegal response head"),
        ([b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"], httpx.RemoteProtocolError,
         "unsupported transfer-encoding"),
        ([b"HTTP/1.1 101 Switching\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n"],
         httpx.RemoteProtocolError, "switched protocols"),
        ([b"HTTP/1.1 101 Switching\r\n\r\n"], httpx.RemoteProtocolError, "switched protocols"),
        ([b"HTTP/1.1 200 OK\r\n", 2.0], httpx.ReadTimeout, ""),
    ], ids=["closed", "cut-head", "cut-body", "not-http", "gzip", "upgrade", "101", "silent"])
    def test_a_broken_answer_is_httpxs_error_in_its_words(
            self, script: Script, kind: type[Exception], words: str) -> None:
        with _Server([script, [OK]]) as srv:
            got = _get(srv.url, 2, timeout=0.5)
        assert isinstance(got[0], kind) and words in str(got[0]), repr(got[0])
        assert isinstance(got[1], httpx.Response) and got[1].text == "hi"  # a new connection
        assert srv.connections == 2

    def test_a_head_that_never_ends_is_cut_at_its_bound(self) -> None:
        endless = b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * (MAX_HEAD + 10)
        with _Server([[endless, 2.0]]) as srv:
            got = _get(srv.url, 1, timeout=1.5)
        assert isinstance(got[0], httpx.RemoteProtocolError)
        assert f"longer than {MAX_HEAD}" in str(got[0])

    def test_a_close_the_kernel_holds_is_seen_before_reuse(self) -> None:
        """The server closes right after each answer; the next request follows with no
        turn of the event loop in between (a closed loop's worker): each goes out on a
        new connection, none on the dead one."""
        with _Server([[OK, None]] * 5, pace=0) as srv:
            async def go() -> list[int]:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    out = []
                    for _ in range(5):
                        out.append((await c.get("/x")).status_code)
                        time.sleep(0.01)  # blocking: the close reaches the kernel, unread
                    return out
            assert asyncio.run(go()) == [200] * 5
        assert srv.connections == 5

    def test_bytes_sent_unasked_while_idle_drop_the_connection(self) -> None:
        with _Server([[OK, 0.005, OK], [OK]], pace=0) as srv:
            async def go() -> list[str]:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    first = (await c.get("/x")).text
                    time.sleep(0.05)  # the unasked answer is in the kernel, unread
                    return [first, (await c.get("/x")).text]
            assert asyncio.run(go()) == ["hi", "hi"]
        assert srv.connections == 2 and len(srv.requests) == 2

    def test_an_answer_that_came_before_the_request_was_sent_is_refused(self) -> None:
        """A server that writes its next 'response' ahead, while the request waits to
        leave on its schedule (a held send): the answer's first bytes are stamped before
        the send, so they are no answer to it, and never a TTFT of microseconds."""
        pre = b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\npre"
        with _Server([[OK, 0.03, pre]], pace=0) as srv:
            async def go() -> BaseException | str:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    await c.get("/x")
                    hold = time.perf_counter_ns() + 150_000_000  # it leaves in 150 ms
                    try:
                        with stamp_sends(SendStamp(hold_ns=hold)):
                            return (await c.get("/x")).text
                    except httpx.RemoteProtocolError as exc:
                        return exc
            got = asyncio.run(go())
        assert isinstance(got, httpx.RemoteProtocolError), got
        assert "answered before the request was sent" in str(got)

    @pytest.mark.parametrize("coding", ["gzip, chunked", "chunked, chunked", "identity"])
    def test_a_transfer_coding_we_cannot_frame_is_never_sent(self, coding: str) -> None:
        with _Server([[OK]]) as srv:
            async def go() -> BaseException | None:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    try:
                        await c.post("/x", content=b"{}",
                                     headers={"transfer-encoding": coding})
                    except httpx.LocalProtocolError as exc:
                        return exc
                    return None
            got = asyncio.run(go())
            assert isinstance(got, httpx.LocalProtocolError) and "only chunked" in str(got)
            assert srv.requests == []

    def test_two_requests_on_one_client_take_turns(self) -> None:
        with _Server([[b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n", 0.1, b"a"],
                      [OK]]) as srv:
            async def go() -> list[str]:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    got = await asyncio.gather(c.get("/a"), c.get("/b"))
                    return [r.text for r in got]
            assert sorted(asyncio.run(go())) == ["a", "hi"]
        assert srv.connections == 1

    def test_a_busy_connection_past_the_pool_timeout_is_a_pool_timeout(self) -> None:
        with _Server([[b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n", 0.5, b"a"]]) as srv:
            async def go() -> BaseException | None:
                async with make_client(Target(srv.url, "m"), max_connections=1) as c:
                    first = asyncio.ensure_future(c.get("/a"))
                    await asyncio.sleep(0.1)
                    try:
                        await c.get("/b", timeout=httpx.Timeout(5, pool=0.1))
                    except httpx.PoolTimeout as exc:
                        await first
                        return exc
                    return None
            assert isinstance(asyncio.run(go()), httpx.PoolTimeout)


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


@pytest.fixture
def httpcore_off() -> Iterator[None]:
    http11.LEAN = False
    try:
        yield
    finally:
        http11.LEAN = True


class TestProbeRecords:
    """A probe's stream read by the lean transport and by httpcore: the same record."""

    @staticmethod
    def _stream(url: str) -> list[tuple[str, int, str | None]]:
        async def go() -> list[tuple[str, int, str | None]]:
            async with Prober(Target(url + "/v1", "m"), time.perf_counter_ns(), "t") as p:
                recs = [await p.stream(synthetic(16, 8, f"p{i}", 0), "baseline", 1)
                        for i in range(2)]
            return [(r.outcome, len(r.chunks), r.output_sha256) for r in recs]
        return asyncio.run(go())

    def test_a_stream_reads_the_same_either_way(self, httpcore_off: None) -> None:
        events = [json.dumps({"choices": [{"index": 0, "delta": {"content": t},
                                            "finish_reason": f}]}).encode()
                  for t, f in (("a", None), (" b", None), (" c", "stop"))]
        body = b"".join(_chunk(b"data: %s\n\n" % e) for e in events)
        body += _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
        head = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n")
        scripts: list[Script] = [[head + body]] * 2
        with _Server(scripts) as srv:
            slow = self._stream(srv.url)
            slow_sent = [r.replace(srv.url.split(":")[-1].encode(), b"PORT")
                         for r in srv.requests]
        http11.LEAN = True
        with _Server(scripts) as srv:
            lean = self._stream(srv.url)
            assert srv.connections == 1
            lean_sent = [r.replace(srv.url.split(":")[-1].encode(), b"PORT")
                         for r in srv.requests]
        assert lean == slow and lean[0][:2] == ("ok", 3)
        # a vendor who has read our source sees the same bytes from either transport:
        # the same headers in the same order and case, the same body, nothing to tell
        # the lean client from httpx's own
        assert lean_sent == slow_sent and len(lean_sent) == 2
        assert lean_sent[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: ")


class TestPrepare:
    def test_a_server_that_drops_fresh_connections_loses_no_first_request(self) -> None:
        """A server that closes each new connection a moment after accepting it, before
        any request (a connection cap, a proxy's request timeout), costs the warm-up its
        connections, never a level's first requests: the warm-up asks for an answer, so
        it sees the close and the streams connect again. (A bare connect, tried, lost 17
        of 20 first requests to 'connection reset' against such a server.)"""
        listener = socket.create_server(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        accepted = [0]

        def serve(conn: socket.socket, k: int) -> None:
            with conn:
                if k <= 3:  # the warm-up's connections: dropped unasked
                    time.sleep(0.002)
                    return
                conn.settimeout(5)
                buf = b""
                while b"\r\n\r\n" not in buf:
                    if not (more := conn.recv(65536)):
                        return
                    buf += more
                conn.sendall(OK)
                time.sleep(0.2)

        def accept() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                accepted[0] += 1
                threading.Thread(target=serve, args=(conn, accepted[0]), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()

        async def go() -> list[int | str]:
            clients = _Clients(Target(url, "m", timeout_s=2))
            await clients.prepare(3)
            out: list[int | str] = []
            for c in [clients.acquire() for _ in range(3)]:
                try:
                    out.append((await c.get("/x")).status_code)
                except httpx.HTTPError as exc:
                    out.append(type(exc).__name__)
            await clients.aclose()
            return out
        try:
            assert asyncio.run(go()) == [200] * 3
        finally:
            listener.close()
        assert accepted[0] == 6  # three dropped, three the streams opened again

    def test_a_proxy_in_the_environment_is_not_used(self, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
        """A stream's client goes straight to the vendor, HTTP_PROXY or not (httpx
        ignores the environment's proxies once a transport is given): a proxy would sit
        inside every timed figure. The warm-up goes straight to the vendor too."""
        with _Server([[OK]] * 3) as proxy, _Server([[OK]] * 3) as vendor:
            for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
                monkeypatch.delenv(name, raising=False)
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            async def go() -> int:
                clients = _Clients(Target(vendor.url, "m", timeout_s=3))
                await clients.prepare(2)
                r = await clients.acquire().get("/x")
                await clients.aclose()
                return r.status_code
            assert asyncio.run(go()) == 200
            assert proxy.connections == 0 and vendor.connections == 2
            assert sorted(r.split(b"\r\n")[0] for r in vendor.requests) == [
                b"GET /models HTTP/1.1"] * 2 + [b"GET /x HTTP/1.1"]

    def test_opening_a_levels_connections_is_bounded_by_the_timeout(
            self, httpcore_off: None) -> None:
        """Through httpx's own transport (a proxy, LEAN off) a level's connections still
        open with a GET /models: a vendor trickling an endless body cannot hold a
        level's start."""
        head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        trickle: Script = [head, *([b"1\r\nx\r\n", 0.05] * 400)]
        with _Server([trickle] * 2) as srv:
            async def go() -> float:
                clients = _Clients(Target(srv.url, "m", timeout_s=0.5))
                began = time.monotonic()
                await clients.prepare(2)
                took = time.monotonic() - began
                await clients.aclose()
                return took
            assert asyncio.run(go()) < 2.0


class TestTLS:
    def test_https_offers_http_1_1_by_alpn_as_httpcore_did(self, tmp_path: Path) -> None:
        """An SDK's TLS hello offers ALPN http/1.1; one without it is a probe to spot."""
        cert, key = throwaway_certificate(tmp_path, "IP:127.0.0.1")
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ctx.load_cert_chain(cert, key)
        server_ctx.set_alpn_protocols(["h2", "http/1.1"])
        offered: list[str | None] = []
        sock = socket.create_server(("127.0.0.1", 0))

        def serve() -> None:
            raw, _ = sock.accept()
            with server_ctx.wrap_socket(raw, server_side=True) as conn:
                offered.append(conn.selected_alpn_protocol())
                conn.recv(65536)
                conn.sendall(OK)
        threading.Thread(target=serve, daemon=True).start()

        async def go() -> str:
            ctx = ssl.create_default_context(cafile=str(cert))
            url = f"https://127.0.0.1:{sock.getsockname()[1]}"
            async with make_client(Target(url, "m"), max_connections=1,
                                   ssl_context=ctx) as client:
                assert isinstance(client._transport, http11.LeanTransport)
                return (await client.get("/x")).text
        try:
            assert asyncio.run(go()) == "hi"
        finally:
            sock.close()
        assert offered == ["http/1.1"]

    def test_a_handshake_that_never_comes_leaves_no_socket_open(self) -> None:
        """A vendor that accepts TCP and never answers the TLS hello holds a level's start
        only to the timeout, and the cancelled handshakes close their sockets (their
        readers stayed registered with the loop, one socket per stream per level)."""
        import os

        sock = socket.create_server(("127.0.0.1", 0))
        port = sock.getsockname()[1]

        def ours() -> int:
            """This process's sockets whose peer is the server: the clients' (counting
            every socket read other tests' closing threads in a loaded run)."""
            n = 0
            for fd in os.listdir("/proc/self/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                        with socket.socket(fileno=os.dup(int(fd))) as probe:
                            n += probe.getpeername()[1:2] == (port,)
            return n

        held: list[socket.socket] = []

        def accept() -> None:
            while True:
                try:
                    held.append(sock.accept()[0])  # never a word of TLS
                except OSError:
                    return
        threading.Thread(target=accept, daemon=True).start()

        async def go() -> float:
            clients = _Clients(Target(f"https://127.0.0.1:{port}", "m", timeout_s=0.3))
            began = time.monotonic()
            await clients.prepare(4)
            took = time.monotonic() - began
            await clients.aclose()
            return took
        try:
            took = asyncio.run(go())
            deadline = time.monotonic() + 5  # a loaded machine's accept thread may lag
            while len(held) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(held) == 4
            assert took < 1.5 and ours() == 0  # each client's socket closed
            for conn in held:
                conn.close()
        finally:
            sock.close()
