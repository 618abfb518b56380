"""What the catalog records of a run directory or a report, and whether it is still there.

An entry names its files with their SHA-256, size and modification time. `state` reads
them again: `present` when each is as registered, `missing` when the directory or a
file has gone, `edited` when a file's bytes changed (a file whose size and time are
unchanged is not hashed again, so listing a catalog of long runs stays quick).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from evalkit.analysis.summary import Sections, Summary
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog, Entry, utc_iso
from evalkit.catalog.voice import KIND_KEY, voice_figures
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.store import REQUESTS_FILE, RUN_FILE, SUMMARY_FILE, read_json_object
from evalkit.sanitize import clean

State = Literal["present", "missing", "edited"]
_CHUNK = 1 << 20


def public_endpoint(url: Any) -> str | None:
    """A base URL as the catalog may keep it: no user:password, no query string (an
    api-key=... there), no fragment."""
    if not isinstance(url, str) or not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return None
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return clean(urlunsplit((parts.scheme, host + port, parts.path, "", "")), 300)


def file_digest(path: Path) -> dict[str, Any]:
    """{"sha256", "size", "mtime_ns"} of one file, read in chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        st = os.fstat(fh.fileno())
        while block := fh.read(_CHUNK):
            h.update(block)
    return {"sha256": h.hexdigest(), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def digests(folder: Path, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The digests of those of `names` that exist in `folder`."""
    return {n: file_digest(folder / n) for n in names if (folder / n).is_file()}


def state(entry: Entry) -> tuple[State, str]:
    """Is the entry's evidence as it was registered? The state, and why."""
    root = Path(entry.path)
    folder = root if root.is_dir() else root.parent
    if not root.exists():
        return "missing", f"{entry.path} is gone"
    changed = []
    for name, was in entry.files.items():
        path = folder / name
        if not path.is_file():
            return "missing", f"{name} is gone from {folder}"
        st = path.stat()
        if st.st_size == was.get("size") and st.st_mtime_ns == was.get("mtime_ns"):
            continue
        if file_digest(path)["sha256"] != was.get("sha256"):
            changed.append(name)
    if changed:
        return "edited", f"{', '.join(changed)} changed since it was registered"
    return "present", ""


def _text(value: Any, limit: int = 200) -> str | None:
    return clean(value, limit) if isinstance(value, str) and value else None


def headline_figures(summary: Summary | None) -> dict[str, Any]:
    """The few figures a listing shows of a run's summary (None where not measured, or
    when the run has no summary), and the kind of traffic it measured: a voice run's are
    its calls (`evalkit.catalog.voice`), never the text baseline and streams it has not."""
    if summary is not None and summary.voice is not None:
        return voice_figures(summary.voice)
    sections = summary.sections if summary is not None else Sections()
    base = sections.baseline
    ramp = sections.ramp
    return {KIND_KEY: "text", "requests": sections.requests,
            "baseline_ttft_p50_s": base.ttft_s.p50 if base else None,
            "baseline_stream_tokens_per_s_p50": base.stream_tokens_per_s.p50 if base else None,
            "max_sustained_concurrency": ramp.max_sustained_concurrency if ramp else None}


def run_entry(run_dir: Path, kind: str, vendor: str | None = None,
              summary: Summary | None = None) -> Entry:
    """The entry of a run directory (`probe`, `import` or `panel`), read from its run.json
    and summary.json (bounded reads, read as `RunMeta` and `Summary`; the records are only
    hashed). A run without a summary measured nothing: it is listed `invalid`.

    `summary` is the typed reading of the summary.json the caller has just written (the
    probe's write-up hands it on), so a command parses its summary once; without it,
    summary.json is read here."""
    folder = Path(run_dir).resolve()
    doc, _ = read_json_object(folder / RUN_FILE, "a run's metadata")
    run = RunMeta.from_json(doc)
    if summary is None and (folder / SUMMARY_FILE).is_file():
        summary = Summary.from_json(read_json_object(folder / SUMMARY_FILE, "a run summary")[0])
    return Entry(
        kind=kind, path=str(folder),
        vendor=_text(vendor) or _text(run.vendor, 100), model=_text(run.target.model),
        endpoint=public_endpoint(run.target.base_url),
        suite_version=_text(run.suite_version, 20), tool_version=_text(run.tool_version, 40),
        started=utc_iso(run.started_at), ended=utc_iso(run.ended_at),
        status=_text(run.status, 40),
        # as the summary states it (`unknown`: it states none that is one), never judged
        # here: a listing of a run never reads better than its summary says
        validity=summary.sections.validity.status if summary is not None else "invalid",
        figures=headline_figures(summary),
        files=digests(folder, (RUN_FILE, SUMMARY_FILE, REQUESTS_FILE)))


@dataclass(frozen=True)
class ReportFacts:
    """What the catalog records of a scorecard (the caller reads them off its typed
    `Scorecard`: the catalog comes before the review and does not import it)."""

    vendor: str | None
    model: str | None
    endpoint: str | None
    #: the run's validity as the scorecard judged it (None: no run)
    validity: str | None
    streaming_ready: bool
    #: each question's status, by question
    statuses: Mapping[str, str]


def report_entry(pdf: Path, facts: ReportFacts, run_dir: Path | None,
                 started: str | None) -> Entry:
    """The entry of a scorecard: the PDF and its JSON, of the vendor it names."""
    pdf = Path(pdf).resolve()
    return Entry(
        kind="report", path=str(pdf),
        vendor=_text(facts.vendor, 100) if facts.vendor != "(vendor not named)" else None,
        model=_text(facts.model), endpoint=public_endpoint(facts.endpoint),
        started=started, ended=started, status="complete",
        validity=_text(facts.validity, 20),
        figures={"streaming_ready": facts.streaming_ready, "statuses": dict(facts.statuses)},
        files=digests(pdf.parent, (pdf.name, pdf.with_suffix(".json").name)),
        source=str(Path(run_dir).resolve()) if run_dir else None)


def register_quietly(catalog: str | Path | None, make: Callable[[], Entry],
                     warn: Callable[[str], None] | None = None) -> int | None:
    """Register what `make` builds; any failure is a warning (on stderr by default), never
    an error: the run directory is the evidence, the catalog only an index of it."""
    try:
        return Catalog(catalog_path(catalog)).register(make())
    except Exception as exc:  # a full disk, a locked or corrupt file, an unreadable run
        message = (f"warning: not registered in the catalog ({type(exc).__name__}: "
                   f"{clean(str(exc), 300)}); the run directory is complete")
        if warn is None:
            print(message, file=sys.stderr)
        else:
            warn(message)
        return None
