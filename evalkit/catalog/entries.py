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
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from evalkit.analysis.summary import as_mapping
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog, Entry, utc_iso
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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def headline_figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The few figures a listing shows of a run's summary (None where not measured)."""
    base = as_mapping(summary.get("baseline"))
    ramp = as_mapping(summary.get("ramp"))

    def p50(section: Mapping[str, Any], key: str) -> float | None:
        dist = section.get(key)
        return _number(dist.get("p50")) if isinstance(dist, Mapping) else None

    top = ramp.get("max_sustained_concurrency")
    return {"requests": summary.get("requests") if isinstance(summary.get("requests"), int)
            else None,
            "baseline_ttft_p50_s": p50(base, "ttft_s"),
            "baseline_stream_tokens_per_s_p50": p50(base, "stream_tokens_per_s"),
            "max_sustained_concurrency": top if isinstance(top, int) else None}


def run_entry(run_dir: Path, kind: str, vendor: str | None = None) -> Entry:
    """The entry of a run directory (`probe`, `import` or `panel`), read from its run.json
    and summary.json (bounded reads; the records are only hashed)."""
    folder = Path(run_dir).resolve()
    run, _ = read_json_object(folder / RUN_FILE, "a run's metadata")
    summary: Mapping[str, Any] = {}
    if (folder / SUMMARY_FILE).is_file():
        summary, _ = read_json_object(folder / SUMMARY_FILE, "a run summary")
    target = as_mapping(run.get("target"))
    validity = summary.get("validity")
    return Entry(
        kind=kind, path=str(folder),
        vendor=_text(vendor) or _text(run.get("vendor"), 100), model=_text(target.get("model")),
        endpoint=public_endpoint(target.get("base_url")),
        suite_version=_text(run.get("suite_version"), 20),
        tool_version=_text(run.get("tool_version"), 40),
        started=utc_iso(run.get("started_at")), ended=utc_iso(run.get("ended_at")),
        status=_text(run.get("status"), 40),
        validity=_text(validity.get("status"), 20) if isinstance(validity, Mapping)
        else "invalid",
        figures=headline_figures(summary),
        files=digests(folder, (RUN_FILE, SUMMARY_FILE, REQUESTS_FILE)))


def report_entry(pdf: Path, scorecard: Mapping[str, Any], run_dir: Path | None,
                 started: str | None) -> Entry:
    """The entry of a scorecard: the PDF and its JSON, of the vendor it names."""
    pdf = Path(pdf).resolve()
    run = as_mapping(scorecard.get("run"))
    verdict = as_mapping(scorecard.get("verdict"))
    questions = as_mapping(scorecard.get("questions"))
    vendor = scorecard.get("vendor")
    return Entry(
        kind="report", path=str(pdf),
        vendor=_text(vendor, 100) if vendor != "(vendor not named)" else None,
        model=_text(scorecard.get("model")) or _text(run.get("model")),
        endpoint=public_endpoint(scorecard.get("endpoint") or run.get("endpoint")),
        started=started, ended=started, status="complete",
        validity=_text(run.get("validity"), 20),
        figures={"streaming_ready": bool(verdict.get("streaming_ready")),
                 "statuses": {str(q): str(v.get("status")) for q, v in questions.items()
                              if isinstance(v, Mapping)}},
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
