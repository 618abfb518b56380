"""`evalkit serve-reference`: help that explains everything, errors with exit code 2."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.reference import ReferenceServer
from evalkit.reference.params import load_profiles, param_specs
from tests.certificates import throwaway_certificate


def test_help_explains_every_profile_and_parameter() -> None:
    """Each profile's story and each parameter's option, meaning and unit are in --help."""
    result = CliRunner().invoke(cli, ["serve-reference", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for name, prof in load_profiles().items():
        assert f"{name} {prof.story}" in text
    for spec in param_specs().values():
        assert "--" + spec.name.replace("_", "-") in text
        shown = f'"{spec.default}"' if isinstance(spec.default, str) else spec.default
        assert f"[{spec.unit}; default {shown}]" in text
        assert " ".join(spec.help.split()) in text


def test_bad_parameters_are_user_errors() -> None:
    """Unknown names and bad values print `Error: …` and exit 2, no traceback."""
    runner = CliRunner()
    result = runner.invoke(cli, ["serve-reference", "--set", "warp_speed=9"])
    assert result.exit_code == 2
    assert "Error: unknown reference parameter 'warp_speed'" in result.output
    result = runner.invoke(cli, ["serve-reference", "--set", "fault_crlf=3"])
    assert result.exit_code == 2 and "probability" in result.output
    result = runner.invoke(cli, ["serve-reference", "--set", "max_batch"])
    assert result.exit_code == 2 and "PARAM=VALUE" in result.output


def test_serves_and_prints_its_url() -> None:
    """Started as a command, it prints its base URL and answers there with the options set."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from evalkit.cli import main; main()", "serve-reference",
         "--port", "0", "--profile", "queueing", "--max-batch", "3", "--set",
         "request_overhead_ms=0"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"\(queueing\): (http://127\.0\.0\.1:\d+/v1)", line)
        assert match, line
        url = match.group(1)
        for _ in range(200):
            try:
                models = httpx.get(url + "/models", timeout=2).json()
                break
            except httpx.TransportError:
                continue
        assert models["data"][0]["id"] == "evalkit-reference"
        state = httpx.get(url.removesuffix("/v1") + "/_reference/state").json()
        assert state["profile"] == "queueing"
        assert (state["params"]["max_batch"], state["params"]["request_overhead_ms"]) == (3, 0)
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


def test_tls_needs_both_files_and_names_a_missing_one(tmp_path: Path) -> None:
    """--tls-cert without --tls-key (or a file that is not there) is a user error, not
    uvicorn's traceback."""
    runner = CliRunner()
    result = runner.invoke(cli, ["serve-reference", "--tls-cert", str(tmp_path / "c.pem")])
    assert result.exit_code == 2 and "both --tls-cert and --tls-key" in result.output
    result = runner.invoke(cli, ["serve-reference", "--port", "0", "--tls-cert",
                                 str(tmp_path / "c.pem"), "--tls-key", str(tmp_path / "k.pem")])
    assert result.exit_code == 2, result.output
    assert "TLS certificate file" in result.output and "c.pem" in result.output


def test_serves_https_in_a_subprocess_when_given_a_certificate(tmp_path: Path) -> None:
    """`ReferenceServer(tls=...)`: the child serves HTTPS (its URL says so), verified
    against the certificate itself; plain HTTP to it is refused."""
    cert, key = throwaway_certificate(tmp_path, "IP:127.0.0.1")
    with ReferenceServer("gpu", tls=(cert, key)) as srv:
        assert srv.base_url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(cert))
        models = httpx.get(srv.base_url + "/models", verify=trust, timeout=5).json()
        assert models["data"][0]["id"] == "evalkit-reference"
        with pytest.raises(httpx.HTTPError):
            httpx.get(srv.base_url.replace("https", "http") + "/models", timeout=5)


def test_a_certificate_that_does_not_load_is_a_user_error(tmp_path: Path) -> None:
    """Files that are there but are no certificate and key (or not a pair) are named
    before anything is served, not a traceback from uvicorn once it serves."""
    cert, key = throwaway_certificate(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, other_key = throwaway_certificate(other)
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    runner = CliRunner()
    for c, k in ((tmp_path / "junk.pem", key), (cert, other_key)):
        result = runner.invoke(cli, ["serve-reference", "--port", "0", "--tls-cert", str(c),
                                     "--tls-key", str(k)])
        assert result.exit_code == 2, result.output
        assert "cannot serve HTTPS with" in result.output and "Traceback" not in result.output
