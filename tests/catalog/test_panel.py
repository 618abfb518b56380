"""`evalkit panel report`: three samples whose TTFTs differ, pooled from their records."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from evalkit.catalog.entries import run_entry
from evalkit.catalog.panel import parse_span, read_panel
from evalkit.catalog.store import Catalog, Entry
from evalkit.cli import cli
from evalkit.errors import UsageError
from evalkit.fmt import fmt_tokens_per_s, number
from evalkit.rundir.store import read_records
from tests.catalog.conftest import Panel


def _level_ttfts(out: Path) -> list[float]:
    return [r.ttft_s for r in read_records(out / "requests.jsonl")
            if r.phase == "ramp" and r.outcome == "ok" and r.ttft_s is not None]


@pytest.mark.slow
def test_the_report_gives_the_distribution_of_the_samples_records(panel: Panel,
                                                                  tmp_path: Path) -> None:
    """TTFT p50 of panel.json is the p50 of the three samples' pooled records (within
    5 ms), and the samples did differ: the overheads 0, 40 and 80 ms show in each's own
    p50, so a panel of one sample would have said something else."""
    pdf = tmp_path / "panel.pdf"
    r = CliRunner().invoke(cli, ["panel", "report", "--vendor", "X", "--window", "1d",
                                 "--out", str(pdf), "--catalog", str(panel.catalog)])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "panel.json").read_text())
    per_sample = [_level_ttfts(o) for o in panel.outs]
    pooled = [t for ts in per_sample for t in ts]
    assert doc["samples"] == 3 and doc["ttft_s"]["n"] == len(pooled)
    assert abs(doc["ttft_s"]["p50"] - float(np.percentile(pooled, 50))) < 0.005
    medians = [float(np.median(ts)) for ts in per_sample]
    assert medians[1] - medians[0] > 0.025 and medians[2] - medians[1] > 0.025
    for key in ("p50", "p90", "p99"):
        assert doc["ttft_s"][f"{key}_ci"][0] is not None
    assert doc["stream_tokens_per_s"]["n"] == len(pooled)
    assert doc["failure_rate"]["failed"] == 0
    assert doc["coverage"]["samples"] == 3 and doc["coverage"]["pooled"] == 3
    assert sum(h["ttft_s"]["n"] for h in doc["by_hour"]) == len(pooled)
    import pypdf

    text = " ".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
    assert "our production panel" in text and "By hour of day" in text
    assert f"n={len(pooled)}" in text


@pytest.mark.slow
def test_a_deleted_sample_is_counted_as_missing(panel: Panel, tmp_path: Path) -> None:
    catalog = tmp_path / "c.sqlite"
    shutil.copy(panel.catalog, catalog)
    gone = Path(shutil.copytree(panel.outs[0], tmp_path / "gone"))
    Catalog(catalog).register(run_entry(gone, "panel"))
    shutil.rmtree(gone)
    doc = read_panel("X", window=parse_span("1d"), catalog=catalog)
    cov = doc["coverage"]
    assert (cov["samples"], cov["pooled"], cov["missing"]) == (4, 3, 1)
    [lost] = [s for s in cov["list"] if not s["pooled"]]
    assert lost["state"] == "missing" and "is gone" in lost["excluded"]


def test_a_window_with_no_samples_says_how_to_start_one(tmp_path: Path) -> None:
    catalog = tmp_path / "c.sqlite"
    r = CliRunner().invoke(cli, ["panel", "report", "--vendor", "Nobody", "--out",
                                 str(tmp_path / "p.pdf"), "--catalog", str(catalog)])
    assert r.exit_code == 2 and "no catalog at" in r.output
    Catalog(catalog).register(Entry(kind="probe", path="/elsewhere", vendor="Nobody"))
    r = CliRunner().invoke(cli, ["panel", "report", "--vendor", "Nobody", "--out",
                                 str(tmp_path / "p.pdf"), "--catalog", str(catalog)])
    assert r.exit_code == 0, r.output
    assert "0 samples" in r.stdout and "start one with `evalkit panel sample`" in r.stderr
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["samples"] == 0 and doc["ttft_s"]["p50"] is None


def test_spans() -> None:
    assert parse_span("7d").days == 7 and parse_span("72h").total_seconds() == 72 * 3600
    assert parse_span("1w").days == 7
    with pytest.raises(UsageError):
        parse_span("soon")


def _questionnaire(path: Path, p50: float) -> Path:
    today = datetime.now(UTC).date().isoformat()
    path.write_text(f"""schema: evalkit.questionnaire/1
