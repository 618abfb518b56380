"""Our reading of the Realtime protocol checked against someone else's: the `openai`
package's own realtime client (its WebSocket connection, its event models) talks to the
reference endpoint, and connects to the same URL, with the same credential header, as
our prober does, for OpenAI and for Azure OpenAI. Not checked only against ourselves."""

from __future__ import annotations

import base64
import typing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from websockets.exceptions import InvalidStatus

from evalkit.cli import cli
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.audio import frame_bytes
from tests.probe.realtime.helpers import tone
from tests.probe.realtime.test_voice_cli import SECRET, Recorder, voice_args
from tests.probe.realtime.test_voice_run import write_tones

openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")


def event_models() -> dict[str, Any]:
    """openai's model of each server event, by its type."""
    from openai.types.realtime import RealtimeServerEvent

    union = typing.get_args(RealtimeServerEvent)[0]
    return {kind: cls for cls in typing.get_args(union) if "type" in cls.model_fields
            for kind in typing.get_args(cls.model_fields["type"].annotation)}


@pytest.mark.parametrize("server_vad", [True, False], ids=["server-vad", "client-commit"])
def test_openais_client_hears_the_reference_as_it_hears_openai(tmp_path: Path,
                                                                server_vad: bool) -> None:
    """Every server event the reference sends validates against openai's own model of
    that event (the required event_id, item_id, indexes: a field we never read is still
    the protocol), and the answer's audio and id reach that client as the truth log says."""
    models = event_models()
    utterance = tone("a", voiced_s=0.4, tail_s=0.3)
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl") as ref:
        client = openai.OpenAI(base_url=ref.base_url, api_key="unused")
        seen: list[str] = []
        audio = 0
        with client.realtime.connect(model="evalkit-realtime") as conn:
            detection = ({"type": "server_vad", "silence_duration_ms": 200} if server_vad
                         else None)
            conn.session.update(session={
                "type": "realtime", "output_modalities": ["audio"],
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000},
                                    "turn_detection": detection},
                          "output": {"format": {"type": "audio/pcm", "rate": 24000}}}})
            step = frame_bytes(20)
            for i in range(0, len(utterance.pcm), step):
                conn.input_audio_buffer.append(
                    audio=base64.b64encode(utterance.pcm[i:i + step]).decode())
            if not server_vad:
                conn.input_audio_buffer.commit()
                conn.response.create()
            while True:
                event = conn.recv()
                models[event.type].model_validate(event.to_dict())  # raises if not theirs
                seen.append(event.type)
                if event.type == "response.output_audio.delta":
                    audio += len(base64.b64decode(event.delta))
                if event.type == "response.done":
                    done = event
                    break
        (truth,) = [t for t in ref.truth() if "response" in t]
    assert done.response.id == truth["response"] and done.response.status == "completed"
    assert audio == sum(size for _, size in truth["audio"]) == 0.3 * 24000 * 2
    assert "response.output_audio_transcript.delta" in seen
    assert ("input_audio_buffer.speech_stopped" in seen) is server_vad
    assert ("input_audio_buffer.committed" in seen) is not server_vad


@pytest.mark.parametrize("azure", [False, True], ids=["openai", "azure"])
def test_we_connect_where_openais_client_connects_with_its_credential(
        tmp_path: Path, azure: bool) -> None:
    """The same URL (path and query) and the same credential header, from openai's
    client and from `evalkit probe --api openai-realtime`, at a server that records ours
    (and refuses it). OpenAI's client is recorded the same way; its Azure client always
    speaks TLS, so the URL and headers it would connect with are asked of it."""
    recorder = Recorder()
    try:
        theirs: tuple[str, dict[str, str]]
        if azure:
            client = openai.AzureOpenAI(azure_endpoint=recorder.base_url,
                                        api_version="2025-04-01-preview", api_key=SECRET)
            configure = getattr(client, "_configure_realtime", None)
            if configure is None:
                pytest.skip("this openai version builds Azure's realtime URL elsewhere")
            url, headers = configure("evalkit-realtime", {})
            theirs = (f"GET {url.raw_path.decode()} HTTP/1.1",
                      {k.lower(): v for k, v in headers.items()})
        else:
            client = openai.OpenAI(base_url=recorder.base_url + "/v1", api_key=SECRET)
            with pytest.raises(InvalidStatus), client.realtime.connect(
                    model="evalkit-realtime"):
                pass  # refused 401, as the recorder refuses every request
            theirs = _said(recorder.requests.pop())
        more = ["--api-version", "2025-04-01-preview"] if azure else []
        result = CliRunner().invoke(cli, voice_args(
            recorder.base_url + ("" if azure else "/v1"), tmp_path / "run",
            write_tones(tmp_path / "a", count=1), "--levels", "1", "--api-key-env",
            "THE_KEY", *more), env={"THE_KEY": SECRET})
        assert result.exit_code == 2, result.output
    finally:
        recorder.close()
    ours = _said(recorder.requests.pop())
    assert ours[0] == theirs[0]  # the request line: GET path?query HTTP/1.1
    header = "api-key" if azure else "authorization"
    assert ours[1][header] == theirs[1][header]
    assert ("authorization" in ours[1]) is not azure and ("api-key" in ours[1]) is azure


def _said(request: str) -> tuple[str, dict[str, str]]:
    line, *headers = request.split("\r\n")
    return line, {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip()
                  for h in headers if ":" in h}
