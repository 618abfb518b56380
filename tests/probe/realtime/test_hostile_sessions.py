"""Failures are outcomes, never hangs or crashes: a realtime session refused, cut mid-
answer, never answered, flooded, or told an error in words that must be cleaned. Small
misbehaving servers, each over a real socket in a thread of its own."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from evalkit.probe.realtime import session, turnstate
from evalkit.probe.wire.transport import StampedBackend
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.records import TurnRecord
from tests.probe.realtime.helpers import plan_for, run_calls, tone

Handler = Callable[[ServerConnection], Awaitable[None]]
DELTA = base64.b64encode(bytes(4800)).decode()  # 0.1 s of audio


@contextlib.contextmanager
def hostile(handler: Handler | None, **serving: Any) -> Iterator[str]:
    """A server running `handler` per session (None: a TCP listener that never answers
    the handshake; `serving`: more of websockets' `serve` options); yields its base URL."""
    ready = threading.Event()
    state: dict[str, object] = {}

    async def main() -> None:
        stop = asyncio.Event()
        state["stop"], state["loop"] = stop, asyncio.get_running_loop()
        if handler is None:
            async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    await reader.read(1 << 16)
                    await stop.wait()
                finally:
                    writer.close()
            server = await asyncio.start_server(mute, "127.0.0.1", 0)
            state["port"] = server.sockets[0].getsockname()[1]
            ready.set()
            async with server:
                await stop.wait()
            return
        where = {} if "sock" in serving else {"host": "127.0.0.1", "port": 0}
        async with serve(handler, max_size=None, **where, **serving) as ws_server:
            state["port"] = next(iter(ws_server.sockets)).getsockname()[1]
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(5)
    try:
        yield f"http://127.0.0.1:{state['port']}/v1"
    finally:
        loop = state["loop"]
        assert isinstance(loop, asyncio.AbstractEventLoop)
        stop = state["stop"]
        assert isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)


async def until_asked(ws: ServerConnection) -> None:
    """Read the caller's events until it asks for an answer (client turn detection)."""
    async for message in ws:
        if json.loads(message).get("type") == "response.create":
            return


def one_turn(url: str, **overrides: Any) -> tuple[TurnRecord, float]:
    """One call of one turn (the caller commits); its record and the call's wall time."""
    began = time.monotonic()
    options: dict[str, Any] = {"turns": 1, "server_vad": False, **overrides}
    (record,) = run_calls(plan_for(url, **options))
    return record, time.monotonic() - began


def test_a_refused_session_is_rejected_in_the_vendors_words() -> None:
    with RealtimeReference({"max_sessions": 0}) as ref:
        record, _ = one_turn(ref.base_url)
    assert record.outcome == "rejected"
    assert record.error is not None
    assert "HTTP 429" in record.error and "session limit" in record.error


def test_an_error_event_is_an_error_with_its_words_cleaned() -> None:
    async def handler(ws: ServerConnection) -> None:
        await until_asked(ws)
        await ws.send(json.dumps({"type": "error", "error": {
            "message": "quota \x1b[2J\x1b[31mexceeded\x07", "type": "insufficient_quota",
            "code": "quota"}}))
        with contextlib.suppress(ConnectionClosed):
            await ws.wait_closed()

    with hostile(handler) as url:
        record, _ = one_turn(url)
    assert record.outcome == "error"
    error = record.error or ""
    assert "quota" in error and "exceeded" in error and "insufficient_quota" in error
    assert "\x1b" not in error and "\x07" not in error


def test_a_session_cut_mid_answer_is_incomplete_with_the_audio_it_had() -> None:
    async def handler(ws: ServerConnection) -> None:
        await until_asked(ws)
        await ws.send(json.dumps({"type": "response.created", "response": {"id": "r1"}}))
        for _ in range(2):
            await ws.send(json.dumps({"type": "response.output_audio.delta",
                                      "response_id": "r1", "delta": DELTA}))
        await asyncio.sleep(0.05)
        ws.transport.abort()  # no close frame: the line drops

    with hostile(handler) as url:
        record, took = one_turn(url)
    assert record.outcome == "incomplete"
    assert record.answer_audio_s == pytest.approx(0.2)
    assert record.ttfa_s is not None and took < 4


def test_a_vendor_that_never_answers_times_out_on_the_deadline() -> None:
    async def handler(ws: ServerConnection) -> None:
        async for _ in ws:  # it hears every frame, and says nothing
            pass

    with hostile(handler) as url:
        record, took = one_turn(url, answer_timeout_s=1.0)
    assert record.outcome == "timeout"
    assert record.ttfa_s is None
    assert took < 0.5 + 1.0 + 1.0  # the utterance, the deadline, and no more than a second


def test_a_handshake_never_answered_times_out_on_the_connect_deadline() -> None:
    with hostile(None) as url:
        record, took = one_turn(url, connect_timeout_s=1.0)
    assert record.outcome == "timeout"
    assert 1.0 <= took < 2.5


