"""The realtime reference endpoint's Gemini Live sessions: the same server, the same VAD,
answers and truth log as the OpenAI Realtime sessions (`server.Session`), spoken in
Google's `BidiGenerateContent` messages on the path the real API takes
(`/ws/google.ai.generativelanguage.VERSION.GenerativeService.BidiGenerateContent`).

A session waits for `setup` (a model other than `models/MODEL` is refused as the API
refuses one: the socket closed with 1008 and the reason), answers `setupComplete`, then
takes `realtimeInput`: `audio` blobs (PCM at the rate their MIME type states, 16 kHz as
the API documents), and, with automatic activity detection disabled, `activityStart`
(over an answer: the caller barges in) and `activityEnd` (the turn's end: the answer's
decided_ns). Under automatic detection its VAD is the OpenAI sessions' (`silenceDurationMs`
its window) and says so in `voiceActivity` messages. An answer is `serverContent`:
`outputTranscription` text, `modelTurn` parts of `inlineData` audio at 24 kHz, then
`generationComplete` and `turnComplete`; a cut answer is `interrupted`, then
`turnComplete`. A message that is not JSON, or anything before `setup`, closes the
session with 1007, as the API does. Fields are read in camelCase or proto JSON's
snake_case (google-genai's client sends some of each) and base64 in either alphabet.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from typing import Any

from evalkit.reference.realtime.server import MAX_APPENDS, Session

#: the model a Gemini Live session must name (Vertex AI's form: any project and region)
MODEL = "models/evalkit-realtime"
_VERTEX_MODEL = re.compile(r"^projects/[^/]+/locations/[^/]+/publishers/google/models/"
                           r"evalkit-realtime$")
_RATE = re.compile(r"rate=(\d{4,6})")


class GeminiSession(Session):
    """One Gemini Live session on the reference server."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.rate_hz = 16_000
        self.set_up = False

    async def send(self, doc: dict[str, Any]) -> int:
        """Send one message as it is (no event ids in this protocol)."""
        at = time.perf_counter_ns()
        await self.conn.send(json.dumps(doc, separators=(",", ":")))
        return at

    async def greet(self) -> None:
        """Nothing: the client speaks first (its setup)."""

    async def refuse(self, code: int, reason: str) -> None:
        """Close the session in the API's way of saying no."""
        self.ep.truth.write({"session": self.number, "closed": code, "reason": reason,
                             "closed_ns": time.perf_counter_ns()})
        await self.conn.close(code, reason)

    async def on_message(self, at: int, message: str | bytes) -> None:
        try:
            doc = json.loads(message)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            await self.refuse(1007, "Invalid JSON payload received.")
            return
        setup = _get(doc, "setup")
        if not self.set_up:
            if not isinstance(setup, dict):
                await self.refuse(1007, "The first message must be setup.")
                return
            await self.on_setup(setup)
            return
        given = _get(doc, "realtimeInput", "realtime_input")
        if isinstance(given, dict):
            await self.on_input(at, given)

    async def on_setup(self, setup: dict[str, Any]) -> None:
        model = _get(setup, "model")
        if model != MODEL and not (isinstance(model, str) and _VERTEX_MODEL.match(model)):
            name = model if isinstance(model, str) else "(none)"
            await self.refuse(1008, f"{name[:80]} is not found for API version v1beta, or "
                                    "is not supported for bidiGenerateContent.")
            return
        config = _get(setup, "realtimeInputConfig", "realtime_input_config") or {}
        detect = _get(config, "automaticActivityDetection", "automatic_activity_detection")
        detect = detect if isinstance(detect, dict) else {}
        self.server_vad = _get(detect, "disabled") is not True
        silence = _get(detect, "silenceDurationMs", "silence_duration_ms")
        if isinstance(silence, int) and not isinstance(silence, bool) and silence > 0:
            self.silence_ms = silence
        self.set_up = True
        await self.send({"setupComplete": {}})

    async def on_input(self, at: int, given: dict[str, Any]) -> None:
        audio = _get(given, "audio")
        if isinstance(audio, dict):
            data, mime = _get(audio, "data"), _get(audio, "mimeType", "mime_type")
            try:
                raw = str(data).replace("-", "+").replace("_", "/")
                pcm = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
            except (binascii.Error, ValueError):
                await self.refuse(1007, "Invalid value at 'realtime_input.audio.data'.")
                return
            found = _RATE.search(mime) if isinstance(mime, str) else None
            self.rate_hz = int(found.group(1)) if found else 16_000
            if len(self.appends_ns) < MAX_APPENDS:
                self.appends_ns.append(at)
            await self.hear(at, pcm)
        elif _get(given, "activityStart", "activity_start") is not None:
            self.in_speech, self.peak = True, -math.inf
            if self.response is not None and not self.response.task.done():
                self.response.interrupt(at, "speech")
        elif _get(given, "activityEnd", "activity_end") is not None:
            self.commit_ns = at
            self.in_speech, self.peak = False, -math.inf
            self.start(at, None)

    # the answer and the VAD, in this protocol's words
    async def say_speech_started(self) -> None:
        await self.send({"voiceActivity": {"type": "ACTIVITY_START",
                                           "audioOffset": f"{self.pos_ms / 1000:.3f}s"}})

    async def say_speech_stopped(self, end_ms: int) -> int:
        return await self.send({"voiceActivity": {"type": "ACTIVITY_END",
                                                  "audioOffset": f"{end_ms / 1000:.3f}s"}})

    async def say_created(self, rid: str) -> None:
        """Nothing: an answer begins with its content."""

    async def say_text(self, rid: str, text: str) -> int:
        return await self.send({"serverContent": {"outputTranscription": {"text": text}}})

    async def say_audio(self, rid: str, b64: str) -> int:
        return await self.send({"serverContent": {"modelTurn": {"role": "model", "parts": [
            {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": b64}}]}}})

    async def say_done(self, rid: str, status: str) -> None:
        first = {"interrupted": True} if status == "cancelled" else {"generationComplete": True}
        await self.send({"serverContent": first})
        await self.send({"serverContent": {"turnComplete": True}})


def _get(doc: Any, *names: str) -> Any:
    """The first of `names` present in a JSON object (None: not an object, or none)."""
    if isinstance(doc, dict):
        for name in names:
            if name in doc:
                return doc[name]
    return None
