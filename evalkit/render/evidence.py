"""The evidence a scorecard PDF carries, and the manifest `evalkit verify` checks it by.

    evidence_files(run, scorecard_json, questionnaire)   the attachments and manifest.json

A scorecard is attached to capacity commitments and disputed when capacity falls short,
so the PDF alone must be enough to re-derive every figure: it carries run.json,
summary.json (and summary.rebuilt.json when the report re-derived it), scorecard.json,
the questionnaire, and the records themselves as `requests.jsonl.gz`.

Why gzip and not requests.parquet: gzip of the exact bytes is exact. It decompresses to
the very bytes whose SHA-256 the run printed and the summary was checked against, so the
digest can be checked. Parquet is a re-encoding (typed columns, derived figures, floats
re-written), from which requests.jsonl's bytes cannot be recovered, so its digest could
not be checked; it is also written only when the run is written up (a killed probe has
none). Deterministic: mtime 0 and no file name in the gzip header, so the same run gives
the same attachment. Above RECORDS_CAP compressed, the records are not attached: the
manifest keeps their digest and where they live, page one says so, and
`evalkit verify FILE.pdf --run DIR` checks a copy against that digest.

manifest.json (`evalkit.manifest/1`) names every other attachment with its SHA-256, size
and what it is, and the tool and suite versions that wrote the report.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import evalkit
from evalkit.errors import RunDirError
from evalkit.provenance import installed_digest
from evalkit.rundir.run import RunDir

MANIFEST_FILE = "manifest.json"
MANIFEST_SCHEMA = "evalkit.manifest/1"
RECORDS_NAME = "requests.jsonl"
RECORDS_FILE = "requests.jsonl.gz"
#: our own production panel Q6 was judged beside (`OurPanel.to_panel`), when there was one:
#: `verify` judges Q6 again beside it (the catalog's samples behind it are not attached)
PANEL_FILE = "our_panel.json"
#: compressed records above this are not attached (the PDF would be unwieldy to mail)
RECORDS_CAP = 64 << 20

#: what each attachment is, as manifest.json says it
WHAT = {
    "run.json": "the run's metadata, as the probe wrote it",
    "summary.json": "the run's summary, as the probe wrote it",
    "summary.rebuilt.json": "the summary the report re-derived from the records (and judged)",
    "turns.jsonl": "a voice run's turn records (its evidence: it has no request record)",
    "scorecard.json": "the scorecard: every status, figure and tolerance judged",
    RECORDS_FILE: "the request records: gzip (mtime 0) of requests.jsonl's exact bytes",
    PANEL_FILE: "our own production panel Q6 was judged beside, pooled from the catalog "
                "(its samples are not attached)",
}


def _what(name: str) -> str:
    return WHAT.get(name, "the vendor's questionnaire, as judged"
                    if name.startswith("questionnaire.") else "evidence")


def gzip_records(run: RunDir, cap: int = RECORDS_CAP) -> bytes | None:
    """requests.jsonl's bytes as read (the digest's), gzip'd deterministically, or None
    when they compress past `cap` (or there is no file). RunDirError when the file no
    longer holds the bytes that were read and hashed (changed while the report ran)."""
    if run.requests_path is None or run.requests_sha256 is None:
        return None
    out = io.BytesIO()
    digest, left = hashlib.sha256(), run.requests_bytes
    try:
        with run.requests_path.open("rb") as src, gzip.GzipFile(
                filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
            while left > 0:
                block = src.read(min(left, 1 << 20))
                if not block:
                    break
                digest.update(block)
                gz.write(block)
                left -= len(block)
                if out.tell() > cap:
                    return None
    except OSError as exc:
        raise RunDirError(f"{run.requests_path}: cannot read it again to attach it "
                          f"({exc.strerror or exc})") from None
    if left or digest.hexdigest() != run.requests_sha256:
        raise RunDirError(f"{run.requests_path} changed while the report was made: the "
                          "records attached would not be the ones judged; report again")
    data = out.getvalue()
    return data if len(data) <= cap else None


@dataclass(frozen=True)
class Evidence:
    """What the PDF attaches (manifest.json last) and what page one must say of it."""

    files: dict[str, bytes]
    manifest: dict[str, Any]
    #: page one's sentence when the records are not attached (None: they are)
    records_note: str | None


def _entry(name: str, data: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "what": _what(name)}


def records_note(records: Any, cap: int = RECORDS_CAP) -> str | None:
    """Page one's sentence when the records are not attached, from the manifest's
    `records` (None when they are, or when there are none): `report` and `verify` draw it
    from the same entry."""
    if not isinstance(records, Mapping) or records.get("attached_as") or not records.get(
            "sha256"):
        return None
    n, size = records.get("records"), records.get("bytes")
    return (f"The {n if isinstance(n, int) else 0:,} request records are not attached: "
            f"compressed they are over {cap >> 20} MiB. They live in "
            f"{records.get('lives_in')} ({RECORDS_NAME}, "
            f"{size if isinstance(size, int) else 0:,} bytes, SHA-256 "
            f"{records.get('sha256')}); `evalkit verify` with `--run` that directory "
            "checks a copy against this digest.")


def evidence_files(run: RunDir | None, scorecard_json: bytes,
                   questionnaire: tuple[str, bytes] | None,
                   cap: int = RECORDS_CAP, source_name: str | None = None,
                   panel: Mapping[str, Any] | None = None,
                   page: Mapping[str, Any] | None = None) -> Evidence:
    """The attachments of a scorecard PDF, exactly the bytes judged, and their manifest.

    `source_name` is the questionnaire's own file name: the reasons quote it (the command
    that would verify a claim), so `verify` judges it again under that name. `panel` is our
    own panel Q6 was judged beside (PANEL_FILE). `page` is the pages' stamp
    (`evalkit.render.drawn.PageStamp.to_manifest`), recorded as the manifest's `page`.
    """
    files: dict[str, bytes] = dict(run.raw) if run else {}
    records: dict[str, Any] | None = None
    note = None
    if run is not None and run.requests_sha256 is not None:
        packed = gzip_records(run, cap)
        records = {"name": RECORDS_NAME, "sha256": run.requests_sha256,
                   "bytes": run.requests_bytes, "records": run.stats.n,
                   "attached_as": RECORDS_FILE if packed is not None else None,
                   "lives_in": None}
        if packed is not None:
            files[RECORDS_FILE] = packed
        else:
            records["lives_in"] = str(run.requests_path.parent) if run.requests_path else "?"
            note = records_note(records, cap)
    files["scorecard.json"] = scorecard_json
    if questionnaire:
        files[questionnaire[0]] = questionnaire[1]
    if panel is not None:
        files[PANEL_FILE] = (json.dumps(panel, indent=2) + "\n").encode()
    manifest: dict[str, Any] = {"schema": MANIFEST_SCHEMA, "tool_version": evalkit.__version__,
                # the package that wrote the document (every page's footer prints its
                # first digits): `verify` holds the footer to it
                "tool_sha256": installed_digest(),
                "suite_version": str((run.meta.suite_version if run else None)
                                     or evalkit.SUITE_VERSION),
                "files": {name: _entry(name, data) for name, data in files.items()},
                "records": records}
    if page is not None:  # what the pages print that is not evidence: verify draws with it
        manifest["page"] = dict(page)
    if questionnaire and source_name:
        manifest["files"][questionnaire[0]]["source_name"] = source_name
    files[MANIFEST_FILE] = (json.dumps(manifest, indent=2) + "\n").encode()
    return Evidence(files, manifest, note)
