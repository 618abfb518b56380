"""`evalkit probe --api gemini-live` end to end over real sockets: a run against the
reference endpoint's Gemini Live sessions judged by its truth log and re-derived whole
from its turns (as a report checks it), and the key: read from GEMINI_API_KEY (or
GOOGLE_API_KEY alone), sent in `x-goog-api-key` at the API's own path, written nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.rundir.voicecheck import derive_voice_summary
from evalkit.voice.records import TURNS_FILE, read_turns
from tests.probe.realtime.test_voice_cli import (
    SECRET,
    Recorder,
    everything_written,
    relaxed_profile,
    voice_args,
)
from tests.probe.realtime.test_voice_run import write_tones

PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"


def gemini_args(base_url: str, out: Path, audio: Path, *more: str) -> list[str]:
    args = voice_args(base_url, out, audio, *more)
    args[args.index("openai-realtime")] = "gemini-live"
    return args


def test_the_cli_runs_gemini_live_calls_whose_summary_is_the_truth_logs(
        tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RealtimeReference({"ttfa_s": 0.15, "answer_s": 0.3, "audio_rate": 2.0},
                           truth_log=tmp_path / "t.jsonl", seed=2) as ref:
        result = CliRunner().invoke(cli, gemini_args(
            ref.base_url.removesuffix("/v1") + "/v1beta", out,
            write_tones(tmp_path / "audio"), "--levels", "1", "--profile",
            str(relaxed_profile(tmp_path))), env={"GOOGLE_API_KEY": SECRET,
                                                  "GEMINI_API_KEY": "", "OPENAI_API_KEY": ""})
        truth = sorted((t["first_audio_ns"] - t["voiced_end_ns"]) / 1e9
                       for t in ref.truth() if "response" in t)
    # a loaded machine may find our client too slow to judge the level (its frames late):
    # then the run is rightly invalid, and its figures still the truth log's
    assert result.exit_code == 0 or (result.exit_code == 2 and "client_bound" in
                                     result.output), result.output
    records, _ = read_turns(out / TURNS_FILE)
    ours = sorted(r.ttfa_s or 0.0 for r in records if r.outcome == "ok")
    assert len(ours) == len(truth) == len(records) >= 3  # the gate's turn and a level's
    assert max(abs(a - b) for a, b in zip(ours, truth, strict=True)) < 0.005
    meta = json.loads((out / "run.json").read_text())
    assert meta["api_key_env"] == "GOOGLE_API_KEY" and meta["target"]["api_key_set"]
    assert meta["target"]["api"] == "gemini-live" and meta["target"]["input_rate_hz"] == 16000
    assert meta["target"]["session_url"].endswith(PATH)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["voice"]["api"] == "gemini-live"
    # a report re-derives the summary from the turns and run.json: the same, Gemini's
    assert derive_voice_summary(meta, out / TURNS_FILE)[0] == summary
    assert SECRET not in everything_written(out) and SECRET not in result.output


@pytest.mark.parametrize("named", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_the_gemini_key_goes_in_its_header_and_nowhere_else(tmp_path: Path,
                                                            named: str) -> None:
    """Refused (401) by a server that echoes the key: exit 2 in its words with the key
    blanked; the key went in x-goog-api-key, not in the URL, and no OpenAI key went to
    Google."""
    recorder = Recorder()
    try:
        out = tmp_path / "run"
        env = {named: SECRET, "OPENAI_API_KEY": "sk-openai-not-for-google"}
        if named == "GOOGLE_API_KEY":
            env["GEMINI_API_KEY"] = ""
        result = CliRunner().invoke(cli, gemini_args(
            recorder.base_url, out, write_tones(tmp_path / "a"), "--levels", "1"), env=env)
    finally:
        recorder.close()
    assert result.exit_code == 2, result.output
    assert "HTTP 401" in result.output and "***" in result.output
    (request,) = recorder.requests
    line, *headers = request.split("\r\n")
    names = {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip() for h in headers if ":" in h}
    assert line == f"GET {PATH} HTTP/1.1"
    assert names["x-goog-api-key"] == SECRET and "authorization" not in names
    assert SECRET not in result.output and SECRET not in everything_written(out)
    assert "sk-openai-not-for-google" not in request


VERTEX_PATH = "/ws/google.cloud.aiplatform.v1.LlmBidiService/BidiGenerateContent"
TOKEN = "ya29.test-VERTEX-token-5d1c"


class FakeCredentials:
    """Application default credentials as google-auth gives them, already fresh: the
    one thing that cannot run here (no credentials, no token server)."""

    token = TOKEN
    valid = True


def test_vertex_takes_its_url_model_and_adc_token_and_writes_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Vertex base URL: the LlmBidiService path, the token from application default
    credentials as a bearer header (no API key from the environment rides along), and
    neither the token nor the key written anywhere."""
    google_auth = pytest.importorskip("google.auth")
    monkeypatch.setattr(google_auth, "default", lambda scopes=None: (FakeCredentials(), "p1"))
    recorder = Recorder()
    try:
        out = tmp_path / "run"
        base = recorder.base_url + "/v1/projects/p1/locations/us-central1/publishers/google"
        result = CliRunner().invoke(cli, gemini_args(
            base, out, write_tones(tmp_path / "a"), "--levels", "1"),
            env={"GEMINI_API_KEY": SECRET})
    finally:
        recorder.close()
    assert result.exit_code == 2, result.output
    (request,) = recorder.requests
    line, *headers = request.split("\r\n")
    names = {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip() for h in headers if ":" in h}
    assert line == f"GET {VERTEX_PATH} HTTP/1.1"
    assert names["authorization"] == f"Bearer {TOKEN}" and "x-goog-api-key" not in names
    assert "HTTP 401" in result.output and "***" in result.output  # the echo, blanked
    written = everything_written(out)
    assert TOKEN not in written and TOKEN not in result.output and SECRET not in written
    meta = json.loads((out / "run.json").read_text())
    assert meta["target"]["credential"] == "Google application default credentials"
    assert meta["target"]["session_url"].endswith(VERTEX_PATH)


class ExpiringCredentials:
    """Fresh for the first two looks (the run's check and the gate's call), then expired,
    and the token server refuses to refresh them."""

    token = TOKEN

    def __init__(self) -> None:
        self.looks = 0

    @property
    def valid(self) -> bool:
        self.looks += 1
        return self.looks <= 2

    def refresh(self, request: object) -> None:
        from google.auth.exceptions import RefreshError

        raise RefreshError("invalid_grant: token expired")


def test_a_vertex_token_that_cannot_be_refreshed_stops_the_run_as_ours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mid-run, our credentials expire and cannot be refreshed: the run stops, failed,
    saying so; no call is counted as refused by the vendor."""
    google_auth = pytest.importorskip("google.auth")
    monkeypatch.setattr(google_auth, "default",
                        lambda scopes=None: (ExpiringCredentials(), "p1"))
    out = tmp_path / "run"
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.2, "audio_rate": 2.0}) as ref:
        result = CliRunner().invoke(cli, gemini_args(
            ref.base_url + "/projects/p1/locations/l1", out, write_tones(tmp_path / "a"),
            "--levels", "1"))
    assert result.exit_code == 2, result.output
    assert "our credentials, not a refusal" in result.output
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "failed" and "invalid_grant" in meta["error"]
    records, _ = read_turns(out / TURNS_FILE)
    assert [(r.level, r.outcome) for r in records] == [(0, "ok")]  # the gate's, and no more
