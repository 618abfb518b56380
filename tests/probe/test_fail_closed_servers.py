"""Servers that are not a working OpenAI-compatible endpoint: the probe stops at connect.

Two real HTTP servers on loopback, each tiny: Python's own `http.server` (a file server:
GET /v1/models is a 404, POST is a 501), and one that lists the model but answers every
POST with a bare 400 (llama.cpp's server does exactly that to a request id it dislikes).
`run_probe` must raise EndpointError naming the HTTP status, and measure nothing more.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from evalkit.errors import EndpointError
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.rundir.store import read_run_files
from tests.engines.process import free_port, stop_process, wait_answering

MODEL = "some-model"
#: the suite after connect would take seconds here; a gate stops it at once
CONFIG = {"timeout_s": 10, "baseline": {"requests": 2}, "connect": {"rtt_samples": 2}}


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[str]:
    """`python -m http.server` on loopback, serving an empty directory: its base URL."""
    port = free_port()
    root = tmp_path / "www"
    root.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                             "127.0.0.1", "--directory", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_answering(f"http://127.0.0.1:{port}/", proc, 15.0, name="http.server")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(proc)


class _Bare400(BaseHTTPRequestHandler):
    """Lists MODEL; answers every POST 400 with an empty body."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._send(404, b"")
            return
        self._send(200, json.dumps({"object": "list", "data": [
            {"id": MODEL, "object": "model"}]}).encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._send(400, b"")

    def _send(self, status: int, body: bytes, ctype: str | None = None) -> None:
        self.send_response(status)
        if ctype:
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def bare_400_server() -> Iterator[str]:
    """A threaded server on a free loopback port: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bare400)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _probe_fails(base_url: str, out: Path) -> EndpointError:
    with pytest.raises(EndpointError) as info:
        run_probe(ProbeConfig(base_url, MODEL, phases=("connect", "baseline"),
                              overrides=CONFIG), out)
    meta, records = read_run_files(out)
    assert meta["status"] == "failed" and meta["error"]
    assert {r.phase for r in records} <= {"connect"}  # nothing measured past the gate
    return info.value


@pytest.mark.timeout(60)
def test_python_http_server_is_not_an_endpoint(file_server: str, tmp_path: Path) -> None:
    """A file server: no model list (404, tolerated), and POST is 501: connect fails."""
    assert httpx.get(f"{file_server}/models", timeout=5).status_code == 404
    err = _probe_fails(file_server, tmp_path / "run")
    assert re.search(r"\b501\b", str(err)), str(err)


@pytest.mark.timeout(60)
def test_bare_400_to_every_post_fails_connect(bare_400_server: str, tmp_path: Path) -> None:
    """The model is listed, but every stream is a 400 with no body: connect fails."""
    err = _probe_fails(bare_400_server, tmp_path / "run")
    assert re.search(r"\b400\b", str(err)), str(err)