def test_a_flood_of_audio_is_capped_and_ends_on_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Audio deltas as fast as the socket takes them, never a response.done: the turn
    keeps at most MAX_DELTAS of them (the rest counted as dropped) and times out."""
    monkeypatch.setattr(turnstate, "MAX_DELTAS", 200)

    async def handler(ws: ServerConnection) -> None:
        await until_asked(ws)
        message = json.dumps({"type": "response.output_audio.delta", "response_id": "r",
                              "delta": DELTA})
        with contextlib.suppress(ConnectionClosed):
            while True:
                await ws.send(message)

    with hostile(handler) as url:
        record, took = one_turn(url, answer_timeout_s=1.0)
    assert record.outcome == "timeout"
    assert record.audio_deltas == 200
    assert took < 0.5 + 1.0 + 1.5


def test_a_message_over_the_cap_cuts_the_session() -> None:
    async def handler(ws: ServerConnection) -> None:
        await until_asked(ws)
        with contextlib.suppress(ConnectionClosed):
            await ws.send("x" * (5 * 1024 * 1024))
            await ws.wait_closed()

    with hostile(handler) as url:
        record, took = one_turn(url)
    assert record.outcome == "incomplete"
    assert "exceeds limit" in (record.error or "")
    assert took < 4


def test_an_hour_of_audio_sent_at_once_does_not_hold_the_call_for_an_hour(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A vendor sends a minute of audio in a burst, then response.done: the caller waits
    for it to play out at most MAX_PLAYOUT_WAIT_S (made 0.3 s here), then speaks again."""
    monkeypatch.setattr(session, "MAX_PLAYOUT_WAIT_S", 0.3)

    async def handler(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            for turn in range(2):
                await until_asked(ws)
                rid = f"r{turn}"
                for _ in range(600):
                    await ws.send(json.dumps({"type": "response.output_audio.delta",
                                              "response_id": rid, "delta": DELTA}))
                await ws.send(json.dumps({"type": "response.done",
                                          "response": {"id": rid, "status": "completed"}}))
            await ws.wait_closed()

    with hostile(handler) as url:
        began = time.monotonic()
        records = run_calls(plan_for(url, turns=2, server_vad=False))
        took = time.monotonic() - began
    assert [r.outcome for r in records] == ["ok", "ok"]
    assert [r.answer_audio_s for r in records] == [pytest.approx(60.0)] * 2
    assert took < 2 * (0.5 + 0.3 + 0.05) + 1.5


def test_a_session_cut_while_the_caller_speaks_ends_at_once() -> None:
    """The line drops on the caller's third frame: the turn is incomplete then, not
    when the answer's deadline (5 s here) runs out."""
    async def handler(ws: ServerConnection) -> None:
        appends = 0
        async for message in ws:
            appends += json.loads(message).get("type") == "input_audio_buffer.append"
            if appends == 3:
                ws.transport.abort()
                return

    with hostile(handler) as url:
        record, took = one_turn(url, answer_timeout_s=5.0)
    assert record.outcome == "incomplete" and took < 1.5, (record, took)


def test_a_long_utterance_is_not_held_to_the_answers_deadline() -> None:
    """Saying 1.2 s of speech under a 0.5 s answer deadline: the deadline on speaking is
    the utterance's length (and a send's), so the turn is answered."""
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.2}) as ref:
        record, _ = one_turn(ref.base_url, answer_timeout_s=0.5,
                             utterances=(tone("long", voiced_s=1.2),))
    assert record.outcome == "ok", record


def test_a_barge_in_turn_whose_answer_never_comes_times_out_on_the_deadline() -> None:
    """The caller waits to talk over an answer that never starts: the answer's deadline
    holds there too."""
    async def handler(ws: ServerConnection) -> None:
        async for _ in ws:
            pass

    with hostile(handler) as url:
        began = time.monotonic()
        records = run_calls(plan_for(url, server_vad=False, barge_in_every=1,
                                     answer_timeout_s=1.0))
        took = time.monotonic() - began
    assert [r.outcome for r in records] == ["timeout"] and took < 0.5 + 1.0 + 1.0


def test_a_request_that_was_no_upgrade_holds_no_session_slot() -> None:
    """The reference endpoint counts a session from its accepted upgrade to its close:
    a plain GET (refused by the handshake, no handler run) left a slot taken for good,
    and the next caller of a one-session endpoint was refused."""
    with RealtimeReference({"max_sessions": 1, "ttfa_s": 0.05, "answer_s": 0.2}) as ref:
        reply = httpx.get(ref.base_url + "/realtime", timeout=5)
        assert reply.status_code >= 400
        first, _ = one_turn(ref.base_url)
        time.sleep(0.2)  # the server sees the first call's close
        second, _ = one_turn(ref.base_url)  # the first call's slot came back too
    assert (first.outcome, second.outcome) == ("ok", "ok"), (first, second)


def test_a_vendor_that_stops_reading_the_caller_is_not_our_late_pace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A vendor that stops reading the caller's audio for 1.5 s, so our sends block: the
    frames it held are the vendor's, counted as `intake_blocked_max_s`, not as our pace,
    so a level cannot read as client-bound (no verdict) through the vendor's own stall;
    its TTFA still carries the delay. Both sockets' buffers are made small, as a long
    path's window would be (loopback's autotuning would hold seconds of audio)."""
    connect_tcp = StampedBackend.connect_tcp

    async def small_buffers(self: StampedBackend, *args: Any, **kwargs: Any) -> Any:
        stream = await connect_tcp(self, *args, **kwargs)
        stream.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        return stream

    monkeypatch.setattr(StampedBackend, "connect_tcp", small_buffers)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before listen: inherited
    listener.bind(("127.0.0.1", 0))

    async def handler(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.recv()  # session.update; then nothing is read for 1.5 s
            await asyncio.sleep(1.5)
            await until_asked(ws)
            await ws.send(json.dumps({"type": "response.output_audio.delta",
                                      "response_id": "r0", "delta": DELTA}))
            await ws.send(json.dumps({"type": "response.done",
                                      "response": {"id": "r0", "status": "completed"}}))
            await ws.wait_closed()

    with hostile(handler, sock=listener, max_queue=1) as url:
        record, _ = one_turn(url, utterances=(tone("long", voiced_s=1.5),))
    assert record.outcome == "ok", record
    assert record.intake_blocked_max_s is not None and record.intake_blocked_max_s > 0.5
    assert record.pace_late_max_s is not None and record.pace_late_max_s < 0.1, record
