"""requests.jsonl checked as evidence: every line a record of this run, that could be.

The summary is re-derived from the records (`evalkit.rundir.checked`), so the records are
what a figure rests on, and a scorecard is attached to commitments people dispute. A
record is therefore checked for what a reader would ask of it before it counts:

    not-a-record       the line is no record (not JSON, `null`, `[]`, a field of the wrong
                       type, NaN, a number out of range, a line over MAX_LINE_BYTES)
    foreign            it carries another run's id (run.json `run_id`): appended from
                       another run directory
    duplicate-id       its id is an earlier record's (the first of them counts)
    unplanned-level    a concurrency the run's settings never had (`settings.ramp.levels`,
                       the soak's), or one no run can have (below 1, absurdly high)
    impossible-timing  times that cannot be: chunks out of order, a TTFT that is not its
                       first chunk's arrival or comes after the end, an end before its
                       last chunk, a first chunk before the request was sent

Each is a `Finding` (kind, line, record id, message). A record with a finding is kept out
of every figure (and the report says so); any finding degrades the run (`reasons`: one
per kind, with its count and first line numbers). Records written before the suite wrote
a run id carry none: that is said (`notes`), and degrades nothing by itself.

Pure: `RecordCheck` is fed the lines as they are read (`evalkit.rundir.store.iter_records`
does, in the one pass that also hashes them), and `check_evidence(data, run)` checks the
bytes of a requests.jsonl held in memory (an attachment, for `verify`). No I/O.
"""

from __future__ import annotations

import hashlib
import io
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.records import RequestRecord
from evalkit.rundir.digest import MAX_LEVEL
from evalkit.rundir.store import REQUESTS_FILE, RecordScan, read_lines

NOT_A_RECORD = "not-a-record"
FOREIGN = "foreign"
DUPLICATE_ID = "duplicate-id"
UNPLANNED_LEVEL = "unplanned-level"
IMPOSSIBLE_TIMING = "impossible-timing"
#: every kind, in the order the reasons name them
KINDS = (NOT_A_RECORD, FOREIGN, DUPLICATE_ID, UNPLANNED_LEVEL, IMPOSSIBLE_TIMING)
#: how far apart two times that must agree may lie (s): chunk times are written rounded
#: to 1e-7 s, the TTFT is not
SAME_S = 1e-6
#: how far out of order two times may lie before they cannot be (s): the prober stamps
#: each read when its bytes arrived, and a read without the kernel's stamp takes the
#: clock's reading instead, a few microseconds later
ORDER_S = 1e-3
#: findings kept whole (every one is counted); line numbers a reason names per kind
MAX_FINDINGS, FIRST_LINES = 1_000, 5
#: phases run at concurrency 1 (`evalkit.analysis.summarize.SERIAL_PHASES`)
_SERIAL = frozenset({"connect", "baseline", "prefill", "cache", "rtt"})
_WHAT = {
    NOT_A_RECORD: ("line is", "lines are", "not a request record"),
    FOREIGN: ("record is", "records are", "another run's (its run id is not this run's)"),
    DUPLICATE_ID: ("record repeats", "records repeat", "an earlier record's id"),
    UNPLANNED_LEVEL: ("record is", "records are", "at a concurrency the run never had"),
    IMPOSSIBLE_TIMING: ("record has", "records have", "timings that cannot be"),
}


@dataclass(frozen=True)
class Finding:
    """One line of requests.jsonl that is not evidence, and why."""

    kind: str
    #: 1-based line number in requests.jsonl
    line: int
    #: the record's id (None: the line is no record)
    record_id: str | None
    message: str

    def to_json(self) -> dict[str, Json]:
        """The finding as plain data (`verify --json`)."""
        return {"kind": self.kind, "line": self.line, "record_id": self.record_id,
                "message": self.message}


#: (the ramp's levels, the soak's concurrency, the workload's levels of users)
Planned = tuple[frozenset[int], int | None, frozenset[int]]


