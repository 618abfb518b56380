"""`evalkit panel report`: three samples whose TTFTs differ, pooled from their records."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from evalkit.catalog.entries import run_entry
from evalkit.catalog.panel import parse_span, read_panel
from evalkit.catalog.store import Catalog, Entry
from evalkit.cli import cli
from evalkit.errors import UsageError
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
