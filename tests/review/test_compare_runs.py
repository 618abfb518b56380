"""`evalkit compare` on real runs against reference profiles, read back from the PDF."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from pypdf import PdfReader

from evalkit.cli import cli
from evalkit.fmt import fmt_ms
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.reference.server import ReferenceServer

QUESTIONNAIRES = Path(__file__).resolve().parents[2] / "questionnaires"
#: a short suite: enough levels for a ramp, short enough for CI. No test here judges a
#: level's interval (the regression is read alone, on the baseline), so a level needs
#: no more than 8 requests, not the quick profile's 36 (which bound a p90 from above)
SHORT = {"baseline": {"requests": 3}, "ramp": {"levels": [1, 2, 4], "level_duration_s": 1.0,
                                               "level_min_requests": 8}}


def _probe(out: Path, srv: ReferenceServer) -> Path:
    config = ProbeConfig(base_url=srv.base_url, model=srv.model,
                         phases=("connect", "baseline", "ramp"), output_tokens=16,
                         overrides=SHORT)
    result = run_probe(config, out)
    assert result.status == "complete"
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Vendor A this quarter and next (decode made 2.5x slower), and vendor B.

    A's two endpoints are up together, so the quarters are on two ports: an endpoint
    that moved, as it does between quarters.
    """
    base = tmp_path_factory.mktemp("compare")
    with ReferenceServer("gpu", {}) as a1, \
            ReferenceServer("gpu", {"decode_base_ms": 30.0}) as a2:
        assert a1.base_url != a2.base_url
        runs = {"a1": _probe(base / "a1", a1), "a2": _probe(base / "a2", a2)}
    with ReferenceServer("queueing", {}) as b:
        runs["b"] = _probe(base / "b", b)
    return runs


def _text(pdf: Path) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(pdf).pages)


