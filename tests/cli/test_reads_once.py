"""Each command reads a run's summary.json once (issue 42): `Summary.from_json` is counted
while a command runs, and so is `RunMeta.from_json` (run.json). A stage that has the typed
reading hands it on instead of parsing the file again: the probe's write-up (and a panel
sample's) hands its `Summary` to the catalog, a voice check its reading to `open_run`, a
report the run it read to the demo's comparison, and a regression gate the run it
identified to the catalog's search. Where a count is more than one, the case says why.

The runs are the fixture under tests/data (report_run, an AIPerf export) and short runs
against the reference endpoints (in-process, a few requests): seconds in all."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.analysis.summary import Summary
from evalkit.catalog.entries import run_entry
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog
from evalkit.cli import cli
from evalkit.rundir.meta import RunMeta
from tests.rundir.test_otlp import Receiver

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / "tests" / "data" / "report_run"
AIPERF = ROOT / "tests" / "data" / "peers" / "aiperf-0.13.0-c2"
HEADLINE = ROOT / "questionnaires" / "headline.yaml"


@dataclass
class Reads:
    """What a command parsed: each document given to `Summary.from_json` and to
    `RunMeta.from_json`."""

    summaries: list[object]
    metas: list[object]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Count the typed readings from here on (the same parser, called through)."""
    seen = Reads([], [])
    for cls, into in ((Summary, seen.summaries), (RunMeta, seen.metas)):
        parse = cls.from_json.__func__  # type: ignore[attr-defined]

        def counted(klass: type, doc: object, parse: Any = parse, into: list[object] = into
                    ) -> Any:
            into.append(doc)
            return parse(klass, doc)

        monkeypatch.setattr(cls, "from_json", classmethod(counted))
    return seen


def _run_copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(RUN_DIR, tmp_path / name))


def _register(run: Path, vendor: str | None = None) -> None:
    Catalog(catalog_path()).register(run_entry(run, "probe", vendor))


def _report(run: Path, pdf: Path) -> list[str]:
    return ["report", "--run", str(run), "--questionnaire", str(HEADLINE), "--out", str(pdf)]


@pytest.fixture
def collector() -> Iterator[Receiver]:
    """An OTLP/HTTP collector that takes everything (for `export otlp`)."""
    c = Receiver()
    yield c
    c.close()


@dataclass(frozen=True)
class Case:
    """A command, the summaries and run.json documents it may parse, and why so many."""

    #: the command line, from a scratch folder and a collector (set-up, uncounted)
    args: Callable[[Path, Receiver], list[str]]
    summaries: int
    metas: int
    why: str
    exit_codes: tuple[int, ...] = (0,)


def _gate(tmp: Path, _: Any) -> list[str]:
    """One run held against the catalog's last valid evaluation of its vendor."""
    older, newer = _run_copy(tmp, "older"), _run_copy(tmp, "newer")
    run = json.loads((older / "run.json").read_text())
    run["started_at"] = "2020-01-01T00:00:00+00:00"  # the earlier quarter
    (older / "run.json").write_text(json.dumps(run))
    _register(older, "Acme")
    return ["compare", str(newer), "--fail-on", "regression", "--same-vendor", "Acme",
            "--out", str(tmp / "gate.pdf")]


def _listed(tmp: Path, _: Any) -> list[str]:
    _register(_run_copy(tmp, "a"))
    return ["runs"]


def _shown(tmp: Path, _: Any) -> list[str]:
    _register(_run_copy(tmp, "a"))
    return ["runs", "show", "1"]


