"""Voice runs in the catalog: listed by their calls (never in a text column), and the
regression gate's baseline of the same kind, so a voice run is not held against a text
run of the same vendor and model (nothing would compare: exit 2 for nothing).

One real voice run against the reference realtime endpoint (a few seconds), registered
by the probe itself; the earlier voice quarter is a copy of it, dated back. The text runs
are copies of tests/data/report_run given the voice run's vendor and model."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.analysis.summary import Summary
from evalkit.catalog.entries import run_entry
from evalkit.catalog.pick import baseline
from evalkit.catalog.store import Catalog
from evalkit.catalog.voice import VoiceHeadline
from evalkit.cli import cli
from tests.probe.realtime.helpers import voice_probe

TEXT_RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"
MODEL = "evalkit-realtime"  # the voice run's, given to the text runs too


@pytest.fixture(scope="module")
def voice_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A voice ramp of 1 and 3 calls of vendor Acme, and the catalog its probe wrote."""
    folder = tmp_path_factory.mktemp("voice")
    catalog = folder / "probe.sqlite"
    out = voice_probe(folder, {"ttfa_s": 0.15, "ttfa_jitter_s": 0.03, "answer_s": 0.3,
                               "audio_rate": 2.0}, "--levels", "1,3", "--vendor", "Acme",
                      "--catalog", str(catalog), seed=2)
    yield out, catalog


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _copy(src: Path, dest: Path, started: str, **run: Any) -> Path:
    out = Path(shutil.copytree(src, dest))

    def dated(doc: dict[str, Any]) -> None:
        doc.update(started_at=started, vendor="Acme", **run)
        doc["target"]["model"] = MODEL
    _edit(out / "run.json", dated)
    return out


@pytest.fixture
def quarters(voice_run: tuple[Path, Path], tmp_path: Path) -> dict[str, Path]:
    """Of vendor Acme and one model, oldest first: a voice run (v0), a text run (t0), the
    real voice run (v1, December 2026), a text run (t1, 2027), registered in that order
    in the test's catalog."""
    v1 = Path(shutil.copytree(voice_run[0], tmp_path / "v1"))
    runs = {"v0": _copy(v1, tmp_path / "v0", "2026-02-01T07:00:00Z"),
            "t0": _copy(TEXT_RUN, tmp_path / "t0", "2026-03-01T07:00:00Z"),
            "v1": v1,
            "t1": _copy(TEXT_RUN, tmp_path / "t1", "2027-01-01T07:00:00Z")}
    for run in runs.values():
        Catalog(tmp_path / "c.sqlite").register(run_entry(run, "probe"))
    return runs


def _headline(run: Path) -> VoiceHeadline:
    """The headline of the run's own summary.json, as the catalog should hold it."""
    voice = Summary.from_json(json.loads((run / "summary.json").read_text())).voice
    assert voice is not None and voice.measured
    return VoiceHeadline.of(voice)


def _gate(run: Path, tmp_path: Path) -> Any:
    return CliRunner().invoke(cli, ["compare", str(run), "--fail-on", "regression",
                                    "--out", str(tmp_path / f"gate-{run.name}.pdf"),
                                    "--catalog", str(tmp_path / "c.sqlite")])


def test_the_gate_holds_a_voice_run_against_voice_and_a_text_run_against_text(
        quarters: dict[str, Path], tmp_path: Path) -> None:
    catalog = tmp_path / "c.sqlite"
    for run, want in (("v1", "v0"), ("t1", "t0")):
        found = baseline(quarters[run], "Acme", MODEL, catalog)
        assert found.row is not None and Path(found.row.entry.path) == quarters[want], run
    assert baseline(quarters["v1"], "Acme", MODEL, catalog).sought.kind == "voice"


@pytest.mark.slow
def test_the_voice_gate_judges_its_calls(quarters: dict[str, Path], tmp_path: Path) -> None:
    """End to end: the voice run's calls compare with the earlier voice run's (against the
    text run, its last evaluation, every figure was left out: exit 2, nothing judged)."""
    r = _gate(quarters["v1"], tmp_path)
    assert r.exit_code in (0, 1), r.output
    assert "against the last valid voice evaluation of Acme: catalog entry 1" in r.stdout
    assert json.loads((tmp_path / "gate-v1.json").read_text())["trends"]


def test_no_earlier_run_of_its_kind_is_exit_2_naming_the_kind(
        quarters: dict[str, Path], tmp_path: Path) -> None:
    """The first voice run has nothing before it, the first text run only a voice run:
    neither passes for want of a baseline, and the gate says which kind it looked for."""
    r = _gate(quarters["v0"], tmp_path)
    assert r.exit_code == 2
    assert ("no earlier valid voice evaluation (realtime calls, client turn detection, 2 "
            "turns per call) of 'Acme'") in r.output
    r = _gate(quarters["t0"], tmp_path)
    assert r.exit_code == 2
    assert "no earlier valid text evaluation (text streams) of 'Acme'" in r.output
    assert not list(tmp_path.glob("gate-*.pdf"))


