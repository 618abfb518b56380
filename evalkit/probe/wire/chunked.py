"""A streaming response's chunked body read straight from the stamped network stream.

Why: with h11 framing every chunk, a token cost ~30 µs of client CPU (h11's reader and
state machine, httpcore's event loop and five layers of httpx and httpcore async
iterators, each with its exception-mapping context manager) of the ~66 µs all in
(docs/benchmarks.md). The chunked framing itself is a size line, the data and a CRLF: a
few byte scans. So after httpx has sent the request and h11 has read the response's
head, `body_parts` reads the body's socket reads itself, from the same network stream
httpcore would have read (every read is still stamped in `data_received` or by the
kernel before anything here sees it), and unframes them with `ChunkedDecoder`.

A stream's own connection is the lean transport's (`evalkit.probe.wire.http11`, which read
the head and framed the body's reads it took with it): its body hands over its decoder,
and the end (the last chunk's `0` line, the trailers, the final CRLF) goes back to it,
so the connection is kept for the next request only when the body was read to its end.
Under httpcore (`http11.LEAN` off, or a shared client) the connection stays httpcore's:
the bytes h11 had buffered past the head are taken from it first, and the body's end is
handed back to h11, which reads it as it always would, so the connection returns to the
pool in h11's DONE state, or is closed when h11 says so. Either way a body left
half-read (a framing error, a deadline, an SSE error) closes its connection on
`aclose`: it is never reused half-read.

On a kernel-stamped connection the body is *pumped* (`read_body`): each read
is unframed and handed to the prober's per-piece handler inside the socket's reader
callback, right after its stamp, and the stream's task sleeps until the body ends. A
future, a task wake-up and three async iterators resumed per read were ~5 µs a chunk
(measured against a plain callback); the kernel's stamp does not move with the work done
in the callback. Our own TLS is on the same stamped socket and pumps too (each record
decrypted after its read's stamp); asyncio's SSL transport and unstamped sockets read the
same body read by read (`body_parts`), with the same handler.

One code path for every API adapter: this sits below SSE, so every adapter's stream
takes it. Anything it was not built for (not HTTP/1.1, not chunked, a httpcore or h11
whose insides differ) reads through `response.aiter_raw()` as before. Framing errors are
raised as the `httpx.RemoteProtocolError` h11 would raise, with h11's wording, so the
record is the same whichever path read the body.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import h11
import httpcore
import httpx

from evalkit.probe.wire.framing import _EOF, MAX_SIZE_LINE, ChunkedDecoder
from evalkit.probe.wire.http11 import READ_BYTES, lean_body

__all__ = ["MAX_SIZE_LINE", "ChunkedDecoder", "OnPiece", "body_parts", "read_body"]

#: read chunked bodies here (False: every body through h11, as before; for comparisons)
DIRECT = True
#: pump a kernel-stamped body in the socket's reader callback (`read_body`; False: read
#: by read through `body_parts`, as before; for comparisons)
PUMP = True
#: what `read_body` hands each piece of a body: (bytes, the read's stamp in
#: perf_counter_ns, how long after the kernel had it we read it, None: unknown); False
#: stops the read (the connection is then closed, never reused half-read)
OnPiece = Callable[[bytes, int, "int | None"], bool]


def _h11_of(response: httpx.Response) -> tuple[Any, Any] | None:
    """(httpcore's HTTP/1.1 connection, its h11 state) if this body can be read directly:
    HTTP/1.1, chunked, nothing of it read yet. None: read it through httpx."""
    if response.http_version != "HTTP/1.1":
        return None
    # httpx's bound stream -> its transport's stream -> the pool's -> the connection's
    pooled = getattr(getattr(response.stream, "_stream", None), "_httpcore_stream", None)
    conn = getattr(getattr(pooled, "_stream", None), "_connection", None)
    if not isinstance(conn, httpcore.AsyncHTTP11Connection):
        return None
    state = getattr(conn, "_h11_state", None)
    reader = getattr(state, "_reader", None)
    if (not isinstance(state, h11.Connection) or state.their_state is not h11.SEND_BODY
            or type(reader).__name__ != "ChunkedReader"
            or getattr(reader, "_bytes_in_chunk", None) != 0
            or getattr(reader, "_bytes_to_discard", None) != b""
            or getattr(reader, "_reading_trailer", None) is not False
            or state.trailing_data[1]  # the peer closed already: h11 has all there is
            or not hasattr(state, "_receive_buffer")):
        return None
    return conn, state


def _take_body(response: httpx.Response, conn: Any, state: Any
               ) -> tuple[Any, Any, float | None, bytes]:
    """(network stream, h11 state, read timeout, the body's bytes h11 read past the head),
    h11's buffer emptied: the body is ours to read from here. Those early bytes came in
    the head's read, whose stamp is the stream's last."""
    early, _closed = state.trailing_data
    state._receive_buffer = type(state._receive_buffer)()
    return (conn._network_stream, state,
            response.request.extensions.get("timeout", {}).get("read"), early)


async def read_body(response: httpx.Response, on_piece: OnPiece) -> None:
    """Hand `on_piece` the body piece by piece, each with its socket read's stamp, until
    the body ends or `on_piece` returns False; raises what httpx would for a cut, a bad
    frame or a read timeout.

    On a kernel-stamped connection (plain TCP, or our TLS on it) the pieces are handed
    over inside the socket's reader callback (`KernelStampedStream.pump`): no wake-up of
    the task per read. Anywhere else (asyncio's TLS, no kernel stamps, not chunked, `PUMP`
    off) they come from `body_parts`, one read at a time, stamped the same way: one
    `on_piece` for both.
    """
    taken = _take(response) if DIRECT and PUMP else None
    if taken is None:
        net = response.extensions.get("network_stream")
        async for raw in body_parts(response):
            if not on_piece(raw, *_last_read(net)):
                return
        return
    net, decoder, timeout, early, ended = taken
    stopped: list[bool] = []
    failed: list[Exception] = []  # raised in the callback: raised again here, in the task

    def sink(at: int, data: bytes, delay: int | None) -> bool:
        """One read: its pieces to `on_piece`; True once nothing more is wanted."""
        try:
            for piece in decoder.feed(data):
                if not on_piece(piece, at, delay):
                    stopped.append(True)
                    return True
        except Exception as exc:  # a callback of the event loop must not raise
            failed.append(exc)
            return True
        if decoder.error is not None:  # after the data before it
            failed.append(decoder.error)
            return True
        return decoder.tail is not None

    at, delay = _last_read(net)  # the early bytes came in the head's read
    if not early or not sink(at, early, delay):
        try:
            await net.pump(sink, timeout)
        except httpcore.TimeoutException as exc:
            raise httpx.ReadTimeout(str(exc), request=response.request) from None
        except httpcore.NetworkError as exc:
            raise httpx.ReadError(str(exc), request=response.request) from None
    if failed:
        if isinstance(failed[0], h11.RemoteProtocolError):
            raise httpx.RemoteProtocolError(str(failed[0]), request=response.request)
        raise failed[0]
    if stopped:
        return
    if decoder.tail is None:  # the pump ended at the peer's close, mid-body
        raise httpx.RemoteProtocolError(_EOF, request=response.request)
    if ended():
        return
    async for raw in response.aiter_raw():  # the rest of the end, read as framed
        if not on_piece(raw, *_last_read(net)):
            return


def _take(response: httpx.Response
          ) -> tuple[Any, ChunkedDecoder, float | None, bytes, Callable[[], bool]] | None:
    """(network stream, the decoder to feed, read timeout, the body's bytes read with the
    head, a check that the end fed is all of it) if this chunked body can be pumped here,
    none of it read yet. None: read it through httpx, nothing taken.

    The lean transport's body (`http11.Body`) hands over its own decoder, and reads on
    from where the pump left it. Under httpcore, h11's buffer is emptied and the end is
    handed back to h11 (`_ended`). Whether the stream pumps is asked before anything is
    taken: the body's bytes that came with the head, taken and then not pumped, were
    lost (a first chunk dropped, its TTFT read at the second)."""
    lean = lean_body(response)
    if lean is not None:
        if (lean.decoder is None or lean.complete or lean.decoder.tail is not None
                or not getattr(lean.net, "pumps", False)):
            return None
        early, lean.early = lean.early, b""
        return lean.net, lean.decoder, lean.read_timeout, early, lean.ended
    found = _h11_of(response)
    if found is None or not getattr(found[0]._network_stream, "pumps", False):
        return None
    net, state, timeout, early = _take_body(response, *found)
    decoder = ChunkedDecoder()
    return net, decoder, timeout, early, lambda: _ended(state, decoder.tail or b"", response)


def _ended(state: Any, tail: bytes, response: httpx.Response) -> bool:
    """Hand h11 the body's end (the last chunk's line, trailers, the final CRLF): True
    when that was all of it, h11 now DONE (the connection goes back to the pool on
    `aclose`, or is closed, as h11 says); False: h11 needs more, read through httpx.

    Why not always through httpx: five layers of async iterators, each with its
    exception-mapping context manager, for the 5 bytes that end every stream, in the
    moment a herd of streams ends together."""
    state.receive_data(tail)
    try:
        event = state.next_event()
    except h11.RemoteProtocolError as exc:  # a bad trailer: what httpcore would raise
        raise httpx.RemoteProtocolError(str(exc), request=response.request) from None
    if event is h11.NEED_DATA:
        return False  # h11's state is as it was: httpx goes on from there
    if type(event) is not h11.EndOfMessage:  # nothing else can follow a 0 line
        raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__} after the "
                                        "last chunk", request=response.request)
    return True


def _last_read(net: Any) -> tuple[int, int | None]:
    """(stamp, delay) of the stream's last read, for the bytes it brought: now and
    unknown where the stream keeps no stamps."""
    return (getattr(net, "last_arrival_ns", None) or time.perf_counter_ns(),
            getattr(net, "last_read_delay_ns", None))


async def body_parts(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body's bytes, a socket read's worth (or one chunk's) at a time, each yielded
    before the next read: after one, `network_stream.last_arrival_ns` is its stamp."""
    found = _h11_of(response) if DIRECT and lean_body(response) is None else None
    if found is None:  # the lean transport's body frames itself, read by read as here
        async for raw in response.aiter_raw():
            yield raw
        return
    net, state, timeout, early = _take_body(response, *found)
    decoder = ChunkedDecoder()
    data = early
    try:
        while True:
            if data:
                for piece in decoder.feed(data):
                    yield piece
                if decoder.error is not None:  # after the data before it
                    raise decoder.error
                if decoder.tail is not None:
                    break
            try:
                data = await net.read(READ_BYTES, timeout=timeout)
            except httpcore.TimeoutException as exc:
                raise httpx.ReadTimeout(str(exc), request=response.request) from None
            except httpcore.NetworkError as exc:
                raise httpx.ReadError(str(exc), request=response.request) from None
            if not data:
                raise h11.RemoteProtocolError(_EOF)
    except h11.RemoteProtocolError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=response.request) from None
    # the end is h11's to read: the trailers, and whether the connection can be reused
    if not _ended(state, decoder.tail, response):
        async for raw in response.aiter_raw():
            yield raw
