"""`evalkit probe --dry-run`: the plan printed and nothing sent (no request reaches the
endpoint, no run directory), and the plan's options refused with exit 2 when they cannot
be planned (moved from tests/probe/plan/test_claims.py and
tests/probe/load/test_hostile_workload.py: the command's words and exit codes, no timing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.probe.plan.claims import CLIENT_STREAMS_PER_PROCESS_TLS
from tests.probe.load.test_hostile_workload import _trace
from tests.probe.plan.test_claims import CLAIMS, _questionnaire


def test_dry_run_sends_nothing(reference: Any, tmp_path: Path) -> None:
    """The plan is printed; the endpoint's truth log stays empty; no run dir."""
    srv = reference("gpu", mode="thread")
    q = _questionnaire(tmp_path, srv, CLAIMS)
    res = CliRunner().invoke(cli, ["probe", "--tag-requests",
                                   "--base-url", srv.base_url, "--model",
                                   srv.model, "--questionnaire", str(q), "--dry-run",
                                   "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert "plan: ramp levels 1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96" in res.stdout
    assert "dry run: nothing was sent" in res.stdout
    assert srv.truth() == []
    assert not (tmp_path / "run").exists()


def test_an_https_endpoint_is_planned_with_the_tls_ceiling(tmp_path: Path) -> None:
    """A claim at 240 streams fits one process over plain HTTP, not over HTTPS: the
    plan of an https:// run says so (the dry run sends nothing: no server needed)."""
    q = tmp_path / "q.yaml"
    q.write_text("schema: evalkit.questionnaire/1\nvendor: Acme\nmodel: m\n"
                 "Q1: {ttft_p90_ms: 900, at_concurrency: 240, source: production}\n")
    said = {}
    for scheme in ("http", "https"):
        res = CliRunner().invoke(cli, ["probe", "--base-url", f"{scheme}://127.0.0.1:9/v1",
                                       "--model", "m", "--questionnaire", str(q),
                                       "--dry-run", "--out", str(tmp_path / "r")])
        assert res.exit_code == 0, res.output
        said[scheme] = res.stdout
    assert "ceiling" not in said["http"]
    assert f"({CLIENT_STREAMS_PER_PROCESS_TLS} per process on a 2-core machine over " \
           "HTTPS)" in said["https"]


@pytest.mark.parametrize("args", [["--budget", "100"], ["--budget", "0", "--questionnaire"]])
def test_budget_needs_a_questionnaire_and_a_positive_count(args: list[str], tmp_path: Path) -> None:
    q = tmp_path / "q.yaml"
    q.write_text("schema: evalkit.questionnaire/1\n")
    argv = ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--dry-run",
            "--out", str(tmp_path / "r"), *args]
    if argv[-1] == "--questionnaire":
        argv.append(str(q))
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 2
    assert "--budget" in res.stderr


def test_the_cli_prints_the_sized_plan(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["probe", "--base-url", "http://127.0.0.1:9/v1",
                                   "--model", "m", "--out", str(tmp_path / "r"),
                                   "--levels", "1,4", "--interval-width", "10",
                                   "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "interval width 10 points: levels 1, 4 at least 141 requests" in res.output
    bad = CliRunner().invoke(cli, ["probe", "--base-url", "http://127.0.0.1:9/v1",
                                   "--model", "m", "--out", str(tmp_path / "r"),
                                   "--interval-width", "50", "--dry-run"])
    assert bad.exit_code == 2 and "between 0 and 50" in bad.output


def test_a_dry_run_of_a_trace_alone_names_no_ramp_levels(tmp_path: Path) -> None:
    """A new user's `--trace t.jsonl --phases connect,trace --dry-run` was told of ramp
    levels 1 to 64 that the run would never send."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    trace = _trace(tmp_path / "t.jsonl", 1000)
    base = ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--dry-run",
            "--out", str(tmp_path / "r"), "--trace", str(trace)]
    res = CliRunner().invoke(cli, [*base, "--phases", "connect,trace"])
    assert res.exit_code == 0, res.output
    assert "trace: 2 requests over 1.0 s" in res.stdout
    assert "dry run: phases connect, trace; nothing was sent" in res.stdout
    res = CliRunner().invoke(cli, [*base, "--phases", "connect,ramp,trace", "--levels", "1,2"])
    assert "dry run: levels 1, 2, phases connect, ramp, trace;" in res.stdout
