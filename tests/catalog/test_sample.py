"""`evalkit panel sample`: one light sample, written as a run and registered as a panel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.catalog.sample import Budget, default_out, sample_config
from evalkit.catalog.store import Catalog
from evalkit.cli import cli
from evalkit.errors import UsageError
from evalkit.probe.plan.settings import resolve_settings
from evalkit.records import RequestRecord
from evalkit.rundir.store import read_records
from tests.catalog.conftest import Panel


def test_budgets_read_requests_seconds_or_both() -> None:
    assert Budget.parse("20") == Budget(20, None)
    assert Budget.parse("90s") == Budget(None, 90.0)
    assert Budget.parse("20, 2m") == Budget(20, 120.0)
    assert Budget.parse(None) == Budget()
    for bad in ("lots", "3", "2.5", "20,900s"):
        with pytest.raises(UsageError):
            Budget.parse(bad)


def test_a_sample_is_the_panel_profile_at_the_concurrency_within_the_budget() -> None:
    s = resolve_settings(sample_config("http://x/v1", "m", "X", 4, Budget(20, 30.0)))
    assert s.phases == ("connect", "baseline", "ramp")
    assert s.ramp.levels == (4,) and s.ramp.level_duration_s == 30.0
    assert s.ramp.level_max_requests == 20 - 1 - s.baseline.requests
    with pytest.raises(UsageError):
        sample_config("http://x/v1", "m", "X", 0)


def test_by_default_a_sample_goes_beside_the_catalog(tmp_path: Path) -> None:
    out = default_out(tmp_path / "c.sqlite", "Acme Corp/EU")
    assert out.parent == tmp_path / "panel" / "Acme-Corp-EU"


def _records(out: Path) -> list[RequestRecord]:
    return read_records(out / "requests.jsonl")


@pytest.mark.slow
def test_concurrent_samples_are_all_registered_within_their_budget(panel: Panel) -> None:
    """Three `panel sample` processes at once, one catalog: three panel entries of vendor
    X, each a run directory of at most 12 requests, its level at concurrency 1."""
    for r in panel.results:
        assert r.returncode == 0, r.stderr
        assert "catalog entry" in r.stdout
    # (the package's other tests add reports of vendor X to this catalog)
    listed = CliRunner().invoke(cli, ["runs", "--vendor", "X", "--kind", "panel", "--json",
                                      "--catalog", str(panel.catalog)])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert sorted(r["path"] for r in rows) == sorted(str(o.resolve()) for o in panel.outs)
    # three samplers and three servers on a small machine may mark the client as the
    # bottleneck (degraded): still measured, still a sample
    assert {(r["kind"], r["state"]) for r in rows} == {("panel", "present")}
    assert {r["validity"] for r in rows} <= {"valid", "degraded"}
    for out in panel.outs:
        recs = _records(out)
        assert len(recs) <= 12
        assert {r.phase for r in recs} == {"connect", "baseline", "ramp"}
        assert {r.level for r in recs if r.phase == "ramp"} == {1}
    assert len(Catalog(panel.catalog).rows(kind="panel")) == 3


def test_an_endpoint_that_is_down_is_a_registered_invalid_sample(tmp_path: Path) -> None:
    """Port 9 of loopback refuses: the sample fails its connect gate (exit 2), and is
    still registered (the panel's coverage counts it); --questionnaire gives the level."""
    q = tmp_path / "q.yaml"
    q.write_text("schema: evalkit.questionnaire/1\nvendor: X\nQ2: {at_concurrency: 16}\n")
    out, catalog = tmp_path / "s", tmp_path / "c.sqlite"
    r = CliRunner().invoke(cli, ["panel", "sample", "--base-url", "http://127.0.0.1:9/v1",
                                 "--model", "m", "--vendor", "X", "--questionnaire", str(q),
                                 "--out", str(out), "--catalog", str(catalog)])
    assert r.exit_code == 2, r.output
    assert "recorded and registered" in r.output
    [row] = Catalog(catalog).rows(kind="panel")
    assert (row.entry.vendor, row.entry.status, row.entry.validity) == ("X", "failed",
                                                                       "invalid")
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["ramp"]["levels"] == [16]
