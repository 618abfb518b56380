"""Micro-benchmark: summarize 100k requests (~5M chunks), the size of a long soak.

Run: `.venv/bin/python bench/bench_metrics.py [requests] [chunks_per_request]`.
Prints the time to build the frames and the whole summary, and the machine it ran on.
"""

from __future__ import annotations

import os
import platform
import sys
import time

import numpy as np

from evalkit.analysis.frames import frames
from evalkit.analysis.summarize import SummaryMeta, summarize_frames
from evalkit.records import RequestRecord


def synthetic(n: int, per: int, seed: int = 1) -> list[RequestRecord]:
    """A ramp of 5 levels with jittered TTFT and gaps, 1 % rejected."""
    rng = np.random.default_rng(seed)
    levels = (1, 2, 4, 8, 16)
    ttft = rng.gamma(4.0, 0.05, n)
    gaps = rng.gamma(2.0, 0.01, (n, per))
    offsets = ttft[:, None] + np.cumsum(gaps, axis=1) - gaps[:, :1]
    out = []
    for i in range(n):
        level = levels[i * len(levels) // n]
        if i % 100 == 99:
            out.append(RequestRecord(id=f"r{i}", phase="ramp", level=level,
                                     outcome="rejected", t0_s=i * 0.01, http_status=429))
            continue
        chunks = list(zip(offsets[i].tolist(), [1] * per, strict=True))
        out.append(RequestRecord(
            id=f"r{i}", phase="ramp", level=level, outcome="ok", t0_s=i * 0.01,
            ttft_s=chunks[0][0], e2e_s=chunks[-1][0], chunks=chunks, output_tokens=per,
            output_tokens_estimated=False, usage_completion_tokens=per,
            counted_output_tokens=per, requested_output_tokens=per))
    return out


def _cpu_model() -> str:
    """The CPU's name, so a number in a report says what it was measured on."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    t = time.perf_counter()
    records = synthetic(n, per)
    built = time.perf_counter() - t
    t = time.perf_counter()
    req, chunks = frames(records)
    t_frames = time.perf_counter() - t
    t = time.perf_counter()
    summary = summarize_frames(req, chunks, SummaryMeta())
    t_summary = time.perf_counter() - t
    print(f"machine: {_cpu_model()}, {os.cpu_count()} cpus, python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    print(f"records: {n:,} requests, {len(chunks):,} chunks (built in {built:.1f} s)")
    print(f"frames:    {t_frames:.2f} s")
    print(f"summary:   {t_summary:.2f} s")
    print(f"total:     {t_frames + t_summary:.2f} s")
    print(f"ramp first_degraded={summary['ramp']['first_degraded']} "
          f"max_sustained={summary['ramp']['max_sustained_concurrency']}")


if __name__ == "__main__":
    main()
