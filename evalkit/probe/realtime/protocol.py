"""The seam between a call (`session`) and a realtime protocol's messages: one `Dialect`
object per protocol (`openai.OpenAIRealtime`, `gemini.GeminiLive`), and the `Event` every
server message is read into.

A call asks its dialect for five things: the session's setup, one audio frame, the
messages that start and end a turn the client detects itself, the message that cancels
an answer (None: the caller barges in by speaking), and a reader that turns each server
message into the events `turnstate` understands. Nothing else about a protocol reaches
the session, so the timing (stamps where the bytes arrive and leave, deadlines, caps) is
the same code for every protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from evalkit.voice.audio import Utterance
from evalkit.voice.wire import WireUtterance


class Event(NamedTuple):
    """One server event reduced to what the figures need (a named tuple: one per event)."""

    #: audio | text | speech_started | speech_stopped | committed | created | done |
    #: error | session | ready | goaway | other
    kind: str
    response_id: str | None = None
    #: answer audio, in bytes of the 24 kHz wire format (`evalkit.voice.audio`)
    audio_bytes: int = 0
    text: str = ""
    #: speech_stopped's audio position (ms of input audio the server had when it decided)
    audio_end_ms: int | None = None
    #: done's status (completed | cancelled | failed | incomplete)
    status: str | None = None
    #: an error event's (or a failed response's) words, cleaned; goaway's time left
    error: str | None = None


#: a call's reader: one server message in, its events out (a message may carry several:
#: Gemini Live's last audio and its turn's end come together)
Reader = Callable[[str], list[Event]]


class Dialect(Protocol):
    """What a call needs of a realtime protocol."""

    @property
    def name(self) -> str:
        """The `--api` name."""
        ...

    @property
    def rate_hz(self) -> int:
        """The sample rate of the audio sent (answers are read at 24 kHz)."""
        ...

    @property
    def cancel(self) -> str | None:
        """The message that cancels the answer in flight (None: the caller barges in by
        speaking over it, the turn start first when the client detects turns)."""
        ...

    @property
    def awaits_setup(self) -> bool:
        """The session takes audio only after the server confirmed its setup (`ready`)."""
        ...

    def setup(self, server_vad: bool, silence_ms: int) -> str:
        """The session's settings, serialised: the first message sent."""
        ...

    def audio(self, pcm: bytes) -> str:
        """One frame of input audio at `rate_hz`, serialised."""
        ...

    def turn_start(self) -> tuple[str, ...]:
        """What the client sends before a turn's first frame when it detects turns."""
        ...

    def turn_end(self) -> tuple[str, ...]:
        """What the client sends after a turn's last voiced frame when it detects turns."""
        ...

    def reader(self) -> Reader:
        """A reader for one call's server messages (it may keep state across them)."""
        ...

    def wire(self, utterance: Utterance, frame_ms: int) -> WireUtterance:
        """The utterance as this protocol sends it."""
        ...
