"""A voice run's summary is trusted only where its turns agree (`rundir.voicecheck`): a
real voice run's summary.json re-derives from turns.jsonl and run.json to the same
document, key for key; an edited one (a verdict raised, a level's TTFA lowered, its
levels said within the SLO) is replaced by what the turns say, and the run is degraded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.rundir.voicecheck import check_voice_summary, is_voice_run
from tests.probe.realtime.test_voice_cli import SECRET, voice_args
from tests.probe.realtime.test_voice_run import write_tones


@pytest.fixture(scope="module")
def voice_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A voice run of two levels against the reference (a few seconds)."""
    folder = tmp_path_factory.mktemp("voice")
    out = folder / "run"
    with RealtimeReference({"ttfa_s": 0.1, "answer_s": 0.2, "audio_rate": 2.0}) as ref:
        result = CliRunner().invoke(cli, voice_args(ref.base_url, out,
                                                    write_tones(folder / "audio"),
                                                    "--levels", "1,2"),
                                    env={"OPENAI_API_KEY": SECRET})
    assert result.exit_code in (0, 2), result.output
    return out


def _copy(run: Path, to: Path) -> tuple[Path, dict, dict]:  # type: ignore[type-arg]
    shutil.copytree(run, to)
    return to, json.loads((to / "run.json").read_text()), \
        json.loads((to / "summary.json").read_text())


def test_a_run_as_written_re_derives_to_the_same_summary(voice_run: Path,
                                                         tmp_path: Path) -> None:
    folder, run, written = _copy(voice_run, tmp_path / "run")
    assert is_voice_run(run, folder) and written["voice"]["levels"]
    checked = check_voice_summary(written, run, folder)
    assert checked.rebuilt is None and checked.summary == written


@pytest.mark.parametrize("edit", ["verdict", "ttfa", "slo"])
def test_an_edited_summary_is_replaced_by_what_the_turns_say(voice_run: Path, tmp_path: Path,
                                                             edit: str) -> None:
    folder, run, written = _copy(voice_run, tmp_path / "run")
    forged = json.loads(json.dumps(written))
    if edit == "verdict":
        forged["voice"]["max_calls_within_slo"] = 512
    elif edit == "ttfa":
        forged["voice"]["levels"][-1]["ttfa_s"]["p90"] = 0.001
    else:  # every level said to be within the voice SLO
        for level in forged["voice"]["levels"]:
            level["slo"] = "within"
    checked = check_voice_summary(forged, run, folder)
    assert checked.rebuilt is not None and "turns.jsonl" in checked.rebuilt
    voice = checked.summary["voice"]
    assert voice["max_calls_within_slo"] == written["voice"]["max_calls_within_slo"]
    assert voice["levels"] == written["voice"]["levels"]
    # never better than degraded, the reason first, on the run and on its voice section
    assert checked.summary["validity"]["status"] in ("degraded", "invalid")
    assert checked.summary["validity"]["reasons"][0] == checked.rebuilt
    assert voice["validity"]["status"] in ("degraded", "invalid")


def test_a_missing_summary_is_re_derived_from_the_turns(voice_run: Path,
                                                         tmp_path: Path) -> None:
    folder, run, written = _copy(voice_run, tmp_path / "run")
    (folder / "summary.json").unlink()
    checked = check_voice_summary(None, run, folder)
    assert checked.rebuilt is not None and "missing" in checked.rebuilt
    assert checked.summary["voice"]["levels"] == written["voice"]["levels"]
