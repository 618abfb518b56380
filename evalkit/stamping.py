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
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

_HIGH_WATER = 64 * 1024
#: SO_TIMESTAMPNS (Linux: 35); SCM_TIMESTAMPNS has the same value
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_ANC_SIZE = socket.CMSG_SPACE(16)
_READ_SIZE = 256 * 1024
_MAX_BUFFERED = 4 * 1024 * 1024
_MAX_AGE_NS = 10_000_000_000


class SendStamp:
    """When one request's bytes went to the socket: filled in by the stamped streams' writes.

    With `join` (a request with a body), the first write (h11's request head) is held
    and goes out with the next (the body, or h11's empty end-of-message write): one
    send, one packet and one wake-up of the server per request instead of two, and the
    stamp is the moment the whole request was handed over. httpcore writes the body
    straight after the head, with no turn of the event loop in between.
    """

    __slots__ = ("bytes", "connect_ns", "first_ns", "held", "join", "last_ns", "writes")

    def __init__(self, join: bool = False) -> None:
        #: the write that handed over the request's first bytes began (None: nothing sent)
        self.first_ns: int | None = None
        #: the last write began (the body, for a request whose head went first)
        self.last_ns: int | None = None
        self.writes = 0
        self.bytes = 0
        self.join = join
        self.held: bytes | None = None
        #: time spent opening a connection (TCP, TLS) inside this send: the network's
        #: round trips, not the client's delay
        self.connect_ns = 0

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


def _connected(began_ns: int) -> None:
    """A connection (or its TLS) opened inside a stamped send: note how long it took."""
    sending = _SENDING.get()
    if sending is not None:
        sending.connect_ns += time.perf_counter_ns() - began_ns


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

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send bytes; wait (bounded by timeout) if the kernel buffer is full."""
        buffer, at = _outgoing(buffer)
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
        """Close the connection."""
        self._transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """Upgrade to TLS; decrypted bytes keep being stamped in `data_received`."""
        began = time.perf_counter_ns()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                tls = await loop.start_tls(self._transport, self._protocol, ssl_context,
                                           server_hostname=server_hostname)
        except TimeoutError:
            self._transport.close()
            raise httpcore.ConnectTimeout("TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(f"TLS handshake failed: {exc}") from None
        if tls is None:
            raise httpcore.ConnectError("TLS handshake failed")
        assert isinstance(tls, asyncio.Transport)
        self._protocol.transport = tls
        _connected(began)
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


class KernelStampedStream(httpcore.AsyncNetworkStream):
    """Plain TCP read with `recvmsg`, stamped with the kernel's receive time of the bytes.

    The kernel stamps each packet as it is queued to the socket (SO_TIMESTAMPNS, wall
    clock). We only use that stamp's *age*, measured against the wall clock right after
    the read (two readings microseconds to milliseconds apart, so clock slewing cannot
    matter), and subtract it from `perf_counter_ns()`: a monotonic arrival time that
    does not move when this process is scheduled late on a busy machine.
    """

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = sock
        self._loop = loop
        self._fd = sock.fileno()
        #: (arrival ns, bytes, how long after the kernel's stamp we read them, -1: unknown)
        self._reads: deque[tuple[int, bytes, int]] = deque()
        self._buffered = 0
        self._eof = False
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._reading = True
        self.last_arrival_ns: int | None = None
        #: when the last write began handing its bytes to the socket
        self.last_write_ns: int | None = None
        #: how late the last read came after its bytes arrived (None: no kernel stamp): two
        #: events in one read were merged by *us* only when this is large; a small value
        #: means the server wrote them together
        self.last_read_delay_ns: int | None = None
        #: reads stamped by the kernel / by us (a socket without kernel stamps says so)
        self.kernel_stamped = 0
        self.user_stamped = 0
        loop.add_reader(self._fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            data, anc, _flags, _addr = self._sock.recvmsg(_READ_SIZE, _ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._error = exc
            self._stop_reading(eof=True)
            return
        now = time.perf_counter_ns()
        if not data:
            self._stop_reading(eof=True)
            return
        stamp = now
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(cdata) >= 16:
                sec, nsec = struct.unpack("qq", cdata[:16])
                age = time.time_ns() - (sec * 1_000_000_000 + nsec)
                if 0 <= age < _MAX_AGE_NS:  # a wall-clock step would give nonsense: ignore
                    stamp = now - age
                    self.kernel_stamped += 1
                break
        if stamp == now:
            self.user_stamped += 1
        self._reads.append((stamp, data, now - stamp if stamp != now else -1))
        self._buffered += len(data)
        if self._buffered > _MAX_BUFFERED:
            self._loop.remove_reader(self._fd)  # back-pressure until httpcore catches up
            self._reading = False
        self._wake()

    def _stop_reading(self, eof: bool) -> None:
        if self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False
        self._eof = self._eof or eof
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The bytes of the next socket read (split only if longer than max_bytes)."""
        if not self._reads and not self._eof:
            try:
                async with asyncio.timeout(timeout):
                    while not self._reads and not self._eof:
                        self._waiter = self._loop.create_future()
                        try:
                            await self._waiter
                        finally:
                            self._waiter = None
            except TimeoutError:
                raise httpcore.ReadTimeout(f"no bytes for {timeout} s") from None
        if not self._reads:
            if self._error is not None:
                raise httpcore.ReadError(str(self._error) or type(self._error).__name__)
            return b""
        at, data, delay = self._reads.popleft()
        if len(data) > max_bytes:
            self._reads.appendleft((at, data[max_bytes:], delay))
            data = data[:max_bytes]
        self._buffered -= len(data)
        self.last_read_delay_ns = delay if delay >= 0 else None
        if not self._reading and not self._eof and self._buffered <= _MAX_BUFFERED // 2:
            self._loop.add_reader(self._fd, self._on_readable)
            self._reading = True
        self.last_arrival_ns = at
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all bytes (bounded by timeout), stamped as the socket takes the first.

        The first `send` is tried right here, with no turn of the event loop between the
        stamp and the kernel taking the bytes (what `sock_sendall` would do too, one
        stack frame later); only what a full socket buffer refuses waits for the loop.
        """
        buffer, at = _outgoing(buffer)
        if not buffer:
            return
        self.last_write_ns = at
        try:
            sent = self._sock.send(buffer)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from None
        if sent == len(buffer):
            return
        try:
            async with asyncio.timeout(timeout):
                await self._loop.sock_sendall(self._sock, memoryview(buffer)[sent:])
        except TimeoutError:
            raise httpcore.WriteTimeout(f"write blocked for {timeout} s") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from None

    async def aclose(self) -> None:
        """Close the connection."""
        self._stop_reading(eof=True)
        self._sock.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """TLS: hand the socket to an asyncio SSL transport, stamped in data_received."""
        began = time.perf_counter_ns()
        self._stop_reading(eof=False)
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await self._loop.create_connection(
                    _Protocol, sock=self._sock, ssl=ssl_context,
                    server_hostname=server_hostname)
        except TimeoutError:
            self._sock.close()
            raise httpcore.ConnectTimeout("TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            self._sock.close()
            raise httpcore.ConnectError(f"TLS handshake failed: {exc}") from None
        assert isinstance(transport, asyncio.Transport)
        _connected(began)
        return StampedStream(transport, protocol)

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks: is_readable (keep-alive check), addresses, socket."""
        if info == "is_readable":
            return bool(self._reads) or self._eof
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        return None


