"""Appendices A to C: the methodology's settings, the provenance of the report and of
the run, the evidence attached, the outcomes and errors. Pure: the typed `Scorecard`, the
opened run and the attachments' digests in, strings out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import evalkit
from evalkit.provenance import short
from evalkit.render import words
from evalkit.render.drawn import PageStamp
from evalkit.render.pagetext import (
    SHORT_TEXT,
    check_rows,
    command_text,
    fmt_value,
    provenance_text,
)
from evalkit.render.pdf import clip
from evalkit.review.scorecard import Scorecard
from evalkit.rundir.digest import RecordDigest
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.run import RunDir

Rows = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Appendix:
    """What Appendices A to C print (D is `evalkit.render.rawtables`, E the questions)."""

    #: A: the suite and profile the run followed, the tolerances and SLO profiles judged by
    suite_version: str
    profile: str
    tolerances: Rows
    slo_profiles: Rows
    #: B: who wrote the report and who measured the run
    tool_version: str
    tool_digest: str
    run_tool_version: str
    run_provenance: str
    run_command: str
    client_host: str
    run_times: str
    n_records: int
    skipped_lines: int
    #: records read but no evidence of this run (foreign, repeated, impossible)
    left_out: int
    summary_source: str
    checks: Rows
    #: the attachments by name, with their SHA-256
    evidence: Rows
    requests_sha256: str | None
    #: where the records are attached (None: not attached)
    records_attached: str | None
    #: C: outcomes and the most frequent errors (none without a run)
    has_run: bool
    outcomes: tuple[tuple[str, int], ...]
    errors: tuple[tuple[str, int], ...]


def run_times(meta: RunMeta, when: str | None) -> str:
    """When the run started and ended, its status, and when its last request ended."""
    return (f"{fmt_value(meta.started_at)} to {fmt_value(meta.ended_at)}"
            + (f" ({fmt_value(meta.status)})" if meta.status else "")
            + (f"; last request ended {when}" if when else ""))


def appendix(card: Scorecard, run: RunDir | None, evidence: Mapping[str, str],
             stamp: PageStamp, when: str | None, records_attached: str | None) -> Appendix:
    """Appendices A to C; `when` is when the run's last request ended (None: unknown)."""
    meta = run.meta if run else RunMeta()
    digest = run.stats if run else RecordDigest()
    summary = run.summary if run else None
    source = ""
    if run is not None:
        source = (clip(run.rebuilt, 600) if run.rebuilt else
                  "summary.json, as the probe wrote it, checked against the records")
    return Appendix(
        suite_version=clip(meta.suite_version or evalkit.SUITE_VERSION, 20),
        profile=fmt_value(meta.profile or meta.config.profile),
        tolerances=tuple((k, fmt_value(v)) for k, v in sorted(
            card.tolerances.to_dict().items() if card.tolerances is not None else ())
            if k != "slo_profiles"),
        slo_profiles=tuple((k, fmt_value(asdict(p)))
                           for k, p in sorted(card.slo_profiles.items())),
        tool_version=clip(stamp.tool_version, 40),
        tool_digest=short(stamp.tool_sha256),
        run_tool_version=clip(meta.tool_version or "—", 20),
        run_provenance=provenance_text(meta.provenance),
        run_command=command_text(meta.provenance),
        client_host=clip(words.client_host(meta.client), SHORT_TEXT),
        run_times=run_times(meta, when),
        n_records=digest.n,
        skipped_lines=run.skipped_lines if run else 0,
        left_out=(run.evidence.total - run.evidence.counts.get("not-a-record", 0)
                  if run and run.evidence else 0),
        summary_source=source,
        checks=tuple(check_rows(summary)),
        evidence=tuple(sorted(evidence.items())),
        requests_sha256=run.requests_sha256 if run else None,
        records_attached=records_attached,
        has_run=run is not None,
        outcomes=tuple(sorted(digest.outcomes.items())),
        errors=tuple((clip(msg, 200), n) for msg, n in digest.errors.most_common(10)))
