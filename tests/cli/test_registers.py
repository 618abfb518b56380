"""Each command that writes a run or a scorecard indexes it in the catalog: `import`,
`probe` (however its run ended: a failed connect gate, exit 2, is indexed too) and
`report`; a catalog that cannot be written is a warning on stderr and exit 0, never the
command's failure (moved from tests/catalog/test_entries.py, which tests the entries)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalkit.catalog.entries import state
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog
from evalkit.cli import cli
from tests.catalog.test_entries import RUN


def test_import_and_a_failing_catalog_still_write_the_run(tmp_path: Path) -> None:
    """`evalkit import` registers its run; with a catalog that cannot be written it still
    exits 0 and says so on stderr."""
    src = Path(__file__).resolve().parents[1] / "data/peers/aiperf-0.13.0-c2/x"
    out = tmp_path / "imp"
    cat = tmp_path / "c.sqlite"
    r = CliRunner().invoke(cli, ["import", "aiperf", str(src.parent), "--out", str(out),
                                 "--catalog", str(cat)])
    assert r.exit_code == 0, r.output
    rows = Catalog(cat).rows()
    assert [(x.entry.kind, x.entry.path) for x in rows] == [("import", str(out.resolve()))]
    bad = tmp_path / "f"
    bad.write_text("")
    r = CliRunner().invoke(cli, ["import", "aiperf", str(src.parent), "--out",
                                 str(tmp_path / "imp2"), "--catalog", str(bad / "c.sqlite")])
    assert r.exit_code == 0, r.output
    assert "warning: not registered in the catalog" in r.stderr


def test_a_probe_registers_its_run(tmp_path: Path, reference: Any) -> None:
    srv = reference("gpu", mode="thread", decode_base_ms=1, request_overhead_ms=0)
    """However it ended: a probe whose connect gate failed (exit 2) is indexed too."""
    args = ["--model", srv.model, "--phases", "connect,baseline", "--quiet", "--vendor",
            "Acme", "--output-tokens", "8"]
    r = CliRunner().invoke(cli, ["probe", "--base-url", srv.base_url + "/nowhere", "--out",
                                 str(tmp_path / "bad"), *args])
    assert r.exit_code == 2
    out = tmp_path / "p"
    r = CliRunner().invoke(cli, ["probe", "--base-url", srv.base_url, "--out", str(out), *args])
    assert r.exit_code == 0, r.output
    failed, row = Catalog(catalog_path()).rows(vendor="Acme")
    assert (failed.entry.status, failed.entry.validity) == ("failed", "invalid")
    e = row.entry
    assert (e.kind, e.model, e.path, e.status) == ("probe", srv.model, str(out.resolve()),
                                                    "complete")
    assert e.endpoint == srv.base_url and e.validity in ("valid", "degraded")
    assert e.figures["requests"] == len((out / "requests.jsonl").read_text().splitlines())


def test_a_report_registers_its_scorecard(tmp_path: Path) -> None:
    q = Path(__file__).resolve().parents[2] / "questionnaires" / "forthright.yaml"
    pdf = tmp_path / "acme.pdf"
    r = CliRunner().invoke(cli, ["report", "--run", str(RUN), "--questionnaire", str(q),
                                 "--out", str(pdf)])
    assert r.exit_code == 0, r.output
    [row] = Catalog(catalog_path()).rows(kind="report")
    card = json.loads(pdf.with_suffix(".json").read_text())
    e = row.entry
    assert (e.vendor, e.path, e.source) == (card["vendor"], str(pdf.resolve()),
                                            str(RUN.resolve()))
    assert e.figures["statuses"] == {k: v["status"] for k, v in card["questions"].items()}
    assert set(e.files) == {"acme.pdf", "acme.json"} and state(e)[0] == "present"
