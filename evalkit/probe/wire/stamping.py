"""A network backend for httpx that stamps every socket read the moment it arrives.

Why: when a server writes to N streams at once (one decode step of a batching engine),
the N reads become ready together. With the default backend, a stream's bytes are
stamped only when its own task runs, after the tasks ahead of it have parsed their
chunks, so the stamp of the last stream in the burst is late by N x (per-chunk work):
several milliseconds at N = 64, tens at 256. Here the stamp is taken in the asyncio
protocol's `data_received`, which the event loop calls for every ready socket *before*
any task resumes; a burst of N reads is stamped within N x (one `recv`), and the
per-chunk parsing (h11, SSE, JSON) happens afterwards without touching the times.

The prober reads the stamp through `response.extensions["network_stream"]`: after httpx
hands over body bytes, `last_arrival_ns` is the arrival time of the socket read those
bytes came from (each `read` returns the bytes of one `data_received` at most, so the
mapping is exact). This is the real HTTP stack (httpx, httpcore, h11) over real sockets;
only the socket reader and writer are ours.

Writes are stamped the same way, the mirror of the read path: the moment a request's
bytes are handed to the socket (`send`), not when the prober asked httpx to send it.
Between those two, httpx and httpcore take their pool and connection locks (each one a
turn of the event loop under anyio) and build the h11 events, and when the streams of
one decode step end together every other stream's work runs in those turns: milliseconds
that are the client's, not the server's. The prober wraps each send in `stamp_sends()`;
every write made by that task meanwhile lands in the `SendStamp` it yields (a context
variable, so concurrent streams never see each other's stamps), and a connection opened
inside the send (a keep-alive that expired) is never inside the stamp: only its writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpcore

_HIGH_WATER = 64 * 1024


class SendStamp:
    """When one request's bytes went to the socket: filled in by the stamped streams' writes.

    With `join` (a request with a body), the first write (h11's request head) is held
    and goes out with the next (the body, or h11's empty end-of-message write): one
    send, one packet and one wake-up of the server per request instead of two, and the
    stamp is the moment the whole request was handed over. httpcore writes the body
    straight after the head, with no turn of the event loop in between. The lean
    transport (`evalkit.probe.wire.http11`) writes head and body as one already, and turns
    `join` off before it does.
    """

    __slots__ = ("bytes", "connect_ns", "first_ns", "held", "hold_ns", "join", "last_ns",
                 "resent", "tls_ns", "writes")

    def __init__(self, join: bool = False, hold_ns: int | None = None) -> None:
        #: the write that handed over the request's first bytes began (None: nothing sent)
        self.first_ns: int | None = None
        #: the last write began (the body, for a request whose head went first)
        self.last_ns: int | None = None
        self.writes = 0
        self.bytes = 0
        self.join = join
        self.held: bytes | None = None
        #: time spent opening a connection (TCP, TLS) inside this send before its first
        #: byte left: the network's round trips, not the client's delay
        self.connect_ns = 0
        #: the TLS handshake's part of `connect_ns` (0: none, plain TCP or no connection)
        self.tls_ns = 0
        #: times the request went out again on a fresh connection, the reused one it was
        #: written on having been closed by the server with no byte of answer
        #: (`evalkit.probe.wire.reconnect`): 0 or 1
        self.resent = 0
        #: the first write waits for this moment (perf_counter_ns; None: it goes at once):
        #: a request scheduled for a time is prepared ahead and released on the time, so
        #: the client's own preparation is not part of its send lag (trace replay)
        self.hold_ns = hold_ns

    def outgoing(self, buffer: bytes) -> bytes:
        """The bytes to send now for this write (b"": hold them for the next one)."""
        if self.held is not None:
            buffer, self.held = self.held + buffer, None
        elif self.join and self.writes == 0 and buffer:
            self.held, self.join = bytes(buffer), False
            return b""
        return buffer

    def wrote(self, at_ns: int, size: int) -> None:
        """Record one write of `size` bytes that began at `at_ns`."""
        if self.first_ns is None:
            self.first_ns = at_ns
        self.last_ns = at_ns
        self.writes += 1
        self.bytes += size


_SENDING: contextvars.ContextVar[SendStamp | None] = contextvars.ContextVar(
    "evalkit_sending", default=None)


@contextlib.contextmanager
def stamp_sends(stamp: SendStamp | None = None) -> Iterator[SendStamp]:
    """Stamp every socket write this task makes inside the block (one request's send)."""
    stamp = SendStamp() if stamp is None else stamp
    token = _SENDING.set(stamp)
    try:
        yield stamp
    finally:
        _SENDING.reset(token)


def _connected(began_ns: int, tls: bool = False) -> None:
    """A connection (`tls`: its TLS handshake) opened inside a stamped send: note how
    long it took, the handshake apart too (a vendor's TLS is round trips and its CPU, a
    cost of every new connection a customer opens), if no byte had left yet (a
    connection opened to send the request again, after its first send, is part of its
    wait from that send, not of its send lag)."""
    sending = _SENDING.get()
    if sending is not None and sending.first_ns is None:
        took = time.perf_counter_ns() - began_ns
        sending.connect_ns += took
        if tls:
            sending.tls_ns += took


@contextlib.asynccontextmanager
async def tls_handshake(timeout: float | None, close: Callable[[], object]
                        ) -> AsyncIterator[None]:
    """A TLS handshake's deadline and failures, in httpcore's words; `close` closes the
    connection first (a failed handshake leaves nothing to reuse)."""
    try:
        async with asyncio.timeout(timeout):
            yield
    except TimeoutError:
        close()
        raise httpcore.ConnectTimeout("TLS handshake timed out") from None
    except (OSError, ssl.SSLError) as exc:
        close()
        raise httpcore.ConnectError(f"TLS handshake failed: {exc}") from None
    except BaseException:  # cancelled (an outer deadline, a stopped run): closed all the same
        close()
        raise


#: the event loop's timers wake up to a millisecond late (epoll counts in whole ms): a
#: held send sleeps to this much before its moment, then yields turn by turn to it
SPIN_NS = 1_000_000


async def until_ns(ns: int) -> None:
    """Wait until perf_counter_ns() reaches `ns`, to a few µs, other tasks running."""
    coarse = (ns - SPIN_NS - time.perf_counter_ns()) / 1e9
    if coarse > 0:
        await asyncio.sleep(coarse)
    while time.perf_counter_ns() < ns:
        await asyncio.sleep(0)


async def outgoing(buffer: bytes) -> tuple[bytes, int]:
    """`_outgoing`, after the task's held send (`SendStamp.hold_ns`) has waited its moment."""
    sending = _SENDING.get()
    if sending is not None and sending.hold_ns is not None:
        hold, sending.hold_ns = sending.hold_ns, None
        await until_ns(hold)
    return _outgoing(buffer)


def _outgoing(buffer: bytes) -> tuple[bytes, int]:
    """What to send for this write, and now, as it begins (noted on the task's SendStamp)."""
    sending = _SENDING.get()
    if sending is not None:
        buffer = sending.outgoing(buffer)
    now = time.perf_counter_ns()  # the stamp: nothing between it and the socket
    if sending is not None and buffer:
        sending.wrote(now, len(buffer))
    return buffer, now


class _Protocol(asyncio.Protocol):
    """Buffers (arrival_ns, bytes) per socket read; wakes the one reader waiting."""

    def __init__(self) -> None:
        self.reads: deque[tuple[int, bytes]] = deque()
        self.eof = False
        self.error: BaseException | None = None
        self.transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.reads.append((time.perf_counter_ns(), data))  # the stamp: nothing before it
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait_readable(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def drained(self) -> None:
        if self._paused:
            self._drain = asyncio.get_running_loop().create_future()
            await self._drain


class StampedStream(httpcore.AsyncNetworkStream):
    """One connection; `last_arrival_ns` = arrival time of the bytes last handed to httpcore."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.last_arrival_ns: int | None = None
        #: when the last write handed its bytes to the transport
        self.last_write_ns: int | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The bytes of the next socket read (split only if longer than max_bytes)."""
        p = self._protocol
        if not p.reads and not p.eof:
            try:
                async with asyncio.timeout(timeout):
                    while not p.reads and not p.eof:
                        await p.wait_readable()
            except TimeoutError:
                raise httpcore.ReadTimeout(f"no bytes for {timeout} s") from None
        if not p.reads:
            if p.error is not None:
                raise httpcore.ReadError(str(p.error) or type(p.error).__name__)
            return b""
        at, data = p.reads.popleft()
        if len(data) > max_bytes:
            p.reads.appendleft((at, data[max_bytes:]))
            data = data[:max_bytes]
        self.last_arrival_ns = at
        return data

    @property
    def eof(self) -> bool:
        """The peer closed (or the connection was lost), and every read was handed on."""
        return self._protocol.eof and not self._protocol.reads

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send bytes; wait (bounded by timeout) if the kernel buffer is full."""
        buffer, at = await outgoing(buffer)
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("connection closed")
        self.last_write_ns = at
        self._transport.write(buffer)  # TLS: encrypted and sent to the socket right away
        try:
            async with asyncio.timeout(timeout):
                await self._protocol.drained()
        except TimeoutError:
            raise httpcore.WriteTimeout(f"write blocked for {timeout} s") from None

    async def aclose(self) -> None:
        """Close the connection; a TLS one is cut, not shut down.

        asyncio's TLS close sends close_notify and keeps the socket until the peer's
        answer, which a vendor may never send: an event loop closed first (every run's
        end) then left the socket open for the garbage collector. Our own TLS (the
        default, `kernel_stream`) sends no close_notify either."""
        if self._transport.get_extra_info("ssl_object") is not None:
            self._transport.abort()
        else:
            self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """Upgrade to TLS; decrypted bytes keep being stamped in `data_received`."""
        began = time.perf_counter_ns()
        loop = asyncio.get_running_loop()
        async with tls_handshake(timeout, self._transport.close):
            tls = await loop.start_tls(self._transport, self._protocol, ssl_context,
                                       server_hostname=server_hostname)
        if tls is None:
            raise httpcore.ConnectError("TLS handshake failed")
        assert isinstance(tls, asyncio.Transport)
        self._protocol.transport = tls
        _connected(began, tls=True)
        return StampedStream(tls, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks: ssl_object, addresses, socket, is_readable (keep-alive check)."""
        p = self._protocol
        if info == "is_readable":
            return bool(p.reads) or p.eof or self._transport.is_closing()
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None
