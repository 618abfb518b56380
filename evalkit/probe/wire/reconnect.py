"""A request lost to a connection the server closed is not the vendor's failure: when it
is sent again, and when a server gets a fresh connection for every request.

Why: an HTTP/1.1 server may close a kept-alive connection whenever it likes, and a
request written as the close is on its way is lost with it. llama.cpp's server closes
the connection after every streamed response while it advertises `Keep-Alive:
timeout=5, max=100`. The stream clients (`http11.LeanTransport`, and httpcore's pool
with `http11.LEAN` off) usually see the close before they reuse the connection, but
when it arrives after the next request was written, that request died with "Server
disconnected without sending a response." and was recorded as the vendor's error: 2 to 4
requests a run against llama-server, enough for a ramp to name `error` as what degraded
first. curl sees the same close ("Connection 0 seems to be dead") and connects again; so
does a customer's SDK (OpenAI's and Anthropic's Python SDKs retry a connection error, twice
by default).

**Sent again, once, in exactly one case**: the request was written on a *reused*
connection (one that had carried an earlier answer), and the server closed it (an end
of stream, or a reset) before *any* byte of an answer to it. Then the server either never
read the request (the close was already under way when it arrived: the race above) or
read it and dropped it without a word; either way nothing of it was served, and an
inference request changes no state on the server, so a second send cannot do twice what
was done once. What it costs is counted where it belongs: the request's times still run
from its first send (`t0` unchanged: a customer's SDK waits out the reconnect too), the
record says `reconnects: 1` (a count per level in summary.json, beside the outcomes), and
it is never counted as a second request or an error. It is sent again once, on a fresh
connection, within the request's own deadline (the prober's timeout spans both sends).

**Never sent again**: a request that got any byte of an answer (a status line begun, a
100 Continue: the server took it, and what it does next is its own); a request on a
*fresh* connection closed unanswered (no earlier answer for a close to race: the server
accepted the connection and dropped the request, its failure, as before); a request that
timed out (the server may be working on it); the second send itself.

**A server seen closing after a streamed response gets a fresh connection for every
request from then on** (`Reuse`, one per run or Ray shard, shared by every stream's
client), and run.json's `connections` says when it switched and why. Seen: a connection
whose last answer was an event stream, read whole with nothing said of closing, closed
by the server on the next request written on it (the race itself), or found closed
before it is reused within `CLOSED_AFTER_STREAM_S` of that stream's last byte (a close
seen later may be an idle timeout, ordinary and not the same thing).
A level's connections are then opened by its requests themselves (no warm-up whose
connection no request would use); a connect inside a send is kept out of its send lag
as always.

A vendor who has read this gains nothing by closing connections to have requests sent
again: the wait counts from the first send, every resend is shown, and once a close
after a stream is seen no connection is reused, so a request it drops unanswered is its
error.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import httpcore
import httpx

from evalkit.analysis.jsonread import Json
from evalkit.probe.wire import stamping
from evalkit.sanitize import clean

#: a close seen within this long of a streamed answer's last byte is the server closing
#: after the stream (llama.cpp's: within a millisecond); later, an idle timeout
CLOSED_AFTER_STREAM_S = 1.0
#: what run.json keeps of a Keep-Alive header the server sent beside its close
SAID_MAX = 80


@dataclass(frozen=True)
class FreshConnections:
    """When a run began opening a fresh connection for every request, and why (run.json
    `connections`, beside `fresh_per_request: true`)."""

    #: on the run's clock (s from its origin, as a record's `t0_s`)
    since_s: float
    phase: str | None
    level: int | None
    why: str

    def to_dict(self) -> dict[str, Json]:
        return {"fresh_per_request": True, **asdict(self)}


class Reuse:
    """What one run (or one Ray shard of it) knows about reusing the server's
    connections; every stream's client of a `Prober` shares it (`_Clients`)."""

    def __init__(self, origin_ns: int = 0, switched: FreshConnections | None = None) -> None:
        self.origin_ns = origin_ns
        #: since when every request gets a fresh connection (None: connections are reused)
        self.switched = switched
        #: the phase and level of the requests being sent (the prober sets it), to say
        #: where the switch happened
        self.where: tuple[str | None, int | None] = (None, None)

    @property
    def fresh(self) -> bool:
        """Every request opens a fresh connection."""
        return self.switched is not None

    def closed_after_stream(self, idle_s: float, said: str | None, raced: bool = False
                            ) -> None:
        """A connection whose last answer was a stream was found closed by the server
        `idle_s` after that stream's last byte (`raced`: by a request written on it,
        which got no answer); `said`: its Keep-Alive header."""
        if self.switched is not None or not (
                raced or 0 <= idle_s <= CLOSED_AFTER_STREAM_S):
            return
        promise = f" while advertising Keep-Alive: {said}" if said else ""
        when = ("that had carried a streamed answer as the next request reached it, "
                "unanswered" if raced else
                f"{idle_s * 1000:.1f} ms after a streamed answer on it ended")
        self.switched = FreshConnections(
            since_s=round((time.perf_counter_ns() - self.origin_ns) / 1e9, 6),
            phase=self.where[0], level=self.where[1],
            why=f"the server closed a kept-alive connection {when}{promise}: a request "
                "written as such a close arrives is lost, so every request from then on "
                "opens a fresh connection")

    def adopt(self, switched: FreshConnections | None) -> None:
        """Take a switch seen elsewhere (a Ray shard's) if none was seen here yet."""
        if self.switched is None and switched is not None:
            self.switched = switched

    def describe(self) -> dict[str, Any]:
        """run.json's `connections`."""
        return ({"fresh_per_request": False} if self.switched is None
                else self.switched.to_dict())


