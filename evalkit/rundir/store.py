"""The run directory: `run.json`, `requests.jsonl`, `summary.json`.

Each record is appended and flushed the moment its request ends, so a run stopped by
Ctrl-C or a crash keeps every completed request; reading tolerates a last line cut
mid-write. Reading streams the file a line at a time, each line bounded (MAX_LINE_BYTES),
and checks every field of every record (`parse_record`): `iter_records` skips and counts
what is not a record, `read_records` refuses it. `run.json` and `summary.json` are
replaced atomically (write, then rename) so a reader never sees half a file. Nothing
secret is ever written: the caller passes a config already stripped of keys and header
values.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TextIO

from evalkit.analysis.jsonread import Json
from evalkit.errors import EvalkitError, InputError, RunDirError
from evalkit.records import MAX_COUNT, MAX_SECONDS, OUTCOMES, Chunks, RequestRecord

RUN_FILE = "run.json"
REQUESTS_FILE = "requests.jsonl"
SUMMARY_FILE = "summary.json"


#: Larger than any run.json, summary.json or profile evalkit writes: not ours beyond it.
MAX_JSON_BYTES = 16 << 20


def read_json_object(path: Path, what: str, error: type[EvalkitError] = InputError,
                     limit: int = MAX_JSON_BYTES) -> tuple[dict[str, Json], bytes]:
    """The JSON object in `path` and the bytes it was read from (to hash and attach).

    The one reader of a whole JSON file: read bounded (`limit` bytes; `read(n)` allocates
    n, so only what is there is asked for), and a file that cannot be read, is larger, is
    not JSON (or not UTF-8) or holds no object is an `error` naming the file and `what` it
    should have been.
    """
    try:
        with path.open("rb") as fh:
            raw = fh.read(min(os.fstat(fh.fileno()).st_size, limit) + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror})") from None
    if len(raw) > limit:
        raise error(f"{path}: larger than {limit:,} bytes; not {what}")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSON, UTF-8, an int of 5,000 digits
        raise error(f"{path}: not valid JSON ({str(exc)[:200]}); expected {what}") from None
    if not isinstance(doc, dict):
        raise error(f"{path}: a JSON {type(doc).__name__}, expected {what} (a JSON object)")
    return doc, raw


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


class RunStore:
    """An open run directory that records are appended to as requests complete."""

    def __init__(self, out_dir: Path, run_meta: Mapping[str, Json]) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.meta = dict(run_meta)
        #: records written so far; the records themselves live on disk only, so a day-long
        #: soak holds flat memory
        self.count = 0
        write_json(self.dir / RUN_FILE, self.meta)
        self._fh: TextIO | None = open(self.dir / REQUESTS_FILE, "w", encoding="utf-8")  # noqa: SIM115

    def append(self, record: RequestRecord) -> None:
        """Put the record's line on disk now (flushed, so a crash keeps it)."""
        self.count += 1
        if self._fh is not None:
            self._fh.write(record.to_json() + "\n")
            self._fh.flush()

    @property
    def records(self) -> list[RequestRecord]:
        """Every record written so far, read back from requests.jsonl."""
        return list(iter_records(self.dir / REQUESTS_FILE))

    def add_note(self, text: str) -> None:
        """One more sentence in run.json's `notes` (on disk with the next `update_meta`)."""
        notes = self.meta.setdefault("notes", [])
        assert isinstance(notes, list), "run.json's notes are the run's own list"
        notes.append(text)

    def update_meta(self, **fields: Json) -> None:
        """Merge fields into run.json and rewrite it."""
        self.meta.update(fields)
        write_json(self.dir / RUN_FILE, self.meta)

    def write_summary(self, summary: Mapping[str, Json]) -> Path:
        """Write summary.json; returns its path."""
        path = self.dir / SUMMARY_FILE
        write_json(path, summary)
        return path

    def close(self) -> None:
        """Close requests.jsonl (fsync'd: the run's evidence)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None


#: A line of requests.jsonl longer than this is not a record we wrote (the longest real
#: ones, a stream of thousands of chunks, are tens of KB): it is skipped and counted, and
#: reading never holds more than this of one line.
MAX_LINE_BYTES = 1 << 20
#: Times that are differences and may fall below zero (sent earlier than scheduled).
SIGNED_TIMES = frozenset({"send_lag_s"})
_MISSING = object()


def _number(name: str, value: Any, kind: str) -> int | float:
    """`value` as the field's number, or ValueError saying why the record is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number")
    if kind == "int":
        if not isinstance(value, int):
            raise ValueError(f"{name} is not a whole number")
        if not 0 <= value <= MAX_COUNT:
            raise ValueError(f"{name} {value} is out of range")
        return value
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int of hundreds of digits: no float holds it
        raise ValueError(f"{name} is out of range") from None
    if not finite:
        raise ValueError(f"{name} is not a finite number")
    if name.endswith("_s") and name not in SIGNED_TIMES and value < 0:
        raise ValueError(f"{name} {value:g} is a negative duration")
    if abs(value) > MAX_SECONDS:
        raise ValueError(f"{name} {value:g} is out of range")
    return float(value)


