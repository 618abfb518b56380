"""The reference endpoint's realtime mode: the OpenAI Realtime protocol over WebSocket,
with known timing and a truth log.

A session takes `session.update` (server VAD with its silence window, or none),
`input_audio_buffer.append` frames, `commit`, `response.create` and `response.cancel`. Its
VAD hears each `append` message as one frame and judges it by the rule the prober uses on
its own audio (`evalkit.voice.audio`: within `VOICED_DB` of the loudest frame so far), so
both sides agree on which message carried the last voiced frame; under server VAD the
speech ends after `silence_ms` of audio with no voiced frame (`speech_stopped`,
`audio_end_ms` the buffer position then, the window included). An answer's first audio
goes `ttfa_s` (a seeded draw) after the turn ends, then `chunk_s` of audio at a time at
`audio_rate`; past `limit` sessions in flight TTFA grows and the audio goes at
`over_rate`; past `max_sessions` the upgrade is refused with 429; `stall_s` holds the
audio once mid-answer. Speech over an answer (server VAD) or `response.cancel` stops the
audio `cancel_delay_s` later.

Truth log: one JSON line per response (and per refusal), times absolute
`time.perf_counter_ns()` (CLOCK_MONOTONIC, shared with the prober on the machine):
`voiced_end_ns` (the last voiced frame's message arrived), `decided_ns` (speech_stopped
sent, or response.create arrived), `first_text_ns`, `first_audio_ns`, `audio`
([[sent_ns, bytes], ...]: stamped as each delta went to the transport), `interrupt_ns`
(the cancel or the speech arrived), `last_audio_ns`, `status`, `active` (sessions in
flight), `rate`, `ttfa_drawn_s`, `silence_ms` (the session's VAD window), `audio_end_ms`
(speech_stopped's), `commit_ns` (the client's commit arrived). When a session ends, a
line with `session`, `ended`, `path` (the upgrade's, its query included) and
`appends_ns` (each append message's arrival, the first `MAX_APPENDS`): the caller's
pace. A message "arrived" when its bytes reached the
machine: the kernel's receive stamp of the read that carried it (`StampedConnection`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import math
import random
import time
from collections import deque
from http import HTTPStatus
from pathlib import Path
from typing import IO, Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response

from evalkit.reference.kernelsocket import KernelStampedSocket, kernel_stamped
from evalkit.reference.realtime.params import RealtimeParams
from evalkit.voice.audio import SPEECH_FLOOR_DB, is_voiced, level_db

#: append arrivals kept in a session's truth line (10 minutes of 20 ms frames)
MAX_APPENDS = 30_000


class StampedConnection(ServerConnection):
    """A server connection that knows when each message's bytes reached the machine.

    The stamp is the kernel's receive stamp of the socket read that carried the message
    (SO_TIMESTAMPNS, as the HTTP reference logs `kernel_ns`), so the truth log does not
    carry this server's own lateness: with sixteen sessions on a loaded 2-core machine its
    loop reached a read up to 5 ms after the bytes came, and a `data_received` stamp
    charged those 5 ms to the prober's TTFA. Where the kernel gives no stamp, the loop's
    (`data_received`, before websockets parses a byte)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: deque[int] = deque()
        self._at = 0
        self._kernel: KernelStampedSocket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if isinstance(transport, asyncio.Transport):
            self._kernel = kernel_stamped(transport)
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        kernel = self._kernel.kernel_ns if self._kernel is not None else None
        self._at = kernel if kernel is not None else now
        super().data_received(data)

    def process_event(self, event: Any) -> None:
        if isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.BINARY):
            self.arrivals.append(self._at)
        super().process_event(event)


class Truth:
    """The truth log (None: not kept); a line per response, flushed as written."""

    def __init__(self, path: Path | None) -> None:
        self._fh: IO[str] | None = path.open("a", encoding="utf-8") if path else None

    def write(self, line: dict[str, Any]) -> None:
        if self._fh is not None:
            self._fh.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._fh.flush()


