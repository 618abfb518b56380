"""Our reading of Gemini Live checked against Google's: the google-genai SDK's own live
client (its URL, setup, realtimeInput messages and server-message models) talks to the
reference endpoint over TLS (the SDK speaks only wss://), and connects at the path our
prober connects at. Not checked only against ourselves: the SDK writes the setup's inner
fields in snake_case and its audio in URL-safe base64, both of which the API takes."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from evalkit.probe.realtime.gemini import session_url
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.wire import wire_utterance
from tests.certificates import throwaway_certificate
from tests.probe.realtime.helpers import run_calls, tone
from tests.probe.realtime.test_gemini_live import gemini_plan

genai = pytest.importorskip("google.genai")


async def sdk_call(base: str, context: ssl.SSLContext, server_vad: bool) -> dict[str, Any]:
    """One turn through the SDK: the caller's audio at 16 kHz, then every message of the
    answer as the SDK's models read them."""
    from google.genai import types

    client = genai.Client(api_key="evalkit-test-key", http_options=types.HttpOptions(
        base_url=base, api_version="v1beta", async_client_args={"ssl": context}))
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        output_audio_transcription=types.AudioTranscriptionConfig(),
        realtime_input_config=types.RealtimeInputConfig(
            automatic_activity_detection=types.AutomaticActivityDetection(
                disabled=not server_vad, silence_duration_ms=200)))
    heard: dict[str, Any] = {"audio": 0, "text": "", "activity": [], "complete": False}
    async with client.aio.live.connect(model="evalkit-realtime", config=config) as session:
        if not server_vad:
            await session.send_realtime_input(activity_start=types.ActivityStart())
        for frame in wire_utterance(tone("a", tail_s=0.4).pcm, 20, 16_000).frames:
            await session.send_realtime_input(audio=types.Blob(
                data=frame, mime_type="audio/pcm;rate=16000"))
        if not server_vad:
            await session.send_realtime_input(activity_end=types.ActivityEnd())
        async for message in session.receive():
            if message.voice_activity is not None:
                heard["activity"].append(message.voice_activity.voice_activity_type)
            content = message.server_content
            if content is None:
                continue
            for part in (content.model_turn.parts or []) if content.model_turn else []:
                assert part.inline_data is not None and part.inline_data.data is not None
                assert part.inline_data.mime_type == "audio/pcm;rate=24000"
                heard["audio"] += len(part.inline_data.data)
            if content.output_transcription is not None:
                heard["text"] += content.output_transcription.text or ""
            heard["complete"] = bool(content.turn_complete)
    return heard


@pytest.mark.parametrize("server_vad", [True, False], ids=["automatic", "activity-end"])
def test_googles_client_hears_the_reference_as_it_hears_gemini(tmp_path: Path,
                                                               server_vad: bool) -> None:
    cert, key = throwaway_certificate(tmp_path, "DNS:localhost,IP:127.0.0.1")
    context = ssl.create_default_context(cafile=str(cert))
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl", tls=(cert, key)) as ref:
        base = ref.base_url.removesuffix("/v1")
        heard = asyncio.run(asyncio.wait_for(sdk_call(base, context, server_vad), 10))
        (truth,) = [t for t in ref.truth(sessions=1) if "response" in t]
        (session,) = [t for t in ref.truth(sessions=1) if "appends_ns" in t]
    assert heard["complete"] and heard["text"] == "Sure, "
    assert heard["audio"] == sum(size for _, size in truth["audio"]) == 0.3 * 24000 * 2
    # the SDK's snake_case silence_duration_ms was read, its URL-safe audio heard
    assert truth["silence_ms"] == (200 if server_vad else None)
    assert truth["voiced_end_ns"] is not None and len(session["appends_ns"]) > 0
    if server_vad:
        assert [str(a.value) if hasattr(a, "value") else a for a in heard["activity"]] == [
            "ACTIVITY_START", "ACTIVITY_END"]
    # the SDK connects at the path our prober connects at
    assert session["path"] == urlsplit(session_url(base + "/v1beta", None)).path


def test_our_prober_connects_at_the_sdks_path(tmp_path: Path) -> None:
    """Our call over plain ws:// reaches the same method path as the SDK's."""
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.2, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl") as ref:
        base = ref.base_url.removesuffix("/v1") + "/v1beta"
        (record,) = run_calls(gemini_plan(base, turns=1, server_vad=False))
        (session,) = [t for t in ref.truth(sessions=1) if "appends_ns" in t]
    assert record.outcome == "ok"
    assert session["path"] == ("/ws/google.ai.generativelanguage.v1beta.GenerativeService."
                               "BidiGenerateContent")
