"""What the catalog records of a run directory, and a run that has gone or changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from evalkit.catalog.entries import public_endpoint, register_quietly, run_entry, state
from evalkit.catalog.store import Catalog
from evalkit.cli import cli

RUN = Path(__file__).resolve().parents[1] / "data" / "report_run"


def _copy(tmp_path: Path, name: str = "run") -> Path:
    return Path(shutil.copytree(RUN, tmp_path / name))


def test_a_run_entry_carries_its_target_times_validity_and_digests(tmp_path: Path) -> None:
    run = _copy(tmp_path)
    e = run_entry(run, "probe", vendor="Acme")
    doc = json.loads((RUN / "run.json").read_text())
    assert (e.vendor, e.model, e.kind) == ("Acme", doc["target"]["model"], "probe")
    assert e.started == "2026-11-30T07:00:00+00:00" and e.validity == "valid"
    assert e.suite_version == "1" and e.figures["requests"] == 246
    assert e.figures["baseline_ttft_p50_s"] == 0.1975115
    assert set(e.files) == {"run.json", "summary.json", "requests.jsonl"}
    import hashlib

    assert e.files["summary.json"]["sha256"] == hashlib.sha256(
        (RUN / "summary.json").read_bytes()).hexdigest()
    assert state(e) == ("present", "")


def test_a_deleted_or_edited_run_is_reported_not_dropped(tmp_path: Path) -> None:
    kept, gone, edited, touched = (_copy(tmp_path, n) for n in ("k", "g", "e", "t"))
    cat = Catalog(tmp_path / "c.sqlite")
    for run in (kept, gone, edited, touched):
        cat.register(run_entry(run, "probe", vendor="Acme"))
    shutil.rmtree(gone)
    with (edited / "summary.json").open("a") as fh:
        fh.write(" ")
    (touched / "run.json").touch()  # a new time, the same bytes: not an edit
    import os

    os.utime(touched / "run.json", ns=(1, 1))
    states = {Path(r.entry.path).name: state(r.entry)[0] for r in cat.rows()}
    assert states == {"k": "present", "g": "missing", "e": "edited", "t": "present"}
    result = CliRunner().invoke(cli, ["runs", "--json", "--catalog", str(cat.path)])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [(Path(r["path"]).name, r["state"]) for r in listed] == [
        ("k", "present"), ("g", "missing"), ("e", "edited"), ("t", "present")]
    assert "summary.json changed" in listed[2]["state_reason"]
    for r in listed:
        assert {"vendor", "model", "path", "kind", "started", "validity"} <= set(r)
    table = CliRunner().invoke(cli, ["runs", "--catalog", str(cat.path)])
    assert table.exit_code == 0
    assert "missing" in table.stdout and "edited" in table.stdout
    assert "note: 2 is missing" in table.stderr
    shown = CliRunner().invoke(cli, ["runs", "show", "3", "--catalog", str(cat.path)])
    assert shown.exit_code == 0 and "state: edited" in shown.stdout
    assert "sha256" in shown.stdout
    missing = CliRunner().invoke(cli, ["runs", "show", "9", "--catalog", str(cat.path)])
    assert missing.exit_code == 2 and "no catalog entry 9" in missing.output


def test_endpoints_lose_their_credentials() -> None:
    assert public_endpoint("https://user:pw@api.x.com:8443/v1?api-key=s3cret#f") == (
        "https://api.x.com:8443/v1")
    assert public_endpoint("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert public_endpoint(None) is None


def test_a_catalog_error_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")  # the catalog's folder is a file: sqlite cannot open it
    said: list[str] = []
    assert register_quietly(blocker / "c.sqlite", lambda: run_entry(RUN, "probe"),
                            said.append) is None
    assert said and said[0].startswith("warning: not registered in the catalog")


def test_a_hand_edited_run_lists_what_its_typed_reading_holds(tmp_path: Path) -> None:
    """run.json and summary.json are read as `RunMeta` and `Summary`: a field of the wrong
    type is absent, never a crash or a value; a validity the summary does not state as one
    lists `unknown` (never the text written there), and a run without a summary `invalid`."""
    from evalkit.catalog.pick import run_identity

    run = _copy(tmp_path)
    doc = json.loads((run / "run.json").read_text())
    doc.update(vendor=7, target={"model": 3, "base_url": ["x"]}, started_at=12, status=None)
    (run / "run.json").write_text(json.dumps(doc))
    summary = json.loads((run / "summary.json").read_text())
    summary.update(requests="246", baseline={"ttft_s": {"p50": "0.2"}},
                   validity={"status": "fine"})
    (run / "summary.json").write_text(json.dumps(summary))
    e = run_entry(run, "probe")
    assert (e.vendor, e.model, e.endpoint, e.started, e.status) == (None,) * 5
    assert e.validity == "unknown" and e.figures["requests"] is None
    assert e.figures["baseline_ttft_p50_s"] is None
    assert e.figures["max_sustained_concurrency"] == 8  # the rest of the summary still reads
    assert (run_identity(run).vendor, run_identity(run).model) == (None, None)
    (run / "summary.json").unlink()
    assert run_entry(run, "probe").validity == "invalid"
