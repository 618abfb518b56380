"""One stream client's HTTP/1.1 connection, framed here under httpx's API.

Why: after the body's chunks (`evalkit.probe.wire.chunked`), a request's own CPU was mostly
httpcore and h11 around two heads: httpx's `send` was 41 % of a request's CPU, of which
httpcore's HTTP/1.1 connection was 25 % (h11 writing the request head 6 %, parsing the
response head 9 %, the rest its state machine, locks and trace hooks), and closing the
response 8 % more (cProfile, docs/benchmarks.md, "the fifth look"). Each stream already
holds its own client with one connection (`client.clients._Clients`), so the pool, its locks and
h11's state machine guard nothing here. This transport writes the request head itself
(one write, head and body: the send's stamp is when the whole request was handed over),
parses the response head with httptools (llhttp, in C: strict about what it accepts),
and reads the body framed by its headers: chunked bodies with `ChunkedDecoder`, as the
prober's pumped reader does, a length, or up to the server's close.

httpx stays the client API: requests are httpx requests, responses httpx responses, and
failures the httpx exceptions httpcore's would have become (`evalkit.probe.wire.framing` says
whose words they are in). The network stream is the one its client hands it
(`client.clients.make_client` gives the stamped `transport.StampedBackend`), so every
read is stamped before anything here sees it; this module frames HTTP/1.1 and knows no
socket of its own.

A connection is reused only when its last body was read to its end and neither side
said `close`; it is dropped before reuse when the server sent anything or closed it
while idle (what the kernel holds is read first, not left for the next turn of the
loop), or it idled past the keep-alive expiry (as httpcore's pool does). A body left
half-read closes it. An answer whose first bytes arrived before the request was sent is
no answer to it: a server that writes its next "response" ahead would otherwise time as
a TTFT of microseconds. `LEAN = False` goes back to httpcore's pool and h11, to
compare (under the same rules for a closed connection: `reconnect.Resending`).

A request written on a reused connection that the server closed before any byte of an
answer (an end of stream or a reset where the status line should be) is sent once more,
on a fresh connection: the close raced the request (llama.cpp's server closes after
every stream while advertising keep-alive), so the server never read it, or read it and
discarded it unanswered, and nothing of it was served. That one case only: a request
that got any byte of an answer, one on a fresh connection, one that timed out, and the
second send are never sent again, and their failures stand as the server's. The second
send is counted (`SendStamp.resent`, the record's `reconnects`), timed from the first,
and kept inside the request's deadline; `evalkit.probe.wire.reconnect` says why in full, and
why a server seen closing after a stream then gets a fresh connection every time.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpcore
import httpx

from evalkit.probe.wire import stamping
from evalkit.probe.wire.framing import (
    _EOF,
    ChunkedDecoder,
    body_framing,
    chunked_end,
    parse_head,
    request_head,
)
from evalkit.probe.wire.reconnect import Reuse, answer_kind, closed_after_stream, note_resent

#: each stream's own client uses this transport (False: httpcore's pool and h11, as
#: before; for comparisons)
LEAN = True
#: the longest response head (status line and headers) read; h11 stops at 16 KiB
MAX_HEAD = 64 * 1024
#: the most interim (1xx) responses read before the final one
MAX_INTERIM = 16
#: bytes asked of the network stream per read (httpcore asks the same)
READ_BYTES = 64 * 1024
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_NETWORK = httpcore.AsyncNetworkStream
_MAPPED: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout), (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadTimeout, httpx.ReadTimeout), (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteTimeout, httpx.WriteTimeout), (httpcore.WriteError, httpx.WriteError))


class _Unanswered(Exception):
    """The server closed the connection (an end of stream, a reset) before any byte of an
    answer: `error` is what the request fails with unless it is sent again."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _httpx_error(exc: Exception, request: httpx.Request) -> Exception:
    """httpcore's network error as the httpx error httpx's own transport would raise."""
    for theirs, ours in _MAPPED:
        if isinstance(exc, theirs):
            return ours(str(exc), request=request)
    return exc