@pytest.mark.slow
def test_slower_quarter_is_flagged_and_fails_the_pipeline(runs: dict[str, Path],
                                                           tmp_path: Path) -> None:
    """The same vendor made slower between two runs: a regression, and exit 1 when asked."""
    q = QUESTIONNAIRES / "forthright.yaml"
    out = tmp_path / "trend.pdf"
    args = ["compare", f"{runs['a1']}={q}", f"{runs['a2']}={q}", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--fail-on", "regression"])
    assert result.exit_code == 1, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    assert list(data["trends"]) == ["Steadystream Inference"]
    figures = {r["figure"]: r for r in data["regressions"]}
    rate = figures["Stream rate p50, alone"]
    # decode step 12 ms -> 30 ms: the stream rate falls by well over the 10% tolerance
    assert rate["after"] < rate["before"] * 0.6
    assert "regression: Steadystream Inference: Stream rate p50, alone" in result.output
    text = _text(out)
    assert "REGRESSIONS" in text and "Stream rate p50, alone" in text
    assert "compare.json" in PdfReader(out).attachments
    # without --fail-on the same comparison is a report, not a failure
    assert CliRunner().invoke(cli, args).exit_code == 0


@pytest.mark.slow
def test_two_vendors_side_by_side(runs: dict[str, Path], tmp_path: Path) -> None:
    """Two vendors: no trend, and each row's star on the better of the two values."""
    out = tmp_path / "vendors.pdf"
    result = CliRunner().invoke(cli, [
        "compare", f"{runs['a1']}={QUESTIONNAIRES / 'forthright.yaml'}",
        f"{runs['b']}={QUESTIONNAIRES / 'evasive.yaml'}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["trends"] == {} and data["regressions"] == []
    assert [r["label"].split(" 20")[0] for r in data["runs"]] == [
        "Steadystream Inference", "Apex Hyperscale AI"]
    ttft90 = data["figures"]["sustained_ttft_p90_s"]
    # each value is that run's TTFT p90 at its own max sustained level, and the star is
    # on the lower one (which run that is depends on where each run held)
    values = ttft90["values"]
    for run, value in zip((runs["a1"], runs["b"]), values, strict=True):
        ramp = json.loads((run / "summary.json").read_text())["ramp"]
        held = [lv for lv in ramp["levels"]
                if lv["concurrency"] == ramp["max_sustained_concurrency"]]
        # a short ramp may confirm no level (a tie): then there is no value to set beside
        assert value == (pytest.approx(held[0]["ttft_s"]["p90"]) if held else None)
    # the reference endpoint is not the endpoint forthright.yaml names: its measured
    # claims are unverified, never ok (the demo records what it stands in for instead)
    assert data["statuses"]["Q4"] == ["unverified", "unanswered"]
    # so neither run is streaming-ready, and no row gives either a star it did not earn
    assert not any(any(f["best"]) for f in data["figures"].values())
    assert set(ttft90["unstarred"]) == {"not streaming-ready"}
    assert ttft90["levels"] == [json.loads((run / "summary.json").read_text())["ramp"][
        "max_sustained_concurrency"] for run in (runs["a1"], runs["b"])]
    pdf = PdfReader(out)
    text = _text(out)
    # vendors head the columns (not 1 / 2), the title names them, figures carry units
    # and the load they were read at
    assert ("Figure Steadystream Inference Apex Hyperscale AI TTFT p50, alone" in
            " ".join(text.split()))
    assert "Streaming capacity compared: Steadystream Inference and Apex Hyperscale AI" in text
    for value, level in zip(values, ttft90["levels"], strict=True):
        if value is not None:
            assert f"{fmt_ms(value)} at {level} streams" in " ".join(text.split())
    assert "Key figures" in text and "Use-case fit" in text
    assert len(pdf.pages) >= 2
    # an archival file of its own: title, author, keywords, PDF/A-3b; its footer names it
    meta = pdf.metadata
    assert meta is not None and (meta.title or "").startswith(
        "Streaming capacity compared: Steadystream Inference and Apex Hyperscale AI")
    assert (meta.author or "").startswith("evalkit ") and "Apex Hyperscale AI" in str(
        meta.get("/Keywords"))
    xmp = pdf.trailer["/Root"]["/Metadata"].get_object().get_data().decode()
    assert 'pdfaid:part="3"' in xmp and 'pdfaid:conformance="B"' in xmp
    assert "evalkit scorecard" not in text
    # pages flow: none but the last under half full (the old comparison's p2 held two
    # bullets); the use-case table says how far each fit was tried, as scorecards do
    from tests.render.test_report import page_fill

    fills = [page_fill(p) for p in pdf.pages]
    assert all(f >= 0.5 for f in fills[:-1]), fills
    squashed = " ".join(text.split())
    assert "Use case Steadystream Inference Apex Hyperscale AI Batch ✓ fits" in squashed
    # attachments are named by vendor (and date), not run1 / run2
    names = sorted(pdf.attachments)
    assert names[0] == "apex-hyperscale-ai-" + data["runs"][1]["started"][:10] + "-summary.json"
    assert names[1] == "compare.json" and names[2].startswith("steadystream-inference-")


def test_compare_rejects_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["compare", str(tmp_path), "--out",
                                      str(tmp_path / "x.pdf")])
    assert result.exit_code == 2
    assert "is this a run directory?" in result.output


def _labelled(run: Path, into: Path, vendor: object) -> Path:
    """A copy of `run` whose run.json carries `vendor`, as `evalkit probe --vendor` writes."""
    shutil.copytree(run, into)
    meta = json.loads((into / "run.json").read_text())
    meta["vendor"] = vendor
    (into / "run.json").write_text(json.dumps(meta))
    return into


@pytest.mark.slow
def test_moved_endpoint_without_vendor_fails_the_regression_gate_with_the_reason(
        runs: dict[str, Path], tmp_path: Path) -> None:
    """One vendor on two ports, no questionnaire, no label: no trend, so exit 2, not 0."""
    out = tmp_path / "trend.pdf"
    result = CliRunner().invoke(cli, ["compare", str(runs["a1"]), str(runs["a2"]),
                                      "--out", str(out), "--fail-on", "regression"])
    assert result.exit_code == 2, result.output
    urls = [json.loads((runs[k] / "run.json").read_text())["target"]["base_url"]
            for k in ("a1", "a2")]
    assert result.output.startswith("Error: --fail-on regression has no trend to judge: "
                                    "no two of the 2 runs given are of one vendor")
    for i, (key, url) in enumerate(zip(("a1", "a2"), urls, strict=True)):
        assert f"run {i + 1} ({runs[key]}): " in result.output
        assert f" at {url}' (model and endpoint URL: no questionnaire" in result.output
    for remedy in ("RUN_DIR=QUESTIONNAIRE.yaml", "evalkit probe --vendor NAME",
                   "--same-vendor NAME"):
        assert remedy in result.output
    assert not out.exists()  # nothing was judged, so nothing is written as if it had been
    # without the gate the same runs are a side-by-side comparison, as before
    assert CliRunner().invoke(cli, ["compare", str(runs["a1"]), str(runs["a2"]),
                                    "--out", str(out)]).exit_code == 0


@pytest.mark.slow
def test_vendor_label_in_run_json_keeps_a_moved_endpoint_one_vendor(
        runs: dict[str, Path], tmp_path: Path) -> None:
    """run.json's `vendor` (probe --vendor) groups the two ports: the slower run fails."""
    a1 = _labelled(runs["a1"], tmp_path / "a1", "Steadystream")
    a2 = _labelled(runs["a2"], tmp_path / "a2", " Steadystream\n")  # white space folds
    out = tmp_path / "trend.pdf"
    result = CliRunner().invoke(cli, ["compare", str(a1), str(a2), "--out", str(out),
                                      "--fail-on", "regression"])
    assert result.exit_code == 1, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    assert list(data["trends"]) == ["Steadystream"]
    assert data["judged_trends"] == ["Steadystream"] and data["not_judged"] == {}
    assert "regression: Steadystream: Stream rate p50, alone" in result.output
    # the label is vendor input: anything but a short line of text is ignored
    for i, bad in enumerate([{"name": "x"}, "x" * 101, "Steady\x1b]0;ok\x07", ""]):
        bad_dir = _labelled(runs["a2"], tmp_path / f"bad{i}", bad)
        result = CliRunner().invoke(cli, ["compare", str(a1), str(bad_dir), "--out",
                                          str(out), "--fail-on", "regression"])
        assert result.exit_code == 2, (bad, result.output)
        assert "run.json's vendor ignored" in result.output


@pytest.mark.slow
def test_same_vendor_makes_the_given_runs_one_trend(runs: dict[str, Path],
                                                     tmp_path: Path) -> None:
    """`compare --same-vendor NAME`: no labels needed; the regression is found."""
    out = tmp_path / "trend.pdf"
    args = ["compare", str(runs["a1"]), str(runs["a2"]), "--out", str(out),
            "--same-vendor", "Steadystream"]
    result = CliRunner().invoke(cli, [*args, "--fail-on", "regression"])
    assert result.exit_code == 1, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["judged_trends"] == ["Steadystream"]
    assert "regression: Steadystream: Stream rate p50, alone" in result.output
    # the same run twice does not regress: judged, and passes
    result = CliRunner().invoke(cli, ["compare", str(runs["a1"]), str(runs["a1"]),
                                      "--out", str(out), "--same-vendor", "Steadystream",
                                      "--fail-on", "regression"])
    assert result.exit_code == 0, result.output
    assert "regression:" not in result.output
    result = CliRunner().invoke(cli, [*args[:-1], "\x1b[2J", "--fail-on", "regression"])
    assert result.exit_code == 2 and "--same-vendor '\\x1b[2J'" in result.output


@pytest.mark.slow
def test_runs_left_out_leave_the_vendor_unjudged(runs: dict[str, Path],
                                                 tmp_path: Path) -> None:
    """A quarter of another suite version is not comparable: nothing judged is exit 2;
    with another vendor's trend judged it proceeds, and says which vendor was not."""
    old = tmp_path / "old"
    shutil.copytree(runs["a2"], old)
    for name in ("summary.json", "run.json"):  # both say so, as an older suite's run does
        doc = json.loads((old / name).read_text())
        doc["suite_version"] = "0"
        (old / name).write_text(json.dumps(doc))
    q = QUESTIONNAIRES / "forthright.yaml"
    out = tmp_path / "trend.pdf"
    result = CliRunner().invoke(cli, ["compare", f"{runs['a1']}={q}", f"{old}={q}",
                                      "--out", str(out), "--fail-on", "regression"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: --fail-on regression has nothing to judge")
    assert "'Steadystream Inference' (runs 1, 2): no key figure is comparable" in result.output
    assert "suite version 0 differs from" in result.output
    # B measured twice is judged (and steady); A's quarters are named as not judged
    e = QUESTIONNAIRES / "evasive.yaml"
    result = CliRunner().invoke(cli, [
        "compare", f"{runs['a1']}={q}", f"{old}={q}", f"{runs['b']}={e}", f"{runs['b']}={e}",
        "--out", str(out), "--fail-on", "regression"])
    assert result.exit_code == 0, result.output
    assert "not judged: 'Steadystream Inference': no key figure is comparable" in result.output
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["judged_trends"] == ["Apex Hyperscale AI"]
    assert list(data["not_judged"]) == ["Steadystream Inference"]
    assert "Not judged for regressions" in _text(out)


@pytest.mark.slow
def test_a_vendor_name_with_escape_sequences_reaches_no_terminal(
        runs: dict[str, Path], tmp_path: Path) -> None:
    """A questionnaire's vendor name written with YAML escapes (a window title, a clear
    screen): `compare` prints its regression line with the name cleaned, no ESC or BEL."""
    text = (QUESTIONNAIRES / "forthright.yaml").read_text()
    head, _, rest = text.partition("\nvendor:")
    q = tmp_path / "q.yaml"
    q.write_text(head + '\nvendor: "Acme\\e]0;owned\\a\\e[2J"\n' + rest.partition("\n")[2])
    out = tmp_path / "trend.pdf"
    result = CliRunner().invoke(cli, ["compare", f"{runs['a1']}={q}", f"{runs['a2']}={q}",
                                      "--out", str(out), "--fail-on", "regression"])
    assert result.exit_code == 1, result.output
    assert "regression: Acme" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