CASES = {
    "compare": Case(
        lambda tmp, _: ["compare", str(_run_copy(tmp, "a")), str(_run_copy(tmp, "b")),
                        "--out", str(tmp / "cmp.pdf")], 2, 2,
        "two runs: open_run once each; the review and the columns share that reading"),
    "compare-gate": Case(
        _gate, 2, 3,
        "two runs, one each; run.json of the run held is read once more, first, to find "
        "its vendor's last evaluation in the catalog (the search is handed that reading)",
        (0, 1)),
    "runs": Case(
        _listed, 0, 0,
        "the catalog stores each run's headline figures and validity when it is "
        "registered: a listing hashes files but parses none"),
    "runs-show": Case(_shown, 0, 0, "as the listing: the catalog's row alone"),
    "export": Case(
        lambda tmp, otlp: ["export", "otlp", str(_run_copy(tmp, "a")), "--otlp-endpoint",
                           otlp.url], 1, 1,
        "open_run reads the run; the trace and the metrics take its typed Summary"),
    "import": Case(
        lambda tmp, _: ["import", "aiperf", str(AIPERF), "--out", str(tmp / "imp")], 1, 1,
        "the import writes summary.json from its own figures; the catalog's registration "
        "reads it back once"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_command_reads_each_run_once(name: str, tmp_path: Path, collector: Receiver,
                                       reads: Reads) -> None:
    case = CASES[name]
    args = case.args(tmp_path, collector)
    reads.summaries.clear()
    reads.metas.clear()  # the set-up's own readings (registering a run) are not counted
    res = CliRunner().invoke(cli, args)
    assert res.exit_code in case.exit_codes, res.output
    assert (len(reads.summaries), len(reads.metas)) == (case.summaries, case.metas), (
        f"{name}: summary.json read {len(reads.summaries)} times, run.json "
        f"{len(reads.metas)} (expected {case.summaries} and {case.metas}: {case.why})")
    assert all(isinstance(d, dict) and d.get("schema") == "evalkit.summary/1"
               for d in reads.summaries)


def test_a_report_and_its_verification_each_read_the_run_once(tmp_path: Path,
                                                               reads: Reads) -> None:
    """`report`: 1 (`open_run`; the review, the pages and the charts take its typed
    Summary). `verify` of that PDF: 1 (`open_run` of the attached run; the re-drawn pages
    take that reading)."""
    pdf = tmp_path / "card.pdf"
    res = CliRunner().invoke(cli, _report(_run_copy(tmp_path, "a"), pdf))
    assert res.exit_code in (0, 1), res.output  # 1: the headline sample is built to be flagged
    assert pdf.is_file() and pdf.with_suffix(".json").is_file()
    assert (len(reads.summaries), len(reads.metas)) == (1, 1), "report"
    reads.summaries.clear()
    reads.metas.clear()
    res = CliRunner().invoke(cli, ["verify", str(pdf)])
    assert res.exit_code == 0, res.output
    assert (len(reads.summaries), len(reads.metas)) == (1, 1), "verify"


def test_a_probe_hands_its_written_summary_to_the_catalog(tmp_path: Path, reference: Any,
                                                           reads: Reads) -> None:
    """1: the write-up reads the summary it wrote, typed, and the catalog registers the
    run from that reading (run.json: once, the catalog's)."""
    srv = reference("gpu", mode="thread", decode_base_ms=1, request_overhead_ms=0)
    out = tmp_path / "p"
    res = CliRunner().invoke(cli, ["probe", "--base-url", srv.base_url, "--model", srv.model,
                                   "--out", str(out), "--phases", "connect,baseline",
                                   "--quiet", "--output-tokens", "8", "--vendor", "Acme"])
    assert res.exit_code == 0, res.output
    assert (len(reads.summaries), len(reads.metas)) == (1, 1)
    [row] = Catalog(catalog_path()).rows(vendor="Acme")  # registered from that reading
    written = Summary.from_json(json.loads((out / "summary.json").read_text()))
    assert row.entry.validity == written.sections.validity.status
    assert row.entry.figures["requests"] == written.sections.requests


def test_a_panel_sample_hands_its_written_summary_to_the_catalog(tmp_path: Path,
                                                                 reference: Any,
                                                                 reads: Reads) -> None:
    """`panel sample` as the probe: 1 (the write-up's, registered as kind panel)."""
    srv = reference("gpu", mode="thread", decode_base_ms=1, request_overhead_ms=0)
    res = CliRunner().invoke(cli, ["panel", "sample", "--base-url", srv.base_url, "--model",
                                   srv.model, "--vendor", "Acme", "--out", str(tmp_path / "s"),
                                   "--budget", "6", "--output-tokens", "8", "--quiet"])
    assert res.exit_code == 0, res.output
    assert (len(reads.summaries), len(reads.metas)) == (1, 1)
    [row] = Catalog(catalog_path()).rows(kind="panel")
    assert row.entry.validity == Summary.from_json(
        json.loads((tmp_path / "s" / "summary.json").read_text())).sections.validity.status


def test_a_voice_run_is_read_once_by_its_probe_and_its_report(tmp_path: Path,
                                                               reads: Reads) -> None:
    """A voice probe: 1 (its write-up's, handed to the catalog). Its report: 1 (the voice
    check reads the summary typed to check it against the turns, and `open_run` keeps
    that reading)."""
    from tests.probe.realtime.helpers import voice_probe

    out = voice_probe(tmp_path, {"ttfa_s": 0.05, "answer_s": 0.1, "audio_rate": 4.0},
                      "--levels", "1", exits=(0, 2), relaxed=False)
    assert (out / "turns.jsonl").is_file()
    assert (len(reads.summaries), len(reads.metas)) == (1, 1), "voice probe"
    reads.summaries.clear()
    reads.metas.clear()
    res = CliRunner().invoke(cli, ["report", "--run", str(out), "--out",
                                   str(tmp_path / "voice.pdf")])
    assert res.exit_code == 0, res.output
    assert (len(reads.summaries), len(reads.metas)) == (1, 1), "voice report"


def test_the_demo_reads_each_run_once_to_make_it_and_once_to_report_it(
        tmp_path: Path, reads: Reads, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two vendors: 2 each (the probe's write-up; the report's `open_run`, which checks
    the bytes written); the comparison compares the runs as the reports read them (0)."""
    import evalkit.demo

    short = {"phases": ["connect", "baseline"], "baseline": {"requests": 3},
             "output_tokens": 8, "connect": {"rtt_samples": 2}}
    monkeypatch.setattr(evalkit.demo, "run_demo",
                        functools.partial(evalkit.demo.run_demo, suite_overrides=short))
    res = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path), "--quiet", "--vendor",
                                   "evasive", "--vendor", "headline"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "comparison.pdf").is_file()
    assert (len(reads.summaries), len(reads.metas)) == (4, 2)


def test_the_count_sees_every_read(reads: Reads) -> None:
    """The counter counts: two readings of the fixture are two."""
    doc = json.loads((RUN_DIR / "summary.json").read_text())
    Summary.from_json(doc)
    Summary.from_json(doc)
    RunMeta.from_json(json.loads((RUN_DIR / "run.json").read_text()))
    assert (len(reads.summaries), len(reads.metas)) == (2, 1)