class Body(httpx.AsyncByteStream):
    """A response body, read from the connection as framed; `aclose` gives the
    connection back (read to its end, kept alive) or closes it.

    `chunked.read_body` may read a chunked body itself, pumped, with this body's
    `decoder`, and hand the end back (`ended`); iterating it then goes on from there."""

    def __init__(self, owner: LeanTransport, net: _NETWORK, request: httpx.Request,
                 chunked: bool, length: int | None, early: bytes, keep: bool) -> None:
        self.owner = owner
        self.net = net
        self.request = request
        #: the chunked body's framing (None: not chunked)
        self.decoder = ChunkedDecoder() if chunked else None
        self._left = length  # bytes still due (None: chunked, or until the close)
        #: the body's bytes read with the head, not yet handed on
        self.early = early
        self.keep = keep
        self.complete = length == 0
        self._closed = False
        if self.complete and early:
            self.keep = False  # bytes after a body that has none: nothing to trust
        self.read_timeout: float | None = request.extensions.get("timeout", {}).get("read")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        data, self.early = self.early, b""
        while not self.complete:
            if data:
                for piece in self._feed(data):
                    yield piece
                decoder = self.decoder
                if decoder is not None:  # what is wrong after the data before it
                    if decoder.error is not None:
                        raise httpx.RemoteProtocolError(str(decoder.error),
                                                        request=self.request)
                    if decoder.tail is not None and self.ended():
                        break
                elif self.complete:
                    break
            try:
                data = await self.net.read(READ_BYTES, timeout=self.read_timeout)
            except (httpcore.TimeoutException, httpcore.NetworkError) as exc:
                raise _httpx_error(exc, self.request) from None
            if not data:
                self._closed_by_peer()

    def _feed(self, data: bytes) -> list[bytes]:
        """The body's bytes in this read (a length's end marks the body complete)."""
        if self.decoder is None:
            if self._left is None:
                return [data]
            piece, rest = data[:self._left], data[self._left:]
            self._left -= len(piece)
            if not self._left:
                self.complete, self.keep = True, self.keep and not rest
            return [piece]
        try:
            return self.decoder.feed(data)
        except h11.RemoteProtocolError as exc:  # in h11's words, as h11 would have said it
            raise httpx.RemoteProtocolError(str(exc), request=self.request) from None

    def _closed_by_peer(self) -> None:
        if self.decoder is None and self._left is None:  # the close ends the body
            self.complete, self.keep = True, False
            return
        why = (_EOF if self.decoder is not None else
               f"peer closed connection without sending complete message body "
               f"({self._left} bytes still due)")
        raise httpx.RemoteProtocolError(why, request=self.request)

    def ended(self) -> bool:
        """Whether the chunked body's end (`decoder.tail`: its last chunk's line, the
        trailers and the final blank line) is all in: then the body is complete, and the
        connection kept only if nothing follows. Raises for an ill-formed trailer."""
        assert self.decoder is not None and self.decoder.tail is not None
        try:
            end = chunked_end(self.decoder.tail)
        except httpcore.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=self.request) from None
        if end is None:
            return False
        self.complete, self.keep = True, self.keep and end == len(self.decoder.tail)
        return True

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self.owner._release(self.net, self.complete and self.keep)


