"""Run directories are input, not truth (issue 15): a hard-killed probe's run is reported,
tampered and malformed run dirs never give a traceback, a summary is checked against its
records, nothing outside the run dir is read or attached, and reading is bounded.

The run is the synthetic fixture tests/data/report_run (its summary is summarize(records)),
copied and damaged one way per test; one test SIGKILLs a real `evalkit probe` mid-ramp.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pypdf
import pytest
from click.testing import CliRunner

from evalkit.analysis.summarize import summarize
from evalkit.cli import cli
from evalkit.errors import EvalkitError, InputError, RunDirError
from evalkit.render.comparison import CompareInput, load_view
from evalkit.render.page import build_page
from evalkit.review.scorecard import Scorecard
from evalkit.rundir import run as rundir_run
from evalkit.rundir.run import open_run as read_run
from evalkit.rundir.store import read_records
from tests.rundir.helpers import RUN_DIR, _lines, _page_one, _put_lines, _record, _text


def _edit_summary(d: Path, fn: Callable[[dict[str, Any]], Any]) -> None:
    s = json.loads((d / "summary.json").read_text())
    fn(s)
    (d / "summary.json").write_text(json.dumps(s))


def _mutations() -> dict[str, Callable[[dict[str, Any]], Any]]:
    def levels(fn: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        return lambda s: [fn(lv) for lv in s["ramp"]["levels"]]

    return {
        "a level that is a string": lambda s: s["ramp"]["levels"].__setitem__(0, "x"),
        "levels that are a string": lambda s: s["ramp"].__setitem__("levels", "x"),
        "a ramp that is a list": lambda s: s.__setitem__("ramp", [1]),
        "a baseline that is a string": lambda s: s.__setitem__("baseline", "x"),
        "a TTFT that is a string": lambda s: s["ramp"]["levels"][0].__setitem__("ttft_s", "x"),
        "huge throughput": levels(lambda lv: lv.__setitem__("aggregate_tokens_per_s", 1e308)),
        "a throughput of 400 digits": levels(
            lambda lv: lv.__setitem__("aggregate_tokens_per_s", 10**400)),
        "a NaN": lambda s: s["baseline"]["ttft_s"].__setitem__("p50", math.nan),
        "-3 streams": lambda s: s["ramp"].__setitem__("max_sustained_concurrency", -3),
        "9,999 streams": lambda s: s["ramp"].__setitem__("max_sustained_concurrency", 9999),
        "a negative TTFT": lambda s: s["ramp"]["levels"][2]["ttft_s"].__setitem__("p50", -0.5),
        "requests as text": lambda s: s.__setitem__("requests", "many"),
        "more requests than records": lambda s: s.__setitem__("requests", 9999),
        "other outcomes": lambda s: s["outcomes"].__setitem__("ok", 1),
        "a level's requests": lambda s: s["ramp"]["levels"][1].__setitem__("requests", 80),
        "a plausible but wrong TTFT": lambda s: s["ramp"]["levels"][3]["ttft_s"].__setitem__(
            "p50", s["ramp"]["levels"][3]["ttft_s"]["p50"] * 0.8),
        "a level not in the records": lambda s: s["ramp"]["levels"].append(
            {**s["ramp"]["levels"][-1], "concurrency": 32}),
        # well-formed, counts and TTFT untouched: only a whole re-derivation sees these
        "a level lifted to valid": lambda s: s["validity"]["levels"].__setitem__(
            "16", {"status": "valid", "reasons": [], "requests": 64, "ok": 64}),
        "a stream rate 10x": lambda s: s["baseline"]["stream_tokens_per_s"].__setitem__(
            "p50", s["baseline"]["stream_tokens_per_s"]["p50"] * 10),
        "throughput 10x": levels(lambda lv: lv.__setitem__(
            "aggregate_tokens_per_s", lv["aggregate_tokens_per_s"] * 10)),
        "TPOT p90 a tenth": levels(lambda lv: lv["tpot_s"].__setitem__(
            "p90", lv["tpot_s"]["p90"] / 10)),
        "no breach named": lambda s: s["ramp"].__setitem__("first_degraded", None),
        "the run's validity deleted": lambda s: s.pop("validity"),
        "a level's validity reasons deleted": lambda s: s["validity"]["levels"]["16"].pop(
            "reasons"),
    }


class TestSummaryCheckedAgainstRecords:
    def test_a_consistent_summary_is_kept_as_written(self) -> None:
        run = rundir_run.open_run(RUN_DIR)
        assert run.rebuilt is None and run.notes == () and run.skipped_lines == 0
        assert run.summary.to_json() == json.loads((RUN_DIR / "summary.json").read_text())
        assert "summary.rebuilt.json" not in run.raw
        assert isinstance(run.records, tuple)  # held: read once, with the digest
        assert len(run.records) == len(list(run.records)) == 246

    @pytest.mark.parametrize("name", list(_mutations()))
    def test_a_summary_the_records_do_not_support_is_re_derived(
            self, run_dir: Path, name: str) -> None:
        """Malformed, absurd or simply different from its records: the summary is
        re-derived from the records, the run is marked degraded, page one says so."""
        _edit_summary(run_dir, _mutations()[name])
        run = rundir_run.open_run(run_dir)
        assert run.rebuilt is not None and run.notes[0] == run.rebuilt
        assert re.match(r"summary.json (is malformed|does not agree with requests.jsonl): ",
                        run.rebuilt), run.rebuilt
        assert run.rebuilt.endswith("every figure was re-derived from the 246 request records")
        truth = summarize(read_records(run_dir / "requests.jsonl"), {"run_status": "complete"})
        assert run.summary["ramp"]["levels"] == truth["ramp"]["levels"]
        assert run.summary["ramp"]["max_sustained_concurrency"] == 8
        assert run.summary["validity"]["status"] == "degraded"
        assert any(r.startswith("summary.json ") for r in run.summary["validity"]["reasons"])
        assert run.summary["rebuilt_from_records"]["records"] == 246
        assert json.loads(run.raw["summary.rebuilt.json"]) == run.summary.to_json()
        assert run.raw["summary.json"] == (run_dir / "summary.json").read_bytes()
        # page one's words are read here, not its charts (~4/5 of the time, and every
        # case's rebuilt summary is the same records' summary): TestRenderedNoTraceback
        # draws them, in PDFs, from rebuilt summaries
        ctx = build_page(Scorecard.from_json({}), run, {}, charts=False)
        assert ctx.notices[0] == run.rebuilt
        figures = " ".join(v for _, v in ctx.key_figures)
        assert "-3" not in figures and "9,999" not in figures and "-500" not in figures

    def test_a_summary_written_before_a_figure_existed_is_kept(self, run_dir: Path) -> None:
        """A figure an older evalkit did not write is no difference (the run's validity
        still must agree): every run on disk is not degraded each time a figure is added."""
        _edit_summary(run_dir, lambda s: (s["checks"].pop("cache"),
                                          s["ramp"]["levels"][0].pop("stalls")))
        run = rundir_run.open_run(run_dir)
        assert run.rebuilt is None and run.notes == ()

    def test_no_records_means_no_figures(self, run_dir: Path) -> None:
        """A summary beside an empty (or missing) requests.jsonl has nothing behind it:
        RUN INVALID, every figure a dash, never figures beside "Request records 0"."""
        (run_dir / "requests.jsonl").write_bytes(b"")
        run = rundir_run.open_run(run_dir)
        assert run.rebuilt == ("requests.jsonl holds no record: no figure of summary.json has "
                               "a measurement behind it, so none is shown")
        assert run.summary["validity"]["status"] == "invalid"
        ctx = build_page(Scorecard.from_json({"run": {"validity": "invalid"}}), run, {})
        figures = dict(ctx.key_figures)
        assert figures["TTFT under load"] == "p50 — · p90 —"
        assert figures["Aggregate throughput"] == "—"
        assert ctx.appendix.n_records == 0 and ctx.run_invalid
        (run_dir / "requests.jsonl").unlink()
        assert rundir_run.open_run(run_dir).rebuilt.startswith("requests.jsonl is missing")  # type: ignore[union-attr]

    def test_neither_summary_nor_records_is_not_a_run(self, run_dir: Path) -> None:
        (run_dir / "summary.json").unlink()
        (run_dir / "requests.jsonl").write_bytes(b"null\n")
        with pytest.raises(RunDirError, match=r"no summary\.json and no request record"):
            rundir_run.open_run(run_dir)
        (run_dir / "requests.jsonl").unlink()
        with pytest.raises(RunDirError, match=r"no summary\.json and no request record"):
            rundir_run.open_run(run_dir)
        (run_dir / "run.json").unlink()
        with pytest.raises(RunDirError, match=r"no run\.json; is this a run directory"):
            rundir_run.open_run(run_dir)

    @pytest.mark.parametrize("text", ["[]", '{"schema": "\xff"}', "{", "1" * 5000])
    def test_a_summary_that_is_not_json_is_an_input_error(self, run_dir: Path,
                                                          text: str) -> None:
        (run_dir / "summary.json").write_text(text, encoding="latin-1")
        with pytest.raises(InputError, match=r"summary\.json"):
            rundir_run.open_run(run_dir)

    def test_run_json_fields_of_the_wrong_type_are_ignored(self, run_dir: Path) -> None:
        meta = json.loads((run_dir / "run.json").read_text())
        meta.update(target=[1], settings="x", started_at=5, status={"a": 1})
        (run_dir / "run.json").write_text(json.dumps(meta))
        run = rundir_run.open_run(run_dir)
        assert set(run.notes) == {f"run.json: {k} is not {what}; ignored" for k, what in (
            ("target", "an object"), ("settings", "an object"), ("started_at", "text"),
            ("status", "text"))}
        assert run.run["target"] is None and run.raw["run.json"] == (
            run_dir / "run.json").read_bytes()
        view = load_view(CompareInput(run_dir, None), run=run)
        assert view.target == "? at ?" and view.settings["levels"] is None


class TestNothingFromOutside:
    @pytest.mark.parametrize("name", ["run.json", "summary.json", "requests.jsonl"])
    def test_a_link_out_of_the_run_dir_is_refused(self, run_dir: Path, tmp_path: Path,
                                                  name: str) -> None:
        """A run dir file that resolves elsewhere is neither read, hashed nor attached."""
        secret = tmp_path / "secret.json"
        secret.write_text(json.dumps({"schema": "evalkit.summary/1", "key": "TOPSECRET"}))
        (run_dir / name).unlink()
        (run_dir / name).symlink_to(secret)
        with pytest.raises(RunDirError, match=f"{name} is a link to .*secret.json, outside "
                                              "the run directory"):
            rundir_run.open_run(run_dir)
        res = CliRunner().invoke(cli, ["report", "--run", str(run_dir),
                                       "--out", str(tmp_path / "card.pdf")])
        assert res.exit_code == 2 and "outside the run directory" in res.output
        assert not (tmp_path / "card.pdf").exists()

    def test_links_inside_the_run_dir_are_followed(self, run_dir: Path, tmp_path: Path) -> None:
        (run_dir / "run.json").rename(run_dir / "meta.json")
        (run_dir / "run.json").symlink_to("meta.json")
        linked = tmp_path / "linked-run"
        linked.symlink_to(run_dir)  # the directory the user names may itself be a link
        run = rundir_run.open_run(linked)
        assert run.raw["run.json"] == (run_dir / "meta.json").read_bytes()

    def test_a_fifo_is_not_read(self, run_dir: Path) -> None:
        (run_dir / "summary.json").unlink()
        os.mkfifo(run_dir / "summary.json")
        with pytest.raises(RunDirError, match="not a regular file"):
            rundir_run.open_run(run_dir)


class TestRenderedNoTraceback:
    def test_tampered_dirs_report_and_compare(self, tmp_path: Path) -> None:
        """report and compare on damaged run dirs: exit 0 with the repair said, or exit 2
        with the file named; never a traceback."""
        damaged = {
            "lines": lambda d: _put_lines(d, [b"[1]", b"null", b"\xff", *_lines(d)]),
            "level": lambda d: _edit_summary(
                d, lambda s: s["ramp"]["levels"].__setitem__(0, "x")),
            "huge": lambda d: _edit_summary(d, lambda s: [lv.__setitem__(
                "aggregate_tokens_per_s", 10**400) for lv in s["ramp"]["levels"]]),
            "streams": lambda d: _edit_summary(
                d, lambda s: s["ramp"].__setitem__("max_sustained_concurrency", -3)),
        }
        dirs = []
        for name, damage in damaged.items():
            d = Path(shutil.copytree(RUN_DIR, tmp_path / name))
            damage(d)
            dirs.append(d)
            res = CliRunner().invoke(cli, ["report", "--run", str(d),
                                           "--out", str(tmp_path / f"{name}.pdf")])
            assert res.exit_code == 0 and res.exception is None, (name, res.output)
            assert "note: " in res.stderr
            page = _page_one(tmp_path / f"{name}.pdf")
            assert "-3 streams" not in page and "9,999" not in page
            if name != "lines":
                assert "every figure was re-derived from the 246 request records" in page
                assert "DEGRADED" in page
        res = CliRunner().invoke(cli, ["compare", *map(str, dirs),
                                       "--out", str(tmp_path / "cmp.pdf")])
        assert res.exit_code == 0 and res.exception is None, res.output
        assert res.stderr.count("note: run ") >= 4
        text = _text(tmp_path / "cmp.pdf")
        assert "Run directories repaired or cut short" in text
        names = pypdf.PdfReader(tmp_path / "cmp.pdf").attachments
        # named by vendor (all four are one model at one endpoint, so numbered from the 2nd)
        second = "ref-model-7b-at-http-127-0-0-1-8011-v1-2026-11-30-2"
        assert {f"{second}-summary.json", f"{second}-summary.rebuilt.json"} <= set(names)


def _ramp_lines(path: Path) -> int:
    return sum('"phase":"ramp"' in line for line in path.read_text().splitlines())


@pytest.mark.slow
def test_sigkill_mid_ramp_then_report(reference: Any, tmp_path: Path) -> None:
    """A probe killed with SIGKILL mid-ramp leaves no summary and run.json 'running':
    `report` rebuilds the summary from every record, and page one says the run was cut
    and when; `compare` reads it too."""
    srv = reference("gpu")
    out = tmp_path / "run"
    # a baseline of 2 requests and each canary once (6, not 14): the kill comes mid-ramp
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"extends": "quick", "baseline": {"requests": 2},
                                   "canaries": {"alone_repeats": 1}}))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit.cli", "probe", "--base-url", srv.base_url,
         "--model", srv.model, "--out", str(out), "--phases", "baseline,ramp",
         "--levels", "1,2,4,8", "--output-tokens", "16", "--quiet", "--profile", str(profile)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    req = out / "requests.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not req.exists() or _ramp_lines(req) < 4):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "summary.json").exists()
    assert json.loads((out / "run.json").read_text())["status"] == "running"
    kept = req.read_bytes().count(b"\n")  # every complete line is a record
    assert kept >= 4

    pdf = tmp_path / "cut.pdf"
    res = CliRunner().invoke(cli, ["report", "--run", str(out), "--out", str(pdf)])
    assert res.exit_code == 0, res.output
    assert (f"note: summary.json is missing (the probe stopped before writing it): every "
            f"figure was rebuilt from the {kept} request records") in res.stderr
    page = _page_one(pdf)
    assert "CUT " in page and "into the run, about" in page and " UTC" in page
    assert f"the figures cover only the {kept} requests it recorded" in page
    assert "DEGRADED" in page
    card = json.loads(pdf.with_suffix(".json").read_text())
    assert card["run"]["validity"] == "degraded"
    attached = pypdf.PdfReader(pdf).attachments
    rebuilt = json.loads(attached["summary.rebuilt.json"][0])
    assert rebuilt["requests"] == kept and rebuilt["run_status"] == "running"
    assert rebuilt["client"]["client_bound"] is None  # the checks died with the probe
    assert "summary.json" not in attached
    assert f"Request records {kept}" in _text(pdf)

    res = CliRunner().invoke(cli, ["compare", str(out), str(RUN_DIR),
                                   "--out", str(tmp_path / "cmp.pdf")])
    assert res.exit_code == 0, res.output
    assert "note: run 1" in res.stderr and "summary.json is missing" in res.stderr


def test_every_damaged_dir_is_an_evalkit_error_or_a_report(tmp_path: Path) -> None:
    """The in-process matrix (no PDF): read_run either reads a damaged dir or raises an
    EvalkitError; nothing else escapes."""
    cases: list[Callable[[Path], Any]] = [
        lambda d: (d / "run.json").write_text("[]"),
        lambda d: (d / "run.json").write_bytes(b"\xff"),
        lambda d: (d / "summary.json").write_text('{"schema": "other"}'),
        lambda d: (d / "summary.json").write_text("[" * 100_000),
        lambda d: (d / "requests.jsonl").write_bytes(b"\xff\n" * 10),
        lambda d: (d / "requests.jsonl").write_bytes(b"[" * 100_000 + b"\n"),
        lambda d: _put_lines(d, [_record(t0_s=1e300), _record(level=10**30)]),
    ]
    for i, damage in enumerate(cases):
        d = Path(shutil.copytree(RUN_DIR, tmp_path / f"d{i}"))
        damage(d)
        with contextlib.suppress(EvalkitError):
            read_run(d)
