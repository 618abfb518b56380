"""The suite's phases: what a run loads, and when (evalkit.probe.run.phases)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

#: libraries a probe's first request must not wait for (the write-up needs them, later)
HEAVY = ("pandas", "pyarrow", "matplotlib", "weasyprint")

_SCRIPT = """
import json, sys
from pathlib import Path
from evalkit.probe.client import stream
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe

heavy, seen = {heavy!r}, []
real = stream.Prober.stream

async def watched(self, prompt, phase, *a, **k):
    seen.append([phase, [m for m in heavy if m in sys.modules]])
    return await real(self, prompt, phase, *a, **k)

stream.Prober.stream = watched
res = run_probe(ProbeConfig({url!r}, {model!r}, phases=("connect", "baseline"),
                            overrides={{"baseline": {{"requests": 2}}}}), Path({out!r}))
print(json.dumps({{"seen": seen, "status": res.status,
                  "summary": res.summary is not None}}))
"""


def test_the_first_request_waits_for_no_heavy_library(reference: Any, tmp_path: Path) -> None:
    """The connect phase's first stream goes out before pandas or pyarrow is imported;
    they load before the baseline (between the phases' windows) and the run is written up
    with its summary as before."""
    srv = reference("gpu", mode="thread", decode_base_ms=1)
    code = _SCRIPT.format(heavy=HEAVY, url=srv.base_url, model=srv.model,
                          out=str(tmp_path / "run"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["status"] == "complete" and got["summary"]
    phases = [phase for phase, _ in got["seen"]]
    assert phases[0] == "connect" and "baseline" in phases
    assert got["seen"][0][1] == []
    assert all("pandas" in loaded for phase, loaded in got["seen"] if phase == "baseline")