_REAL = frozenset({int, float})


def _chunks(value: Any) -> Chunks:
    """[[seconds, tokens], ...] checked in a few passes at C speed (a record may have
    thousands of chunks, and a report reads millions of records)."""
    if type(value) is not list:
        raise ValueError("chunks is not a list")
    if any(type(c) is not list or len(c) != 2 or type(c[0]) not in _REAL
           or type(c[1]) is not int for c in value):
        raise ValueError("a chunk is not [seconds, tokens]")
    if not value:
        return Chunks()
    times, tokens = [c[0] for c in value], [c[1] for c in value]
    try:
        total = float(sum(times))
    except OverflowError:
        total = math.inf
    if not math.isfinite(total) or min(times) < 0 or max(times) > MAX_SECONDS:
        raise ValueError("a chunk's time is negative, not finite or out of range")
    if min(tokens) < 0 or max(tokens) > MAX_COUNT:
        raise ValueError("a chunk's token count is out of range")
    return Chunks(times, tokens)  # flat arrays: a record held costs a third


def _headers(value: Any) -> dict[str, str]:
    """A record's rate-limit headers: a small mapping of short text to short text (the
    prober keeps at most 12, names of 64 and values of 40 characters; some slack here)."""
    if type(value) is not dict or len(value) > 16:
        raise ValueError("rate_limit_headers is not a mapping of at most 16 headers")
    if any(type(k) is not str or type(v) is not str or len(k) > 80 or len(v) > 80
           for k, v in value.items()):
        raise ValueError("a rate-limit header is not short text")
    return dict(value)


@functools.cache
def _field_kinds() -> tuple[tuple[str, str, bool, bool], ...]:
    """(name, kind, may be null, required) of every RequestRecord field, from its type."""
    out = []
    for name, f in RequestRecord.__dataclass_fields__.items():
        parts = str(f.type).split(" | ")
        base = next((p for p in parts if p != "None"), "")
        kind = ("chunks" if name == "chunks" else "outcome" if base == "Outcome"
                else "headers" if base == "dict[str, str]"
                else base.split("[")[0] if base in ("int", "float", "bool", "str") else "any")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((name, kind, "None" in parts, required))
    return tuple(out)


def parse_record(obj: Any) -> RequestRecord:
    """A parsed JSON line as a RequestRecord, every field checked against its type.

    ValueError says what is wrong: a line that is not an object, a required field missing,
    a field of the wrong type, a duration below zero, a number that is not finite or is
    absurd (see MAX_SECONDS, MAX_COUNT). Unknown keys are ignored, as `from_dict` does;
    a field of a type this reader does not know is kept as read.
    """
    if type(obj) is not dict:
        raise ValueError(f"not a JSON object but {type(obj).__name__}")
    fields: dict[str, Any] = {}
    for name, kind, nullable, required in _field_kinds():
        value = obj.get(name, _MISSING)
        if value is _MISSING:
            if required:
                raise ValueError(f"no {name}")
        elif value is None and nullable:
            fields[name] = None
        elif kind == "str":
            if type(value) is not str:
                raise ValueError(f"{name} is not a string")
            fields[name] = value
        elif kind in ("int", "float"):
            fields[name] = _number(name, value, kind)
        elif kind == "bool":
            if type(value) is not bool:
                raise ValueError(f"{name} is not true or false")
            fields[name] = value
        elif kind == "chunks":
            fields[name] = _chunks(value)
        elif kind == "headers":
            fields[name] = _headers(value)
        elif kind == "outcome":
            if value not in OUTCOMES:
                raise ValueError(f"outcome {str(value)[:40]!r} is not one of "
                                 f"{', '.join(OUTCOMES)}")
            fields[name] = value
        else:
            fields[name] = value
    return RequestRecord(**fields)


@dataclass
class RecordScan:
    """What reading requests.jsonl found: kept records, skipped lines and why, its hash."""

    path: Path
    #: non-blank lines read
    lines: int = 0
    records: int = 0
    #: reason -> lines skipped for it
    skipped: Counter[str] = field(default_factory=Counter)
    #: the first few skipped lines as "line N: reason"
    examples: list[str] = field(default_factory=list)
    #: the last line was cut mid-write (a crash or a kill while it was written)
    torn_tail: bool = False
    #: bytes read, and their SHA-256 (the file as it was read, whatever happens to it later)
    bytes: int = 0
    sha256: str | None = None

    @property
    def malformed(self) -> int:
        """Lines skipped because they are not records (a torn last line is not counted)."""
        return sum(self.skipped.values())

    def skip(self, lineno: int, reason: str) -> None:
        """Count a skipped line."""
        self.skipped[reason.split(":")[0]] += 1
        if len(self.examples) < 3:
            self.examples.append(f"line {lineno}: {reason}")

    def describe(self) -> str | None:
        """The skipped lines in one sentence, or None when every line was a record."""
        if not self.malformed:
            return None
        why = ", ".join(f"{n:,} {reason}" for reason, n in self.skipped.most_common(4))
        more = len(self.skipped) - 4
        return (f"{self.path.name}: {self.malformed:,} of {self.lines:,} lines are not request "
                f"records and were skipped ({why}{f', {more} other reasons' if more > 0 else ''}"
                f"; first: {'; '.join(self.examples)})")


