"""`evalkit probe` refusing what it cannot run: an unknown model, a closed port, a 401 and
a key that cannot be sent or sits in the base URL are `Error:` and exit 2, naming what to
fix and never the key (moved from tests/probe/run/test_connect.py, whose gate they drive:
none of them times a server)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.probe.run.test_connect import _Unauthorised


def test_cli_exit_code_2(reference: Any, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe command turns an unknown model or a closed port into `Error:` + exit 2."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    srv = reference("gpu", mode="thread")
    result = CliRunner().invoke(cli, ["probe", "--base-url", srv.base_url, "--model",
                                      "gpt-nope", "--out", str(tmp_path / "a"), "--quiet"])
    assert result.exit_code == 2
    assert "Error: model 'gpt-nope' is not served" in result.output
    assert srv.model in result.output  # says what it does serve
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    result = CliRunner().invoke(cli, ["probe", "--base-url", closed, "--model", "m",
                                      "--out", str(tmp_path / "b"), "--quiet"])
    assert result.exit_code == 2
    assert f"Error: cannot reach {closed}" in result.output
    assert "Traceback" not in result.output and "proxy" not in result.output
    # a user behind a proxy learns why: evalkit uses none
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    result = CliRunner().invoke(cli, ["probe", "--base-url", closed, "--model", "m",
                                      "--out", str(tmp_path / "c"), "--quiet"])
    assert result.exit_code == 2
    assert "HTTPS_PROXY is set, but evalkit connects straight to the endpoint" in \
        result.output


def test_401_names_the_variable_not_the_key(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """A 401 says which variable to fix, exit code 2, and never prints the key."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    secret = "sk-test-THIS-MUST-NOT-LEAK-1234"
    monkeypatch.setenv("VENDOR_KEY", secret)
    with _Unauthorised() as srv:
        result = CliRunner().invoke(cli, [
            "probe", "--base-url", srv.url, "--model", "m", "--out", str(tmp_path / "r"),
            "--api-key-env", "VENDOR_KEY", "--quiet"])
    assert result.exit_code == 2
    assert "401" in result.output and "$VENDOR_KEY" in result.output
    assert secret not in result.output
    for f in (tmp_path / "r").iterdir():  # text and binary (requests.parquet) alike
        assert secret.encode() not in f.read_bytes()


def test_an_unsendable_key_is_a_usage_error_before_any_run(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """A key pasted with a smart quote fails before anything starts (it used to raise
    UnicodeEncodeError inside the first send): exit 2, naming the variable, never the
    key, and no run directory."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    secret = "sk-test-\u201cPASTED-1234\u201d"
    monkeypatch.setenv("VENDOR_KEY", secret)
    result = CliRunner().invoke(cli, [
        "probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
        "--out", str(tmp_path / "r"), "--api-key-env", "VENDOR_KEY", "--quiet"])
    assert result.exit_code == 2, result.output
    assert "$VENDOR_KEY must be printable ASCII" in result.output
    assert "PASTED" not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()
    # with a credential header of its own the key is never sent: a stale one in the
    # environment stops nothing (the run goes on to the unreachable endpoint)
    result = CliRunner().invoke(cli, [
        "probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
        "--out", str(tmp_path / "h"), "--api-key-env", "VENDOR_KEY", "--quiet",
        "--header", "Authorization: Bearer ok-1234"])
    assert result.exit_code == 2 and "cannot reach" in result.output, result.output
    assert "printable" not in result.output


@pytest.mark.parametrize("url", [
    "https://fn.example/api/v1?code=SECRET-1234", "https://h.example/v1?x-api-key=SECRET-1234",
    "https://user:SECRET-1234@h.example/v1", "https://h.example/v1#SECRET-1234"])
def test_a_key_in_the_base_url_is_a_usage_error_before_any_run(url: str, tmp_path: Path) -> None:
    """run.json keeps the base URL, and a query would be sent inside every request's
    path: a key in the URL is refused before a run directory exists, never shown."""
    from click.testing import CliRunner

    from evalkit.cli import cli

    result = CliRunner().invoke(cli, ["probe", "--base-url", url, "--model", "m",
                                      "--out", str(tmp_path / "r"), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "--base-url must not carry a query" in result.output
    assert "SECRET" not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()
