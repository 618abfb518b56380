"""'Your workload' in a real scorecard: a short workload run against the reference
endpoint (sessions, an agent loop, single requests, and a trace), rendered to a PDF and
read back; the same PDF verified from its attachments; and a run without a workload."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pypdf
import pytest

from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.reference.server import ReferenceServer
from evalkit.render import report
from evalkit.review.pipeline import review
from evalkit.rundir.rederive import derive_summary
from evalkit.rundir.run import open_run
from evalkit.rundir.store import iter_records
from evalkit.verify.check import verify_pdf
from evalkit.workload.model import Agent, Session, Single, Workload, fixed

RUN_DIR = Path(__file__).parent.parent / "data" / "report_run"
HOSTILE = "chat <i>x</i>\u202e"
QUICK: dict[str, Any] = {"connect": {"rtt_samples": 2}, "baseline": {"requests": 2},
                         "output_tokens": 8,
                         "prefill": {"prompt_tokens": [64, 256, 1024], "repeats": 2,
                                     "output_tokens": 4}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workload run (8 units a level at 1 and 2 users, 8 output tokens) and a trace."""
    root = tmp_path_factory.mktemp("workload")
    srv = ReferenceServer("gpu", {}, truth_log=root / "truth.jsonl", mode="subprocess")
    srv.start()
    try:
        w = Workload("support <b>chat</b>", (
            Session(HOSTILE, fixed(3), 200, fixed(40), fixed(8)),
            Agent("agent", fixed(3), fixed(100), fixed(50), fixed(8)),
            Single("single", fixed(100), fixed(8), weight=0.05)), concurrency=(1, 2),
            # the mix is drawn per unit, seeded by the run's tag: 8 units a level draw
            # both the session and the agent shape at some level (all but surely)
            duration_s=None, units=8, source={"name": "wl<script>.yaml", "sha256": "ab12" * 16})
        trace = root / "trace.jsonl"
        trace.write_text("".join(json.dumps({"timestamp": i * 50, "input_length": 300,
                                             "output_length": 8}) + "\n" for i in range(10)))
        out = root / "run"
        res = run_probe(ProbeConfig(srv.base_url, srv.model,
                                    phases=("connect", "baseline", "prefill", "workload",
                                            "trace"),
                                    workload=w, trace_file=trace, overrides=QUICK), out)
        assert res.status == "complete"
    finally:
        srv.stop()
    return out


