"""Soak memory: does a long hold keep the probe's memory flat?

Runs `evalkit probe --phases connect,soak` as a subprocess against the reference endpoint
(another subprocess) and samples the probe's RSS from /proc every second. A day-long soak
must hold flat memory, so the figure that matters is the RSS slope per 1,000 completed
requests over the second half of the soak (the first half includes warm-up: imports,
connections, caches; the write-up after the soak reads every record once, by design).
Reports the machine it ran on; run by hand: `python bench/run.py soak`.

Measured 2026-11-30 on the project VM (2 cores, Python 3.11.7), 60 s at 64 streams:
+2,575 KiB per 1,000 requests before records moved to disk, +224 KiB after. A hold of
245 s or more also prints the growth from its first minute to its fourth (issue 29's
yardstick); docs/benchmarks.md has the figures.

    BENCH_SOAK_S=120 BENCH_SOAK_STREAMS=128 python bench/bench_soak.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalkit.reference.server import ReferenceServer

SOAK_S = float(os.environ.get("BENCH_SOAK_S", "60"))
STREAMS = int(os.environ.get("BENCH_SOAK_STREAMS", "64"))


def rss_kb(pid: int) -> int | None:
    """Resident set size of a process in KiB, from /proc (None once it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def lines(path: Path) -> int:
    """Records written so far (requests.jsonl lines)."""
    try:
        with path.open("rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0


def slope_per_1000(points: list[tuple[int, int]]) -> float | None:
    """Least-squares KiB per 1,000 requests over (requests, rss) points."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    if sxx == 0:
        return None
    return 1000 * sum((p[0] - mx) * (p[1] - my) for p in points) / sxx


def main() -> int:
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; soak {SOAK_S:g} s at {STREAMS} streams")
    with ReferenceServer("gpu", {"decode_base_ms": 2.0, "decode_per_stream_ms": 0.05,
                                 "request_overhead_ms": 5.0}) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "evalkit.cli", "probe", "--base-url", srv.base_url,
               "--model", srv.model, "--out", str(out), "--phases", "connect,soak",
               "--output-tokens", "16", "--quiet"]
        profile = Path(tmp) / "soak.json"
        profile.write_text(json.dumps({"extends": "quick", "soak": {
            "duration_s": SOAK_S, "concurrency": STREAMS}}))
        cmd += ["--profile", str(profile)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        samples: list[tuple[float, int, int]] = []
        started = time.monotonic()
        while proc.poll() is None:
            rss = rss_kb(proc.pid)
            if rss is not None:
                samples.append((time.monotonic() - started, lines(out / "requests.jsonl"), rss))
            time.sleep(1.0)
        code = proc.wait()
        try:  # the loop monitor's samples over the hold: what its store grew by before
            soak = json.loads((out / "run.json").read_text())["client_checks"]["phases"]["soak"]
            print(f"loop-lag samples over the hold: {soak['lag_samples']:,} in "
                  f"{soak['wall_s']:.0f} s (a machine too loaded to wake the monitor every "
                  "5 ms takes fewer)")
        except (OSError, KeyError, TypeError, ValueError):
            pass
    if code != 0 or not samples:
        print(f"probe exited {code}")
        return 1
    # the second half of the hold, not the write-up after it (the summary reads every
    # record back once, at the end: a spike by design, not growth)
    late = [(n, rss) for t, n, rss in samples if SOAK_S / 2 < t < SOAK_S - 2 and n > 0]
    first, last = samples[0], samples[-1]
    peak = max(s[2] for s in samples)
    print(f"requests: {last[1]:,}; RSS {first[2] / 1024:.0f} MiB at start, "
          f"{peak / 1024:.0f} MiB at the peak")
    slope = slope_per_1000(late)
    print("RSS slope over the second half: "
          + ("n/a" if slope is None else f"{slope:+.1f} KiB per 1,000 requests"))
    # the yardstick: growth from the hold's first minute to its fourth
    began = next((t for t, n, _ in samples if n > 1), None)
    if began is not None and SOAK_S >= 245:
        at = {m: min(samples, key=lambda s: abs(s[0] - began - 60 * m)) for m in (1, 4)}
        print(f"from minute 1 to minute 4 of the hold: {at[4][1] - at[1][1]:,} requests, RSS "
              f"{(at[4][2] - at[1][2]) / 1024:+.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
