"""The httpx transport whose every connection is a stamped stream."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from evalkit.kernelclock import SO_TIMESTAMPNS
from evalkit.probe.wire.kernel_stream import KernelStampedStream
from evalkit.probe.wire.stamping import _connected


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
                    except BaseException:  # the deadline (a vendor's full accept queue)
                        sock.close()
                        raise
                    break
                else:
                    raise last or OSError(f"no address for {host}")
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"connect to {host}:{port} timed out") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
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
