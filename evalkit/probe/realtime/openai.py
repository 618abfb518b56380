"""The OpenAI Realtime protocol (and Azure OpenAI's form of it): the URL, what the client
sends, and what one server event means to the figures.

The GA event names (`response.output_audio.delta`) and the beta ones Azure's preview
deployments still send (`response.audio.delta`) read the same. Vendor payloads are
untrusted: every field is read defensively, and an unexpected shape is a protocol error
of that turn, never a crash.

`OpenAIRealtime` is this protocol as the call's `protocol.Dialect`; Gemini Live is
`gemini.GeminiLive`.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from evalkit.probe.realtime.protocol import Event, Reader
from evalkit.sanitize import clean
from evalkit.voice.audio import RATE_HZ, Utterance
from evalkit.voice.wire import WireUtterance, wire_utterance

#: server event types, GA and beta, by what they mean here
_AUDIO = frozenset({"response.output_audio.delta", "response.audio.delta"})
_TRANSCRIPT = frozenset({"response.output_audio_transcript.delta",
                         "response.audio_transcript.delta",
                         "response.output_text.delta", "response.text.delta"})
_KNOWN = frozenset({"session.created", "session.updated", "response.created",
                    "response.done", "error", "input_audio_buffer.speech_started",
                    "input_audio_buffer.speech_stopped", "input_audio_buffer.committed"})


def session_url(base_url: str, model: str, api_version: str | None) -> str:
    """The WebSocket URL: OpenAI's `…/v1/realtime?model=M`; with an api-version, Azure
    OpenAI's `…/openai/realtime?api-version=V&deployment=M`."""
    parts = urlsplit(base_url.rstrip("/"))
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
    if api_version:
        path = parts.path if parts.path.endswith("/openai") else parts.path + "/openai"
        query = f"api-version={quote(api_version)}&deployment={quote(model)}"
    else:
        path, query = parts.path, f"model={quote(model)}"
    return urlunsplit((scheme, parts.netloc, path + "/realtime", query, ""))


def session_update(server_vad: bool, silence_ms: int) -> dict[str, Any]:
    """The session's settings: PCM at 24 kHz both ways, audio out, and the turn detection
    asked for (server VAD with its silence window, or none: the client commits)."""
    detection: dict[str, Any] | None = (
        {"type": "server_vad", "silence_duration_ms": silence_ms,
         "create_response": True, "interrupt_response": True} if server_vad else None)
    pcm = {"type": "audio/pcm", "rate": RATE_HZ}
    return {"type": "session.update", "session": {
        "type": "realtime", "output_modalities": ["audio"],
        "audio": {"input": {"format": pcm, "turn_detection": detection},
                  "output": {"format": pcm}}}}


def append(pcm: bytes) -> str:
    """input_audio_buffer.append of one frame, serialised (sent 50 times a second)."""
    return ('{"type":"input_audio_buffer.append","audio":"'
            + base64.b64encode(pcm).decode("ascii") + '"}')


COMMIT = '{"type":"input_audio_buffer.commit"}'
CREATE = '{"type":"response.create"}'
CANCEL = '{"type":"response.cancel"}'


@dataclass(frozen=True)
class OpenAIRealtime:
    """The OpenAI (and Azure OpenAI) Realtime protocol as a call's dialect."""

    name: str = "openai-realtime"
    rate_hz: int = RATE_HZ
    cancel: str | None = CANCEL
    awaits_setup: bool = False

    def setup(self, server_vad: bool, silence_ms: int) -> str:
        """session.update, serialised."""
        return json.dumps(session_update(server_vad, silence_ms), separators=(",", ":"))

    def audio(self, pcm: bytes) -> str:
        """input_audio_buffer.append."""
        return append(pcm)

    def turn_start(self) -> tuple[str, ...]:
        """Nothing: the buffer takes audio whenever it comes."""
        return ()

    def turn_end(self) -> tuple[str, ...]:
        """Commit the buffer and ask for the answer at once."""
        return COMMIT, CREATE

    def reader(self) -> Reader:
        """Each message is one event; nothing carries over."""
        return lambda text: [read_event(text)]

    def wire(self, utterance: Utterance, frame_ms: int) -> WireUtterance:
        """The utterance as it is (24 kHz)."""
        return wire_utterance(utterance.pcm, frame_ms)


OPENAI = OpenAIRealtime()


def read_event(text: str) -> Event:
    """One server message as an Event; a malformed one is an `error` event."""
    try:
        doc = json.loads(text)
    except ValueError:
        return Event("error", error="a server message that is not JSON")
    if not isinstance(doc, dict):
        return Event("error", error="a server message that is not a JSON object")
    kind = doc.get("type")
    if not isinstance(kind, str):
        return Event("other")
    rid = _response_id(doc)
    if kind in _AUDIO:
        delta = doc.get("delta")
        if not isinstance(delta, str):
            return Event("error", rid, error=f"{clean(kind, 60)} without audio")
        try:
            size = len(binascii.a2b_base64(delta, strict_mode=True))
        except (binascii.Error, ValueError):
            return Event("error", rid, error=f"{clean(kind, 60)} whose audio is not base64")
        return Event("audio", rid, audio_bytes=size)
    if kind in _TRANSCRIPT:
        delta = doc.get("delta")
        return Event("text", rid, text=delta if isinstance(delta, str) else "")
    if kind not in _KNOWN:
        return Event("other", rid)
    return _control(kind, doc, rid)


def _control(kind: str, doc: dict[str, Any], rid: str | None) -> Event:
    if kind == "input_audio_buffer.speech_stopped":
        end = doc.get("audio_end_ms")
        return Event("speech_stopped", audio_end_ms=end if isinstance(end, int)
                     and not isinstance(end, bool) and 0 <= end < 10**9 else None)
    if kind == "input_audio_buffer.speech_started":
        return Event("speech_started")
    if kind == "input_audio_buffer.committed":
        return Event("committed")
    if kind == "response.created":
        return Event("created", rid)
    if kind == "response.done":
        response = doc.get("response")
        status = response.get("status") if isinstance(response, dict) else None
        status = clean(status, 30) if isinstance(status, str) else None
        error = None
        if status in ("failed", "incomplete") and isinstance(response, dict):
            details = response.get("status_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            error = (f"the response {'failed' if status == 'failed' else 'ended incomplete'}"
                     f": " + (clean(reason, 60) if isinstance(reason, str) and status ==
                              "incomplete" else _words(details)))
        return Event("done", rid, status=status, error=error)
    if kind == "error":
        return Event("error", rid, error=_words(doc.get("error")))
    return Event("session")


def _response_id(doc: dict[str, Any]) -> str | None:
    rid = doc.get("response_id")
    if rid is None and isinstance(doc.get("response"), dict):
        rid = doc["response"].get("id")
    return clean(rid, 80) if isinstance(rid, str) else None


def _words(detail: Any) -> str:
    """A vendor's error object as one clean line: its message, type and code."""
    if not isinstance(detail, dict):
        return clean(str(detail), 200) if detail is not None else "no detail given"
    inner = detail.get("error")
    error: dict[str, Any] = inner if isinstance(inner, dict) else detail
    parts = [error.get(k) for k in ("message", "type", "code")]
    said = " / ".join(clean(str(p), 200) for p in parts if p not in (None, ""))
    return said or "no detail given"
