"""A run directory handed over is input, not truth: read it bounded, check it, repair it.

`report` and `compare` read run directories a vendor or a colleague handed over, and
directories a killed probe left behind. `open_run(dir)` (`evalkit.rundir.run`) reads one
like any other input, and this module is what it checks and repairs:

    run.json        a JSON object (bounded size); a field of the wrong type is dropped
                    and noted, never a traceback further on
    requests.jsonl  streamed once, a line at a time (`scan_records`): a line that is not
                    a record is skipped and counted; what the report needs of the records
                    is kept in a bounded `RecordDigest`, and the records themselves while
                    the file is within REDERIVE_MAX_BYTES, for the re-derivation below
                    (one read serves the digest, the re-derivation and the charts)
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
A summary rebuilt from a requests.jsonl over the cap (its records were not kept) reads
the file a second time, exactly the bytes read the first.

Only files inside the run directory are read: a `run.json`, `summary.json` or
`requests.jsonl` that is a link resolving outside it is refused (a RunDirError), so
nothing from elsewhere on the machine is hashed, printed or attached.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from evalkit.analysis.summary import Summary, as_mapping
from evalkit.records import RequestRecord
from evalkit.rundir.audit import (
    summary_disagreements,
    summary_problems,
    summary_rederived_differences,
)
from evalkit.rundir.digest import RecordDigest
from evalkit.rundir.evidence import RecordCheck
from evalkit.rundir.rederive import (
    REDERIVE_MAX_BYTES,
    _vendor_metrics,
    derive_summary,
    rebuild_summary,
)
from evalkit.rundir.store import REQUESTS_FILE, SUMMARY_FILE, RecordScan, iter_records


def scan_records(req_file: Path | None, scan: RecordScan, *, keep_all: bool,
                 check: RecordCheck | None = None
                 ) -> tuple[RecordDigest, list[RequestRecord] | None]:
    """requests.jsonl read once: its digest, and its records when they may be held.

    The records are kept while the file is within REDERIVE_MAX_BYTES (a file that grows
    past it while read, a run still going, drops them), or whatever its size with
    `keep_all` (no summary: it is rebuilt from them). None: not kept, memory stays that of
    the digest. No file: no record, kept. With `check` only the records it accepts as
    evidence (`evalkit.rundir.evidence`) are digested and kept.
    """
    digest = RecordDigest()
    if req_file is None:
        return digest, []
    kept: list[RequestRecord] | None = (
        [] if keep_all or req_file.stat().st_size <= REDERIVE_MAX_BYTES else None)
    for rec in iter_records(req_file, scan, check=check):
        digest.add(rec)
        if kept is not None:
            if keep_all or scan.bytes <= REDERIVE_MAX_BYTES:
                kept.append(rec)
            else:
                kept = None
    return digest, kept


class Checked(NamedTuple):
    """What `check_summary` found: the summary to show and what the run may hold."""

    summary: dict[str, Any]
    #: None: summary.json as the probe wrote it; else why it was re-derived
    rebuilt: str | None
    #: the re-derived summary as attached (summary.rebuilt.json), None when not rebuilt
    rebuilt_json: bytes | None
    #: the records, when within REDERIVE_MAX_BYTES (None: over it, not to be held)
    records: list[RequestRecord] | None
    #: `summary` read typed already by the check (the voice check reads it so), handed
    #: on so that `open_run` does not parse the same document again (None: not read yet)
    typed: Summary | None = None


def check_summary(summary: dict[str, Any] | None, *, run: dict[str, Any],
                  digest: RecordDigest, scan: RecordScan,
                  records: list[RequestRecord] | None, req_file: Path | None,
                  run_dir: Path, root: Path, notes: list[str],
                  evidence: RecordCheck | None = None) -> Checked:
    """The summary to show, checked against the records and re-derived where needed.

    `records` are the scan's (`scan_records`; None: over the cap, not kept); what was
    found and repaired is appended to `notes`, the rebuild's reason first. `evidence` is
    the scan's check of the records: what it found degrades the run, its reasons first
    (`with_evidence`), after the summary was compared with the records it accepted.
    """
    reasons = evidence.reasons() if evidence is not None else []
    rebuilt = reason = None
    count = f"the {digest.n:,} request records"
    if summary is None:
        rebuilt = (f"{SUMMARY_FILE} is missing (the probe stopped before writing it): every "
                   f"figure was rebuilt from {count}")
        reason = f"{SUMMARY_FILE} was missing: rebuilt from {count}"
    elif digest.n == 0:
        rebuilt = reason = (
            f"{REQUESTS_FILE} {'is missing' if req_file is None else 'holds no record'}: no "
            f"figure of {SUMMARY_FILE} has a measurement behind it, so none is shown")
    else:
        malformed = summary_problems(summary)
        problems = malformed or summary_disagreements(summary, digest)
        # an imported run's summary is the importer's (and capped later): not re-derived
        whole = not problems and not isinstance(run.get("imported"), Mapping)
        if whole and records is not None and scan.bytes <= REDERIVE_MAX_BYTES:
            # run.json's status unreadable (dropped by clean_run): the summary's own stands in
            written = run if run.get("status") is not None else {
                **run, "status": summary.get("run_status")}
            derived = derive_summary(records, written, summary)
            differ = summary_rederived_differences(summary, derived)
            problems = [f"{', '.join(differ[:3])}"
                        f"{f' (and {len(differ) - 3} more)' if len(differ) > 3 else ''} "
                        "differ from a re-derivation"] if differ else []
        elif whole:
            notes.append(f"{REQUESTS_FILE} is over {REDERIVE_MAX_BYTES >> 20} MiB: "
                         f"{SUMMARY_FILE} was checked against it on counts, outcomes and "
                         "TTFT, not re-derived whole")
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            what = "is malformed" if malformed else f"does not agree with {REQUESTS_FILE}"
            rebuilt = (f"{SUMMARY_FILE} {what}: "
                       f"{'; '.join(p[:200] for p in problems[:3])}{more}; every figure was "
                       f"re-derived from {count}")
            reason = f"{SUMMARY_FILE} {what}: re-derived from {count}"
    held = records if scan.bytes <= REDERIVE_MAX_BYTES else None
    if rebuilt is None:
        assert summary is not None
        return Checked(with_evidence(summary, reasons), None, None, held)
    if records is None:  # over the cap, not kept: read again, exactly the bytes read before
        records = list(iter_records(req_file, limit=scan.bytes, check=RecordCheck(run))
                       if evidence is not None else iter_records(req_file, limit=scan.bytes)
                       ) if req_file else []
    old_vendor = summary.get("vendor_metrics") if summary is not None else None
    summary = rebuild_summary(records, run, rebuilt, scan.sha256, reason, summary)
    vendor, said = _vendor_metrics(run_dir, root, records, old_vendor)
    if vendor is not None:
        summary["vendor_metrics"] = vendor
    if said:
        notes.append(said)
    notes.insert(0, rebuilt)
    summary = with_evidence(summary, reasons)
    return Checked(summary, rebuilt,
                   (json.dumps(summary, indent=2, allow_nan=False) + "\n").encode(), held)


def with_evidence(summary: dict[str, Any], reasons: list[str]) -> dict[str, Any]:
    """The summary with the records' findings (`RecordCheck.reasons`) leading its validity
    reasons, and the run at best degraded: figures drawn from records some of which were
    no evidence stand, but not as a valid run's."""
    if not reasons:
        return summary
    from evalkit.analysis.validity import worst

    validity = dict(as_mapping(summary.get("validity")))
    status = validity.get("status")
    given = validity.get("reasons")
    validity["status"] = worst(status if status in ("valid", "degraded", "invalid")
                               else "degraded", "degraded")
    validity["reasons"] = list(dict.fromkeys(
        [*reasons, *(r for r in given if isinstance(r, str))] if isinstance(given, list)
        else reasons))
    return {**summary, "validity": validity}
