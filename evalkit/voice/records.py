"""One caller turn of a realtime call, as `turns.jsonl` keeps it (one line a turn).

All times are seconds on the run's monotonic clock (offsets from run.json's
`clock.origin_ns`), stamped where the bytes went to or came from the socket. A figure
that could not be measured is None, never a guess; a failed turn is a record too (its
outcome says how it failed), so it stays in every denominator.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import IO, Any

from evalkit.sanitize import clean

#: the realtime protocols a voice run speaks (`evalkit probe --api NAME`): OpenAI's (and
#: Azure OpenAI's) Realtime API, Google's Gemini Live
VOICE_APIS = ("openai-realtime", "gemini-live")

#: how a turn ended: ok, or refused (the session was not admitted), error (an error event
#: or a failed response), incomplete (the session was cut), timeout (no answer in time)
TURN_OUTCOMES = ("ok", "rejected", "error", "incomplete", "timeout")


@dataclass(frozen=True)
class TurnRecord:
    """One turn: the caller's utterance sent at real-time pace, then the answer."""

    run_id: str
    #: concurrent calls of the level (0: the connect gate's one call, before any level),
    #: the call's number in the run, the turn's in its call
    level: int
    call: int
    turn: int
    utterance: str
    #: server_vad (the vendor decides the end of speech) | client (we commit the buffer)
    detection: str
    outcome: str
    #: the first frame of the utterance went to the socket (a turn that sent nothing, as
    #: a refused call's: when it ended)
    t0_s: float
    #: the last voiced frame went to the socket: TTFA's start
    voiced_end_s: float | None = None
    #: first answer audio byte arrived, minus voiced_end_s
    ttfa_s: float | None = None
    #: speech_stopped arrived, minus voiced_end_s (the vendor's VAD deciding: its
    #: silence window and its own delay), and the silence its audio_end_ms counts past
    #: the end of the last voiced frame (the window in audio time)
    vad_wait_s: float | None = None
    vad_window_s: float | None = None
    #: first transcript or text delta, minus voiced_end_s
    text_ttft_s: float | None = None
    answer_audio_s: float | None = None
    audio_deltas: int = 0
    #: seconds of the caller's audio sent in this turn: the utterance's frames, silence
    #: inside it included (what a vendor bills as input audio); None: a record written
    #: before evalkit kept it, or a turn that sent nothing
    input_audio_s: float | None = None
    underruns: int | None = None
    underrun_s: float | None = None
    ahead_ratio: float | None = None
    #: the caller interrupted this answer (cancel | speech), and the time from the
    #: interruption's send to the last answer audio that arrived after it
    interrupted_by: str | None = None
    barge_in_s: float | None = None
    #: the last answer byte (or the failure) arrived
    end_s: float | None = None
    #: the vendor's id of the answer (cleaned), response.done's status, and the vendor's
    #: words on a failure (cleaned)
    response_id: str | None = None
    status: str | None = None
    error: str | None = None
    #: the latest any frame of the utterance went out after its time through our own
    #: lateness (the client's pace: a frame's send began late past its tick and past the
    #: moment the socket took the frame before it)
    pace_late_max_s: float | None = None
    #: the longest the vendor kept a frame waiting by not reading the caller's audio (its
    #: socket full: the send before it blocked past this frame's tick). The vendor's, not
    #: the client's: it never makes a level client-bound, and the audio it delayed reaches
    #: its VAD late, which its TTFA then carries
    intake_blocked_max_s: float | None = None

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(asdict(self), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, doc: object) -> TurnRecord | None:
        """A record read back defensively (None: not a turn record)."""
        if not isinstance(doc, dict):
            return None
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            value = doc.get(f.name)
            if f.type in ("int", "float", "float | None", "int | None"):
                value = _number(value, "int" in f.type)
            elif f.type in ("str", "str | None"):
                value = clean(value, 300) if isinstance(value, str) else None
            if value is None and "None" not in f.type:
                if f.default is not None and f.name in ("audio_deltas",):
                    value = 0
                else:
                    return None
            kwargs[f.name] = value
        if kwargs["outcome"] not in TURN_OUTCOMES:
            return None
        return cls(**kwargs)


def _number(value: Any, integer: bool) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value):
        return None
    return int(value) if integer else float(value)


#: the voice run's records, beside run.json
TURNS_FILE = "turns.jsonl"
#: a line longer than this is not a turn record we wrote (ours are under 1 KB); reading
#: never holds more than this of one line, nor more than MAX_TURNS records
MAX_TURN_LINE = 64 * 1024
MAX_TURNS = 1_000_000


class TurnWriter:
    """turns.jsonl, each record put on disk (flushed) the moment its turn ends, so a run
    killed hard loses only the turns still in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._fh: IO[str] | None = path.open("w", encoding="utf-8")

    def append(self, record: TurnRecord) -> None:
        """One line, flushed."""
        self.count += 1
        if self._fh is not None:
            self._fh.write(record.to_json() + "\n")
            self._fh.flush()

    def close(self) -> None:
        """Close the file (fsync'd: the run's evidence)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None


def read_turns(path: Path) -> tuple[list[TurnRecord], int]:
    """The turn records in `path` and how many lines were not one (a last line cut
    mid-write, an edited line); bounded per line and in count."""
    records: list[TurnRecord] = []
    skipped = 0
    with path.open("rb") as fh:
        while len(records) < MAX_TURNS:
            line = fh.readline(MAX_TURN_LINE + 1)
            if not line:
                break
            if len(line) > MAX_TURN_LINE:
                skipped += 1
                while line and not line.endswith(b"\n"):  # the rest of the long line
                    line = fh.readline(MAX_TURN_LINE + 1)
                continue
            if not line.strip():
                continue
            try:
                record = TurnRecord.from_json(json.loads(line))
            except (ValueError, RecursionError):
                record = None
            if record is None:
                skipped += 1
            else:
                records.append(record)
    return records, skipped