@pytest.fixture(scope="module")
def rendered(run: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[report.ReportResult, str]:
    res = report.render_report(run, None, tmp_path_factory.mktemp("card") / "card.pdf",
                               html=True)
    text = "\n".join(p.extract_text() for p in pypdf.PdfReader(res.pdf).pages)
    return res, re.sub(r"\s+", " ", text)


def test_the_run_s_own_summary_is_judged_not_rebuilt(run: Path) -> None:
    # the re-derivation carries run.json's workload, so it agrees with the probe's summary
    assert open_run(run).rebuilt is None


def test_the_section_shows_every_level_and_shape_with_their_figures(
        run: Path, rendered: tuple[report.ReportResult, str]) -> None:
    res, text = rendered
    summary = json.loads((run / "summary.json").read_text())
    card = res.scorecard
    assert "Your workload Every figure in this section comes from workload support <b>chat" \
        "</b> (wl<script>.yaml, ab12ab12ab12)" in text
    levels = summary["workload"]["levels"]
    assert [lv["users"] for lv in levels] == [1, 2]
    for lv in levels:
        for name, shape in lv["shapes"].items():
            # the bidi override is shown as what it is, never obeyed
            row = (f"{name.replace(chr(0x202e), '[U+202E]')}"
                   f"{'session' if name == HOSTILE else name}"
                   f"{shape['units_complete']}of{shape['units']}")
            assert row.replace(" ", "") in text.replace(" ", ""), row
    # turn 2 of the session at the fewest users it ran at (the seeded mix decides which
    # shapes each level drew), its ratio to cold as summary.json has it
    session = next(lv["shapes"][HOSTILE] for lv in levels if HOSTILE in lv["shapes"])
    turn = session["turns"][1]
    assert re.search(rf"\b2 {turn['requests']} {turn['prompt_tokens_p50']:.0f} [\d.]+ ms "
                     rf"[\d.]+ ms x{turn['ttft_vs_cold']:.2f}", text), \
        text[text.find("by turn"):][:400]
    # agent tasks, the trace's fidelity, and the cold basis
    assert "Agent shape Tasks complete Task end to end p50 / p90" in text
    assert "Trace replay From trace trace.jsonl" in text and "replayed at 1x its speed" in text
    tr = summary["trace"]
    assert tr["output_tokens_asked"] == 80
    assert (f"Output tokens asked / received 80 / {tr['output_tokens_received']:.0f}"
            in text)
    assert card.workload is not None and card.workload.levels[0].shapes[0].verified
    assert "Later turns against a cold prompt of their length" in text  # the chart


def test_page_one_says_the_headline_and_every_figure_s_source(
        rendered: tuple[report.ReportResult, str]) -> None:
    res, _ = rendered
    page = re.sub(r"\s+", " ", pypdf.PdfReader(res.pdf).pages[0].extract_text())
    assert res.scorecard.workload is not None
    head = res.scorecard.workload.headline
    assert re.match(r"agent: [12] users?, 100 % of steps within voice agent; later steps "
                    r"x[\d.]+ of cold \(at [12] users?\)", head), head
    assert f"Your workload {head[:60]}" in page
    assert ("Baseline, prefill and ramp figures from the suite's synthetic single-turn "
            "prompts of 256 tokens") in page
    assert "Your workload's figures from workload support <b>chat</b>" in page
    assert "The trace's figures from trace trace.jsonl" in page


def test_hostile_names_are_escaped_and_made_printable(
        rendered: tuple[report.ReportResult, str]) -> None:
    res, text = rendered
    assert res.html is not None
    html = res.html.read_text()
    assert "<i>x</i>" not in html and "&lt;i&gt;x&lt;/i&gt;" in html
    assert "<b>chat</b>" not in html and "<script>" not in html
    assert "\u202e" not in html and "\u202e" not in text


def test_a_report_of_a_workload_run_verifies(rendered: tuple[report.ReportResult, str]
                                             ) -> None:
    res, _ = rendered
    result = verify_pdf(res.pdf)
    assert result.differences == [] and result.exit_code == 0


def test_the_re_derivation_keeps_a_client_bound_workload_level(run: Path) -> None:
    run_doc = json.loads((run / "run.json").read_text())
    records = list(iter_records(run / "requests.jsonl"))
    bound = {"client_bound": True, "client_bound_reasons": ["cpu"]}
    run_doc["client_checks"] = {**run_doc["client_checks"],
                                "workload_levels": {"2": bound, "x": bound}}
    derived = derive_summary(records, run_doc)
    assert [lv["client_bound"] for lv in derived["workload"]["levels"]] == [False, True]
    assert derived["workload"]["described"]["name"] == "support <b>chat</b>"


def test_a_client_bound_level_the_summary_names_stays_bound_when_run_json_is_silent(
        run: Path, tmp_path: Path) -> None:
    # run.json has no `client_checks.workload_levels`: the written summary's client-bound
    # level is kept as bound (never read as free of the client), and reads not verified
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    run_doc = json.loads((copy / "run.json").read_text())
    del run_doc["client_checks"]["workload_levels"]  # as a run written before they were kept
    (copy / "run.json").write_text(json.dumps(run_doc))
    summary = json.loads((copy / "summary.json").read_text())
    summary["workload"]["levels"][1]["client_bound"] = True
    (copy / "summary.json").write_text(json.dumps(summary))
    opened = open_run(copy)
    assert opened.rebuilt is None
    assert [lv["client_bound"] for lv in opened.summary["workload"]["levels"]] == [False, True]
    card = review(copy, None).card.to_json()
    assert all(s["not_verified"] and "client could not keep up at 2 users" in s["not_verified"]
               for s in card["workload"]["levels"][1]["shapes"])


def test_without_a_workload_page_one_says_not_measured(tmp_path: Path) -> None:
    res = report.render_report(RUN_DIR, None, tmp_path / "card.pdf")
    reader = pypdf.PdfReader(res.pdf)
    page = re.sub(r"\s+", " ", reader.pages[0].extract_text())
    assert "Your workload not measured (no --workload, --conversations or --trace)" in page
    text = " ".join(p.extract_text() for p in reader.pages)
    assert "Trace replay" not in text and "Every figure in this section" not in text
    assert res.scorecard.workload is None and res.scorecard.trace is None
