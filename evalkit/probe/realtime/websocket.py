"""One WebSocket connection, timed as the HTTP path is: websockets' sans-I/O protocol
over evalkit's own kernel-stamped socket.

Why not `websockets.asyncio.client.connect`: its connection is an asyncio protocol over
asyncio's socket transport, which reads with a plain `recv`, so the kernel's receive stamp
(SO_TIMESTAMPNS) is lost and the best a subclass could stamp is `data_received`, when the
loop hands the bytes over (`evalkit.probe.wire.stamping`'s fallback). The library's sans-I/O
core (`websockets.client.ClientProtocol`: the handshake and its checks, RFC 6455 framing,
masking, pings answered, close) needs no transport of its own, so here it runs over
`evalkit.probe.wire.transport.StampedBackend`'s stream: every socket read carries the kernel's
arrival stamp (`last_arrival_ns`), taken before websockets parses a byte, and every frame
parsed from that read gets it; every write is stamped as its bytes go to the socket
(`stamp_sends`). TLS (`wss://`) runs on the same stream, so it is stamped alike. The
closeness to the HTTP path is exact: the same socket code, the same stamps.

Caps: a message larger than `MAX_MESSAGE` fails the connection (websockets' `max_size`,
a protocol error of the vendor's). Messages read but not yet taken are the frames of one
socket read at most (`receive` reads the socket only when none is left), so a vendor that
floods is held by TCP's flow control, not by our memory. Every wait has a deadline
(`timeout`).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from urllib.parse import urlsplit

import httpcore
from websockets.client import ClientProtocol
from websockets.exceptions import InvalidHandshake, InvalidURI
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from evalkit.probe.wire.stamping import SendStamp, stamp_sends
from evalkit.probe.wire.transport import StampedBackend
from evalkit.sanitize import clean

#: the largest message taken (an audio delta of several seconds is ~0.5 MiB of base64)
MAX_MESSAGE = 4 * 1024 * 1024
#: bytes asked of one socket read
_READ = 64 * 1024


class WireError(Exception):
    """The connection failed: refused, cut, timed out or broke the protocol (the message
    is safe to show: vendor words in it are cleaned)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        #: refused | cut | timeout | protocol
        self.kind = kind


class Message:
    """One text message and the arrival stamp of the socket read that completed it."""

    __slots__ = ("at_ns", "text")

    def __init__(self, at_ns: int, text: str) -> None:
        self.at_ns = at_ns
        self.text = text


