"""A throwaway self-signed certificate, for the tests that serve HTTPS over loopback."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def throwaway_certificate(folder: Path, names: str = "DNS:localhost") -> tuple[Path, Path]:
    """(certificate, key) PEM files valid for a day, naming `names` (a subjectAltName
    value); skips the test where the `openssl` command is missing."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a throwaway certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", f"subjectAltName={names}"], check=True, capture_output=True)
    return cert, key