class StampedBackend(httpcore.AsyncNetworkBackend):
    """httpcore backend whose reads carry their arrival time (kernel-stamped on plain TCP)."""

    #: resolved addresses, shared by every connection of the process: 256 streams
    #: opening at once must not queue 256 lookups on the thread pool (GIL hand-offs
    #: stalled the event loop for ~100 ms, measured)
    _resolved: dict[tuple[str, int], list[Any]] = {}  # noqa: RUF012

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        """Open a TCP connection with TCP_NODELAY and kernel receive timestamps."""
        began = time.perf_counter_ns()
        loop = asyncio.get_running_loop()
        last: OSError | None = None
        try:
            async with asyncio.timeout(timeout):
                infos = self._resolved.get((host, port))
                if infos is None:
                    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                    self._resolved[(host, port)] = infos
                for family, kind, proto, _name, addr in infos:
                    sock = socket.socket(family, kind, proto)
                    sock.setblocking(False)
                    try:
                        if local_address:
                            sock.bind((local_address, 0))
                        await loop.sock_connect(sock, addr)
                    except OSError as exc:
                        sock.close()
                        last = exc
                        continue
                    break
                else:
                    raise last or OSError(f"no address for {host}")
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"connect to {host}:{port} timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        for option in socket_options or ():
            sock.setsockopt(*option)
        _connected(began)
        return KernelStampedStream(sock, loop)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are not used by evalkit."""
        raise httpcore.ConnectError("unix sockets are not supported by evalkit's backend")

    async def sleep(self, seconds: float) -> None:
        """Sleep (httpcore's retry back-off)."""
        await asyncio.sleep(seconds)


def stamped_transport(limits: httpx.Limits, verify: ssl.SSLContext | bool = True
                      ) -> httpx.AsyncHTTPTransport | None:
    """An httpx transport using `StampedBackend`, or None if this httpx has no pool to swap."""
    transport = httpx.AsyncHTTPTransport(limits=limits, verify=verify)
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.AsyncConnectionPool):
        return None
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=pool._ssl_context, max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry, network_backend=StampedBackend())
    return transport


def arrival_ns(response: httpx.Response) -> int | None:
    """When the bytes last read from `response` arrived (None without StampedBackend)."""
    stream = response.extensions.get("network_stream")
    return getattr(stream, "last_arrival_ns", None)
