"""A Mooncake trace (JSONL) read into a `Trace`, to be replayed open-loop at its offsets.

Each line: `timestamp` (ms, ≥ 0), `input_length` and `output_length` (tokens, ≥ 1), and
optionally `hash_ids` (the prompt's blocks of 512 tokens: equal ids, equal text, so a
prefix cache may serve them). Other keys (other tools' columns) are ignored, within the
file's bounds (`evalkit.workload.jsonl`). Entries are sorted by timestamp, stably, each
keeping its file line, so a replay's record can say which line it sent. Every problem
in the file is reported at once.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evalkit.errors import UsageError
from evalkit.workload.fields import TOKENS, Bounds, Checker
from evalkit.workload.jsonl import checked_rows, read_jsonl
from evalkit.workload.model import TRACE_BLOCK_TOKENS, Trace, TraceEntry

#: a trace's prompts may be longer than a workload's synthetic ones (Mooncake's reach
#: past 128k); the vendor's context limit is the probe's to meet, not the file's
INPUT = Bounds(1, 1_048_576, True, "tokens")
#: absolute epoch milliseconds (year 2286) still fit: offsets are from the first entry
TIMESTAMP = Bounds(0, 1e13, False, "ms")
HASH_ID = Bounds(0, 2**63 - 1, True, "")
#: keys on a line, the ignored ones included
MAX_KEYS = 64
REQUIRED = ("timestamp", "input_length", "output_length")


def load_trace(path: Path, speed: float = 1.0) -> Trace:
    """Read a trace; any problem is one WorkloadError listing every one. `speed` (> 0)
    scales the offsets: 2 sends the trace in half its time."""
    if isinstance(speed, bool) or not isinstance(speed, int | float) \
            or not math.isfinite(speed) or speed <= 0:
        raise UsageError(f"--trace-speed must be a number greater than 0, got {speed!r}")
    lines = read_jsonl(path, "trace")
    entries = checked_rows(path, lines, _entry, "no entries (expected one JSON object a line: "
                           "timestamp, input_length, output_length)", "trace")
    entries.sort(key=lambda e: e.timestamp_ms)
    span_ms = entries[-1].timestamp_ms - entries[0].timestamp_ms
    return Trace(tuple(entries), speed=float(speed), block_tokens=TRACE_BLOCK_TOKENS,
                 source={"name": lines.name, "sha256": lines.sha256, "entries": len(entries),
                         "span_s": span_ms / 1000.0})


def _entry(check: Checker, value: Any, number: int) -> TraceEntry | None:
    if not isinstance(value, dict):
        check.problem((), f"expected a JSON object (timestamp, input_length, output_length), "
                      f"got {check.shown(value, ())}")
        return None
    if len(value) > MAX_KEYS:
        check.problem((), f"{len(value)} keys; at most {MAX_KEYS} a line")
        return None
    if not check.required(value, (), REQUIRED):
        return None
    ts = check.number(value["timestamp"], ("timestamp",), TIMESTAMP)
    n_in = check.number(value["input_length"], ("input_length",), INPUT)
    n_out = check.number(value["output_length"], ("output_length",), TOKENS)
    blocks = _hash_ids(check, value.get("hash_ids", []), n_in)
    if ts is None or n_in is None or n_out is None or blocks is None:
        return None
    return TraceEntry(ts, int(n_in), int(n_out), blocks, line=number)


def _hash_ids(check: Checker, ids: Any, n_in: float | None) -> tuple[int, ...] | None:
    path = ("hash_ids",)
    if not isinstance(ids, list):
        check.problem(path, f"expected a list of whole numbers, got {check.shown(ids, path)}")
        return None
    most = math.ceil(n_in / TRACE_BLOCK_TOKENS) if n_in is not None else None
    if most is not None and len(ids) > most:
        check.problem(path, f"{len(ids):,} blocks of {TRACE_BLOCK_TOKENS} tokens is more than "
                      f"input_length {int(n_in or 0):,} holds (at most {most:,})")
        return None
    before = len(check.found)
    # the ids as written: a float would round ids past 2**53 into one another
    out = [x if check.number(x, (*path, i), HASH_ID) is not None else None
           for i, x in enumerate(ids)]
    if len(check.found) > before + 3:
        del check.found[before + 3:]
    if len(check.found) > before:
        return None
    return tuple(int(x) for x in out if x is not None)
