"""A run directory read for review: run.json, the records (read once), the
summary, checked."""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.records import RequestRecord
from evalkit.rundir.checked import read_run
from evalkit.rundir.digest import RecordDigest
from evalkit.rundir.store import iter_records


@dataclass(frozen=True)
class RunDir:
    """A run directory, read once: parsed documents, records, and the exact bytes we attach.

    `open_run` keeps no record in memory: `records` re-reads requests.jsonl when iterated,
    and `digest` holds what the report shows of them (counts, TTFT per level, chart
    samples). Built by hand (tests, benchmarks), `records` may be any collection and the
    digest is drawn from it.
    """

    run: dict[str, Any]
    summary: dict[str, Any]
    records: Collection[RequestRecord] = ()
    raw: dict[str, bytes] = field(default_factory=dict)
    #: requests.jsonl is too big to attach; its hash is printed so it can still be checked
    requests_sha256: str | None = None
    digest: RecordDigest | None = None
    #: what reading the run directory found and repaired, one sentence each
    notes: tuple[str, ...] = ()
    #: why the summary was re-derived from the records (None: summary.json as written)
    rebuilt: str | None = None
    #: lines of requests.jsonl that are not records (skipped)
    skipped_lines: int = 0

    @functools.cached_property
    def stats(self) -> RecordDigest:
        """What the report shows of the records."""
        return self.digest if self.digest is not None else RecordDigest.of(self.records)


class RecordFile(Collection[RequestRecord]):
    """The records of requests.jsonl, streamed from the file each time they are iterated
    (malformed lines skipped; only the bytes read when the run was loaded)."""

    def __init__(self, path: Path | None, count: int, limit: int) -> None:
        self.path, self.count, self.limit = path, count, limit

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter_records(self.path, limit=self.limit) if self.path else iter(())

    def __len__(self) -> int:
        return self.count

    def __contains__(self, item: object) -> bool:
        return any(item == rec for rec in self)


def open_run(run_dir: Path) -> RunDir:
    """Read and check a run directory (`evalkit.rundir.checked.read_run`): a missing summary or
    one the records do not support is re-derived from them, malformed record lines are
    skipped and counted, and nothing outside the directory is read. Not a run directory
    is a RunDirError; a run.json or summary.json that is not a JSON object an InputError.
    """
    checked = read_run(Path(run_dir))
    scan = checked.scan
    return RunDir(checked.run, checked.summary,
                   RecordFile(checked.requests_path, checked.digest.n, scan.bytes),
                   checked.raw, scan.sha256 if checked.requests_path else None,
                   checked.digest, checked.notes, checked.rebuilt, scan.malformed)