class Endpoint:
    """Every session of one server: the count in flight, the draws, the truth log."""

    def __init__(self, params: RealtimeParams, truth: Truth, seed: int) -> None:
        self.params, self.truth = params, truth
        self.active = 0
        self.sessions = 0
        self.rng = random.Random(seed)
        self._releases: set[asyncio.Future[None]] = set()
        #: (a path's marker, the session class that speaks its protocol); else OpenAI's
        self.dialects: tuple[tuple[str, type[Session]], ...] = ()

    def admit(self, conn: ServerConnection, request: Request) -> Response | None:
        """Refuse the upgrade past max_sessions (429, as an overloaded vendor does)."""
        if self.active >= self.params.max_sessions:
            self.truth.write({"refused_ns": time.perf_counter_ns(), "active": self.active})
            return conn.respond(HTTPStatus.TOO_MANY_REQUESTS,
                                "session limit reached: try again later\n")
        return None

    def counted(self, conn: ServerConnection, request: Request, response: Response
                ) -> Response | None:
        """Count a session from its accepted upgrade (in the same turn of the loop as
        `admit`'s check, so a second one cannot slip past) until its connection closes,
        whether or not its handler ever ran: a request that was no WebSocket upgrade, or
        a client gone mid-handshake, holds no slot."""
        if response.status_code == HTTPStatus.SWITCHING_PROTOCOLS:
            self.active += 1
            release = asyncio.ensure_future(self._release(conn))
            self._releases.add(release)
            release.add_done_callback(self._releases.discard)
        return None

    async def _release(self, conn: ServerConnection) -> None:
        try:
            await conn.wait_closed()
        finally:
            self.active -= 1

    async def handle(self, conn: ServerConnection) -> None:
        """One session, in the protocol its path names (Gemini Live's method, else
        OpenAI's Realtime)."""
        assert isinstance(conn, StampedConnection)
        self.sessions += 1
        path = conn.request.path if conn.request is not None else ""
        kind = next((session for marker, session in self.dialects if marker in path),
                    Session)
        await kind(self, conn, self.sessions).run()


