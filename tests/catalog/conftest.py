"""One small panel for the catalog's tests: three reference endpoints whose TTFTs differ
(request_overhead_ms 0, 40 and 80), each sampled by its own `evalkit panel sample`
process, all three at once, into one catalog file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalkit.reference.server import ReferenceServer

OVERHEADS_MS = (0, 40, 80)


@dataclass(frozen=True)
class Panel:
    catalog: Path
    outs: tuple[Path, ...]
    servers: tuple[ReferenceServer, ...]
    results: tuple[subprocess.CompletedProcess[str], ...]


def sample_command(url: str, model: str, catalog: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", "from evalkit.cli import main; main()", "panel", "sample",
            "--base-url", url, "--model", model, "--vendor", "X", "--catalog", str(catalog),
            "--out", str(out), "--budget", "12,3s", "--output-tokens", "8", "--quiet",
            *extra]


@pytest.fixture(scope="package")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Panel]:
    root = tmp_path_factory.mktemp("panel")
    servers = tuple(ReferenceServer("gpu", {"request_overhead_ms": ms, "decode_base_ms": 2},
                                    truth_log=root / f"truth-{ms}.jsonl")
                    for ms in OVERHEADS_MS)
    for s in servers:
        s.start()
    catalog = root / "catalog.sqlite"
    outs = tuple(root / f"sample-{ms}" for ms in OVERHEADS_MS)
    env = {**os.environ, "EVALKIT_CATALOG": str(root / "not-this.sqlite")}
    try:
        procs = [subprocess.Popen(sample_command(s.base_url, s.model, catalog, out), env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for s, out in zip(servers, outs, strict=True)]
        results = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=180)
            results.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
        yield Panel(catalog, outs, servers, tuple(results))
    finally:
        for s in servers:
            s.stop()
