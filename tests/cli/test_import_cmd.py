"""`evalkit import`: what it says it imported, a peer tool's definition that differs named
on stderr, an output folder refused unless --force, and the wrong tool's file an `Error:`
with exit 2 (moved from tests/rundir/test_importers.py and test_import_vllm.py, which
test the importers themselves)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import UsageError
from evalkit.rundir.importers.run import import_run
from tests.rundir.test_import_vllm import VLLM
from tests.rundir.test_importers import AIPERF


def test_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["import", "aiperf", str(AIPERF), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "imported 10 requests from AIPerf 0.13.0 (levels 2)" in res.output
    again = CliRunner().invoke(cli, ["import", "aiperf", str(AIPERF), "--out", str(out)])
    assert again.exit_code == 2 and "is not empty" in again.stderr
    assert CliRunner().invoke(cli, ["import", "aiperf", str(AIPERF), "--out", str(out),
                                    "--force"]).exit_code == 0
    bad = CliRunner().invoke(cli, ["import", "guidellm", str(AIPERF / "profile_export.jsonl"),
                                   "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and bad.stderr.startswith("Error: ")
    assert "profile_export.jsonl" in bad.stderr and "guidellm" in bad.stderr
    with pytest.raises(UsageError):
        import_run("vllm-bench", AIPERF, tmp_path / "y")


def test_the_command_line_names_the_difference(tmp_path: Path) -> None:
    one = sorted(VLLM.glob("*.json"))[0]
    res = CliRunner().invoke(cli, ["import", "vllm", str(one), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "imported 3 requests from vllm bench serve (version not recorded) (levels 1)" \
        in res.output
    assert "note: TTFT is vllm bench serve's, not evalkit's" in res.stderr