vendor: X
model: evalkit-reference
date: {today}
Q6:
  output_tokens_per_s:
    p50: {p50:.1f}
  window: {today} to {today}
  source: production
""")
    return path


@pytest.mark.slow
def test_the_scorecard_sets_our_panel_beside_the_vendors(panel: Panel, tmp_path: Path) -> None:
    """A vendor panel that agrees with ours (its median at ours) is verified by our panel
    alone (no run given); one at 3× ours is unreconciled, the reason giving both. The
    tiny panel's interval is wide (tens of requests, a loaded machine), so the agreeing
    case is judged with a wide band (throughput_rel 0.9), the other with the default."""
    ours = read_panel("X", "evalkit-reference", parse_span("1d"), catalog=panel.catalog)
    mine = ours["stream_tokens_per_s"]["p50"]
    wide = tmp_path / "wide.yaml"
    wide.write_text("throughput_rel: 0.9\n")
    for p50, status, tol in ((mine, "ok", ["--tolerances", str(wide)]),
                             (3 * mine, "unreconciled", [])):
        pdf = tmp_path / f"x-{status}.pdf"
        r = CliRunner().invoke(cli, ["report", "--questionnaire",
                                     str(_questionnaire(tmp_path / f"{status}.yaml", p50)),
                                     "--out", str(pdf), "--catalog", str(panel.catalog), *tol])
        assert r.exit_code == 0, r.output
        q6 = json.loads(pdf.with_suffix(".json").read_text())["questions"]["Q6"]
        assert q6["status"] == status, q6["reason"]
        assert q6["claimed"]["output_tokens_per_s"]["p50"] == pytest.approx(p50, abs=0.05)
        measured = q6["measured"]["our_panel"]
        assert measured["samples"] == 3 and measured["pooled"] == 3
        assert measured["stream_tokens_per_s"]["p50"] == pytest.approx(mine)
        assert "our own panel (3 of 3 samples pooled" in q6["reason"]
        if status == "unreconciled":
            # both figures: the vendor's median and ours
            assert f"the panel's median {number(round(p50, 1))} tokens/s is 3.0× above the " \
                   f"{fmt_tokens_per_s(mine)} per stream (p50) of our own panel" in q6["reason"]
        import pypdf

        text = " ".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
        assert "our own panel" in text
        # the PDF carries the panel it was judged beside: it verifies on its own evidence
        from evalkit.verify.check import verify_pdf

        checked = verify_pdf(pdf)
        assert checked.verified, [d.what for d in checked.differences]


def test_without_samples_the_scorecard_says_how_to_start_a_panel(tmp_path: Path) -> None:
    pdf = tmp_path / "x.pdf"
    r = CliRunner().invoke(cli, ["report", "--questionnaire",
                                 str(_questionnaire(tmp_path / "q.yaml", 50.0)),
                                 "--out", str(pdf), "--catalog", str(tmp_path / "none.sqlite")])
    assert r.exit_code == 0, r.output
    q6 = json.loads(pdf.with_suffix(".json").read_text())["questions"]["Q6"]
    assert q6["status"] == "unverified"
    assert "Our own panel: the catalog holds no sample of ours" in q6["reason"]
    assert "evalkit panel sample --base-url URL --model evalkit-reference --vendor" in (
        q6["reason"])
