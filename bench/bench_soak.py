"""Soak memory: does a long hold keep the probe's memory flat?

Runs `evalkit probe --phases connect,soak` as a subprocess against the reference endpoint
(another subprocess) and samples the probe's RSS from /proc every second. A soak of the
working day must hold flat memory, so the figures that matter are taken from the hold's
first minute (imports, connections and caches are warm by then) to its end, before the
write-up (which reads every record back once for the summary, by design, and is printed
apart): the growth in MiB, the KB it makes per request, and the least-squares slope per
1,000 requests. Issue 45's yardstick: a 30-minute hold at 200 streams grows under 5 MB
from minute 1 to minute 30. Reports the machine it ran on; run by hand, not in CI:

    python bench/bench_soak.py                                   # 30 minutes, 200 streams
    BENCH_SOAK_S=180 BENCH_SOAK_STREAMS=200 python bench/bench_soak.py   # a short look

Measured 2026-11-30 on the project VM (2 cores, Python 3.11.7), 60 s at 64 streams:
+2,575 KiB per 1,000 requests before records moved to disk, +224 KiB after;
docs/benchmarks.md has the later figures.
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

SOAK_S = float(os.environ.get("BENCH_SOAK_S", "1800"))
STREAMS = int(os.environ.get("BENCH_SOAK_STREAMS", "200"))
#: the hold's warm-up, left out of the figures
WARM_S = 60.0


def rss_kb(pid: int) -> int | None:
    """Resident set size of a process in KiB, from /proc (None once it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class Lines:
    """Records written so far (requests.jsonl lines), counted from where the last count
    ended: a 30-minute soak's file is hundreds of MB, not to be read whole every second."""

    def __init__(self, path: Path) -> None:
        self.path, self.at, self.n = path, 0, 0

    def __call__(self) -> int:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.at)
                while block := fh.read(1 << 20):
                    self.n += block.count(b"\n")
                    self.at += len(block)
        except OSError:
            pass
        return self.n


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
        lines = Lines(out / "requests.jsonl")
        started = time.monotonic()
        while proc.poll() is None:
            rss = rss_kb(proc.pid)
            if rss is not None:
                samples.append((time.monotonic() - started, lines(), rss))
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
    began = next((t for t, n, _ in samples if n > 1), None)
    first, last = samples[0], samples[-1]
    print(f"requests: {last[1]:,}; RSS {first[2] / 1024:.0f} MiB at the first sample, "
          f"{max(s[2] for s in samples) / 1024:.0f} MiB at the peak (the write-up's)")
    if began is None:
        print("no request completed")
        return 1
    # from the hold's first minute to its end, not the write-up after it (the summary
    # reads every record back once, at the end: a spike by design, not growth)
    hold = [(t, n, rss) for t, n, rss in samples if began + WARM_S <= t <= began + SOAK_S - 2]
    if len(hold) < 3:
        print(f"the hold was too short to measure after its first {WARM_S:g} s")
        return 1
    (t1, n1, r1), (t2, n2, r2) = hold[0], hold[-1]
    grown_kib = r2 - r1
    print(f"from minute 1 to the hold's end ({(t2 - t1) / 60:.1f} min, {n2 - n1:,} requests): "
          f"RSS {grown_kib / 1024:+.2f} MiB, {grown_kib * 1.024 / max(n2 - n1, 1):+.4f} KB "
          f"a request, {grown_kib / 1024 / max(t2 - t1, 1) * 3600:+.1f} MiB an hour")
    slope = slope_per_1000([(n, rss) for _, n, rss in hold])
    print("least-squares slope over it: "
          + ("n/a" if slope is None else f"{slope:+.1f} KiB per 1,000 requests"))
    return 0

if __name__ == "__main__":
    sys.exit(main())