class Session:
    """One realtime session on the server, in the OpenAI Realtime protocol; the events
    an answer and the VAD send are methods (`say_*`) a protocol's subclass speaks in its
    own words (`evalkit.reference.realtime.gemini`)."""

    #: the input audio's sample rate
    rate_hz = 24_000

    def __init__(self, endpoint: Endpoint, conn: StampedConnection, number: int) -> None:
        self.ep, self.conn, self.number = endpoint, conn, number
        self.params = endpoint.params
        self.server_vad = True
        self.silence_ms = self.params.silence_ms
        self.pos_ms = 0.0
        self.in_speech = False
        self.peak = -math.inf
        self.last_voiced_ns: int | None = None
        self.last_voiced_end_ms = 0.0
        self.response: Response_ | None = None
        self.responses = 0
        self.appends_ns: list[int] = []
        self.commit_ns: int | None = None
        self.events = 0
        #: the input audio item being spoken (OpenAI's item_id of the buffer's audio)
        self.items = 0

    async def send(self, doc: dict[str, Any]) -> int:
        """Send one event (with its `event_id`, as every server event has one); returns
        the stamp taken as it went to the transport."""
        self.events += 1
        text = json.dumps({"event_id": f"event_{self.number}_{self.events}", **doc},
                          separators=(",", ":"))
        at = time.perf_counter_ns()
        await self.conn.send(text)
        return at

    def session(self) -> dict[str, Any]:
        """The session as session.created and session.updated describe it."""
        return {"type": "realtime", "id": f"sess_{self.number}", "object": "realtime.session",
                "output_modalities": ["audio"]}

    def item(self) -> str:
        """The id of the input audio item being spoken."""
        return f"item_in_{self.number}_{self.items}"

    async def greet(self) -> None:
        """What the server says first."""
        await self.send({"type": "session.created", "session": self.session()})

    async def run(self) -> None:
        await self.greet()
        try:
            async for message in self.conn:
                at = self.conn.arrivals.popleft() if self.conn.arrivals else time.perf_counter_ns()
                await self.on_message(at, message)
        except ConnectionClosed:
            pass
        finally:
            if self.response is not None:
                self.response.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.response.task
            request = self.conn.request
            self.ep.truth.write({"session": self.number, "ended": time.perf_counter_ns(),
                                 "path": request.path if request is not None else None,
                                 "appends_ns": self.appends_ns})

    async def on_message(self, at: int, message: str | bytes) -> None:
        try:
            doc = json.loads(message)
            kind = doc.get("type")
        except (ValueError, AttributeError):
            await self.send({"type": "error", "error": {"message": "not JSON",
                                                        "type": "invalid_request_error"}})
            return
        if kind == "session.update":
            detection = (((doc.get("session") or {}).get("audio") or {}).get("input") or {}
                         ).get("turn_detection")
            self.server_vad = isinstance(detection, dict)
            if isinstance(detection, dict):
                self.silence_ms = int(detection.get("silence_duration_ms")
                                      or self.params.silence_ms)
            await self.send({"type": "session.updated", "session": self.session()})
        elif kind == "input_audio_buffer.append":
            try:
                pcm = base64.b64decode(doc.get("audio") or "", validate=True)
            except (binascii.Error, ValueError):
                return
            if len(self.appends_ns) < MAX_APPENDS:
                self.appends_ns.append(at)
            await self.hear(at, pcm)
        elif kind == "input_audio_buffer.commit":
            self.commit_ns = at
            await self.send({"type": "input_audio_buffer.committed", "item_id": self.item()})
            self.items += 1
            self.in_speech, self.peak = False, -math.inf
        elif kind == "response.create":
            self.start(at, None)
        elif kind == "response.cancel":
            if self.response is not None and not self.response.task.done():
                self.response.interrupt(at, "cancel")
            else:
                await self.send({"type": "error", "error": {
                    "message": "no active response", "type": "invalid_request_error"}})

    async def hear(self, at: int, frame: bytes) -> None:
        """One frame through the VAD (the prober's rule: within VOICED_DB of the peak)."""
        level = level_db(frame)
        self.pos_ms += len(frame) / (self.rate_hz * 2) * 1000
        if not self.in_speech:
            if level < SPEECH_FLOOR_DB:
                return
            self.in_speech, self.peak = True, level
            if self.server_vad:
                await self.say_speech_started()
                if self.response is not None and not self.response.task.done():
                    self.response.interrupt(at, "speech")
        self.peak = max(self.peak, level)
        if is_voiced(level, self.peak):
            self.last_voiced_ns, self.last_voiced_end_ms = at, self.pos_ms
        elif self.server_vad and self.pos_ms - self.last_voiced_end_ms >= self.silence_ms:
            self.in_speech, self.peak = False, -math.inf
            end_ms = round(self.pos_ms)
            decided = await self.say_speech_stopped(end_ms)
            self.items += 1
            self.start(decided, decided, end_ms)

    async def say_speech_started(self) -> None:
        """The VAD heard speech begin."""
        await self.send({"type": "input_audio_buffer.speech_started",
                         "item_id": self.item(), "audio_start_ms": int(self.pos_ms)})

    async def say_speech_stopped(self, end_ms: int) -> int:
        """The VAD decided the speech ended; returns the send's stamp."""
        return await self.send({"type": "input_audio_buffer.speech_stopped",
                                "item_id": self.item(), "audio_end_ms": end_ms})

    async def say_created(self, rid: str) -> None:
        """An answer begins."""
        await self.send({"type": "response.created", "response": {
            "id": rid, "object": "realtime.response", "status": "in_progress"}})

    def _part(self, rid: str) -> dict[str, Any]:
        return {"response_id": rid, "item_id": f"item_{rid}", "output_index": 0,
                "content_index": 0}

    async def say_text(self, rid: str, text: str) -> int:
        """A transcript delta; returns the send's stamp."""
        return await self.send({"type": "response.output_audio_transcript.delta",
                                **self._part(rid), "delta": text})

    async def say_audio(self, rid: str, b64: str) -> int:
        """An audio delta (24 kHz PCM, base64); returns the send's stamp."""
        return await self.send({"type": "response.output_audio.delta", **self._part(rid),
                                "delta": b64})

    async def say_done(self, rid: str, status: str) -> None:
        """The answer ended: completed or cancelled."""
        await self.send({"type": "response.done", "response": {
            "id": rid, "object": "realtime.response", "status": status}})

    def start(self, decided_ns: int, stopped_ns: int | None, end_ms: int | None = None
              ) -> None:
        """Begin an answer (one at a time: a new turn's answer replaces nothing)."""
        if self.response is not None and not self.response.task.done():
            return
        self.responses += 1
        self.response = Response_(self, f"resp_{self.number}_{self.responses}",
                                  decided_ns, stopped_ns, self.last_voiced_ns)
        self.response.truth.update(silence_ms=self.silence_ms if self.server_vad else None,
                                   audio_end_ms=end_ms, commit_ns=self.commit_ns)


