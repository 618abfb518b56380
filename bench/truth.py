"""What the bench drivers share: the machine they ran on, and records joined to the truth.

Every driver compares evalkit's records with the reference endpoint's truth log (one
line per request, keyed by the X-Request-ID the prober sent), on one clock: the record's
times are offsets from the prober's origin (`perf_counter_ns`, CLOCK_MONOTONIC, which
the server process shares). Joining and putting a record on that clock is done here
once, so the drivers cannot drift apart on what "the same request" or "its t0" means.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.probe.plan.prompts import count_tokens
from evalkit.records import RequestRecord

#: a truth line (`evalkit.reference`'s ground-truth log)
Truth = dict[str, Any]


def cpu_model() -> str:
    """The CPU's name, for the report."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    """The report's first line: cores, CPU, Python, load average now (figures depend on it)."""
    return (f"machine: {os.cpu_count()} cores, {cpu_model()}, Python "
            f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f}")


def announce(server: str) -> None:
    """Warm the tokenizer (its first call builds tables: not a cost to time), then print
    the machine and what the server is: every report's head."""
    count_tokens("warm up")
    print(machine())
    print(f"server: reference endpoint in its own process, {server}")


def joined(origin_ns: int, records: Iterable[RequestRecord], truth: Iterable[Truth]
           ) -> Iterator[tuple[RequestRecord, Truth, float]]:
    """Each ok record with its truth line and its t0 on the shared clock (ns).

    A record without a truth line (the server never saw it) or that did not end ok is
    left out: there is nothing to compare it with.
    """
    by_id = {t["request_id"]: t for t in truth}
    for r in records:
        t = by_id.get(r.id)
        if t is not None and r.outcome == "ok":
            yield r, t, origin_ns + r.t0_s * 1e9


def chunk_errors(origin_ns: int, records: Iterable[RequestRecord], truth: Iterable[Truth]
                 ) -> list[float]:
    """Every content chunk's arrival (our stamp) minus the server's write of it, ms."""
    errs: list[float] = []
    for r, t, t0 in joined(origin_ns, records, truth):
        writes = [w for w in t["writes"] if w[3] in ("content", "reasoning")]
        errs += [(t0 + off * 1e9 - w[0]) / 1e6
                 for (off, _), w in zip(r.chunks, writes, strict=False)]
    return errs


def stats(values: Iterable[float]) -> dict[str, float]:
    """n, mean, p50, p99 and max of `values` (NaN for none)."""
    a = np.array(list(values), dtype=float)
    if not a.size:
        return {"n": 0, "mean": float("nan"), "p50": float("nan"), "p99": float("nan"),
                "max": float("nan")}
    return {"n": int(a.size), "mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def arguments(argv: list[str], defaults: str) -> tuple[list[int], list[str]]:
    """A driver's positional arguments: the levels (comma-separated, the first) and the
    rest, each missing one taken from `defaults` (the same, space-separated)."""
    given = [argv[i] if i < len(argv) else d for i, d in enumerate(defaults.split())]
    return [int(x) for x in given[0].split(",")], given[1:]
