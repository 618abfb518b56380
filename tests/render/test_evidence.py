"""What a scorecard PDF attaches, without rendering one: the records gzip'd exactly and
deterministically, the cap above which only their digest and their place are kept, and
a requests.jsonl that changed after it was read refused."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evalkit.errors import RunDirError
from evalkit.render.evidence import MANIFEST_FILE, RECORDS_FILE, evidence_files, gzip_records
from evalkit.rundir.run import open_run

RUN_DIR = Path(__file__).resolve().parents[1] / "data" / "report_run"
QUESTIONNAIRE = ("questionnaire.yaml", b"vendor: Acme\n")


def test_the_records_are_attached_exactly_and_deterministically() -> None:
    run = open_run(RUN_DIR)
    first = evidence_files(run, b"{}\n", QUESTIONNAIRE, source_name="acme.yaml")
    again = evidence_files(open_run(RUN_DIR), b"{}\n", QUESTIONNAIRE, source_name="acme.yaml")
    assert first.files == again.files  # byte for byte: mtime 0, no name in the header
    raw = (RUN_DIR / "requests.jsonl").read_bytes()
    assert gzip.decompress(first.files[RECORDS_FILE]) == raw
    assert len(first.files[RECORDS_FILE]) < len(raw) / 4
    manifest = json.loads(first.files[MANIFEST_FILE])
    assert manifest == first.manifest
    assert manifest["schema"] == "evalkit.manifest/1" and manifest["suite_version"] == "1"
    assert list(manifest["files"]) == ["run.json", "summary.json", RECORDS_FILE,
                                       "scorecard.json", "questionnaire.yaml"]
    assert manifest["files"]["questionnaire.yaml"]["source_name"] == "acme.yaml"
    assert manifest["records"] == {
        "name": "requests.jsonl", "sha256": hashlib.sha256(raw).hexdigest(),
        "bytes": len(raw), "records": run.stats.n, "attached_as": RECORDS_FILE,
        "lives_in": None}
    assert first.records_note is None


def test_over_the_cap_only_the_digest_and_where_they_live() -> None:
    run = open_run(RUN_DIR)
    out = evidence_files(run, b"{}\n", None, cap=1000)
    assert RECORDS_FILE not in out.files and RECORDS_FILE not in out.manifest["files"]
    rec = out.manifest["records"]
    assert rec["attached_as"] is None and rec["lives_in"] == str(RUN_DIR)
    assert out.records_note is not None
    assert f"They live in {RUN_DIR}" in out.records_note
    assert rec["sha256"] in out.records_note and "--run" in out.records_note


def test_records_changed_since_they_were_read_are_refused(tmp_path: Path) -> None:
    run_dir = Path(shutil.copytree(RUN_DIR, tmp_path / "run"))
    run = open_run(run_dir)
    path = run_dir / "requests.jsonl"
    data = bytearray(path.read_bytes())
    data[100] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(RunDirError, match="changed while the report was made"):
        gzip_records(run)


def test_no_run_no_records() -> None:
    out = evidence_files(None, b"{}\n", QUESTIONNAIRE)
    assert sorted(out.files) == [MANIFEST_FILE, "questionnaire.yaml", "scorecard.json"]
    assert out.manifest["records"] is None