class Connection:
    """An open WebSocket: `send_text` (stamped) and `receive` (with its arrival stamp)."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, proto: ClientProtocol) -> None:
        self._stream = stream
        self._proto = proto
        self._queue: deque[Message] = deque()
        self._closed: WireError | None = None
        #: the close code and reason the server sent (reason cleaned), if it closed
        self.close_code: int | None = None
        self.close_reason = ""

    async def send_text(self, text: str, timeout: float) -> int:
        """Send one text message; returns when its first byte went to the socket
        (perf_counter_ns)."""
        self._proto.send_text(text.encode())
        with stamp_sends(SendStamp()) as stamp:
            await self._flush(timeout)
        if stamp.first_ns is None:
            raise WireError("cut", "the connection is closed")
        return stamp.first_ns

    async def _flush(self, timeout: float) -> None:
        for chunk in self._proto.data_to_send():
            if not chunk:  # websockets' end-of-stream marker: half-close is not ours to do
                continue
            try:
                await self._stream.write(chunk, timeout)
            except httpcore.WriteTimeout:
                raise WireError("timeout", f"a send blocked for {timeout:g} s") from None
            except httpcore.NetworkError as exc:
                raise WireError("cut", f"send failed: {clean(str(exc), 200)}") from None

    async def receive(self, timeout: float) -> Message:
        """The next text message; WireError when the connection ended or `timeout` s
        passed with no message."""
        while not self._queue:
            if self._closed is not None:
                raise self._closed
            await self._read(timeout)
        return self._queue.popleft()

    async def _read(self, timeout: float) -> None:
        try:
            data = await self._stream.read(_READ, timeout)
        except httpcore.ReadTimeout:
            raise WireError("timeout", f"no message for {timeout:g} s") from None
        except httpcore.NetworkError as exc:
            self._closed = WireError("cut", f"read failed: {clean(str(exc), 200)}")
            return
        at = getattr(self._stream, "last_arrival_ns", None)
        if not data:
            self._proto.receive_eof()
        else:
            self._proto.receive_data(data)
        for event in self._proto.events_received():
            if isinstance(event, Frame):
                self._frame(event, at or 0)
        if self._proto.parser_exc is not None and self._closed is None:
            # a frame over MAX_MESSAGE, bad framing: websockets failed the connection
            self._closed = WireError("protocol", "the server broke the WebSocket protocol: "
                                     + clean(str(self._proto.parser_exc), 200))
        await self._flush(timeout)  # pongs, and the close handshake's answer
        if not data and self._closed is None:
            self._closed = WireError("cut", "the server closed the connection"
                                     + self._said())

    def _frame(self, frame: Frame, at: int) -> None:
        if frame.opcode is Opcode.TEXT or frame.opcode is Opcode.BINARY:
            self._queue.append(Message(at, bytes(frame.data).decode("utf-8", "replace")))
        elif frame.opcode is Opcode.CLOSE:
            self.close_code = self._proto.close_rcvd.code if self._proto.close_rcvd else None
            reason = self._proto.close_rcvd.reason if self._proto.close_rcvd else ""
            self.close_reason = clean(reason, 200)
            self._closed = WireError("cut", "the server closed the session" + self._said())

    def _said(self) -> str:
        if self.close_code is None:
            return ""
        return f" (code {self.close_code}{': ' + self.close_reason if self.close_reason else ''})"

    async def close(self) -> None:
        """Say goodbye (best effort, no wait for the answer) and close the socket."""
        try:
            self._proto.send_close(1000)
            await self._flush(1.0)
        except Exception:
            pass
        await self._stream.aclose()


async def connect(url: str, headers: list[tuple[str, str]], timeout: float,
                  ssl_context: ssl.SSLContext | None = None) -> tuple[Connection, int]:
    """Open a WebSocket to `url` (ws:// or wss://); returns the connection and when its
    handshake's answer arrived. A refused upgrade is WireError('refused') with the
    status and (cleaned, bounded) body."""
    try:
        wsuri = parse_uri(url)
    except InvalidURI as exc:
        raise WireError("protocol", f"not a WebSocket URL: {clean(str(exc), 200)}") from None
    parts = urlsplit(url)
    host = parts.hostname or ""
    backend = StampedBackend()
    try:
        stream = await backend.connect_tcp(host, wsuri.port, timeout)
        if wsuri.secure:
            context = ssl_context or ssl.create_default_context()
            stream = await stream.start_tls(context, host, timeout)
    except httpcore.TimeoutException:
        raise WireError("timeout", f"connecting to {host}:{wsuri.port} timed out") from None
    except httpcore.NetworkError as exc:
        raise WireError("refused", f"cannot connect to {host}:{wsuri.port}: "
                        f"{clean(str(exc), 200)}") from None
    proto = ClientProtocol(wsuri, max_size=MAX_MESSAGE)
    request = proto.connect()
    for name, value in headers:
        request.headers[name] = value
    proto.send_request(request)
    conn = Connection(stream, proto)
    try:
        async with asyncio.timeout(timeout):
            await conn._flush(timeout)
            while True:
                data = await stream.read(_READ, timeout)
                at = getattr(stream, "last_arrival_ns", None) or 0
                if data:
                    proto.receive_data(data)
                else:
                    proto.receive_eof()
                events = proto.events_received()
                if events or not data:
                    break
    except (TimeoutError, httpcore.ReadTimeout):
        await stream.aclose()
        raise WireError("timeout", f"no handshake answer in {timeout:g} s") from None
    except httpcore.NetworkError as exc:
        await stream.aclose()
        raise WireError("refused", f"the handshake failed: {clean(str(exc), 200)}") from None
    first = events[0] if events else None
    response = first if isinstance(first, Response) else None
    if response is None or proto.handshake_exc is not None:
        await stream.aclose()
        raise WireError("refused", _refusal(response, proto.handshake_exc))
    for event in events[1:]:  # frames that came in the same read as the handshake
        if isinstance(event, Frame):
            conn._frame(event, at)
    return conn, at


def _refusal(response: Response | None, exc: Exception | None) -> str:
    """What the server said instead of switching protocols, cleaned and bounded."""
    if response is None:
        return "the server closed the connection during the handshake"
    body = clean(bytes(response.body or b""), 300)
    why = "" if exc is None or (isinstance(exc, InvalidHandshake) and not str(exc)) else \
        f" ({clean(str(exc), 150)})"
    return f"HTTP {response.status_code}{why}{': ' + body if body else ''}"
