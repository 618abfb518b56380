"""What one turn gathered as its events arrived, and the record made of it.

The session's reader hands every server event here with its arrival stamp
(perf_counter_ns of the socket read); the line hands the send stamps of the utterance's
frames. `record()` turns them into a `TurnRecord`: TTFA from the last voiced frame sent,
the vendor's VAD as its own terms, the simulated player, barge-in. No I/O.
"""

from __future__ import annotations

import asyncio

from evalkit.probe.realtime.protocol import Event
from evalkit.sanitize import clean
from evalkit.voice.audio import audio_seconds
from evalkit.voice.player import play
from evalkit.voice.records import TurnRecord

#: answer deltas kept per turn (a 30 s answer in 20 ms deltas is 1,500)
MAX_DELTAS = 20_000


class TurnState:
    """One turn in progress (mutable; it lives only while its session runs)."""

    def __init__(self, number: int, utterance: str, voiced_audio_end_s: float) -> None:
        self.number = number
        self.utterance = utterance
        #: where the last voiced frame ends in the session's input audio (s): the VAD's
        #: audio_end_ms minus this is the silence the vendor waited for
        self.voiced_audio_end_s = voiced_audio_end_s
        self.first_sent_ns: int | None = None
        #: seconds of the utterance's audio sent (every frame, silence in it included)
        self.sent_audio_s = 0.0
        self.voiced_end_ns: int | None = None
        self.pace_late_max_ns = 0
        self.intake_blocked_max_ns = 0
        self.response_id: str | None = None
        self.speech_stopped_ns: int | None = None
        self.audio_end_ms: int | None = None
        self.first_text_ns: int | None = None
        #: (arrival ns, audio bytes) of each answer audio delta
        self.deltas: list[tuple[int, int]] = []
        self.dropped_deltas = 0
        self.interrupted_by: str | None = None
        self.interrupt_ns: int | None = None
        self.status: str | None = None
        self.error: str | None = None
        self.outcome: str | None = None
        self.end_ns: int | None = None
        self.finished = asyncio.Event()

    @property
    def spoken(self) -> bool:
        """Its last voiced frame went out: the answer may come."""
        return self.voiced_end_ns is not None

    def on_event(self, at: int, ev: Event) -> None:
        """One server event that belongs to this turn."""
        if self.finished.is_set():
            return
        if ev.kind == "audio":
            if len(self.deltas) < MAX_DELTAS:
                self.deltas.append((at, ev.audio_bytes))
            else:
                self.dropped_deltas += 1
        elif ev.kind == "text":
            if self.first_text_ns is None and ev.text.strip():
                self.first_text_ns = at
        elif ev.kind == "speech_stopped":
            if self.speech_stopped_ns is None:
                self.speech_stopped_ns, self.audio_end_ms = at, ev.audio_end_ms
        elif ev.kind == "done":
            self.status = ev.status
            self._done(at, ev)
        elif ev.kind == "error":
            self.finish(at, "error", ev.error)

    def _done(self, at: int, ev: Event) -> None:
        """response.done, read fail-closed: only an answer that completed with audio, or
        one we interrupted, is an answer the caller heard."""
        heard = any(size > 0 for _, size in self.deltas)
        if ev.status == "failed":
            self.finish(at, "error", ev.error)
        elif ev.status == "incomplete":  # the vendor cut its own answer short
            self.finish(at, "incomplete", ev.error)
        elif ev.status == "cancelled":
            if self.interrupted_by is not None:
                self.finish(at, "ok")
            else:
                self.finish(at, "incomplete", "the vendor cancelled the answer; the caller "
                                              "did not interrupt it")
        elif ev.status == "completed" and heard:
            self.finish(at, "ok")
        elif ev.status == "completed":
            self.finish(at, "error", "the response completed with no audio")
        else:
            self.finish(at, "error", f"the response ended with status "
                                     f"{clean(ev.status or 'none given', 30)}")

    def finish(self, at: int, outcome: str, error: str | None = None) -> None:
        """The turn ended (the first ending wins)."""
        if self.finished.is_set():
            return
        self.outcome, self.end_ns = outcome, at
        self.error = clean(error, 300) if error else None
        self.finished.set()

    def record(self, run_id: str, level: int, call: int, detection: str,
               origin_ns: int) -> TurnRecord:
        """The turn's record (its times on the run clock)."""
        def run_s(ns: int | None) -> float | None:
            return None if ns is None else round((ns - origin_ns) / 1e9, 6)

        def since_voiced(ns: int | None) -> float | None:
            if ns is None or self.voiced_end_ns is None:
                return None
            return round((ns - self.voiced_end_ns) / 1e9, 6)

        outcome, error = self.outcome or "timeout", self.error
        audio = [d for d in self.deltas if d[1] > 0]
        cut_in = bool(audio) and self.voiced_end_ns is not None \
            and audio[0][0] < self.voiced_end_ns
        if cut_in and self.voiced_end_ns is not None:
            # an answer over the caller's own speech is no quick answer: a negative TTFA
            # would read as the fastest of all (fail closed, and say what happened)
            outcome = "error"
            error = (f"the answer began {(self.voiced_end_ns - audio[0][0]) / 1e9:.3f} s "
                     "before the caller's last voiced frame was sent: the vendor took a "
                     "pause in the utterance for the end of the turn")
        playback = play([a / 1e9 for a, _ in audio], [audio_seconds(b) for _, b in audio])
        barge: float | None = None
        if self.interrupt_ns is not None and (self.end_ns is None
                                               or self.end_ns > self.interrupt_ns):
            after = [a for a, _ in audio if a >= self.interrupt_ns]
            barge = round(max(0, (after[-1] if after else self.interrupt_ns)
                              - self.interrupt_ns) / 1e9, 6)
        window = None
        if self.audio_end_ms is not None:
            window = round(self.audio_end_ms / 1000 - self.voiced_audio_end_s, 6)
        ok = outcome == "ok"
        return TurnRecord(
            run_id=run_id, level=level, call=call, turn=self.number,
            utterance=self.utterance, detection=detection, outcome=outcome,
            # a turn that sent nothing (a call refused) began when it ended: never at the
            # run's origin, which would stretch its level's steady-state window
            t0_s=run_s(self.first_sent_ns if self.first_sent_ns is not None else self.end_ns)
            or 0.0, voiced_end_s=run_s(self.voiced_end_ns),
            ttfa_s=since_voiced(audio[0][0]) if audio and not cut_in else None,
            vad_wait_s=since_voiced(self.speech_stopped_ns), vad_window_s=window,
            text_ttft_s=None if cut_in else since_voiced(self.first_text_ns),
            answer_audio_s=round(sum(audio_seconds(b) for _, b in audio), 6) if audio
            else (0.0 if ok else None),
            audio_deltas=len(audio),
            input_audio_s=round(self.sent_audio_s, 6) if self.first_sent_ns is not None
            else None,
            underruns=playback.underruns if audio else None,
            underrun_s=round(playback.underrun_s, 6) if audio else None,
            ahead_ratio=None if playback.ahead_ratio is None else round(playback.ahead_ratio, 4),
            interrupted_by=self.interrupted_by, barge_in_s=barge,
            end_s=run_s(self.end_ns), response_id=self.response_id, status=self.status,
            error=error,
            pace_late_max_s=round(self.pace_late_max_ns / 1e9, 6),
            intake_blocked_max_s=round(self.intake_blocked_max_ns / 1e9, 6))

    def playback_end_ns(self) -> int | None:
        """When the simulated player finishes this answer (None: no audio came)."""
        audio = [d for d in self.deltas if d[1] > 0]
        if not audio:
            return None
        playback = play([a / 1e9 for a, _ in audio], [audio_seconds(b) for _, b in audio])
        return audio[0][0] + int(playback.ends_s * 1e9)