def test_a_voice_baseline_has_the_same_turn_detection(quarters: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """Calls compare only with the same turn detection: a later voice run with the
    vendor's VAD is passed over for the earlier one with the client's."""
    vad = _copy(quarters["v1"], tmp_path / "vad", "2026-06-01T07:00:00Z")
    _edit(vad / "summary.json", lambda doc: doc["voice"].update(detection="server_vad"))
    Catalog(tmp_path / "c.sqlite").register(run_entry(vad, "probe"))
    found = baseline(quarters["v1"], "Acme", MODEL, tmp_path / "c.sqlite")
    assert found.row is not None and Path(found.row.entry.path) == quarters["v0"]


def test_runs_lists_a_voice_runs_calls_and_a_text_run_as_before(
        quarters: dict[str, Path], tmp_path: Path) -> None:
    catalog = str(tmp_path / "c.sqlite")
    r = CliRunner().invoke(cli, ["runs", "--catalog", catalog])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    text_row = next(i for i, line in enumerate(lines) if line.startswith("    2  "))
    assert lines[text_row] == (
        "    2  probe   2026-03-01T07:00:00+00:00  Acme              evalkit-realtime      "
        f"valid     present  {quarters['t0']}")
    assert lines[text_row + 1].startswith("    3  ")  # nothing under a text row
    voice_row = lines.index(next(line for line in lines if line.startswith("    3  ")))
    calls = lines[voice_row + 1]
    assert calls.startswith("       voice calls (client turn detection, 2 turns per call): ")
    assert "most calls within the voice SLO: " in calls
    # the lowest judged level's (level 1, unless the loaded host made our client its
    # bottleneck there: then the next)
    assert f"judged TTFA p50: {_headline(quarters['v1']).ttfa_words()};" in calls
    assert "first degraded: " in calls and "TTFT" not in calls
    shown = CliRunner().invoke(cli, ["runs", "show", "3", "--catalog", catalog]).stdout
    assert "realtime voice calls: openai-realtime, client turn detection" in shown
    assert "most concurrent calls within the voice SLO: " in shown
    assert "baseline_ttft" not in shown and "max_sustained_concurrency" not in shown
    text = CliRunner().invoke(cli, ["runs", "show", "2", "--catalog", catalog]).stdout
    figures = text[text.index("figures:"):text.index("source:")].splitlines()
    assert figures == ["figures:", "  requests: 246", "  baseline_ttft_p50_s: 0.1975115",
                       "  baseline_stream_tokens_per_s_p50: 50.40270327947185",
                       "  max_sustained_concurrency: 8"]
    listed = json.loads(CliRunner().invoke(cli, ["runs", "--json", "--catalog",
                                                 catalog]).stdout)
    assert [e["run_kind"] for e in listed] == ["voice", "text", "voice", "text"]
    assert listed[2]["figures"]["voice"] == _headline(quarters["v1"]).to_json()


def test_the_probe_registers_its_voice_run_by_its_calls(voice_run: tuple[Path, Path]
                                                        ) -> None:
    (row,) = Catalog(voice_run[1]).rows()
    assert row.entry.figures["run_kind"] == "voice"
    voice = row.entry.figures["voice"]
    assert (voice["api"], voice["detection"], voice["turns_per_call"]) == (
        "openai-realtime", "client", 2)
    assert voice == _headline(voice_run[0]).to_json()
    assert "baseline_ttft_p50_s" not in row.entry.figures


def test_an_entry_registered_before_the_kind_was_recorded(quarters: dict[str, Path],
                                                          tmp_path: Path) -> None:
    """An older catalog's voice entry carries the text figures (all null) and no kind: it
    lists as before, and the gate still reads its summary to know it is not text."""
    catalog = tmp_path / "c.sqlite"
    with sqlite3.connect(catalog) as con:
        con.execute("UPDATE runs SET figures = ? WHERE id = 3", (json.dumps(
            {"requests": 0, "baseline_ttft_p50_s": None,
             "baseline_stream_tokens_per_s_p50": None,
             "max_sustained_concurrency": None}),))
    lines = CliRunner().invoke(cli, ["runs", "--catalog", str(catalog)]).stdout.splitlines()
    old = next(i for i, line in enumerate(lines) if line.startswith("    3  "))
    assert lines[old + 1].startswith("    4  ")  # listed as it was: no line of calls
    found = baseline(quarters["t1"], "Acme", MODEL, catalog)
    assert found.row is not None and Path(found.row.entry.path) == quarters["t0"]


def test_an_invalid_voice_runs_calls_are_not_listed_as_figures(quarters: dict[str, Path],
                                                                tmp_path: Path) -> None:
    """Calls judged invalid are not the vendor's figures: the listing withholds them, and
    the gate passes the run over as a baseline."""
    bad = _copy(quarters["v1"], tmp_path / "bad", "2026-06-01T07:00:00Z")
    _edit(bad / "summary.json", lambda doc: doc["voice"]["validity"].update(status="invalid"))
    catalog = tmp_path / "c.sqlite"
    Catalog(catalog).register(run_entry(bad, "probe"))
    lines = CliRunner().invoke(cli, ["runs", "--catalog", str(catalog)]).stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("    5  "))
    assert lines[row + 1].endswith("figures withheld, the calls are invalid")
    assert "within the voice SLO" not in lines[row + 1]
    found = baseline(quarters["v1"], "Acme", MODEL, catalog)
    assert found.row is not None and Path(found.row.entry.path) == quarters["v0"]
