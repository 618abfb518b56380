"""The reference endpoint's TLS, run on its kernel-stamped socket inside asyncio's own
plain transport, as the prober runs its own (`evalkit.probe.wire.kernel_stream`).

Why: over HTTPS the endpoint is the judge of a client's TTFT, and a batching engine
writes every stream's token of a decode step in one burst; a request that arrives
during the burst waits for its end, and that wait is in the client's TTFT error against
the truth log. asyncio's SSL transport costs a write ~4 Python calls and two transports
more than a plain one (py-spy: 32 % of the server's samples at 256 streams over HTTPS,
19 of them the socket's send that plain HTTP pays too), so the burst, and the tail of
every client's TTFT error, grew by half over HTTPS (docs/benchmarks.md, the eighth
look). Here a write is one `SSLObject.write` and one `send`, a read one `recvmsg` and one
`SSLObject.read`, and the request's kernel receive stamp is that of the read that
completed its TLS record, the connection's first request included.

`TLSSocket` stands in for the socket asyncio's transport reads and writes (the
stamped socket it wraps does the `recvmsg` and keeps its stamp); the transport, its
buffer, its flow control and uvicorn above it are unchanged. Encrypted bytes the kernel
did not take at once stay here, and the transport is told the last plaintext byte is
still unsent, so it keeps its writer, its close and its flow control waiting on them
(`send`). No close_notify is sent when the server closes a connection, as asyncio's
transport would not wait for one either.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any, Protocol

#: the most plaintext read per `SSLObject.read` (records are at most 16 KiB)
READ_SIZE = 64 * 1024


class RawSocket(Protocol):
    """What is wrapped: a non-blocking socket, or the server's stamped stand-in for one."""

    def recv(self, size: int) -> bytes: ...
    def send(self, data: Any) -> int: ...


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The endpoint's TLS context: its certificate and key, TLS 1.2 and up, HTTP/1.1."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class TLSSocket:
    """A server-side TLS connection over `raw`, read and written by asyncio's transport
    as if it were the socket (see the module): `recv` gives decrypted bytes, or raises
    BlockingIOError while none are whole yet; `send` takes plaintext."""

    def __init__(self, raw: RawSocket, context: ssl.SSLContext) -> None:
        self._raw = raw
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._in, self._out, server_side=True)
        self._handshaking = True
        self._closed = False
        #: encrypted bytes the kernel has not taken yet, and how many of the plaintext
        #: bytes the transport still holds were encrypted into them already (0 or 1)
        self._backlog = b""
        self._owed = 0

    def recv(self, size: int) -> bytes:
        """The plaintext that one socket read completed; b"" at the peer's close."""
        raw = self._raw.recv(READ_SIZE)  # BlockingIOError and the rest: the transport's
        if not raw:
            return b""
        self._in.write(raw)
        try:
            if self._handshaking:
                self._tls.do_handshake()
                self._handshaking = False
            out = []
            while True:
                try:
                    piece = self._tls.read(READ_SIZE)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:  # close_notify: an end like the socket's
                    self._closed = True
                    break
                if not piece:
                    break
                out.append(piece)
        except ssl.SSLWantReadError:  # the handshake waits for the client's next flight
            out = []
        finally:
            self._flush()  # the handshake's flights, its tickets, an alert
        if out:
            return out[0] if len(out) == 1 else b"".join(out)
        if self._closed:
            return b""
        raise BlockingIOError

    def send(self, data: Any) -> int:
        """Encrypt and send `data`; how many of its bytes the transport may drop.

        Whatever the kernel does not take stays in `_backlog`, and the last byte is
        then reported unsent: the transport keeps it and calls again once the socket
        is writable, its close and flow control waiting meanwhile; that call sends the
        backlog first and skips the byte already encrypted."""
        if self._backlog:
            self._flush()
            if self._backlog:
                raise BlockingIOError
        done, self._owed = self._owed, 0  # went out with the backlog just sent
        with memoryview(data) as view:  # released before the transport trims its buffer
            size = view.nbytes
            if size > done:
                self._tls.write(view[done:])
        if size > done:
            self._backlog = self._out.read()
            self._flush()
            if self._backlog:
                self._owed = 1
                return size - 1
        return size

    def _flush(self) -> None:
        """Send the backlog and what TLS has to say, as far as the kernel takes it."""
        self._backlog += self._out.read()
        if self._backlog:
            try:
                sent = self._raw.send(self._backlog)
            except (BlockingIOError, InterruptedError):
                return
            self._backlog = self._backlog[sent:]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)