def planned_levels(run: Mapping[str, Any]) -> Planned | None:
    """(the ramp's levels, the soak's concurrency, the workload's users per level) as
    run.json gives them; None when run.json names no levels (an older or hand-made run, an
    import): then only a level no run can have is a finding."""
    settings = run.get("settings")
    ramp = settings.get("ramp") if isinstance(settings, Mapping) else None
    levels = ramp.get("levels") if isinstance(ramp, Mapping) else None
    if not isinstance(levels, list) or not levels or not all(
            type(c) is int for c in levels):
        return None
    soak = settings.get("soak") if isinstance(settings, Mapping) else None
    held = soak.get("concurrency") if isinstance(soak, Mapping) else None
    work = run.get("workload")
    work = work.get("workload") if isinstance(work, Mapping) else None
    users = work.get("users") if isinstance(work, Mapping) else None
    users = [c for c in users if type(c) is int] if isinstance(users, list) else []
    return frozenset(levels), held if type(held) is int else None, frozenset(users)


def timing_problem(rec: RequestRecord) -> str | None:
    """Why a record's times cannot be (None: they can). Each is relative to its own t0."""
    times = [t for t, _ in rec.chunks]
    back = next((i for i, (a, b) in enumerate(itertools.pairwise(times), 1)
                 if b < a - ORDER_S), None)
    if back is not None:
        return (f"chunk {back + 1} arrived at {times[back]:.6g} s, before chunk {back} at "
                f"{times[back - 1]:.6g} s: chunk times out of order")
    first, last = (times[0], times[-1]) if times else (None, None)
    ttft, e2e = rec.ttft_s, rec.e2e_s
    if ttft is not None and first is not None and abs(ttft - first) > SAME_S:
        return (f"TTFT {ttft:.6g} s is not its first chunk's arrival ({first:.6g} s)")
    if ttft is not None and e2e is not None and ttft > e2e + ORDER_S:
        return f"TTFT {ttft:.6g} s comes after the stream's end (e2e {e2e:.6g} s)"
    for name, end in (("e2e", e2e), ("end", rec.end_s)):
        if end is not None and last is not None and end < last - ORDER_S:
            return (f"{name} {end:.6g} s comes before its last chunk ({last:.6g} s)")
    if rec.ttfa_s is not None and ttft is not None and rec.ttfa_s < ttft - ORDER_S:
        return f"TTFA {rec.ttfa_s:.6g} s comes before the first token ({ttft:.6g} s)"
    if rec.sent_s is not None and first is not None and first < rec.sent_s - ORDER_S:
        return (f"its first chunk ({first:.6g} s) arrived before the request was sent "
                f"({rec.sent_s:.6g} s)")
    return None


def level_problem(rec: RequestRecord, plan: Planned | None) -> str | None:
    """Why a record's concurrency is not one the run had (None: it is)."""
    level = rec.level
    if level is None:
        return None
    if not 1 <= level <= MAX_LEVEL:
        return f"level {level:,} is no concurrency a run can hold"
    if plan is None:
        return None
    levels, soak, users = plan
    if rec.phase == "ramp":
        allowed = levels
    elif rec.phase == "workload":  # users in flight, as run.json's workload planned them
        allowed = users
    elif rec.phase == "soak":  # its own, else the ramp's highest sustained (1: no ramp)
        allowed = levels | {1} | ({soak} if soak is not None else set())
    elif rec.phase in _SERIAL:
        allowed = frozenset({1})
    else:  # the open loop's records have no level; a phase we do not know, no rule
        return None
    if level in allowed:
        return None
    shown = ", ".join(map(str, sorted(allowed)[:12]))
    return f"{rec.phase} level {level:,} is not one of the run's levels ({shown})"


