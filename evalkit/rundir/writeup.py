"""A run written up once it ends: its summary, its Parquet file, its final run.json.

The probe hands over how the run ended and what the write-up needs beyond the records
(`RunEnd`); this reads the records back once (the summary, the vendor's metrics and the
Parquet file share the read), so a run directory is completed here whatever ended it:
a finished run, Ctrl-C, a crash, an endpoint that failed. Each step that fails says so
in run.json and loses nothing else: the JSONL is the evidence, the rest derives from it.

The probe gets the summary back as the frozen `Summary` every later stage reads (read
once, from the document just written): summary.json's bytes are the dict `summarize`
made, unchanged, and the probe's closing lines read its typed fields, so a renamed figure
is one field that mypy follows into the terminal's words too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from evalkit.analysis.jsonread import Json
from evalkit.records import RequestRecord
from evalkit.rundir.store import RunStore

if TYPE_CHECKING:
    from evalkit.analysis.jsonread import Json
    from evalkit.analysis.summary import Summary


class VendorMetrics(Protocol):
    """The vendor's own metrics page as scraped during the run (the probe's scraper)."""

    #: the page's URL as the run may write it (a token in its query blanked)
    shown_url: str

    def summary(self, records: Sequence[RequestRecord]) -> dict[str, Json]: ...


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, and what its write-up needs beyond the records."""

    #: complete | interrupted | failed | crashed
    status: str
    #: why it failed (redacted by the probe), None when it did not
    error: str | None
    #: what `summarize` needs beyond the records (plain data, as run.json stores it)
    summary_meta: Mapping[str, Json]
    #: the final run.json fields the probe measured (client checks, connect, canaries...)
    run_meta: Mapping[str, Json] = field(default_factory=dict)
    vendor: VendorMetrics | None = None


def write_up(store: RunStore, end: RunEnd) -> Summary | None:
    """Close the records and write the run up: summary.json (None: it could not be
    made, and why is in run.json), requests.parquet, run.json's end.

    Safe to call twice (a second call after an interrupted first rewrites the same files).
    """
    store.close()
    try:  # read back once: the summary, the vendor's metrics and the Parquet file share it
        records: list[RequestRecord] | None = store.records
    except Exception:  # each step reads on its own, and says how it failed, as it would
        records = None
    summary = final_summary(store, end, records)
    write_parquet_beside(store, records)
    store.update_meta(status=end.status, ended_at=now_iso(), error=end.error,
                      **end.run_meta, requests=store.count)
    return summary


def final_summary(store: RunStore, end: RunEnd,
                  records: list[RequestRecord] | None = None) -> Summary | None:
    """Summarise whatever exists (`records`, read back from requests.jsonl; None: read
    them here), write summary.json, and give it back typed (None: it could not be made,
    and why is in run.json); a failure here must not hide the run's own error."""
    from evalkit.analysis.summarize import SummaryMeta, summarize
    from evalkit.analysis.summary import Summary

    try:
        if records is None:
            records = store.records
        summary = dict(summarize(records, SummaryMeta.from_dict(
            {**end.summary_meta, "run_status": end.status, "run_error": end.error})))
    except Exception as exc:  # a summary bug must not lose the records' story
        store.update_meta(summary_error=f"{type(exc).__name__}: {exc}")
        if end.status == "complete":
            raise
        return None
    summary["run_status"] = end.status
    if end.vendor is not None:
        try:
            summary["vendor_metrics"] = end.vendor.summary(records)
        except Exception as exc:  # the vendor's page must not cost the run its summary
            summary["vendor_metrics"] = {"url": end.vendor.shown_url,
                                         "error": f"{type(exc).__name__}: {exc}"[:300]}
    store.write_summary(summary)
    return Summary.from_json(summary)


def write_parquet_beside(store: RunStore, records: list[RequestRecord] | None = None) -> None:
    """requests.parquet beside the JSONL, for pandas, from the records read back (None:
    read them here); a failure here loses nothing (the JSONL is the evidence) and is said
    in run.json."""
    from evalkit.rundir.export import write_parquet

    try:
        write_parquet(store.dir, records)
    except Exception as exc:  # an export must not hide how the run itself ended
        store.update_meta(parquet_error=f"{type(exc).__name__}: {exc}"[:300])


def now_iso() -> str:
    """The wall clock as run.json writes it (seconds, UTC)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
