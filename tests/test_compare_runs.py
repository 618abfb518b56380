"""`evalkit compare` on real runs against reference profiles, read back from the PDF."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pypdf import PdfReader

from evalkit.cli import cli
from evalkit.reference import ReferenceServer
from evalkit.suite import ProbeConfig, run_probe

QUESTIONNAIRES = Path(__file__).resolve().parent.parent / "questionnaires"
#: a short suite: enough levels for a ramp, short enough for CI
SHORT = {"baseline": {"requests": 3}, "ramp": {"levels": [1, 2, 4], "level_duration_s": 1.0}}


def _probe(out: Path, profile: str, **overrides: float) -> Path:
    with ReferenceServer(profile, overrides) as srv:
        config = ProbeConfig(base_url=srv.base_url, model=srv.model,
                             phases=("connect", "baseline", "ramp"), output_tokens=16,
                             overrides=SHORT)
        result = run_probe(config, out)
    assert result.status == "complete"
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Vendor A this quarter and next (decode made 2.5x slower), and vendor B."""
    base = tmp_path_factory.mktemp("compare")
    return {"a1": _probe(base / "a1", "gpu"),
            "a2": _probe(base / "a2", "gpu", decode_base_ms=30.0),
            "b": _probe(base / "b", "queueing")}


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
    """Two vendors: no trend, each row's best marked, the queueing one's TTFT worse."""
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
    assert sum(ttft90["best"]) == 1
    assert data["statuses"]["Q4"] == ["ok", "unanswered"]
    pdf = PdfReader(out)
    text = _text(out)
    assert "Steadystream Inference" in text and "Apex Hyperscale AI" in text
    assert "Key figures" in text and "Use-case fit" in text
    assert len(pdf.pages) >= 2


def test_compare_rejects_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["compare", str(tmp_path), "--out",
                                      str(tmp_path / "x.pdf")])
    assert result.exit_code == 2
    assert "is this a run directory?" in result.output
