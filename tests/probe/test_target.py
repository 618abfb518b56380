"""The target and its HTTP client (`evalkit.probe.target`): TLS to a self-signed endpoint."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import pytest

from evalkit.probe.prompts import synthetic
from evalkit.probe.stream import Prober
from evalkit.probe.target import Target
from evalkit.records import RequestRecord


class TestTLS:
    def test_https_endpoint(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Vendors are https: the stamped backend hands the socket to TLS and keeps timing."""
        import shutil
        import subprocess

        import uvicorn

        from evalkit.reference import ReferenceApp, get_profile

        if shutil.which("openssl") is None:
            pytest.skip("needs the openssl command to make a throwaway certificate")
        key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost"], check=True,
                       capture_output=True)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust it, as a CA bundle would
        truth = tmp_path / "truth.jsonl"
        app = ReferenceApp(get_profile("gpu", {"request_overhead_ms": 5}), 0, truth)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="error", ssl_keyfile=str(key),
                                               ssl_certfile=str(cert)))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            while not server.started:
                time.sleep(0.01)
            url = f"https://localhost:{sock.getsockname()[1]}/v1"

            async def run() -> list[RequestRecord]:
                target = Target(url, "evalkit-reference")
                async with Prober(target, time.perf_counter_ns(), "tls") as prober:
                    return list(await asyncio.gather(*(
                        prober.stream(synthetic(32, 8, f"tls-{i}"), "baseline", 1)
                        for i in range(3))))

            recs = asyncio.run(run())
        finally:
            server.should_exit = True
            thread.join(5)
        assert [(r.outcome, r.output_tokens, len(r.chunks)) for r in recs] == [("ok", 8, 8)] * 3