class Response_:
    """One answer being sent (named apart from websockets' HTTP Response)."""

    def __init__(self, session: Session, rid: str, decided_ns: int, stopped_ns: int | None,
                 voiced_end_ns: int | None) -> None:
        self.session, self.rid = session, rid
        ep, p = session.ep, session.params
        over = max(0, ep.active - p.limit)
        self.ttfa = max(0.0, ep.rng.uniform(p.ttfa_s - p.ttfa_jitter_s,
                                            p.ttfa_s + p.ttfa_jitter_s)) + over * p.over_ttfa_s
        self.rate = p.audio_rate if over == 0 else p.over_rate
        self.truth: dict[str, Any] = {
            "session": session.number, "response": rid, "server_vad": session.server_vad,
            "voiced_end_ns": voiced_end_ns, "decided_ns": decided_ns,
            "speech_stopped_ns": stopped_ns, "active": ep.active, "rate": self.rate,
            "ttfa_drawn_s": round(self.ttfa, 6), "first_text_ns": None,
            "first_audio_ns": None, "audio": [], "interrupt_ns": None,
            "interrupted_by": None, "last_audio_ns": None, "status": None}
        self.stop_at: int | None = None
        self.task = asyncio.create_task(self.run(decided_ns))

    def interrupt(self, at: int, how: str) -> None:
        """Speech over the answer or a cancel: the audio stops cancel_delay_s later."""
        if self.stop_at is None:
            self.truth["interrupt_ns"], self.truth["interrupted_by"] = at, how
            self.stop_at = at + int(self.session.params.cancel_delay_s * 1e9)

    async def run(self, decided_ns: int) -> None:
        s, p = self.session, self.session.params
        status = "completed"
        try:
            await s.say_created(self.rid)
            chunk = bytes(int(p.chunk_s * 24_000) * 2)
            b64 = base64.b64encode(chunk).decode("ascii")
            n = max(1, round(p.answer_s / p.chunk_s))
            first = decided_ns + int(self.ttfa * 1e9)
            stall_at = round(p.stall_after_s / p.chunk_s) if p.stall_s > 0 else n
            for k in range(n):
                due = first + int(k * p.chunk_s / self.rate * 1e9)
                if k >= stall_at:
                    due += int(p.stall_s * 1e9)
                if self.stop_at is not None and due >= self.stop_at:
                    await _sleep_until(self.stop_at)
                    status = "cancelled"
                    break
                await _sleep_until(due)
                if k == 0:
                    self.truth["first_text_ns"] = await s.say_text(self.rid, "Sure, ")
                at = await s.say_audio(self.rid, b64)
                if k == 0:
                    self.truth["first_audio_ns"] = at
                self.truth["audio"].append([at, len(chunk)])
                self.truth["last_audio_ns"] = at
            self.truth["status"] = status
            await s.say_done(self.rid, status)
        except ConnectionClosed:
            self.truth["status"] = "cut"
        finally:
            s.ep.truth.write(self.truth)


async def _sleep_until(ns: int) -> None:
    """Sleep to `ns`, then yield turn by turn to it (the send must go on its moment)."""
    coarse = (ns - 1_000_000 - time.perf_counter_ns()) / 1e9
    if coarse > 0:
        await asyncio.sleep(coarse)
    while time.perf_counter_ns() < ns:
        await asyncio.sleep(0)