def answer_kind(headers: list[tuple[bytes, bytes]] | httpx.Headers
                ) -> tuple[bool, str | None]:
    """(the answer is an event stream, its Keep-Alive header cleaned), from its head."""
    pairs = headers.raw if isinstance(headers, httpx.Headers) else headers  # as sent
    stream, said = False, None
    for name, value in pairs:
        low = name.lower()
        if low == b"content-type":
            stream = value.strip().lower().startswith(b"text/event-stream")
        elif low == b"keep-alive":
            said = clean(value.decode("latin-1"), SAID_MAX) or None
    return stream, said


def closed_after_stream(reuse: Reuse, net: Any, said: str | None, raced: bool = False
                        ) -> None:
    """`net`, whose last answer was a stream, is being dropped: if the server closed it
    (not bytes sent unasked), tell `reuse` how long after that stream's last byte;
    `raced`: it closed on a request written on it, unanswered (how long after the stream
    it meant to close is then unknowable, and the harm done)."""
    last = getattr(net, "last_arrival_ns", None)
    if raced or (getattr(net, "eof", False) is True and isinstance(last, int)):
        idle = (time.perf_counter_ns() - last) / 1e9 if isinstance(last, int) else 0.0
        reuse.closed_after_stream(idle, said, raced)


def note_resent() -> None:
    """The request being sent goes out again (`SendStamp.resent`: the record's
    `reconnects`)."""
    sending = stamping._SENDING.get()
    if sending is not None:
        sending.resent += 1


class Resending(httpx.AsyncBaseTransport):
    """httpx's own transport (httpcore's pool, for one stream's connection: `http11.LEAN`
    off) under the rules above, as the lean transport keeps them: a request written on
    the reused connection and answered by a close alone goes out once more, and with
    `reuse.fresh` no connection is reused.

    httpcore says neither whether a request went out on a reused connection nor whether
    any byte came back before a close, so both are read off the pool's idle connection's
    network stream (`last_write_ns`, `last_arrival_ns`): where httpcore's insides differ,
    nothing is sent again, as before."""

    def __init__(self, inner: httpx.AsyncHTTPTransport, reuse: Reuse) -> None:
        self._inner = inner
        self._reuse = reuse
        self._streamed = False  # the idle connection's last answer was an event stream
        self._said: str | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        idle = self._idle()
        if idle is not None:
            conn, net = idle
            if self._reuse.fresh:
                await conn.aclose()  # the pool drops a closed connection and opens one
                idle = None
            elif net.get_extra_info("is_readable"):  # the pool drops it, as it is
                if self._streamed:
                    closed_after_stream(self._reuse, net, self._said)
                idle = None
        began = time.perf_counter_ns()
        try:
            response = await self._inner.handle_async_request(request)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            net = None if idle is None else idle[1]
            if net is None or not _unanswered(net, began):
                raise
            if self._streamed:
                closed_after_stream(self._reuse, net, self._said, raced=True)
            note_resent()
            response = await self._inner.handle_async_request(request)
        self._streamed, self._said = answer_kind(response.headers)
        return response

    def _idle(self) -> tuple[Any, Any] | None:
        """(the pool's idle connection, its network stream), None when there is none."""
        pool = getattr(self._inner, "_pool", None)
        if not isinstance(pool, httpcore.AsyncConnectionPool):
            return None
        for conn in pool.connections:
            net = getattr(getattr(conn, "_connection", None), "_network_stream", None)
            if conn.is_idle() and net is not None:
                return conn, net
        return None

    async def aclose(self) -> None:
        await self._inner.aclose()


def _unanswered(net: Any, began_ns: int) -> bool:
    """This request went out on `net` (a write since `began_ns`) and no byte came back
    after it."""
    wrote, came = getattr(net, "last_write_ns", None), getattr(net, "last_arrival_ns", None)
    return isinstance(wrote, int) and wrote >= began_ns and (
        not isinstance(came, int) or came < wrote)
