"""The caller's voice as data: WAV files read or refused, the 1x player's arithmetic, a
server event read defensively, a turn's record read back. No socket."""

from __future__ import annotations

import base64
import json
import wave
from pathlib import Path

import pytest

from evalkit.errors import UsageError
from evalkit.probe.realtime import openai
from evalkit.probe.realtime.session import CallPlan
from evalkit.probe.realtime.turnstate import TurnState
from evalkit.voice.audio import RATE_HZ, Utterance, load_utterances, read_wav
from evalkit.voice.player import play
from evalkit.voice.records import TurnRecord
from tests.probe.realtime.helpers import tone


def write_wav(path: Path, pcm: bytes, rate: int = RATE_HZ, channels: int = 1) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def test_the_last_voiced_frame_is_where_the_tone_ends() -> None:
    utt = tone("t", lead_s=0.1, voiced_s=0.4, tail_s=0.3)
    assert (utt.first_voiced(20), utt.last_voiced(20)) == (5, 24)
    assert (utt.first_voiced(40), utt.last_voiced(40)) == (2, 12)


def test_the_buyers_recordings_are_private_and_the_shipped_ones_are_not(
        tmp_path: Path) -> None:
    write_wav(tmp_path / "b.wav", tone("b").pcm)
    write_wav(tmp_path / "a.wav", tone("a").pcm)
    mine = load_utterances(tmp_path)
    assert [(u.name, u.private) for u in mine] == [("a", True), ("b", True)]
    shipped = load_utterances(None)
    assert len(shipped) == 3 and not any(u.private for u in shipped)


@pytest.mark.parametrize(("rate", "channels", "said"), [
    (16_000, 1, "sox IN.wav -r 24000 -b 16 -c 1 OUT.wav"),
    (24_000, 2, "2 channel(s)"),
])
def test_another_format_is_refused_with_the_line_that_converts_it(
        tmp_path: Path, rate: int, channels: int, said: str) -> None:
    path = write_wav(tmp_path / "x.wav", tone("x").pcm * channels, rate, channels)
    with pytest.raises(UsageError, match=said.replace("(", r"\(").replace(")", r"\)")):
        read_wav(path, private=True)


def test_silence_a_long_file_and_a_folder_of_many_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="only silence"):
        read_wav(write_wav(tmp_path / "s.wav", bytes(9600)), private=True)
    with pytest.raises(UsageError, match="longer than 30 s"):
        read_wav(write_wav(tmp_path / "l.wav", bytes(2 * RATE_HZ * 31)), private=True)
    (tmp_path / "bad.wav").write_bytes(b"RIFF\x00\x00garbage")
    with pytest.raises(UsageError, match="not a readable WAV"):
        read_wav(tmp_path / "bad.wav", private=True)
    many = tmp_path / "many"
    many.mkdir()
    for k in range(65):
        (many / f"{k:02}.wav").write_bytes(b"")
    with pytest.raises(UsageError, match="more than 64"):
        load_utterances(many)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"no \.wav files"):
        load_utterances(tmp_path / "empty")
    with pytest.raises(UsageError, match="not a folder"):
        load_utterances(tmp_path / "s.wav")


def test_the_player_runs_dry_only_when_audio_came_late() -> None:
    # 0.1 s deltas every 0.05 s: always ahead
    ahead = play([0.0, 0.05, 0.10, 0.15], [0.1] * 4)
    assert (ahead.underruns, ahead.underrun_s) == (0, 0.0)
    assert ahead.ends_s == pytest.approx(0.4)
    assert ahead.ahead_ratio == pytest.approx(2.0)
    # a stall: three deltas play out by 0.3, the next comes at 0.8 -> dry 0.5 s
    stall = play([0.0, 0.05, 0.10, 0.80], [0.1, 0.1, 0.1, 0.1])
    assert stall.underruns == 1 and stall.underrun_s == pytest.approx(0.5)
    # a gap under one 10 ms frame is jitter, not an underrun
    assert play([0.0, 0.105], [0.1, 0.1]).underruns == 0
    assert play([], []) == (0, 0.0, None, 0.0)


@pytest.mark.parametrize(("text", "kind", "error"), [
    ("not json", "error", "not JSON"),
    ("[1, 2]", "error", "not a JSON object"),
    ('{"type": "response.output_audio.delta", "delta": 7}', "error", "without audio"),
    ('{"type": "response.output_audio.delta", "delta": "@@@"}', "error", "not base64"),
    ('{"type": "error", "error": {"message": "no\\u001b[31m", "code": 5}}', "error",
     "no [31m / 5"),  # the escape byte cleaned away
    ('{"type": "response.done", "response": {"status": "failed", "status_details":'
     ' {"error": {"message": "overloaded", "type": "server_error"}}}}', "done",
     "the response failed: overloaded / server_error"),
    ('{"type": "input_audio_buffer.speech_stopped", "audio_end_ms": true}',
     "speech_stopped", None),
    ('{"type": "some.future.event"}', "other", None),
])
def test_a_server_event_is_read_defensively(text: str, kind: str, error: str | None) -> None:
    event = openai.read_event(text)
    assert event.kind == kind
    assert (event.error is None) == (error is None)
    assert error is None or (event.error is not None and error in event.error)
    assert event.audio_end_ms is None


