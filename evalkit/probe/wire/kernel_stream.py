"""A network stream that reads the kernel's receive stamp of every read
(SO_TIMESTAMPNS), so a stamp is when the bytes reached the machine, not when we ran.

TLS runs on the same stream (`start_tls`: `ssl.SSLObject` over memory BIOs), so an HTTPS
vendor's reads are kernel-stamped too, and decrypted only after their stamp."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import httpcore

from evalkit.kernelclock import ANC_SIZE, KernelClock
from evalkit.probe.wire.stamping import (
    StampedStream,
    _connected,
    _Protocol,
    outgoing,
    tls_handshake,
)

#: bytes asked of one read. A plain `recvmsg` allocates this much for every read and
#: shrinks it to what came (a token chunk is ~200 bytes): past glibc's mmap threshold
#: (128 KiB) each read mapped and unmapped it (256 KiB cost ~17 us a read more than 64 KiB
#: on the project VM), and below it the shrunk reads, freed at every age, fragment the heap
#: so the RSS of a long soak creeps up. So reads land in one buffer per thread, allocated
#: once (`_read_buffer`), and only the bytes that came are copied out.
_READ_SIZE = 64 * 1024
_MAX_BUFFERED = 4 * 1024 * 1024


_local = threading.local()
#: TLS on the stamped stream itself (False: asyncio's SSL transport, stamped as the loop
#: hands each read over; for comparisons)
KERNEL_TLS = True


def _no_tls(*_args: Any) -> int:
    raise ssl.SSLError("no TLS on this stream")


def _read_buffer() -> tuple[bytearray, memoryview]:
    """This thread's read buffer (an event loop runs on one thread, and a read is copied
    out before its callback returns, so the streams of one loop can share one)."""
    buf = getattr(_local, "buf", None)
    if buf is None:
        raw = bytearray(_READ_SIZE)
        buf = _local.buf = (raw, memoryview(raw))
    return buf


class KernelStampedStream(httpcore.AsyncNetworkStream):
    """Plain TCP read with `recvmsg`, stamped with the kernel's receive time of the bytes
    (`evalkit.kernelclock`: the stamp's age, taken from the monotonic clock, so the
    time does not move when this process is scheduled late on a busy machine).
    """

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = sock
        self._loop = loop
        self._fd = sock.fileno()
        self._buf, self._view = _read_buffer()
        #: (arrival ns, bytes, how long after the kernel's stamp we read them, -1: unknown)
        self._reads: deque[tuple[int, bytes, int]] = deque()
        self._buffered = 0
        self._eof = False
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        #: the waiting read's deadline (loop time; None: no read waits), and the one timer
        #: that enforces it (`_watch`): re-armed when it fires early, not made per read
        self._read_by: float | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._timed_out = False
        self._reading = True
        #: while a body is pumped (`pump`): called with every read as it is stamped, and
        #: the read timeout it is held to (each read moves `_read_by` on by that much)
        self._sink: Callable[[int, bytes, int | None], bool] | None = None
        self._sink_timeout: float | None = None
        #: when the pump's last read came (perf_counter_ns; None: none yet): its read
        #: deadline is that plus the timeout, worked out only when the timer fires, not
        #: with a clock read per read
        self._pumped_ns: int | None = None
        #: TLS over memory BIOs (`start_tls`): the socket's reads are still ours, stamped
        #: by the kernel, and decrypted in the reader callback; None: plain TCP
        self._tls: ssl.SSLObject | None = None
        self._tls_in = self._tls_out = ssl.MemoryBIO()
        self._tls_read: Callable[..., Any] = _no_tls
        self._tls_pending: Callable[[], int] = int
        self._handshaking = False
        #: encrypted bytes a callback could not send at once (TLS 1.3 post-handshake
        #: messages, a key update): they go out ahead of the next write
        self._tls_backlog = b""
        self.last_arrival_ns: int | None = None
        #: when the last write began handing its bytes to the socket
        self.last_write_ns: int | None = None
        #: how late the last read came after its bytes arrived (None: no kernel stamp): two
        #: events in one read were merged by *us* only when this is large; a small value
        #: means the server wrote them together
        self.last_read_delay_ns: int | None = None
        #: this socket's kernel stamps as monotonic times, and its counts of reads
        #: stamped by the kernel, by us, and by us across a step of the wall clock
        self._clock = KernelClock()
        loop.add_reader(self._fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            n, anc, _flags, _addr = self._sock.recvmsg_into((self._buf,), ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._error = exc
            self._stop_reading(eof=True)
            return
        now = time.perf_counter_ns()
        if not n:
            self._stop_reading(eof=True)
            return
        stamp = self._clock.arrival(anc, now, n == _READ_SIZE) or now
        if self._tls is not None:  # decrypted after the stamp: it is the bytes' arrival
            data = self._decrypt(n)
            if not data:
                return
        else:
            data = self._view[:n].tobytes()
        sink = self._sink
        if sink is not None:
            self.last_arrival_ns = stamp
            self.last_read_delay_ns = delay = now - stamp if stamp != now else None
            self._pumped_ns = now  # moves the read deadline on (`_on_watch` reads it)
            if sink(stamp, data, delay):
                self._sink = None
                self._wake()
            return
        self._reads.append((stamp, data, now - stamp if stamp != now else -1))
        self._buffered += len(data)
        if self._buffered > _MAX_BUFFERED:
            self._loop.remove_reader(self._fd)  # back-pressure until httpcore catches up
            self._reading = False
        self._wake()

    def _decrypt(self, size: int) -> bytes:
        """The application bytes that the read of `size` bytes (in the read buffer)
        completed (b"": none yet, or the handshake's).

        They take the stamp of the read that completed their record: the moment the
        machine had all of them, which is when a reader could have had them too. The
        encrypted bytes go to TLS straight from the read buffer, and the plaintext comes
        back as bytes of about its size, through the C object under `ssl`'s Python
        wrapper: a token's record is one call each way, ~1.5 µs of OpenSSL with a warm
        cache, and the Python around them was as much again (`bench/bench_tls_read.py`,
        docs/benchmarks.md, the eighth look)."""
        incoming = self._tls_in
        incoming.write(self._view[:size])
        if self._handshaking:
            self._wake()  # the handshake goes on in its task
            return b""
        out = b""
        read, decrypted = self._tls_read, self._tls_pending
        size = incoming.pending
        while size:
            try:
                data: bytes = read(size)  # a record's text is shorter than its bytes
            except ssl.SSLWantReadError:
                break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # close_notify, or a cut
                self._stop_reading(eof=True)
                break
            except ssl.SSLError as exc:
                self._error = exc
                self._stop_reading(eof=True)
                break
            if not data:
                self._stop_reading(eof=True)
                break
            out = out + data if out else data
            # the next record's bytes; or, when the read filled what it asked for, what
            # TLS holds decrypted of a record split over reads (its first part was in TLS
            # already, so its text can be longer than the bytes that came last)
            size = incoming.pending or (decrypted() if len(data) == size else 0)
        if self._tls_out.pending or self._tls_backlog:
            self._send_tls_now()
        return out

    def _send_tls_now(self) -> None:
        """Send what TLS has to say outside a write (post-handshake messages), as far as
        the socket takes it now; the rest goes ahead of the next write."""
        self._tls_backlog += self._tls_out.read()
        if self._tls_backlog:
            try:
                sent = self._sock.send(self._tls_backlog)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._error = exc
                self._stop_reading(eof=True)
                return
            self._tls_backlog = self._tls_backlog[sent:]

    def _on_watch(self) -> None:
        """The read timer fired: time the waiting read out, or re-arm for its deadline."""
        self._watch = None
        if self._read_by is None or self._waiter is None:
            return  # no read waits: the next one arms the timer again
        # not `_sink`: a body's last read may have ended the pump in this very turn of
        # the loop (reader callbacks run before due timers), its deadline not yet moved
        if self._sink_timeout is not None and self._pumped_ns:
            since = (time.perf_counter_ns() - self._pumped_ns) / 1e9
            self._read_by = max(self._read_by, self._loop.time() - since + self._sink_timeout)
        if self._read_by - self._loop.time() > 0.001:  # a later read's deadline
            self._watch = self._loop.call_at(self._read_by, self._on_watch)
            return
        self._timed_out = True
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

    async def _wait(self, waiting: Callable[[], bool], timeout: float | None) -> None:
        """Sleep while `waiting()` holds and the peer is open; raise httpcore's
        ReadTimeout once `_read_by` passes (`timeout` s from now, moved on by a pump)."""
        if timeout is not None:
            self._read_by = by = self._loop.time() + timeout
            if self._watch is None or self._watch.when() > by:
                if self._watch is not None:
                    self._watch.cancel()
                self._watch = self._loop.call_at(by, self._on_watch)
        try:
            while waiting() and not self._eof:
                self._waiter = self._loop.create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
                if self._timed_out:
                    self._timed_out = False
                    if waiting() and not self._eof:  # not if what it waited for came
                        raise httpcore.ReadTimeout(f"no bytes for {timeout} s")
        finally:
            self._read_by = None
            self._timed_out = False  # a timer that fired as the wait ended: not the next's

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """The bytes of the next socket read (split only if longer than max_bytes).

        The read timeout is one timer per connection (`_on_watch`), not an
        `asyncio.timeout` per read: a stream of 20 ms gaps under a 60 s timeout made and
        cancelled a timer (a heap push, a context manager) for every chunk."""
        if not self._reads and not self._eof:
            await self._wait(lambda: not self._reads, timeout)
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

    @property
    def kernel_stamped(self) -> int:
        """Reads stamped with the kernel's time."""
        return self._clock.stamped

    @property
    def user_stamped(self) -> int:
        """Reads stamped by us for want of a kernel stamp (a socket without them)."""
        return self._clock.unstamped

    @property
    def clock_steps(self) -> int:
        """Reads stamped by us because the wall clock stepped since the one before (they
        do not stop a body being pumped: the kernel still stamps this socket)."""
        return self._clock.steps

    @property
    def pumps(self) -> bool:
        """Whether `pump` keeps every stamp exact here: the kernel stamps this socket's
        reads (a read stamped by us, in a callback that also parses, would be late by
        the parsing of the reads ahead of it in the same turn of the loop)."""
        return self.kernel_stamped > 0 and not self.user_stamped

    async def pump(self, sink: Callable[[int, bytes, int | None], bool],
                   timeout: float | None = None) -> None:
        """Hand `sink` every read, (stamp, bytes, read delay ns or None), in the socket's
        reader callback itself, until it returns True; raises httpcore's ReadTimeout after
        `timeout` s without bytes, and ReadError or returns (EOF: the caller asks `eof`).

        Why: read by read, each chunk took a future, the task's wake-up and three frames
        of async iterators resumed and suspended again (~5 µs a read, measured against a
        plain callback); pumped, the task sleeps for the whole body. The stamp is still
        taken before `sink` sees the bytes, and it is the kernel's (`pumps`), so the work
        done in the callback delays no stamp. `sink` must not raise.
        """
        while self._reads:  # what came before the pump, in order
            at, data, delay = self._reads.popleft()
            self._buffered -= len(data)
            self.last_arrival_ns = at
            self.last_read_delay_ns = delay if delay >= 0 else None
            if sink(at, data, self.last_read_delay_ns):
                return
        if self._eof:
            if self._error is not None:
                raise httpcore.ReadError(str(self._error) or type(self._error).__name__)
            return
        if not self._reading:
            self._loop.add_reader(self._fd, self._on_readable)
            self._reading = True
        self._sink, self._sink_timeout, self._pumped_ns = sink, timeout, None
        try:
            await self._wait(lambda: self._sink is not None, timeout)
        finally:
            self._sink = self._sink_timeout = None
        if self._eof and self._error is not None:
            raise httpcore.ReadError(str(self._error) or type(self._error).__name__)

    @property
    def eof(self) -> bool:
        """The peer closed (or the read failed), and every read before it was handed on."""
        return self._eof and not self._reads

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all bytes (bounded by timeout), stamped as the socket takes the first.

        The first `send` is tried right here, with no turn of the event loop between the
        stamp and the kernel taking the bytes (what `sock_sendall` would do too, one
        stack frame later); only what a full socket buffer refuses waits for the loop.
        """
        buffer, at = await outgoing(buffer)
        if not buffer:
            return
        if self._tls is not None:  # a few µs after the stamp: encrypted, then sent
            try:
                self._tls.write(buffer)
            except ssl.SSLError as exc:
                raise httpcore.WriteError(f"TLS: {exc}") from None
            buffer, self._tls_backlog = self._tls_backlog + self._tls_out.read(), b""
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
        self._close()

    def _close(self) -> None:
        """Close now: the reader unregistered, the timer cancelled, the socket closed (a
        failed or cancelled handshake's too: it leaves nothing that holds the socket)."""
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self._stop_reading(eof=True)
        self._sock.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        """TLS on this same stream (memory BIOs), so its reads keep the kernel's stamps.

        asyncio's SSL transport reads the socket itself: a read could then be stamped only
        when the loop handed it over (`StampedStream`, with `KERNEL_TLS` off). Here the
        stream goes on reading the socket with `recvmsg` and decrypts in the reader
        callback, so a TLS body is timed, and pumped, as a plain one."""
        if not KERNEL_TLS:
            return await self._asyncio_tls(ssl_context, server_hostname, timeout)
        if self._tls is not None:
            raise httpcore.ConnectError("TLS inside TLS is not supported by evalkit's backend")
        began = time.perf_counter_ns()
        self._tls_in, self._tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = ssl_context.wrap_bio(self._tls_in, self._tls_out, server_side=False,
                                         server_hostname=server_hostname)
        # the C object's read and pending (`ssl.SSLObject`'s are Python methods around them)
        sslobj = getattr(self._tls, "_sslobj", self._tls)
        self._tls_read, self._tls_pending = sslobj.read, sslobj.pending
        while self._reads:  # bytes the server sent before our hello: the handshake's
            self._tls_in.write(self._reads.popleft()[1])
        self._buffered = 0
        self._handshaking = True
        try:
            async with tls_handshake(timeout, self._close):
                await self._handshake()
        finally:
            self._handshaking = False
        _connected(began, tls=True)
        return self

    async def _handshake(self) -> None:
        assert self._tls is not None
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                pass
            else:
                break
            if out := self._tls_out.read():
                await self._loop.sock_sendall(self._sock, out)
            if self._eof:
                raise ConnectionResetError(str(self._error or "the server closed the connection"))
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if out := self._tls_out.read():
            await self._loop.sock_sendall(self._sock, out)

    async def _asyncio_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None,
                           timeout: float | None) -> httpcore.AsyncNetworkStream:
        """TLS by asyncio's SSL transport, stamped in data_received (`KERNEL_TLS` off)."""
        began = time.perf_counter_ns()
        self._stop_reading(eof=False)
        async with tls_handshake(timeout, self._close):
            transport, protocol = await self._loop.create_connection(
                _Protocol, sock=self._sock, ssl=ssl_context, server_hostname=server_hostname)
        assert isinstance(transport, asyncio.Transport)
        _connected(began, tls=True)
        return StampedStream(transport, protocol)

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks: is_readable (keep-alive check), addresses, socket."""
        if info == "is_readable":
            if not self._reads and not self._eof and self._reading:
                # what the kernel holds now (a close, bytes nobody asked for) counts now:
                # a worker that sends again at once gives the loop no turn to read it
                self._on_readable()
            return bool(self._reads) or self._eof
        if info == "ssl_object":
            return self._tls
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        return None
