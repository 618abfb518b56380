"""`compare` from the catalog: a vendor's runs since a date, and the quarterly gate's
"last valid evaluation of this vendor and model" without a path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.catalog.entries import run_entry
from evalkit.catalog.pick import last_valid, vendor_runs
from evalkit.catalog.store import Catalog
from evalkit.cli import cli

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"


def _quarter(tmp_path: Path, name: str, started: str, vendor: str = "Acme",
             validity: str = "valid") -> Path:
    out = Path(shutil.copytree(RUN, tmp_path / name))
    run = json.loads((out / "run.json").read_text())
    run.update(started_at=started, vendor=vendor)
    (out / "run.json").write_text(json.dumps(run))
    if validity != "valid":
        summary = json.loads((out / "summary.json").read_text())
        summary["validity"]["status"] = validity
        (out / "summary.json").write_text(json.dumps(summary))
    return out


@pytest.fixture
def quarters(tmp_path: Path) -> tuple[Path, list[Path]]:
    catalog = tmp_path / "c.sqlite"
    runs = [_quarter(tmp_path, "q2", "2026-04-02T07:00:00Z"),
            _quarter(tmp_path, "q3", "2026-07-02T07:00:00Z"),
            _quarter(tmp_path, "q3b", "2026-08-02T07:00:00Z", validity="invalid"),
            _quarter(tmp_path, "q4", "2026-10-02T07:00:00Z"),
            _quarter(tmp_path, "other", "2026-09-02T07:00:00Z", vendor="Other")]
    for r in runs:
        Catalog(catalog).register(run_entry(r, "probe"))
    return catalog, runs


def test_a_vendors_runs_since_a_date_and_what_was_left_out(
        quarters: tuple[Path, list[Path]]) -> None:
    catalog, runs = quarters
    shutil.rmtree(runs[1])
    paths, left = vendor_runs("Acme", since="2026-05-01T00:00:00+00:00", catalog=catalog)
    assert paths == [runs[2].resolve(), runs[3].resolve()]
    assert len(left) == 1 and "missing" in left[0] and "2026-07-02" in left[0]


def test_the_last_valid_evaluation_before_a_run(quarters: tuple[Path, list[Path]]) -> None:
    catalog, runs = quarters
    model = json.loads((RUN / "run.json").read_text())["target"]["model"]
    last = last_valid(runs[3], "Acme", model, catalog)
    assert last is not None and Path(last.entry.path) == runs[1].resolve()  # q3b is invalid
    assert last_valid(runs[0], "Acme", model, catalog) is None
    assert last_valid(runs[3], "Acme", "another-model", catalog) is None


@pytest.mark.slow
def test_the_gate_reads_the_last_evaluation_and_never_passes_without_one(
        quarters: tuple[Path, list[Path]], tmp_path: Path) -> None:
    catalog, runs = quarters
    r = CliRunner().invoke(cli, ["compare", str(runs[3]), "--fail-on", "regression",
                                 "--out", str(tmp_path / "gate.pdf"), "--catalog",
                                 str(catalog)])
    assert r.exit_code == 0, r.output  # the same figures as the last valid: no regression
    assert "against the last valid text evaluation of Acme: catalog entry 2" in r.stdout
    doc = json.loads((tmp_path / "gate.json").read_text())
    assert len(doc["runs"]) == 2 and doc["trends"]
    r = CliRunner().invoke(cli, ["compare", str(runs[0]), "--fail-on", "regression",
                                 "--out", str(tmp_path / "g0.pdf"), "--catalog", str(catalog)])
    assert r.exit_code == 2
    assert "no earlier valid text evaluation (text streams) of 'Acme'" in r.output
    assert not (tmp_path / "g0.pdf").exists()


@pytest.mark.slow
def test_compare_picks_a_vendors_runs_from_the_catalog(
        quarters: tuple[Path, list[Path]], tmp_path: Path) -> None:
    catalog, _ = quarters
    r = CliRunner().invoke(cli, ["compare", "--vendor", "Acme", "--since", "2026-06-01",
                                 "--out", str(tmp_path / "drift.pdf"), "--catalog",
                                 str(catalog)])
    assert r.exit_code == 0, r.output
    assert "from the catalog: 3 run(s) of Acme" in r.stdout
    doc = json.loads((tmp_path / "drift.json").read_text())
    assert [run["started"][:10] for run in doc["runs"]] == [
        "2026-07-02", "2026-08-02", "2026-10-02"]
    assert list(doc["trends"]) == ["Acme"]
    r = CliRunner().invoke(cli, ["compare", "--out", str(tmp_path / "x.pdf")])
    assert r.exit_code == 2 and "--vendor NAME" in r.output
