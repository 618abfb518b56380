"""The run directory: `run.json`, `requests.jsonl`, `summary.json`.

Each record is appended and flushed the moment its request ends, so a run stopped by
Ctrl-C or a crash keeps every completed request; reading tolerates a last line cut
mid-write. `run.json` and `summary.json` are replaced atomically (write, then rename) so a
reader never sees half a file. Nothing secret is ever written: the caller passes a config
already stripped of keys and header values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from evalkit.errors import RunDirError
from evalkit.records import RequestRecord

RUN_FILE = "run.json"
REQUESTS_FILE = "requests.jsonl"
SUMMARY_FILE = "summary.json"


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically: a reader sees the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


class RunStore:
    """An open run directory that records are appended to as requests complete."""

    def __init__(self, out_dir: Path, run_meta: dict[str, Any]) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.meta = dict(run_meta)
        self.records: list[RequestRecord] = []
        write_json(self.dir / RUN_FILE, self.meta)
        self._fh: TextIO | None = open(self.dir / REQUESTS_FILE, "w", encoding="utf-8")  # noqa: SIM115

    def append(self, record: RequestRecord) -> None:
        """Keep the record and put its line on disk now (flushed, so a crash keeps it)."""
        self.records.append(record)
        if self._fh is not None:
            self._fh.write(record.to_json() + "\n")
            self._fh.flush()

    def update_meta(self, **fields: Any) -> None:
        """Merge fields into run.json and rewrite it."""
        self.meta.update(fields)
        write_json(self.dir / RUN_FILE, self.meta)

    def write_summary(self, summary: dict[str, Any]) -> Path:
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


def read_records(path: Path) -> list[RequestRecord]:
    """Read requests.jsonl; a last line cut mid-write (a crash) is skipped, others must parse."""
    records: list[RequestRecord] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(RequestRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            if i >= len(lines) - 1:  # the final, unterminated line of a crashed run
                break
            raise RunDirError(f"{path}:{i}: not a request record: {exc}") from None
    return records


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[RequestRecord]]:
    """The run's metadata and records; a directory that is not a run is a RunDirError."""
    run_dir = Path(run_dir)
    run_file, req_file = run_dir / RUN_FILE, run_dir / REQUESTS_FILE
    if not run_file.is_file() or not req_file.is_file():
        raise RunDirError(f"{run_dir}: not a run directory (needs {RUN_FILE} and "
                          f"{REQUESTS_FILE})")
    try:
        meta = json.loads(run_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{run_file}: not valid JSON: {exc}") from None
    return meta, read_records(req_file)


def write_records(path: Path, records: Iterable[RequestRecord]) -> None:
    """Write a whole requests.jsonl (used when merging shards)."""
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(rec.to_json() + "\n")
