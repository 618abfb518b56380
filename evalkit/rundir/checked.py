"""A run directory handed over is input, not truth: read it bounded, check it, repair it.

`report` and `compare` read run directories a vendor or a colleague handed over, and
directories a killed probe left behind. `read_run(dir)` reads one like any other input:

    run.json        a JSON object (bounded size); a field of the wrong type is dropped
                    and noted, never a traceback further on
    requests.jsonl  streamed a line at a time (`runstore.iter_records`): a line that is not
                    a record is skipped and counted; what the report needs of the records
                    is kept in a bounded `RecordDigest` (the records themselves only
                    while the summary is re-derived, below)
    summary.json    checked on its own (shape, finite numbers, no negative durations or
                    counts, nothing absurd), against the records' digest (requests,
                    outcomes, phases, ramp levels, TTFT n/p50/p90 per level), and then
                    re-derived whole from the records and run.json's write-up and
                    compared figure by figure (`summary_rederived_differences`): the
                    digest's checks leave the validity, rates, throughput and the ramp's
                    verdict to trust, and a summary lifted to 'valid' must not pass. That
                    holds the records at once, so a requests.jsonl over
                    REDERIVE_MAX_BYTES is checked on the digest only (and says so)

A missing summary (a killed probe never wrote one) or one that disagrees with its records
is re-derived from the records (`metrics.summarize`, with the client checks run.json
kept), and the run is marked degraded with the reason. The records are the evidence and
the summary only a digest of them, so when the two disagree the records win: refusing
would stop a review for a defect the records repair, and re-deriving is what a reviewer
would do by hand. What was repaired is said in `notes`, for page one and the terminal.

Only files inside the run directory are read: a `run.json`, `summary.json` or
`requests.jsonl` that is a link resolving outside it is refused (a RunDirError), so
nothing from elsewhere on the machine is hashed, printed or attached.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import InputError, RunDirError
from evalkit.records import RequestRecord
from evalkit.rundir.audit import (
    SUMMARY_SCHEMA,
    summary_disagreements,
    summary_problems,
    summary_rederived_differences,
)
from evalkit.rundir.digest import RecordDigest, _inside, clean_run
from evalkit.rundir.rederive import (
    REDERIVE_MAX_BYTES,
    _vendor_metrics,
    derive_summary,
    rebuild_summary,
)
from evalkit.rundir.store import (
    REQUESTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    RecordScan,
    iter_records,
    read_json_object,
)
from evalkit.sanitize import clean

# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class CheckedRun:
    """A run directory read and checked: what the report shows, and what it must say."""

    run: dict[str, Any]
    summary: dict[str, Any]
    digest: RecordDigest
    scan: RecordScan
    #: exact bytes of the files to attach, by attachment name
    raw: dict[str, bytes]
    #: what reading found and repaired, one sentence each (page one and the terminal)
    notes: tuple[str, ...]
    #: None: summary.json as the probe wrote it; else why it was re-derived
    rebuilt: str | None
    requests_path: Path | None


def read_run(run_dir: Path) -> CheckedRun:
    """Read, check and (where needed) repair a run directory; see the module docstring.

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
    digest = RecordDigest()
    kept: list[RequestRecord] | None = [] if summary is None else None
    if req_file is not None:
        for rec in iter_records(req_file, scan):
            digest.add(rec)
            if kept is not None:
                kept.append(rec)
    if summary is None and digest.n == 0:
        raise RunDirError(
            f"{run_dir}: no {SUMMARY_FILE} and no request record in {REQUESTS_FILE}"
            + (f" ({scan.malformed:,} lines that are not records)" if scan.malformed else "")
            + ": nothing was measured, or this is not a run directory")
    if scan.describe():
        notes.append(str(scan.describe()))
    if scan.torn_tail:
        notes.append(f"{REQUESTS_FILE}: its last line was cut mid-write (the probe stopped "
                     "while writing it); that request is not counted")
    rebuilt = reason = None
    records = f"the {digest.n:,} request records"
    if summary is None:
        rebuilt = (f"{SUMMARY_FILE} is missing (the probe stopped before writing it): every "
                   f"figure was rebuilt from {records}")
        reason = f"{SUMMARY_FILE} was missing: rebuilt from {records}"
    elif digest.n == 0:
        rebuilt = reason = (
            f"{REQUESTS_FILE} {'is missing' if req_file is None else 'holds no record'}: no "
            f"figure of {SUMMARY_FILE} has a measurement behind it, so none is shown")
    else:
        malformed = summary_problems(summary)
        problems = malformed or summary_disagreements(summary, digest)
        # an imported run's summary is the importer's (and capped below): not re-derived
        whole = not problems and not isinstance(run.get("imported"), Mapping)
        if whole and req_file is not None and scan.bytes <= REDERIVE_MAX_BYTES:
            kept = list(iter_records(req_file, limit=scan.bytes))
            # run.json's status unreadable (dropped above): the summary's own stands in
            written = run if run.get("status") is not None else {
                **run, "status": summary.get("run_status")}
            differ = summary_rederived_differences(summary, derive_summary(kept, written))
            problems = [f"{', '.join(differ[:3])}"
                        f"{f' (and {len(differ) - 3} more)' if len(differ) > 3 else ''} "
                        "differ from a re-derivation"] if differ else []
            if not problems:
                kept = None
        elif whole:
            notes.append(f"{REQUESTS_FILE} is over {REDERIVE_MAX_BYTES >> 20} MiB: "
                         f"{SUMMARY_FILE} was checked against it on counts, outcomes and "
                         "TTFT, not re-derived whole")
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            what = "is malformed" if malformed else f"does not agree with {REQUESTS_FILE}"
            rebuilt = (f"{SUMMARY_FILE} {what}: "
                       f"{'; '.join(p[:200] for p in problems[:3])}{more}; every figure was "
                       f"re-derived from {records}")
            reason = f"{SUMMARY_FILE} {what}: re-derived from {records}"
    if rebuilt is not None:
        if kept is None:  # read again, exactly the bytes read the first time
            kept = (list(iter_records(req_file, limit=scan.bytes)) if req_file is not None
                    else [])
        old_vendor = summary.get("vendor_metrics") if summary is not None else None
        summary = rebuild_summary(kept, run, rebuilt, scan.sha256, reason)
        vendor, said = _vendor_metrics(run_dir, root, kept, old_vendor)
        if vendor is not None:
            summary["vendor_metrics"] = vendor
        if said:
            notes.append(said)
        del kept
        raw["summary.rebuilt.json"] = (json.dumps(summary, indent=2, allow_nan=False)
                                        + "\n").encode()
        notes.insert(0, rebuilt)
    assert summary is not None
    imported = run.get("imported")
    if isinstance(imported, Mapping):
        # a peer tool's run (`evalkit import`): capped however its summary was written
        from evalkit.rundir.importers.run import fail_closed, imported_reason

        summary = fail_closed(summary, imported)
        notes.insert(0, imported_reason(imported))
    return CheckedRun(run, summary, digest, scan, raw, tuple(clean(n, 800) for n in notes),
                      rebuilt and clean(rebuilt, 800), req_file)
