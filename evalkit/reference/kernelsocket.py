"""A server's accepted socket that keeps the kernel's receive stamp of every read.

Why apart: the reference endpoint's HTTP server (uvicorn) and its realtime server
(websockets) both run asyncio transports, whose reads drop the ancillary data; both log
when a request's bytes reached the machine, not when their own busy loop got to them, so
the truth a prober is judged by does not carry the server's own lateness.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

from evalkit.kernelclock import ANC_SIZE, SO_TIMESTAMPNS, KernelClock


class KernelStampedSocket:
    """An accepted socket whose `recv` also keeps the kernel's receive stamp of the bytes.

    asyncio's transport reads with `sock.recv`, which drops the ancillary data; this
    stands in for the socket inside the transport (everything else is the socket's own)
    and reads with `recvmsg` instead, so `kernel_ns` is when the kernel queued the last
    packet of the latest read (SO_TIMESTAMPNS, put on the monotonic clock by its age,
    as the prober's reader does). On loopback the kernel stamps a packet inside the
    sender's `send`: the stamp says when the request reached the server's machine,
    however long the server's process then took to get a CPU and read it.
    """

    __slots__ = ("_clock", "_sock", "kernel_ns", "send")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._clock = KernelClock()
        self.kernel_ns: int | None = None
        self.send = sock.send  # every write's: not through `__getattr__`
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)

    def recv_into(self, buffer: Any, nbytes: int = 0) -> int:
        """asyncio's read for a buffered protocol (its SSL transport's is one)."""
        view = memoryview(buffer)
        if nbytes:
            view = view[:nbytes]
        n, anc, _flags, _addr = self._sock.recvmsg_into((view,), ANC_SIZE)
        self.kernel_ns = self._clock.arrival(anc, time.perf_counter_ns(), n == len(view))
        return int(n)

    def recv(self, size: int) -> bytes:
        data, anc, _flags, _addr = self._sock.recvmsg(size, ANC_SIZE)
        # None: no stamp, or one across a step of the wall clock (not a time to log)
        self.kernel_ns = self._clock.arrival(anc, time.perf_counter_ns(), len(data) == size)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def kernel_stamped(transport: asyncio.Transport) -> KernelStampedSocket | None:
    """Swap the transport's socket for one that keeps kernel stamps (None: not possible).

    Over HTTPS the transport is asyncio's SSL one, over the socket's own transport: that
    one's socket is swapped, so a request's stamp is that of the read that completed its
    TLS record (decrypted and handed over in the same callback)."""
    inner = getattr(getattr(transport, "_ssl_protocol", None), "_transport", None)
    sock = getattr(inner if inner is not None else transport, "_sock", None)
    if not isinstance(sock, socket.socket) or sock.type != socket.SOCK_STREAM:
        return None
    try:
        stamped = KernelStampedSocket(sock)
    except OSError:
        return None
    (inner if inner is not None else transport)._sock = stamped  # type: ignore[union-attr]
    return stamped
