"""`evalkit probe --api openai-realtime --dry-run`: the voice plan printed, and every bad
`--audio DIR` refused before a socket opens, exit 2, naming the file and what is wrong
(a folder is a file list from a stranger: a FIFO named .wav must not hold the read)."""

from __future__ import annotations

import os
import wave
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.voice.audio import MAX_UTTERANCES, RATE_HZ
from tests.probe.realtime.helpers import tone


def wav(path: Path, pcm: bytes, rate: int = RATE_HZ, width: int = 2, channels: int = 1
        ) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def dry(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["probe", "--api", "openai-realtime", "--base-url",
                                      "http://127.0.0.1:9/v1", "--model", "m", "--out",
                                      "unused", "--dry-run", *args])
    return result.exit_code, result.output


def test_the_plan_is_printed_and_the_shipped_audio_said_public() -> None:
    code, out = dry("--levels", "1,4")
    assert code == 0, out
    assert "voice: levels 1, 4 concurrent calls" in out
    assert "the 3 utterances shipped with evalkit (public)" in out
    assert "warning: the caller's audio is the utterances shipped with evalkit" in out
    assert "dry run: nothing was sent" in out


def test_the_levels_are_planned_from_the_claims_as_the_text_ramps_are() -> None:
    """A questionnaire's claimed concurrency sets the levels and its floor (the same plan
    the text ramp prints); its workload is a text run's, not read here."""
    sample = Path(__file__).parents[2] / "questionnaires" / "forthright.yaml"
    code, out = dry("--questionnaire", str(sample), "--max-concurrency", "8")
    assert code == 0, out
    assert "voice: levels 1, 2, 4, 8 concurrent calls" in out
    assert "plan: ramp levels 1, 2, 4, 8" in out and "Q4 claims 4 streams: level 4" in out
    assert "workload" not in out


def test_the_buyers_recordings_are_planned_and_not_said_public(tmp_path: Path) -> None:
    wav(tmp_path / "a.wav", tone("a").pcm)
    wav(tmp_path / "b.wav", tone("b").pcm)
    code, out = dry("--audio", str(tmp_path))
    assert code == 0, out
    assert "2 recording(s)" in out and "warning" not in out


def _long(folder: Path) -> Path:
    return wav(folder / "long.wav", tone("l", voiced_s=31.0).pcm)


def _rate(folder: Path) -> Path:
    return wav(folder / "rate.wav", tone("r").pcm, rate=16_000)


def _stereo(folder: Path) -> Path:
    return wav(folder / "stereo.wav", tone("s").pcm, channels=2)


def _silent(folder: Path) -> Path:
    return wav(folder / "silent.wav", bytes(9600))


def _not_wav(folder: Path) -> Path:
    path = folder / "text.wav"
    path.write_text("not audio")
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.wav"
    os.mkfifo(path)
    return path


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("make", "said"), [
    (_long, "longer than 30 s"), (_rate, "16000 Hz"), (_stereo, "2 channel(s)"),
    (_silent, "holds only silence"), (_not_wav, "not a readable WAV file"),
    (_fifo, "not a regular file")], ids=["long", "rate", "stereo", "silent", "not-wav",
                                         "fifo"])
def test_a_bad_recording_is_refused_by_name(tmp_path: Path, make: object, said: str) -> None:
    wav(tmp_path / "0-good.wav", tone("g").pcm)
    bad = make(tmp_path)  # type: ignore[operator]
    code, out = dry("--audio", str(tmp_path))
    assert code == 2, out
    assert str(bad) in out and said in out, out


def test_a_folder_with_too_many_or_no_recordings_is_refused(tmp_path: Path) -> None:
    code, out = dry("--audio", str(tmp_path))
    assert code == 2 and "no .wav files" in out, out
    pcm = tone("t").pcm
    for k in range(MAX_UTTERANCES + 1):
        wav(tmp_path / f"{k:03}.wav", pcm)
    code, out = dry("--audio", str(tmp_path))
    assert code == 2 and f"more than {MAX_UTTERANCES} .wav files" in out, out
    code, out = dry("--audio", str(tmp_path / "000.wav"))
    assert code == 2 and "is a file" in out, out


def test_voice_options_belong_to_a_voice_run_and_text_options_to_a_text_one(
        tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["probe", "--base-url", "http://127.0.0.1:9/v1",
                                      "--model", "m", "--out", "x", "--dry-run",
                                      "--audio", str(tmp_path)])
    assert result.exit_code == 2 and "for --api openai-realtime" in result.output
    code, out = dry("--rate", "5")
    assert code == 2 and "--rate: not for --api openai-realtime" in out, out
    code, out = dry("--call-turns", "0")
    assert code == 2 and "at least one turn" in out, out
