"""`--otlp-endpoint` on the command line: a collector URL carrying a credential, or the
OpenTelemetry SDK missing, stops `evalkit probe` before anything is sent or written (exit
2, naming the variable to use instead, never the secret); a collector named only by the
environment costs a warning (moved from tests/rundir/test_otlp.py and
test_otlp_hostile.py, which test the export itself)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli


def test_a_bad_endpoint_stops_the_probe_before_it_sends(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model",
                                 "m", "--out", str(tmp_path / "x"), "--otlp-endpoint",
                                 "http://me:secret@c:4318"])
    assert r.exit_code == 2 and "OTEL_EXPORTER_OTLP_HEADERS" in r.stderr
    assert "secret" not in r.output and not (tmp_path / "x").exists()


@pytest.mark.parametrize(("flag", "code"), [(True, 2), (False, 0)])
def test_without_the_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         flag: bool, code: int) -> None:
    """The SDK not installed (an import that fails, as it does without the extra):
    --otlp-endpoint is refused with the install line; a variable set for other
    programs only costs a warning, and the probe goes on."""
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    r = CliRunner().invoke(cli, ["probe", "--base-url", "http://127.0.0.1:9/v1",
                                 "--model", "m", "--out", str(tmp_path / "x"), "--dry-run",
                                 *(["--otlp-endpoint", "http://127.0.0.1:9"] if flag
                                   else [])])
    assert r.exit_code == code, r.output
    assert "pip install 'evalkit[otlp]'" in r.stderr
    assert ("nothing will be sent" in r.stderr) is not flag


def test_a_probe_with_a_query_token_stops_before_it_writes(tmp_path: Path) -> None:
    """Refused before the run: run.json (whose command line a report prints) is never
    written with the token in it."""
    r = CliRunner().invoke(cli, ["probe", "--base-url", "http://127.0.0.1:9/v1", "--model",
                                 "m", "--out", str(tmp_path / "x"), "--otlp-endpoint",
                                 "http://c:4318/?x-api-key=hunter2hunter2"])
    assert r.exit_code == 2 and "OTEL_EXPORTER_OTLP_HEADERS" in r.stderr
    assert "hunter2" not in r.output and not (tmp_path / "x").exists()
