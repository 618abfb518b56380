"""Gemini Live calls against the reference endpoint's Gemini Live sessions (the same
server, VAD and truth log as the OpenAI Realtime ones), over real sockets: TTFA, barge-in,
a refusal and the API's error (a close with its reason), judged by the truth log; and the
reader's rules for what a server message means."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalkit.errors import UsageError
from evalkit.probe.realtime.gemini import GeminiLive, model_name, session_url
from evalkit.probe.realtime.session import CallPlan
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.audio import RATE_HZ, load_utterances
from tests.probe.realtime.helpers import plan_for, run_calls
from tests.probe.realtime.test_hostile_sessions import hostile

GEMINI = GeminiLive("evalkit-realtime")


def gemini_plan(base_url: str, **overrides: Any) -> CallPlan:
    """The helpers' fast call, in Gemini Live."""
    return replace(plan_for(base_url, **overrides), url=session_url(base_url, None),
                   dialect=overrides.pop("dialect", GEMINI))


def responses(truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted((t for t in truth if "response" in t), key=lambda t: t["decided_ns"])


@pytest.mark.parametrize("server_vad", [True, False], ids=["automatic", "activity-end"])
def test_ttfa_is_the_truth_logs_in_gemini_live(tmp_path: Path, server_vad: bool) -> None:
    """TTFA from the last voiced 16 kHz frame sent, within 2 ms of the truth log; under
    automatic detection the server's voiceActivity gives the VAD's window its own term."""
    with RealtimeReference({"ttfa_s": 0.15, "answer_s": 0.5, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl", seed=3) as ref:
        records = run_calls(gemini_plan(ref.base_url, server_vad=server_vad))
        truth = responses(ref.truth())
    assert [r.outcome for r in sorted(records, key=lambda r: r.turn)] == ["ok", "ok"]
    assert len(truth) == 2
    for rec, tr in zip(sorted(records, key=lambda r: r.turn), truth, strict=True):
        true_ttfa = (tr["first_audio_ns"] - tr["voiced_end_ns"]) / 1e9
        assert rec.ttfa_s is not None and abs(rec.ttfa_s - true_ttfa) < 0.002, (
            rec.ttfa_s, true_ttfa)
        assert rec.answer_audio_s == pytest.approx(0.5)  # 24 kHz answers read as such
        assert rec.text_ttft_s is not None and rec.response_id is None
        if server_vad:
            assert tr["silence_ms"] == 200
            assert rec.vad_window_s == pytest.approx(0.2, abs=0.021)
        else:
            assert rec.vad_window_s is None and tr["commit_ns"] is not None


def test_ttfa_holds_to_the_truth_at_4_concurrent_gemini_calls(tmp_path: Path) -> None:
    with RealtimeReference({"ttfa_s": 0.15, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl", seed=5) as ref:
        records = run_calls(gemini_plan(ref.base_url, turns=1, server_vad=False), calls=4,
                            level=4)
        truth = responses(ref.truth())
    assert sorted(r.outcome for r in records) == ["ok"] * 4 and len(truth) == 4
    # no response ids in Gemini Live: pair by the last voiced frame's send and arrival
    ours = sorted(r.ttfa_s or 0.0 for r in records)
    theirs = sorted((t["first_audio_ns"] - t["voiced_end_ns"]) / 1e9 for t in truth)
    assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) < 0.002, (ours, theirs)


@pytest.mark.parametrize("server_vad", [True, False], ids=["speech-over", "activity-start"])
def test_barge_in_time_is_the_truth_logs_in_gemini_live(tmp_path: Path,
                                                        server_vad: bool) -> None:
    """No cancel message in Gemini Live: the caller speaks over the answer (preceded by
    activityStart when it detects turns itself); the answer ends `interrupted`, and the
    turnComplete that closes it is not taken for the next turn's end."""
    with RealtimeReference({"ttfa_s": 0.1, "answer_s": 0.8, "audio_rate": 1.0,
                            "cancel_delay_s": 0.12}, truth_log=tmp_path / "t.jsonl") as ref:
        records = run_calls(gemini_plan(ref.base_url, server_vad=server_vad,
                                        barge_in_every=1, barge_after_s=0.2))
        truth = responses(ref.truth())
    first, second = sorted(records, key=lambda r: r.turn)
    assert (first.outcome, second.outcome) == ("ok", "ok")
    assert second.answer_audio_s == pytest.approx(0.8)  # its own answer, whole
    assert first.interrupted_by == "speech" and truth[0]["status"] == "cancelled"
    true_barge = (truth[0]["last_audio_ns"] - truth[0]["interrupt_ns"]) / 1e9
    assert first.barge_in_s is not None
    assert abs(first.barge_in_s - true_barge) < 0.010, (first.barge_in_s, true_barge)
    assert 0.0 < true_barge <= 0.12


def test_a_refused_gemini_session_is_rejected_in_the_vendors_words() -> None:
    with RealtimeReference({"max_sessions": 0}) as ref:
        (record,) = run_calls(gemini_plan(ref.base_url, turns=1))
    assert record.outcome == "rejected"
    assert "HTTP 429" in (record.error or "") and "session limit" in (record.error or "")


def test_the_apis_close_is_the_error_in_its_words(tmp_path: Path) -> None:
    """Gemini Live says no by closing the socket with a code and a reason (a model it
    does not serve: 1008): the call is refused in those words, cleaned."""
    with RealtimeReference({}, truth_log=tmp_path / "t.jsonl") as ref:
        (record,) = run_calls(gemini_plan(ref.base_url, turns=1,
                                          dialect=GeminiLive("no-such\x1b[31mmodel")))
        (closed,) = [t for t in ref.truth() if "closed" in t]
    assert record.outcome == "rejected" and closed["closed"] == 1008
    error = record.error or ""
    assert "code 1008" in error and "is not found for API version" in error
    assert "\x1b" not in error


def b64(data: bytes, urlsafe: bool = False) -> str:
    return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()


def audio_part(data: str, mime: str = "audio/pcm;rate=24000") -> dict[str, Any]:
    return {"serverContent": {"modelTurn": {"parts": [{"inlineData": {
        "mimeType": mime, "data": data}}]}}}


class TestReader:
    """What one server message means to the figures."""

    def read(self, *docs: Any) -> list[list[tuple[Any, ...]]]:
        reader = GEMINI.reader()
        return [[(e.kind, e.audio_bytes, e.status, e.audio_end_ms) for e in
                 reader(d if isinstance(d, str) else json.dumps(d))] for d in docs]

    def test_audio_counts_as_the_seconds_it_holds_in_either_alphabet_and_rate(self) -> None:
        pcm = bytes(range(256)) * 12  # '+' and '/' in standard base64
        (std,), (url,), (slow,) = self.read(audio_part(b64(pcm)), audio_part(b64(pcm, True)),
                                           audio_part(b64(pcm), "audio/pcm;rate=16000"))
        assert std == url == ("audio", len(pcm), None, None)
        assert slow[1] == len(pcm) * RATE_HZ // 16_000

    def test_the_turn_complete_after_an_interruption_ends_nothing_more(self) -> None:
        cut, closing, nxt, done = self.read(
            {"serverContent": {"interrupted": True}}, {"serverContent": {"turnComplete": True}},
            audio_part(b64(b"\0\0")), {"serverContent": {"turnComplete": True}})
        assert cut == [("done", 0, "cancelled", None)] and closing == [("other", 0, None, None)]
        assert nxt[0][0] == "audio" and done == [("done", 0, "completed", None)]

    def test_the_last_audio_and_the_turns_end_in_one_message_are_both_read(self) -> None:
        doc = audio_part(b64(b"\0\0" * 10))
        doc["serverContent"]["turnComplete"] = True
        assert [e[0] for e in self.read(doc)[0]] == ["audio", "done"]

    def test_vad_activity_errors_and_nonsense(self) -> None:
        stopped, error, junk, bad = self.read(
            {"voiceActivity": {"type": "ACTIVITY_END", "audioOffset": "1.250s"}},
            {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}},
            "not json", audio_part("%%%"))
        assert stopped == [("speech_stopped", 0, None, 1250)]
        assert error[0][0] == junk[0][0] == bad[0][0] == "error"
        (ready,) = self.read({"setupComplete": {}, "error": None})
        assert ready == [("ready", 0, None, None)]  # a null error is no error


def test_the_url_and_setup_are_the_apis() -> None:
    assert session_url("https://generativelanguage.googleapis.com/v1beta", None) == (
        "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta."
        "GenerativeService.BidiGenerateContent")
    assert session_url("https://gw.example/gemini", "v1alpha").endswith(
        "gw.example/gemini/ws/google.ai.generativelanguage.v1alpha.GenerativeService."
        "BidiGenerateContent")
    assert '"silenceDurationMs":300' in GEMINI.setup(True, 300)
    assert '"model":"models/evalkit-realtime"' in GEMINI.setup(False, 300)
    assert '"disabled":true' in GEMINI.setup(False, 300)


def test_no_audio_goes_before_the_setup_is_confirmed() -> None:
    """A server slow to confirm its setup hears nothing but the setup until it does; one
    that never confirms it times the call out on the connect deadline."""
    seen: list[tuple[float, str]] = []

    async def slow(ws: Any) -> None:
        first = json.loads(await ws.recv())
        seen.append((time.monotonic(), next(iter(first))))
        with contextlib.suppress(TimeoutError):  # anything sent before the confirmation
            early = json.loads(await asyncio.wait_for(ws.recv(), 0.3))
            seen.append((0.0, "early " + next(iter(early))))
        confirmed = time.monotonic()
        await ws.send(json.dumps({"setupComplete": {}}))
        second = json.loads(await ws.recv())
        seen.append((time.monotonic() - confirmed, next(iter(second))))
        await ws.close(1011, "RESOURCE_EXHAUSTED: \x1b[2Jquota")

    with hostile(slow) as url:
        (record,) = run_calls(gemini_plan(url, turns=1, server_vad=False))
    assert [kind for _, kind in seen] == ["setup", "realtimeInput"]
    assert seen[1][0] >= 0  # the first input came after the confirmation
    assert record.outcome == "incomplete" and "code 1011" in (record.error or "")
    assert "\x1b" not in (record.error or "")

    async def mute(ws: Any) -> None:
        await ws.recv()
        await ws.wait_closed()

    with hostile(mute) as url:
        (record,) = run_calls(gemini_plan(url, turns=1, connect_timeout_s=0.5))
    assert record.outcome == "timeout" and "setup" in (record.error or "")


def test_a_go_away_is_named_beside_the_close_that_follows_it() -> None:
    async def leaving(ws: Any) -> None:
        await ws.recv()
        await ws.send(json.dumps({"setupComplete": {}}))
        async for message in ws:  # until the caller's turn ends
            if "activityEnd" in json.loads(message).get("realtimeInput", {}):
                break
        await ws.send(json.dumps({"goAway": {"timeLeft": "0.5s"}}))
        await ws.close(1000, "")

    with hostile(leaving) as url:
        (record,) = run_calls(gemini_plan(url, turns=1, server_vad=False))
    assert record.outcome == "incomplete"
    assert "goAway, time left 0.5s" in (record.error or "")


def test_a_shipped_utterance_resampled_ends_where_the_reference_vad_hears_it_end(
        tmp_path: Path) -> None:
    """Real speech at 16 kHz (the shipped espeak-ng recording through our resampler),
    the server's VAD deciding with a 500 ms window: our last voiced frame is the one its
    VAD heard last, so TTFA agrees with the truth log and the window reads 0.5 s."""
    (utterance,) = [u for u in load_utterances(None) if u.name == "2-number"]
    with RealtimeReference({"ttfa_s": 0.1, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl") as ref:
        (rec,) = run_calls(gemini_plan(ref.base_url, turns=1, utterances=(utterance,),
                                       silence_ms=500))
        (truth,) = responses(ref.truth())
    assert rec.outcome == "ok" and rec.ttfa_s is not None
    true_ttfa = (truth["first_audio_ns"] - truth["voiced_end_ns"]) / 1e9
    assert abs(rec.ttfa_s - true_ttfa) < 0.005, (rec.ttfa_s, true_ttfa)
    assert rec.vad_window_s == pytest.approx(0.5, abs=0.021)


def test_vertex_ais_form_is_its_path_and_model_and_the_reference_answers_it() -> None:
    base = ("https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/"
            "us-central1/publishers/google")
    assert session_url(base, None) == (
        "wss://us-central1-aiplatform.googleapis.com/ws/google.cloud.aiplatform.v1."
        "LlmBidiService/BidiGenerateContent")
    assert session_url(base, "v1beta1").endswith("aiplatform.v1beta1.LlmBidiService/"
                                                 "BidiGenerateContent")
    assert model_name("gemini-live-2.5-flash", base) == (
        "projects/p1/locations/us-central1/publishers/google/models/gemini-live-2.5-flash")
    assert model_name("gemini-live-2.5-flash") == "models/gemini-live-2.5-flash"
    with pytest.raises(UsageError, match="names its version, project and region"):
        session_url("https://us-central1-aiplatform.googleapis.com/v1", None)
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.2, "audio_rate": 2.0}) as ref:
        vertex = ref.base_url + "/projects/p1/locations/l1"
        (record,) = run_calls(gemini_plan(vertex, turns=1, server_vad=False,
                                          dialect=GeminiLive(model_name("evalkit-realtime",
                                                                        vertex))))
    assert record.outcome == "ok"
