"""A run directory read for review, once: run.json, the records, the summary as checked
(and re-derived), the vendor's scrapes, the exact bytes to attach, and what was repaired.

`open_run` is the one reader and `RunDir` the one thing it hands to the review and the
report: requests.jsonl is read a single time, and that pass gives the digest the report
draws from, the records the summary is re-derived from and the records `RunDir.records`
holds (what the checks are is `evalkit.rundir.checked`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import Summary
from evalkit.errors import InputError, RunDirError
from evalkit.records import RequestRecord
from evalkit.rundir.audit import SUMMARY_SCHEMA
from evalkit.rundir.checked import check_summary, scan_records
from evalkit.rundir.digest import RecordDigest, _inside, clean_run
from evalkit.rundir.evidence import RecordCheck
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.store import (
    REQUESTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    RecordScan,
    iter_records,
    read_json_object,
)
from evalkit.rundir.voicecheck import TURNS_FILE, check_voice_summary
from evalkit.sanitize import clean


@dataclass(frozen=True)
class RunDir:
    """A run directory, read once: parsed documents, records, and the exact bytes we attach.

    From `open_run`, `records` are the records read with the digest, held when
    requests.jsonl is within the re-derive cap (`REDERIVE_MAX_BYTES`); over it none is
    held (`records` streams the file again if iterated, bounded) and `digest` is what the
    report shows of them (counts, TTFT per level, chart samples). Built by hand (tests,
    benchmarks), `records` may be any collection and the digest is drawn from it.
    """

    #: run.json as written (for the importers and the evidence checks; `meta` reads it)
    run: dict[str, Json]
    #: summary.json read once (`open_run`; re-derived or capped as `rebuilt`/notes say):
    #: its exact bytes stay in `raw` for the digests and attachments
    summary: Summary
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
    #: requests.jsonl checked as evidence (`evalkit.rundir.evidence`): what it found was
    #: kept out of the figures and degrades the run (None: built by hand)
    evidence: RecordCheck | None = None
    #: requests.jsonl as read, and how many of its bytes were (the digest's): the report
    #: attaches exactly those bytes, compressed (`evalkit.render.evidence`)
    requests_path: Path | None = None
    requests_bytes: int = 0
    #: a voice run's turns.jsonl, whose turns the summary was checked against (None: no
    #: voice run, or its turns were not what was shown)
    turns_path: Path | None = None
    #: run.json read once, typed (`evalkit.rundir.meta`)
    meta: RunMeta = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # built by hand (tests, benchmarks) with summary.json's dict: read here, once
        if not isinstance(self.summary, Summary):
            object.__setattr__(self, "summary", Summary.from_json(self.summary))
        object.__setattr__(self, "meta", RunMeta.from_json(self.run))

    @functools.cached_property
    def stats(self) -> RecordDigest:
        """What the report shows of the records."""
        return self.digest if self.digest is not None else RecordDigest.of(self.records)


class RecordFile(Collection[RequestRecord]):
    """The records of a requests.jsonl too big to hold, streamed from the file each time
    they are iterated (malformed lines and records that are no evidence of `run` skipped;
    only the bytes read when the run was loaded)."""

    def __init__(self, path: Path | None, count: int, limit: int,
                 run: Mapping[str, Any] | None = None) -> None:
        self.path, self.count, self.limit = path, count, limit
        self.run: Mapping[str, Any] = run or {}

    def __iter__(self) -> Iterator[RequestRecord]:
        return (iter_records(self.path, limit=self.limit, check=RecordCheck(self.run))
                if self.path else iter(()))

    def __len__(self) -> int:
        return self.count

    def __contains__(self, item: object) -> bool:
        return any(item == rec for rec in self)


def open_run(run_dir: Path) -> RunDir:
    """Read, check and (where needed) repair a run directory (`evalkit.rundir.checked`):
    a missing summary or one the records do not support is re-derived from them,
    malformed record lines are skipped and counted, and nothing outside the directory is
    read.

    RunDirError: not a directory, no run.json, a file resolving outside the directory, or
    neither a summary nor a single record. InputError: run.json or summary.json is not a
    JSON object (or is not a summary at all).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: not a directory")
    root = run_dir.resolve()
    run_file = _inside(run_dir, root, RUN_FILE)
    if run_file is None:
        raise RunDirError(f"{run_dir}: no {RUN_FILE}; is this a run directory?")
    summary_file = _inside(run_dir, root, SUMMARY_FILE)
    req_file = _inside(run_dir, root, REQUESTS_FILE)
    run, run_raw = read_json_object(run_file, "a run's metadata")
    run, notes = clean_run(run, run_file)
    raw = {RUN_FILE: run_raw}
    summary: dict[str, Any] | None = None
    if summary_file is not None:
        summary, raw[SUMMARY_FILE] = read_json_object(summary_file, "a run summary")
        if summary.get("schema") != SUMMARY_SCHEMA:
            raise InputError(f"{summary_file}: schema is {str(summary.get('schema'))[:60]!r}, "
                             f"expected {SUMMARY_SCHEMA!r}")
    scan = RecordScan(req_file or run_dir / REQUESTS_FILE)
    evidence = RecordCheck(run)
    digest, records = scan_records(req_file, scan, keep_all=summary is None, check=evidence)
    turns_file = _inside(run_dir, root, TURNS_FILE) if digest.n == 0 else None
    if summary is None and digest.n == 0 and turns_file is None:
        raise RunDirError(
            f"{run_dir}: no {SUMMARY_FILE} and no request record in {REQUESTS_FILE}"
            + (f" ({evidence.total:,} lines that are not evidence of this run)"
               if evidence.total else "")
            + ": nothing was measured, or this is not a run directory")
    if scan.describe():
        notes.append(str(scan.describe()))
    notes += evidence.notes()
    if scan.torn_tail:
        notes.append(f"{REQUESTS_FILE}: its last line was cut mid-write (the probe stopped "
                     "while writing it); that request is not counted")
    # a voice run (no request record): its summary checked against its turns
    voice = check_voice_summary(summary, run, turns_file, raw, notes) \
        if turns_file is not None else None
    if voice is None and summary is None and digest.n == 0:
        raise RunDirError(f"{run_dir}: no {SUMMARY_FILE}, no request record in "
                          f"{REQUESTS_FILE} and no turn in {TURNS_FILE}: nothing was "
                          "measured, or this is not a run directory")
    checked = voice or check_summary(summary, run=run, digest=digest, scan=scan,
                                     records=records, req_file=req_file, run_dir=run_dir,
                                     root=root, notes=notes, evidence=evidence)
    del records  # held from here only as checked.records: none over the cap
    summary, typed = checked.summary, checked.typed
    if checked.rebuilt_json is not None:
        raw["summary.rebuilt.json"] = checked.rebuilt_json
    imported = run.get("imported")
    if isinstance(imported, Mapping):
        # a peer tool's run (`evalkit import`): capped however its summary was written
        from evalkit.rundir.importers.common import differs_notes
        from evalkit.rundir.importers.run import fail_closed, imported_reason

        summary, typed = fail_closed(summary, imported), None
        notes[:0] = [imported_reason(imported), *differs_notes(imported)]
    held: Collection[RequestRecord] = (
        tuple(checked.records) if checked.records is not None
        else RecordFile(req_file, digest.n, scan.bytes, run))
    # read typed once: here, or by the check that had to read it (a voice run's)
    return RunDir(run, typed if typed is not None else Summary.from_json(summary), held, raw,
                  scan.sha256 if req_file else None, digest,
                  tuple(clean(n, 800) for n in notes),
                  checked.rebuilt and clean(checked.rebuilt, 800), scan.malformed, evidence,
                  requests_path=req_file, requests_bytes=scan.bytes,
                  turns_path=turns_file if voice is not None else None)
