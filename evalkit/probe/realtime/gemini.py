"""Google's Gemini Live API (`BidiGenerateContent` over WebSocket) as a call's dialect.

Read from the Live API's WebSockets reference (ai.google.dev/api/live) and the
google-genai SDK's live client (`google/genai/live.py`, `types.py`), as stored by our
search on 2026-12-05. The shape, mapped onto a call:

  - URL: `wss://HOST/ws/google.ai.generativelanguage.VERSION.GenerativeService.BidiGenerateContent`
    (VERSION `v1beta` unless --api-version or the base URL's last segment says another);
    the key in the `x-goog-api-key` header, as the SDK sends it (the `?key=` form the
    reference shows would put it in a URL: never done, and blanked wherever a URL is
    written). Vertex AI's form, for a Vertex base URL as `--api gemini` takes it
    (`https://REGION-aiplatform.googleapis.com/v1/projects/P/locations/L`):
    `wss://HOST/ws/google.cloud.aiplatform.VERSION.LlmBidiService/BidiGenerateContent`,
    the model as `projects/P/locations/L/publishers/google/models/M`, and an OAuth bearer
    token from application default credentials (`evalkit.probe.client.cloudauth`),
    refreshed when due before each call connects.
  - setup: the first message, `{"setup": {"model": "models/M", "generationConfig":
    {"responseModalities": ["AUDIO"]}, "realtimeInputConfig": {...},
    "outputAudioTranscription": {}}}`; audio goes only after the server's `setupComplete`
    (`awaits_setup`). Server VAD is `automaticActivityDetection` with its
    `silenceDurationMs`; client detection disables it and sends `activityStart` before a
    turn's first frame and `activityEnd` after its last voiced frame.
  - input: `{"realtimeInput": {"audio": {"data": B64, "mimeType": "audio/pcm;rate=16000"}}}`,
    one message a frame. **16 kHz**: the API's documented input format, so the shipped
    24 kHz utterances are resampled (`evalkit.voice.wire`).
  - answers: `serverContent.modelTurn.parts[].inlineData` audio (`audio/pcm;rate=24000`,
    24 kHz: bytes of another stated rate are counted as the seconds they hold), text
    parts and `outputTranscription.text` as the transcript, `turnComplete` the end,
    `interrupted` an answer cut by the caller's activity (the `turnComplete` that closes
    the cut generation after it belongs to the cut turn, not the next); `voiceActivity`
    `ACTIVITY_START`/`ACTIVITY_END` (with its `audioOffset`) where the server sends them
    are the VAD's speech_started/stopped; `goAway` (the server will close soon) is kept to
    explain the close that follows; `{"error": {...}}` is an error. The API's own errors
    come as the socket's close (code and reason): the session's cut, in those words.

What differs from OpenAI's (docs/probing.md, "Realtime voice sessions"): no response ids
(an answer belongs to the turn that spoke last), no cancel message (barge-in is speech,
or `activityStart`, over the answer), and no `speech_stopped` unless the server sends
`voiceActivity`: without it there is no VAD wait or window to report, and TTFA, from our
last voiced frame sent, is the same figure either way.

Every field is read defensively (camelCase as Google's server sends, snake_case as proto
JSON also allows); an unexpected shape is that turn's protocol error, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evalkit.errors import UsageError
from evalkit.probe.apis.gemini import is_vertex
from evalkit.probe.realtime.protocol import Event, Reader
from evalkit.sanitize import clean
from evalkit.voice.audio import RATE_HZ, Utterance
from evalkit.voice.wire import WireUtterance, wire_utterance

#: the `--api` name
GEMINI_LIVE_API = "gemini-live"
#: the input rate the API takes
INPUT_RATE_HZ = 16_000
DEFAULT_VERSION = "v1beta"
_VERSION = re.compile(r"^v\d+(?:alpha|beta)?\d*$")
_RATE = re.compile(r"rate=(\d{4,6})")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_METHOD = "google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent"
_VERTEX_METHOD = "google.cloud.aiplatform.{version}.LlmBidiService/BidiGenerateContent"
#: a Vertex base URL's path: /VERSION/projects/P/locations/L[/publishers/google]
_VERTEX_PATH = re.compile(r"^(.*?)/(v1[a-z0-9]*)/projects/([^/]+)/locations/([^/]+)"
                          r"(?:/publishers/google)?/?$")


def session_url(base_url: str, api_version: str | None) -> str:
    """The WebSocket URL for a base URL (`https://generativelanguage.googleapis.com`, with
    or without its `/v1beta`): the version from --api-version, else the base URL's last
    segment, else v1beta; the rest of its path kept (a gateway's prefix)."""
    parts = urlsplit(base_url.rstrip("/"))
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
    if is_vertex(base_url):
        prefix, version, _project, _location = vertex_path(base_url)
        version = api_version or version
        if not _VERSION.match(version):
            raise UsageError(f"--api-version {clean(version, 40)}: Vertex AI's versions are "
                             "v1, v1beta1")
        return urlunsplit((scheme, parts.netloc,
                           f"{prefix}/ws/{_VERTEX_METHOD.format(version=version)}", "", ""))
    path, _, last = parts.path.rpartition("/")
    if not _VERSION.match(last):
        path, last = parts.path, ""
    version = api_version or last or DEFAULT_VERSION
    if not _VERSION.match(version):
        raise UsageError(f"--api-version {clean(version, 40)}: the Gemini API's versions "
                         "are v1beta, v1alpha, v1")
    return urlunsplit((scheme, parts.netloc, f"{path}/ws/{_METHOD.format(version=version)}",
                       "", ""))


def vertex_path(base_url: str) -> tuple[str, str, str, str]:
    """(path prefix, version, project, location) of a Vertex base URL; a usage error
    naming the form when it is not one."""
    found = _VERTEX_PATH.match(urlsplit(base_url.rstrip("/")).path)
    if found is None:
        raise UsageError("a Vertex AI base URL names its version, project and region: "
                         "https://REGION-aiplatform.googleapis.com/v1/projects/PROJECT/"
                         "locations/REGION")
    prefix, version, project, location = found.groups()
    return prefix, version, project, location


def model_name(model: str, base_url: str = "") -> str:
    """The setup's model: `models/M` for the Gemini API (given with or without the
    prefix); Vertex AI's `projects/P/locations/L/publishers/google/models/M` for a Vertex
    base URL (a full resource name is kept as given)."""
    if model.startswith("projects/"):
        return model
    if base_url and is_vertex(base_url):
        _prefix, _version, project, location = vertex_path(base_url)
        return (f"projects/{project}/locations/{location}/publishers/google/models/"
                f"{model.removeprefix('models/')}")
    return model if model.startswith("models/") else f"models/{model}"


@dataclass(frozen=True)
class GeminiLive:
    """The Gemini Live protocol as a call's dialect, for one model (as the setup names
    it: `model_name`)."""

    model: str
    name: str = GEMINI_LIVE_API
    rate_hz: int = INPUT_RATE_HZ
    cancel: str | None = None
    awaits_setup: bool = True
    mime: str = field(default=f"audio/pcm;rate={INPUT_RATE_HZ}", repr=False)

    def setup(self, server_vad: bool, silence_ms: int) -> str:
        """The setup message: audio answers with their transcript, and the turn detection
        asked for (the server's, with its silence window, or none)."""
        detection: dict[str, Any] = ({"disabled": False, "silenceDurationMs": silence_ms}
                                     if server_vad else {"disabled": True})
        return _dumps({"setup": {
            "model": model_name(self.model),
            "generationConfig": {"responseModalities": ["AUDIO"]},
            "realtimeInputConfig": {"automaticActivityDetection": detection},
            "outputAudioTranscription": {}}})

    def audio(self, pcm: bytes) -> str:
        """One frame as realtimeInput audio (sent 50 times a second: built by hand)."""
        return ('{"realtimeInput":{"audio":{"data":"' + base64.b64encode(pcm).decode("ascii")
                + '","mimeType":"' + self.mime + '"}}}')

    def turn_start(self) -> tuple[str, ...]:
        """activityStart (client detection)."""
        return ('{"realtimeInput":{"activityStart":{}}}',)

    def turn_end(self) -> tuple[str, ...]:
        """activityEnd (client detection): the turn is over, answer it."""
        return ('{"realtimeInput":{"activityEnd":{}}}',)

    def reader(self) -> Reader:
        """A reader that remembers an interruption until its turn's end."""
        return _Reader()

    def wire(self, utterance: Utterance, frame_ms: int) -> WireUtterance:
        """The utterance at 16 kHz."""
        return wire_utterance(utterance.pcm, frame_ms, INPUT_RATE_HZ)


class _Reader:
    """One call's server messages as events."""

    def __init__(self) -> None:
        #: an answer was interrupted and its closing turnComplete has not come yet
        self.cut = False

    def __call__(self, text: str) -> list[Event]:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return [Event("error", error="a server message that is not JSON")]
        if not isinstance(doc, dict):
            return [Event("error", error="a server message that is not a JSON object")]
        events: list[Event] = []
        if _get(doc, "setupComplete", "setup_complete") is not None:
            events.append(Event("ready"))
        content = _get(doc, "serverContent", "server_content")
        if isinstance(content, dict):
            events += self._content(content)
        elif content is not None:
            events.append(Event("error", error="serverContent that is not an object"))
        activity = _get(doc, "voiceActivity", "voice_activity")
        if isinstance(activity, dict):
            events.append(_activity(activity))
        away = _get(doc, "goAway", "go_away")
        if away is not None:
            left = _get(away, "timeLeft", "time_left") if isinstance(away, dict) else None
            events.append(Event("goaway", error=clean(str(left), 40) if left else "unsaid"))
        if doc.get("error") is not None:
            events.append(Event("error", error=_words(doc["error"])))
        return events or [Event("other")]

    def _content(self, content: dict[str, Any]) -> list[Event]:
        events: list[Event] = []
        turn = _get(content, "modelTurn", "model_turn")
        parts = _get(turn, "parts") if isinstance(turn, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                events.append(_part(part))
        said = _get(content, "outputTranscription", "output_transcription")
        words = _get(said, "text") if isinstance(said, dict) else None
        if isinstance(words, str) and words:
            events.append(Event("text", text=words))
        if any(e.kind in ("audio", "text") for e in events):
            self.cut = False  # content of a new answer: the cut one has ended
        ended = _get(content, "turnComplete", "turn_complete") is True
        if _get(content, "interrupted") is True:
            self.cut = not ended  # its closing turnComplete is still to come
            events.append(Event("done", status="cancelled"))
        elif ended:
            if self.cut and not events:
                self.cut = False  # the interrupted generation's own end: its turn is done
            else:
                events.append(Event("done", status="completed"))
        return events


def _part(part: dict[str, Any]) -> Event:
    """One part of the model's turn: audio (its bytes as 24 kHz seconds), text, or other."""
    blob = _get(part, "inlineData", "inline_data")
    if isinstance(blob, dict):
        mime = _get(blob, "mimeType", "mime_type")
        mime = mime if isinstance(mime, str) else ""
        if not mime.startswith("audio/"):
            return Event("other")
        data = _get(blob, "data")
        if not isinstance(data, str):
            return Event("error", error="answer audio without data")
        try:
            raw = data.replace("-", "+").replace("_", "/")  # proto JSON takes either alphabet
            size = len(binascii.a2b_base64(raw + "=" * (-len(raw) % 4), strict_mode=True))
        except (binascii.Error, ValueError):
            return Event("error", error="answer audio that is not base64")
        found = _RATE.search(mime)
        rate = int(found.group(1)) if found else RATE_HZ
        if not 8_000 <= rate <= 48_000:
            return Event("error", error=f"answer audio at {clean(mime, 60)}")
        return Event("audio", audio_bytes=size * RATE_HZ // rate)
    text = _get(part, "text")
    if isinstance(text, str) and _get(part, "thought") is not True:
        return Event("text", text=text)
    return Event("other")


def _activity(activity: dict[str, Any]) -> Event:
    """voiceActivity: the server VAD's start or end of the caller's speech."""
    kind = _get(activity, "type", "voiceActivityType")
    if kind == "ACTIVITY_START":
        return Event("speech_started")
    if kind != "ACTIVITY_END":
        return Event("other")
    offset = _get(activity, "audioOffset", "audio_offset")
    found = _DURATION.match(offset) if isinstance(offset, str) else None
    end_ms = round(float(found.group(1)) * 1000) if found else None
    return Event("speech_stopped",
                 audio_end_ms=end_ms if end_ms is not None and end_ms < 10**9 else None)


def _get(doc: dict[str, Any], *names: str) -> Any:
    """The first of `names` present (camelCase, then proto JSON's snake_case)."""
    for name in names:
        if name in doc:
            return doc[name]
    return None


def _words(detail: Any) -> str:
    """A Google error object as one clean line: its status, message and code."""
    if not isinstance(detail, dict):
        return clean(str(detail), 200) if detail is not None else "no detail given"
    parts = [detail.get(k) for k in ("status", "message", "code")]
    said = " / ".join(clean(str(p), 200) for p in parts if p not in (None, ""))
    return said or "no detail given"


def _dumps(doc: object) -> str:
    return json.dumps(doc, separators=(",", ":"))