def _lines(fh: BinaryIO, scan: RecordScan, limit: int | None
           ) -> Iterator[tuple[int, bytes | None, bool]]:
    """(line number, line or None when too long, ended by a newline), reading at most
    MAX_LINE_BYTES + 1 of a line at once; every byte read goes into the hash."""
    digest = hashlib.sha256()
    lineno = 0
    while limit is None or scan.bytes < limit:
        want = MAX_LINE_BYTES + 1
        if limit is not None:
            want = min(want, limit - scan.bytes)
        line = fh.readline(want)
        if not line:
            break
        lineno += 1
        scan.bytes += len(line)
        digest.update(line)
        if line.endswith(b"\n") or len(line) <= MAX_LINE_BYTES:
            yield lineno, line, line.endswith(b"\n")
            continue
        while not line.endswith(b"\n"):  # too long: read on to its end, holding none of it
            line = fh.readline(MAX_LINE_BYTES if limit is None
                               else min(MAX_LINE_BYTES, limit - scan.bytes))
            if not line:
                break
            scan.bytes += len(line)
            digest.update(line)
        yield lineno, None, line.endswith(b"\n")
    scan.sha256 = digest.hexdigest()


class LineCheck(Protocol):
    """What judges each line as it is read (`evalkit.rundir.evidence.RecordCheck`, which
    reads its lines through this module: named here, so the store imports no check)."""

    def not_a_record(self, line: int, reason: str) -> None: ...

    def record(self, line: int, rec: RequestRecord) -> bool: ...


def iter_records(path: Path, scan: RecordScan | None = None, *, strict: bool = False,
                 limit: int | None = None, check: LineCheck | None = None
                 ) -> Iterator[RequestRecord]:
    """Stream requests.jsonl one line at a time (memory bounded by MAX_LINE_BYTES).

    A line that is not a record (not UTF-8, not JSON, not an object, a field of the wrong
    type or out of range, longer than MAX_LINE_BYTES) is skipped and counted in `scan`;
    with `strict` it is a RunDirError instead. A last line cut mid-write (no newline, does
    not parse: a crash or a kill) is noted as `torn_tail`, never an error. `limit` stops
    after that many bytes (to re-read exactly what an earlier pass read). With `check`
    (`evalkit.rundir.evidence.RecordCheck`) every line is also checked as evidence, and
    only the records it accepts are yielded.
    """
    with open(path, "rb") as fh:
        yield from read_lines(fh, scan if scan is not None else RecordScan(Path(path)),
                              strict=strict, limit=limit, check=check)


def read_lines(fh: BinaryIO, scan: RecordScan, *, strict: bool = False,
               limit: int | None = None, check: LineCheck | None = None
               ) -> Iterator[RequestRecord]:
    """`iter_records` over an open binary file (a file on disk, or bytes in memory)."""
    path = scan.path
    for lineno, line, ended in _lines(fh, scan, limit):
        if line is not None and not line.strip():
            continue
        scan.lines += 1
        try:
            if line is None:
                raise ValueError(f"longer than {MAX_LINE_BYTES:,} bytes")
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("not UTF-8") from None
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc.msg}") from None
            except RecursionError:
                raise ValueError("not JSON: nested too deep") from None
            rec = parse_record(obj)
        except ValueError as exc:
            if not ended:  # the final, unterminated line of a crashed run
                scan.torn_tail = True
                scan.lines -= 1
                break
            if strict:
                raise RunDirError(f"{path}:{lineno}: not a request record: {exc}") from None
            scan.skip(lineno, str(exc))
            if check is not None:
                check.not_a_record(lineno, str(exc))
            continue
        scan.records += 1
        if check is None or check.record(lineno, rec):
            yield rec


def read_records(path: Path) -> list[RequestRecord]:
    """Read requests.jsonl; a last line cut mid-write (a crash) is skipped, others must parse."""
    return list(iter_records(path, strict=True))


def read_run_files(run_dir: Path) -> tuple[dict[str, Any], list[RequestRecord]]:
    """The run's metadata and records; a directory that is not a run is a RunDirError."""
    run_dir = Path(run_dir)
    run_file, req_file = run_dir / RUN_FILE, run_dir / REQUESTS_FILE
    if not run_file.is_file() or not req_file.is_file():
        raise RunDirError(f"{run_dir}: not a run directory (needs {RUN_FILE} and "
                          f"{REQUESTS_FILE})")
    meta, _ = read_json_object(run_file, "a run's metadata", RunDirError)
    return meta, read_records(req_file)