class LeanTransport(httpx.AsyncBaseTransport):
    """One connection at a time, framed here (see the module). A second request waits
    for the first's response to be closed, as a pool of one would."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend, ssl_context: ssl.SSLContext,
                 keepalive_expiry: float | None = 5.0, reuse: Reuse | None = None) -> None:
        #: opens the connection (`transport.StampedBackend`: every read stamped)
        self._backend = backend
        #: the run's knowledge of the server's closes, shared by its stream clients
        self._reuse = reuse if reuse is not None else Reuse()
        #: the connection's last answer was an event stream, and its Keep-Alive header
        self._streamed = False
        self._said: str | None = None
        ssl_context.set_alpn_protocols(["http/1.1"])  # as httpcore offers (and SDKs do)
        self._ssl = ssl_context
        self._expiry = keepalive_expiry
        self._net: _NETWORK | None = None
        self._origin: tuple[str, str, int] | None = None
        self._idle_at = 0.0
        self._sent_ns = 0  # the last request's send (perf_counter_ns)
        self._lock = asyncio.Lock()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        if self._lock.locked():  # another request holds the connection: wait, bounded
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await self._lock.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout("the connection stayed busy",
                                        request=request) from None
        else:
            await self._lock.acquire()  # free: taken at once, no turn of the loop
        try:
            net, reused = await self._connection(request, timeouts.get("connect"))
            await self._send(net, request, timeouts.get("write"))
            try:
                return await self._response(net, request, timeouts.get("read"))
            except _Unanswered as unanswered:
                if not reused:  # a fresh connection dropped unanswered: the server's
                    raise unanswered.error from None
            # the server closed the reused connection as this request reached it: it was
            # never served, so it goes once more on a fresh connection (see the module)
            if self._streamed:
                closed_after_stream(self._reuse, net, self._said, raced=True)
            self._net = None
            await net.aclose()
            note_resent()
            net, _ = await self._connection(request, timeouts.get("connect"))
            await self._send(net, request, timeouts.get("write"))
            try:
                return await self._response(net, request, timeouts.get("read"))
            except _Unanswered as unanswered:
                raise unanswered.error from None
        except BaseException:
            await self._release(self._net, False)
            raise

    async def _connection(self, request: httpx.Request, timeout: float | None
                          ) -> tuple[_NETWORK, bool]:
        """The connection to send on, and whether it is reused (it carried an answer)."""
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"the URL's scheme {url.scheme!r} is neither "
                                            "http nor https", request=request)
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        net = self._net
        if net is not None and (origin != self._origin or self._reuse.fresh
                                or net.get_extra_info("is_readable")
                                or (self._expiry is not None
                                    and time.monotonic() - self._idle_at > self._expiry)):
            if self._streamed:
                closed_after_stream(self._reuse, net, self._said)
            self._net = None
            await net.aclose()  # the server closed it, or said something unasked, or stale
            net = None
        if net is not None:
            return net, True
        try:
            net = await self._backend.connect_tcp(origin[1], origin[2], timeout=timeout)
            if origin[0] == "https":
                sni = request.extensions.get("sni_hostname") or origin[1]
                net = await net.start_tls(self._ssl, server_hostname=sni, timeout=timeout)
        except (httpcore.TimeoutException, httpcore.NetworkError) as exc:
            raise _httpx_error(exc, request) from None
        self._net, self._origin = net, origin
        self._streamed, self._said = False, None
        return net, False

    async def _send(self, net: _NETWORK, request: httpx.Request, timeout: float | None) -> None:
        coding = request.headers.get("transfer-encoding")
        chunked = coding is not None
        if chunked and coding.strip().lower() != "chunked":  # (twice reads 'chunked, chunked')
            raise httpx.LocalProtocolError(
                f"transfer-encoding {coding[:40]!r}: only chunked can be sent", request=request)
        try:
            body = request.content
        except httpx.RequestNotRead:
            body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        if chunked:
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        data = request_head(request, chunked) + body
        sending = stamping._SENDING.get()
        if sending is not None:
            sending.join = False  # head and body go in this one write: nothing to hold
        self._sent_ns = time.perf_counter_ns()  # no earlier than any byte could leave
        try:
            await net.write(data, timeout=timeout)
            if sending is not None and sending.last_ns is not None:
                self._sent_ns = sending.last_ns  # at the socket, after any held wait
        except httpcore.WriteError:
            # a server may answer (a 413, a 401) and close before it reads it all: read
            # its answer, as httpcore does; if none came, the read says so
            pass
        except httpcore.TimeoutException as exc:
            raise _httpx_error(exc, request) from None

    async def _response(self, net: _NETWORK, request: httpx.Request, timeout: float | None
                        ) -> httpx.Response:
        buf = bytearray()
        interim = 0
        while True:
            end = await self._head_end(net, request, buf, timeout,
                                       0 if interim else self._sent_ns)
            try:
                status, reason, headers, keep, version = parse_head(bytes(buf[:end]))
                chunked, length = body_framing(request.method, status, headers)
            except httpcore.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from None
            del buf[:end]
            if status >= 200:  # (a 101 never gets here: parse_head refuses it)
                break
            interim += 1  # a 100 Continue, a 103 Early Hints: the answer is still to come
            if interim > MAX_INTERIM:
                raise httpx.RemoteProtocolError(f"more than {MAX_INTERIM} interim responses",
                                                request=request)
        keep = keep and request.headers.get("connection", "").lower() != "close"
        self._streamed, self._said = answer_kind(headers)
        body = Body(self, net, request, chunked, length, bytes(buf), keep)
        return httpx.Response(status, headers=headers, stream=body, extensions={
            "http_version": b"HTTP/" + version.encode("ascii"), "reason_phrase": reason,
            "network_stream": net})

    @staticmethod
    async def _head_end(net: _NETWORK, request: httpx.Request, buf: bytearray,
                        timeout: float | None, sent_ns: int = 0) -> int:
        """Read until `buf` holds a whole head; where it ends (after its blank line).
        A first read stamped before `sent_ns` (the request's send) is no answer to it."""
        start = 0
        while True:
            found = _HEAD_END.search(buf, start)
            if found is not None:
                return found.end()
            if len(buf) > MAX_HEAD:
                raise httpx.RemoteProtocolError(f"response head longer than {MAX_HEAD} bytes",
                                                request=request)
            start = max(len(buf) - 3, 0)  # a trickled head is scanned once, not per read
            try:
                data = await net.read(READ_BYTES, timeout=timeout)
            except (httpcore.TimeoutException, httpcore.NetworkError) as exc:
                error = _httpx_error(exc, request)
                if sent_ns and not buf and isinstance(exc, httpcore.ReadError):
                    raise _Unanswered(error) from None  # a reset before any answer
                raise error from None
            if not data:
                closed = httpx.RemoteProtocolError(
                    "Server disconnected without sending a response." if not buf else
                    "peer closed connection in the middle of the response head",
                    request=request)
                if sent_ns and not buf:  # not a byte of an answer to this request
                    raise _Unanswered(closed)
                raise closed
            if sent_ns and not buf and (getattr(net, "last_arrival_ns", None) or sent_ns) < sent_ns:
                raise httpx.RemoteProtocolError(
                    "the server answered before the request was sent", request=request)
            buf += data

    async def _release(self, net: _NETWORK | None, reusable: bool) -> None:
        """A response is done with the connection: keep it idle, or close it."""
        try:
            if reusable and net is self._net:
                self._idle_at = time.monotonic()
            elif net is not None:
                if net is self._net:
                    self._net = None
                await net.aclose()
        finally:
            if self._lock.locked():
                self._lock.release()

    async def aclose(self) -> None:
        net, self._net = self._net, None
        if net is not None:
            await net.aclose()


def lean_body(response: httpx.Response) -> Body | None:
    """This response's `Body`, if the lean transport read it (httpx wraps it once)."""
    stream: Any = getattr(response.stream, "_stream", None)
    return stream if isinstance(stream, Body) else None