def test_an_audio_delta_counts_its_decoded_bytes_and_beta_names_read_the_same() -> None:
    for name in ("response.output_audio.delta", "response.audio.delta"):
        event = openai.read_event(json.dumps({"type": name, "response_id": "r\x1b1",
                                              "delta": "AAAA"}))
        assert (event.kind, event.audio_bytes, event.response_id) == ("audio", 3, "r 1")


def test_the_session_url_is_openais_or_azures() -> None:
    assert openai.session_url("https://api.openai.com/v1", "gpt-realtime", None) == \
        "wss://api.openai.com/v1/realtime?model=gpt-realtime"
    assert openai.session_url("https://r.openai.azure.com", "dep", "2025-04-01-preview") \
        == "wss://r.openai.azure.com/openai/realtime?api-version=2025-04-01-preview" \
        "&deployment=dep"


def test_a_turn_record_reads_back_and_a_forged_one_does_not() -> None:
    record = TurnRecord(run_id="r", level=2, call=1, turn=0, utterance="a",
                        detection="client", outcome="ok", t0_s=1.5, ttfa_s=0.25,
                        error="x")
    doc = json.loads(record.to_json())
    assert TurnRecord.from_json(doc) == record
    assert TurnRecord.from_json({**doc, "outcome": "great"}) is None
    assert TurnRecord.from_json({**doc, "level": "2"}) is None
    assert TurnRecord.from_json({**doc, "ttfa_s": "fast"}) == \
        TurnRecord(**{**doc, "ttfa_s": None})
    forged = TurnRecord.from_json({**doc, "error": "\x1b[2Jbad"})
    assert forged is not None and forged.error is not None and "\x1b" not in forged.error


@pytest.mark.parametrize("change", [{"frame_ms": 10}, {"frame_ms": 100}, {"turns": 0},
                                    {"utterances": ()}, {"answer_timeout_s": 0.0},
                                    {"silence_ms": 0}])
def test_a_plan_that_is_no_phone_call_is_refused(change: dict[str, object]) -> None:
    base: dict[str, object] = {"url": "ws://127.0.0.1:1/v1/realtime", "headers": (),
                               "utterances": (Utterance("a", bytes(960)),)}
    with pytest.raises(UsageError):
        CallPlan(**{**base, **change})  # type: ignore[arg-type]


@pytest.mark.parametrize(("status", "audio", "interrupted", "outcome", "said"), [
    ("completed", 4800, False, "ok", None),
    ("completed", 0, False, "error", "completed with no audio"),
    ("cancelled", 4800, True, "ok", None),
    ("cancelled", 4800, False, "incomplete", "the vendor cancelled"),
    ("incomplete", 4800, False, "incomplete", "ended incomplete: max_output_tokens"),
    ("failed", 0, False, "error", "the response failed: overloaded"),
    (None, 4800, False, "error", "status none given"),
])
def test_an_answer_counts_only_if_the_caller_heard_it_whole(
        status: str | None, audio: int, interrupted: bool, outcome: str,
        said: str | None) -> None:
    turn = TurnState(0, "a", 0.5)
    if audio:
        turn.on_event(1, openai.read_event(json.dumps({
            "type": "response.output_audio.delta", "response_id": "r",
            "delta": base64.b64encode(bytes(audio)).decode()})))
    if interrupted:
        turn.interrupted_by = "cancel"
    response: dict[str, object] = {"id": "r", "status": status}
    if status == "incomplete":
        response["status_details"] = {"type": "incomplete", "reason": "max_output_tokens"}
    if status == "failed":
        response["status_details"] = {"error": {"message": "overloaded"}}
    turn.on_event(2, openai.read_event(json.dumps({"type": "response.done",
                                                   "response": response})))
    assert turn.outcome == outcome
    assert (turn.error is None) == (said is None)
    assert said is None or (turn.error is not None and said in turn.error)


def test_an_answer_over_the_callers_own_speech_is_no_quick_answer() -> None:
    """The vendor's VAD took a pause for the end of the turn and answered while the
    caller still spoke: a TTFA of -0.3 s would read as the fastest answer of all."""
    turn = TurnState(0, "a", 0.5)
    turn.on_event(1_000_000_000, openai.read_event(json.dumps({
        "type": "response.output_audio.delta", "response_id": "r",
        "delta": base64.b64encode(bytes(4800)).decode()})))
    turn.voiced_end_ns = 1_300_000_000
    turn.on_event(1_400_000_000, openai.read_event(json.dumps({
        "type": "response.done", "response": {"id": "r", "status": "completed"}})))
    record = turn.record("r", 1, 0, "server_vad", 0)
    assert (record.outcome, record.ttfa_s) == ("error", None)
    assert record.error is not None and "0.300 s before the caller's last voiced frame" \
        in record.error
