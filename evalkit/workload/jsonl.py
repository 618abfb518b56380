"""The buyer's JSONL files (conversations, a trace) read as bounded bytes, a JSON value a
line, with every unreadable line a problem rather than the end of the reading.

A file too large, with too many lines, or not a regular file is refused as a whole
before it is parsed (cheaply: by its size, then by counting newlines); a line too long,
not UTF-8 or not JSON is a problem on its line, and the rest are still read, so the
buyer learns of every bad line at once. JSON is parsed strictly: `NaN` and `Infinity`
are refused, a key twice in an object is a problem, nesting is bounded by the line size.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from evalkit.errors import WorkloadError
from evalkit.questionnaire.reader import clip
from evalkit.workload.fields import Checker, problems_error

T = TypeVar("T")

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINES = 100_000
MAX_LINE_BYTES = 1024 * 1024


@dataclass
class JsonLines:
    """A JSONL file's values by line, what could not be read, and where it came from."""

    name: str
    sha256: str
    #: (1-based line, the JSON value) of every non-blank line that parsed
    rows: list[tuple[int, Any]] = field(default_factory=list)
    #: (line, message) of every line that did not
    problems: list[tuple[int, str]] = field(default_factory=list)


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(f"the key {clip(key)} appears twice in one object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {clip(text)} is too large")
    return value


def loads(text: str) -> Any:
    """Strict JSON: no NaN or Infinity, no key twice, no number too large for a float."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant,
                      parse_float=_float)


def read_jsonl(path: Path, what: str) -> JsonLines:
    """`path`'s lines as JSON values, or a WorkloadError when the file as a whole cannot
    be one (`what` names it: "conversations", "trace")."""
    p = Path(path)
    try:
        if not p.is_file():
            raise WorkloadError(f"{p}: not a {what} file (no such file, or not a regular file)")
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _too_large(p, size, what)
        with p.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise WorkloadError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _too_large(p, len(raw), what)
    count = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
    if count > MAX_LINES:
        raise WorkloadError(f"{p}: {count:,} lines is too many for a {what} file "
                            f"(limit {MAX_LINES:,} lines)")
    out = JsonLines(p.name, hashlib.sha256(raw).hexdigest())
    for i, line in enumerate(raw.split(b"\n"), 1):
        if i == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            out.problems.append((i, f"the line is {len(line):,} bytes (limit "
                                 f"{MAX_LINE_BYTES:,} bytes a line)"))
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.problems.append((i, f"not UTF-8 text (byte 0x{line[exc.start]:02x} at column "
                                 f"{exc.start + 1})"))
            continue
        try:
            out.rows.append((i, loads(text)))
        except json.JSONDecodeError as exc:
            out.problems.append((i, f"not JSON: {exc.msg} (column {exc.colno})"))
        except RecursionError:
            out.problems.append((i, "not JSON we read: nested too deeply"))
        except ValueError as exc:
            out.problems.append((i, f"not JSON we read: {str(exc)[:200]}"))
    return out


def checked_rows(path: Path, lines: JsonLines, row: Callable[[Checker, Any, int], T | None],
                 empty: str, what: str) -> list[T]:
    """Each parsed line made into an item by `row` (which reports its problems on the
    Checker it is given, named by that line), or one WorkloadError with every problem of
    the file: its unreadable lines, its rows' problems, `empty` when no line held one."""
    found = list(lines.problems)
    kept: list[T] = []
    for number, value in lines.rows:
        check = Checker({}, line=number)
        item = row(check, value, number)
        if item is not None:
            kept.append(item)
        found.extend(check.found)
    if not found and not kept:
        found.append((1, empty))
    if found:
        raise problems_error(str(path), found, what)
    return kept


def _too_large(p: Path, size: int, what: str) -> WorkloadError:
    return WorkloadError(f"{p}: {size:,} bytes is too large for a {what} file "
                         f"(limit {MAX_FILE_BYTES:,} bytes)")
