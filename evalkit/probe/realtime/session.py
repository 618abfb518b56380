"""One call: a realtime session of several turns, the caller's audio sent at real-time pace.

The protocol's messages come from the plan's `protocol.Dialect` (OpenAI's Realtime, Gemini
Live); everything here is the same for each. Three coroutines share a call. The **line**
sends the caller's audio one frame every `frame_ms` (as a phone does, never a burst): the
utterance when the caller speaks, and, under server VAD, digital silence between
utterances, because a phone line carries silence and the vendor's VAD needs it to hear the
speech end. With client turn detection it sends the dialect's turn start, the utterance up
to its last voiced frame, then the turn's end (OpenAI: commit and response.create; Gemini
Live: activityEnd) at once. The **reader** takes every server message with its arrival
stamp, reads it into events, and hands each to the turn it belongs to (by response id;
else the turn being interrupted until its answer ends; else the turn that spoke last).
The **caller** runs the turns: speak, wait for the answer (with a deadline), listen to it
play out (the simulated player), pause, speak again; on a barge-in turn it interrupts the
answer once audio has played for `barge_after_s`, by the dialect's cancel (client
detection, OpenAI's `response.cancel`) or by starting its next utterance over the answer
(server VAD, and Gemini Live always: it has no cancel).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from evalkit.errors import UsageError
from evalkit.probe.realtime.openai import OPENAI
from evalkit.probe.realtime.protocol import Dialect, Event, Reader
from evalkit.probe.realtime.turnstate import TurnState
from evalkit.probe.realtime.websocket import Connection, WireError, connect
from evalkit.voice.audio import MAX_UTTERANCE_S, Utterance
from evalkit.voice.records import TurnRecord
from evalkit.voice.wire import WireUtterance, silent_frame

#: the longest the caller waits for an answer to play out before it speaks again (an
#: answer of two minutes is no turn of a phone call; a vendor's flood of audio must not
#: hold the call for its length)
MAX_PLAYOUT_WAIT_S = 120.0


@dataclass(frozen=True)
class CallPlan:
    """What every call of a run does (frozen: shared by all of a level's calls)."""

    url: str
    headers: tuple[tuple[str, str], ...]
    utterances: tuple[Utterance, ...]
    turns: int = 3
    frame_ms: int = 20
    server_vad: bool = True
    #: the silence window asked of the vendor's VAD
    silence_ms: int = 500
    #: every how many turns the caller interrupts the answer (0: never); the call's last
    #: turn is never interrupted (nothing follows it)
    barge_in_every: int = 3
    barge_after_s: float = 0.4
    #: the caller's pause after an answer has played out
    pause_s: float = 0.3
    #: deadline on the session's handshake and settings, and on any one answer
    connect_timeout_s: float = 10.0
    answer_timeout_s: float = 30.0
    run_id: str = ""
    origin_ns: int = 0
    #: the protocol spoken (`protocol.Dialect`: OpenAI's Realtime, Gemini Live)
    dialect: Dialect = OPENAI
    #: a cloud's OAuth token, fresh, sent as `Authorization: Bearer` when each call
    #: connects (Vertex AI's; None: `headers` carry the credential). It may block to
    #: refresh, so it runs in a thread; its failure is ours and stops the run
    token: Callable[[], str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """A plan that cannot be a phone call is refused before any socket opens."""
        if not 20 <= self.frame_ms <= 40:
            raise UsageError("frames of 20 to 40 ms, as a phone sends them "
                             f"(not {self.frame_ms})")
        if not self.utterances or self.turns < 1:
            raise UsageError("a call needs an utterance and at least one turn")
        if min(self.connect_timeout_s, self.answer_timeout_s) <= 0 or \
                min(self.pause_s, self.barge_after_s, self.barge_in_every) < 0:
            raise UsageError("deadlines must be positive, pauses not negative")
        if self.silence_ms <= 0:
            raise UsageError("the VAD's silence window must be positive")


class Call:
    """One session's state while it runs."""

    def __init__(self, plan: CallPlan, number: int, level: int,
                 emit: Callable[[TurnRecord], None]) -> None:
        self.plan, self.number, self.level, self.emit = plan, number, level, emit
        self.conn: Connection | None = None
        self.turns: list[TurnState] = []
        #: the turn the next response belongs to (the one that spoke last)
        self.awaiting: TurnState | None = None
        self.by_response: dict[str, TurnState] = {}
        #: the utterance the line is to send next (None: silence or nothing)
        self.speaking: tuple[TurnState, Utterance] | None = None
        self.spoke = asyncio.Event()
        self.audio_pos_s = 0.0  # input audio sent so far (the vendor's buffer clock)
        self.detection = "server_vad" if plan.server_vad else "client"
        self.cut: WireError | None = None
        #: the turns whose records were handed on
        self.emitted: set[int] = set()
        #: the answer the caller is speaking over (server VAD barge-in)
        self.interrupting: TurnState | None = None
        #: the last turn the caller talked over
        self.barged: TurnState | None = None
        self.reader: Reader = plan.dialect.reader()
        #: the server's goAway (its time left), said with the close that follows it
        self.go_away: str | None = None

    # ------------------------------------------------------------------ the caller
    async def run(self) -> None:
        """The call from connect to goodbye; every turn ends as a record."""
        plan = self.plan
        first = self._turn(0)
        try:
            headers = list(plan.headers)
            if plan.token is not None:
                headers.append(("Authorization",
                                f"Bearer {await asyncio.to_thread(plan.token)}"))
            self.conn, _ = await connect(plan.url, headers, plan.connect_timeout_s)
            await self.conn.send_text(plan.dialect.setup(plan.server_vad, plan.silence_ms),
                                      plan.connect_timeout_s)
            if plan.dialect.awaits_setup:
                await self._setup(first)
        except WireError as exc:
            # a session closed before the setup it waits for was confirmed was refused,
            # in the vendor's words (Gemini Live says no by closing)
            refused = exc.kind == "cut" and plan.dialect.awaits_setup
            kind = {"refused": "rejected", "timeout": "timeout"}.get(
                exc.kind, "rejected" if refused else "error")
            first.finish(time.perf_counter_ns(), kind, str(exc))
        if first.finished.is_set() or self.conn is None:
            if self.conn is not None:
                await self.conn.close()
            self._emit(first)
            return
        self.awaiting = first  # a refusal said in an error event before any speech
        tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._line())]
        try:
            await self._turns(first)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, WireError):
                    await task
            await self.conn.close()
            now = time.perf_counter_ns()
            for turn in self.turns:
                if not turn.finished.is_set():
                    turn.finish(now, *self._unfinished())
                self._emit(turn)

    async def _setup(self, first: TurnState) -> None:
        """Wait for the server's word that the session is set up (deadline: connect's);
        an error said instead ends the first turn in those words."""
        assert self.conn is not None
        deadline = time.perf_counter_ns() + int(self.plan.connect_timeout_s * 1e9)
        unconfirmed = WireError("timeout", "the server did not confirm the session's setup "
                                f"in {self.plan.connect_timeout_s:g} s")
        while True:
            left = (deadline - time.perf_counter_ns()) / 1e9
            if left <= 0:
                raise unconfirmed
            try:
                message = await self.conn.receive(left)
            except WireError as exc:
                raise unconfirmed if exc.kind == "timeout" else exc from None
            for ev in self.reader(message.text):
                if ev.kind == "ready":
                    return
                if ev.kind == "error":
                    first.finish(message.at_ns, "error", ev.error)
                    return

    async def _turns(self, turn: TurnState) -> None:
        plan = self.plan
        for number in range(plan.turns):
            if number:
                turn = self.turns[number] if len(self.turns) > number else self._turn(number)
            utterance = plan.utterances[(self.number + number) % len(plan.utterances)]
            if self.speaking is None or self.speaking[0] is not turn:
                await self._speak(turn, utterance)
            interrupt = (plan.barge_in_every > 0 and number + 1 < plan.turns
                         and (number + 1) % plan.barge_in_every == 0)
            if interrupt and await self._interrupt(turn, number + 1):
                continue  # the next turn is already under way (server VAD: speech)
            if not await self._answered(turn):
                return
            self._emit_finished()
            ends = turn.playback_end_ns()
            if ends is not None:  # a vendor's hour of audio is not an hour of our call
                cap = time.perf_counter_ns() + int(MAX_PLAYOUT_WAIT_S * 1e9)
                await sleep_until(min(ends, cap) + int(plan.pause_s * 1e9))

    def _turn(self, number: int) -> TurnState:
        utterance = self.plan.utterances[(self.number + number) % len(self.plan.utterances)]
        voiced = self._wire(utterance).last_voiced
        turn = TurnState(number, utterance.name,
                         self.audio_pos_s + (voiced + 1) * self.plan.frame_ms / 1000)
        self.turns.append(turn)
        return turn

    async def _speak(self, turn: TurnState, utterance: Utterance) -> None:
        """Hand the utterance to the line; return once its last voiced frame went out."""
        self.spoke.clear()
        self.speaking = (turn, utterance)
        self.awaiting = turn
        await self._until(self.spoke.wait(), turn, self._speaking_s(utterance))

    async def _answered(self, turn: TurnState) -> bool:
        """Wait for the turn's answer to end; False when the session is over."""
        await self._until(turn.finished.wait(), turn)
        return self.cut is None and turn.outcome == "ok"

    async def _interrupt(self, turn: TurnState, next_number: int) -> bool:
        """Talk over the answer once it has played `barge_after_s`; True when the next
        turn's speech is the interruption (server VAD)."""
        plan = self.plan
        deadline = time.perf_counter_ns() + int(plan.answer_timeout_s * 1e9)
        while not turn.deltas and not turn.finished.is_set():  # the answer's first audio
            if time.perf_counter_ns() >= deadline:
                turn.finish(time.perf_counter_ns(), "timeout",
                            f"no answer audio in {plan.answer_timeout_s:g} s")
                return False
            await self._until(asyncio.sleep(plan.frame_ms / 1000), turn)
        if turn.finished.is_set() or self.conn is None:
            return False
        await sleep_until(turn.deltas[0][0] + int(plan.barge_after_s * 1e9))
        if turn.finished.is_set():
            return False
        cancel = plan.dialect.cancel
        if not plan.server_vad and cancel is not None:
            turn.interrupted_by = "cancel"
            turn.interrupt_ns = await self.conn.send_text(cancel, plan.connect_timeout_s)
            return False
        turn.interrupted_by = "speech"
        # its interrupt_ns: the next utterance's first voiced frame, or the turn start
        # sent before it when the client detects turns (Gemini Live's activityStart)
        self.interrupting = self.barged = turn
        nxt = self._turn(next_number)
        utterance = plan.utterances[(self.number + next_number) % len(plan.utterances)]
        self.speaking = (nxt, utterance)
        self.spoke.clear()
        self.awaiting = nxt
        await self._until(self.spoke.wait(), nxt, self._speaking_s(utterance))
        return True

    def _speaking_s(self, utterance: Utterance) -> float:
        """The deadline on saying an utterance: its length, and a send's deadline for a
        vendor that stops reading (not the answer's: a 20 s recording under a 10 s
        answer deadline is no vendor's fault)."""
        return utterance.duration_s + self.plan.connect_timeout_s

    async def _until(self, waiting: Coroutine[Any, Any, Any], turn: TurnState,
                     deadline_s: float | None = None) -> None:
        """Await `waiting` until its deadline (the answer's unless given), or until the
        turn ended another way (the session cut, an error event): on the deadline the
        turn times out and the call ends."""
        deadline_s = self.plan.answer_timeout_s if deadline_s is None else deadline_s
        task = asyncio.ensure_future(waiting)
        ended = asyncio.ensure_future(turn.finished.wait())
        try:
            done, _ = await asyncio.wait((task, ended), timeout=deadline_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pending in (task, ended):
                pending.cancel()
        if not done:
            turn.finish(time.perf_counter_ns(), "timeout", f"nothing more for {deadline_s:g} s")
        if self.cut is not None and not turn.finished.is_set():
            turn.finish(time.perf_counter_ns(), *self._unfinished())

    def _unfinished(self) -> tuple[str, str]:
        if self.cut is None:
            return "timeout", "the call ended before the answer did"
        said = str(self.cut) + (f" (after the server's goAway, time left {self.go_away})"
                                if self.go_away else "")
        return ("timeout" if self.cut.kind == "timeout" else "incomplete"), said

    def _emit_finished(self) -> None:
        """Hand on every turn that has ended, in order, so a record leaves as it is
        measured (a call cut short, or a run stopped, keeps its finished turns)."""
        for turn in self.turns:
            if not turn.finished.is_set():
                return
            self._emit(turn)

    def _emit(self, turn: TurnState) -> None:
        if turn.number in self.emitted:
            return
        self.emitted.add(turn.number)
        self.emit(turn.record(self.plan.run_id, self.level, self.number, self.detection,
                              self.plan.origin_ns))

    # ------------------------------------------------------------------ the line
    async def _line(self) -> None:
        """Send a frame every frame_ms: the utterance's, else silence (server VAD)."""
        assert self.conn is not None
        plan, conn, dialect = self.plan, self.conn, self.plan.dialect
        step = plan.frame_ms * 1_000_000
        quiet = dialect.audio(silent_frame(dialect.rate_hz, plan.frame_ms))
        tick = time.perf_counter_ns()
        #: when the socket took the last frame (its send returned): a frame whose tick
        #: passed while that send was blocked was held by the vendor, not by us
        taken = tick
        wire: WireUtterance | None = None
        last = -1  # the last frame this turn sends
        k = 0
        turn: TurnState | None = None
        while True:
            if self.speaking is not None and (turn is None or self.speaking[0] is not turn):
                turn, utterance = self.speaking
                wire = self._wire(utterance)
                last = len(wire.frames) - 1 if plan.server_vad else wire.last_voiced
                k = 0
            if turn is not None and wire is not None and k <= last:
                if k == 0 and self.speaking is not None and turn.first_sent_ns is None:
                    tick = max(tick, time.perf_counter_ns())
                    if not plan.server_vad:  # the client's own turn start, if it has one
                        for message in dialect.turn_start():
                            started = await conn.send_text(message, plan.connect_timeout_s)
                            if self.interrupting is not None:
                                self.interrupting.interrupt_ns = started
                                self.interrupting = None
                sent = await conn.send_text(dialect.audio(wire.frames[k]),
                                            plan.connect_timeout_s)
                turn.pace_late_max_ns = max(turn.pace_late_max_ns, sent - max(tick, taken))
                turn.intake_blocked_max_ns = max(turn.intake_blocked_max_ns, taken - tick)
                taken = time.perf_counter_ns()
                if k == 0:
                    turn.first_sent_ns = sent
                    turn.voiced_audio_end_s = self.audio_pos_s + sum(
                        wire.seconds(i) for i in range(wire.last_voiced + 1))
                if k == wire.first_voiced and self.interrupting is not None:
                    self.interrupting.interrupt_ns, self.interrupting = sent, None
                self.audio_pos_s += wire.seconds(k)
                turn.sent_audio_s += wire.seconds(k)
                if k == wire.last_voiced:
                    turn.voiced_end_ns = sent
                    if not plan.server_vad:
                        for message in dialect.turn_end():
                            await conn.send_text(message, plan.connect_timeout_s)
                        taken = time.perf_counter_ns()
                    self.spoke.set()
                k += 1
            elif plan.server_vad:
                await conn.send_text(quiet, plan.connect_timeout_s)
                taken = time.perf_counter_ns()
                self.audio_pos_s += plan.frame_ms / 1000
            tick += step
            await sleep_until(tick)

    def _wire(self, utterance: Utterance) -> WireUtterance:
        return self.plan.dialect.wire(utterance, self.plan.frame_ms)

    # ------------------------------------------------------------------ the reader
    async def _read(self) -> None:
        """Every server event, stamped at arrival, to the turn it belongs to."""
        assert self.conn is not None
        try:
            while True:
                message = await self.conn.receive(self._idle_deadline_s())
                for ev in self.reader(message.text):
                    self._dispatch(message.at_ns, ev)
        except WireError as exc:
            self.cut = exc
            now = time.perf_counter_ns()
            for turn in self.turns:
                if not turn.finished.is_set():
                    turn.finish(now, *self._unfinished())

    def _idle_deadline_s(self) -> float:
        """The reader's own deadline, a safety net under the caller's: the caller's
        waits (speaking, the answer, its playout) each have theirs, and a vendor may
        rightly say nothing for the longest of them."""
        return self.plan.answer_timeout_s + MAX_UTTERANCE_S + MAX_PLAYOUT_WAIT_S + 5.0

    def _dispatch(self, at: int, ev: Event) -> None:
        turn: TurnState | None
        if ev.kind == "goaway":
            self.go_away = ev.error
            return
        if ev.kind == "created":
            turn = self.awaiting
            if turn is not None and ev.response_id and turn.response_id is None:
                turn.response_id = ev.response_id
                self.by_response[ev.response_id] = turn
            return
        if ev.kind in ("speech_stopped", "speech_started", "committed", "session", "ready",
                       "other"):
            turn = self.awaiting if ev.kind == "speech_stopped" else None
        elif ev.response_id and ev.response_id in self.by_response:
            turn = self.by_response[ev.response_id]
        elif ev.kind in ("audio", "text", "done") and self.barged is not None \
                and not self.barged.finished.is_set():
            # an answer without an id (Gemini Live) is the interrupted turn's until it
            # ends: what came before `interrupted` is not the next turn's answer
            turn = self.barged
        else:
            turn = self.awaiting
        if turn is not None:
            turn.on_event(at, ev)


async def sleep_until(ns: int) -> None:
    """Sleep to about `ns` (perf_counter_ns). The loop's timers wake up to a millisecond
    late; pacing needs no better (each frame's send is stamped where it happens, and TTFA
    starts from that stamp), and spinning to the microsecond 50 times a second in every
    call would spend the client's CPU on nothing."""
    delay = (ns - time.perf_counter_ns()) / 1e9
    await asyncio.sleep(max(delay, 0.0))
