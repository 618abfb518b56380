"""A voice run's summary is trusted only where its turns agree (`rundir.voicecheck`): a
real voice run's summary.json re-derives from turns.jsonl and run.json to the same
document, key for key; an edited one (a verdict raised, a level's TTFA lowered, its
levels said within the SLO) is replaced by what the turns say, and the run is degraded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalkit.rundir.run import open_run
from evalkit.rundir.voicecheck import TURNS_FILE, check_voice_summary
from tests.probe.realtime.helpers import voice_probe


@pytest.fixture(scope="module")
def voice_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A voice run of two levels against the reference (a few seconds)."""
    return voice_probe(tmp_path_factory.mktemp("voice"),
                       {"ttfa_s": 0.1, "answer_s": 0.2, "audio_rate": 2.0}, "--levels", "1,2",
                       exits=(0, 2), relaxed=False)


def _copy(run: Path, to: Path) -> tuple[Path, dict, dict]:  # type: ignore[type-arg]
    shutil.copytree(run, to)
    return to, json.loads((to / "run.json").read_text()), \
        json.loads((to / "summary.json").read_text())


def test_a_run_as_written_re_derives_to_the_same_summary(voice_run: Path,
                                                         tmp_path: Path) -> None:
    folder, run, written = _copy(voice_run, tmp_path / "run")
    assert written["voice"]["levels"]
    raw: dict[str, bytes] = {}
    checked = check_voice_summary(written, run, folder / TURNS_FILE, raw, [])
    assert checked is not None and checked.rebuilt is None and checked.summary == written
    assert raw[TURNS_FILE] == (folder / TURNS_FILE).read_bytes()  # attached to the report
    # and so through open_run, as report and verify read it
    opened = open_run(folder)
    assert opened.rebuilt is None and opened.summary.voice is not None


@pytest.mark.parametrize("edit", ["verdict", "ttfa", "slo", "limits", "client"])
def test_an_edited_summary_is_replaced_by_what_the_turns_say(voice_run: Path, tmp_path: Path,
                                                             edit: str) -> None:
    folder, run, written = _copy(voice_run, tmp_path / "run")
    forged = json.loads(json.dumps(written))
    if edit == "verdict":
        forged["voice"]["max_calls_within_slo"] = 512
    elif edit == "ttfa":
        forged["voice"]["levels"][-1]["ttfa_s"]["p90"] = 0.001
    elif edit == "slo":  # every level said to be within the voice SLO
        for level in forged["voice"]["levels"]:
            level["slo"] = "within"
    elif edit == "limits":  # the SLO the levels were held to loosened, in the summary
        forged["voice"]["slo"]["ttfa_p90_s"] = 10.0
    else:  # a level said to be client-bound: not judged, so no verdict against the vendor
        forged["voice"]["levels"][-1]["client"]["client_bound"] = True
    notes: list[str] = []
    checked = check_voice_summary(forged, run, folder / TURNS_FILE, {}, notes)
    assert checked is not None and checked.rebuilt is not None
    assert "turns.jsonl" in checked.rebuilt and notes[0] == checked.rebuilt
    voice = checked.summary["voice"]
    assert voice["max_calls_within_slo"] == written["voice"]["max_calls_within_slo"]
    assert voice["levels"] == written["voice"]["levels"]
    # never better than degraded, the reason first, on the run and on its voice section
    assert checked.summary["validity"]["status"] in ("degraded", "invalid")
    assert checked.summary["validity"]["reasons"][0] == checked.rebuilt
    assert voice["validity"]["status"] in ("degraded", "invalid")


def test_a_missing_summary_is_re_derived_from_the_turns(voice_run: Path,
                                                         tmp_path: Path) -> None:
    """A voice run killed before its write-up: open_run derives its summary from the
    turns (it has no request record, and refused such a run before)."""
    folder, _, written = _copy(voice_run, tmp_path / "run")
    (folder / "summary.json").unlink()
    opened = open_run(folder)
    assert opened.rebuilt is not None and "missing" in opened.rebuilt
    voice = opened.summary.voice
    assert voice is not None and voice.to_json()["levels"] == written["voice"]["levels"]