class RecordCheck:
    """requests.jsonl's lines checked as evidence as they are read (see the module).

    Feed it every line in order: `record(line, rec)` for a record (True: it counts),
    `not_a_record(line, reason)` for a line that is none. A fresh check fed the same lines
    decides the same (a second pass over a file re-reads exactly what the first kept).
    """

    def __init__(self, run: Mapping[str, Json]) -> None:
        run_id = run.get("run_id")
        #: the run's id: run.json's, else the first record's that carries one
        self.run_id: str | None = run_id if isinstance(run_id, str) and run_id else None
        self._declared = self.run_id is not None
        self.plan = planned_levels(run)
        #: an imported run's ids are the peer tool's: not ours to hold unique
        self._ids_ours = not isinstance(run.get("imported"), Mapping)
        self.counts: Counter[str] = Counter()
        self.findings: list[Finding] = []
        self.first_lines: dict[str, list[int]] = {}
        self.records = 0
        #: records that carry no run id
        self.without_run_id = 0
        #: 8 bytes of each id's hash -> the line it was first seen on
        self._seen: dict[bytes, int] = {}

    def not_a_record(self, line: int, reason: str) -> None:
        """A line that is no record."""
        self._add(Finding(NOT_A_RECORD, line, None, f"line {line}: {reason}"))

    def record(self, line: int, rec: RequestRecord) -> bool:
        """Check one record; True when it is evidence of this run and may count."""
        self.records += 1
        finding = self._finding(line, rec)
        if finding is None:
            return True
        self._add(finding)
        return False

    def _finding(self, line: int, rec: RequestRecord) -> Finding | None:
        rid = rec.id[:120]
        if rec.run_id is None:
            self.without_run_id += 1
            if self._declared and self._ids_ours:
                return Finding(FOREIGN, line, rid, f"line {line}: carries no run id; this "
                               f"run's records carry {self.run_id!r}")
        elif self.run_id is None:
            self.run_id = rec.run_id
        elif rec.run_id != self.run_id:
            return Finding(FOREIGN, line, rid, f"line {line}: run id {rec.run_id[:40]!r}, "
                           f"not this run's {self.run_id!r}")
        if self._ids_ours:
            key = hashlib.blake2b(rec.id.encode(), digest_size=8).digest()
            first = self._seen.setdefault(key, line)
            if first != line:
                return Finding(DUPLICATE_ID, line, rid,
                               f"line {line}: id {rid[:60]!r} is line {first}'s too")
        why = level_problem(rec, self.plan)
        if why is not None:
            return Finding(UNPLANNED_LEVEL, line, rid, f"line {line}: {why}")
        why = timing_problem(rec)
        if why is not None:
            return Finding(IMPOSSIBLE_TIMING, line, rid, f"line {line}: {why}")
        return None

    def _add(self, finding: Finding) -> None:
        self.counts[finding.kind] += 1
        lines = self.first_lines.setdefault(finding.kind, [])
        if len(lines) < FIRST_LINES:
            lines.append(finding.line)
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(finding)

    @property
    def total(self) -> int:
        """Lines that are not evidence (every one counted, not only those kept)."""
        return self.counts.total()

    def reasons(self) -> list[str]:
        """One validity reason per kind found: how many, and their first line numbers."""
        out = []
        for kind in KINDS:
            n = self.counts.get(kind, 0)
            if not n:
                continue
            one, many, what = _WHAT[kind]
            first = self.first_lines.get(kind, [])
            where = ", ".join(map(str, first)) + (", …" if n > len(first) else "")
            out.append(f"{REQUESTS_FILE}: {n:,} {one if n == 1 else many} {what} "
                       f"(line{'s' if len(first) > 1 else ''} {where}): kept out of every "
                       "figure")
        return out

    def notes(self) -> list[str]:
        """What a reader should know of the records beyond the reasons: the first record
        of each kind found, in words (lines that are no record are said by the scan,
        `RecordScan.describe`), and a run whose records carry no run id."""
        out = []
        firsts: dict[str, Finding] = {}
        for f in self.findings:
            if f.kind != NOT_A_RECORD:
                firsts.setdefault(f.kind, f)
        bad = self.total - self.counts.get(NOT_A_RECORD, 0)
        if bad:
            first = "; ".join(f"{k} {firsts[k].message}" for k in KINDS if k in firsts)
            out.append(f"{REQUESTS_FILE}: {bad:,} of {self.records:,} records are not "
                       "evidence of this run and were left out of every figure"
                       + (f" (first of each kind: {first})" if first else ""))
        if self.records and self.without_run_id == self.records and self._ids_ours:
            out.append(f"{REQUESTS_FILE}: records carry no run id (written by an older "
                       "suite): a record appended from another run cannot be told apart")
        return out

    def to_json(self) -> dict[str, Json]:
        """The check as plain data: counts per kind and the findings kept."""
        return {"run_id": self.run_id, "records": self.records,
                "counts": dict(self.counts), "findings": [f.to_json() for f in self.findings],
                "truncated": self.total > len(self.findings)}


def check_evidence(data: bytes, run: Mapping[str, Any]) -> RecordCheck:
    """requests.jsonl's bytes (held in memory: an attachment) checked as evidence against
    its run.json, line by line as `open_run` checks the file. Pure."""
    check = RecordCheck(run)
    for _ in read_lines(io.BytesIO(data), RecordScan(Path(REQUESTS_FILE)), check=check):
        pass
    return check
