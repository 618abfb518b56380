"""`evalkit verify SCORECARD.pdf`: the scorecard re-derived from the evidence it carries.

    verify_pdf(path, run_dir=None, trust=())  -> Verification

In order: the PDF is read (unreadable, or not a scorecard of ours: `NotAScorecard`,
exit 2); its signatures are checked (`evalkit.verify.signature`); every attachment is
checked against manifest.json; the records (requests.jsonl.gz, or `--run DIR`'s
requests.jsonl checked against the manifest's digest) are put back into a run directory
with run.json and summary.json and read by `open_run`, which applies every check a
report applies and re-derives the summary; the questionnaire is judged again
(`review()`) with the tolerances scorecard.json records; the result is compared with
scorecard.json figure by figure and status by status (`evalkit.review.recheck`), and
its pages are drawn again from it and compared with what the document draws, page by
page and field by field (`evalkit.verify.redraw`). A scorecard of another suite version
is said to be one; its figures are unverifiable when this evalkit no longer has that
version's rules.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import evalkit
from evalkit.analysis.jsonread import Json
from evalkit.errors import EvalkitError, InputError, UsageError
from evalkit.provenance import current, provenance_findings
from evalkit.review.recheck import Difference, Recheck, compare_tree, manifest_differences
from evalkit.verify.document import Document, read_document
from evalkit.verify.redraw import Redrawn, redraw
from evalkit.verify.signature import SignatureReport, check_signatures, load_trust

if TYPE_CHECKING:
    from evalkit.review.ourpanel import OurPanel

#: the names a report attaches the questionnaire under (evalkit.review.pipeline)
QUESTIONNAIRE_NAMES = ("questionnaire.yaml", "questionnaire.yml", "questionnaire.json")
#: decompressed records larger than this are not ours (and would fill the disk)
MAX_RECORDS_BYTES = 8 << 30


@dataclass
class Verification:
    """What `verify` found: the counts re-derived, every difference, the signatures."""

    path: Path
    recheck: Recheck = field(default_factory=Recheck)
    signatures: list[SignatureReport] = field(default_factory=list)
    #: things a reviewer should know that are not differences (an older evalkit, ...)
    notes: list[str] = field(default_factory=list)
    tool_version: str | None = None
    suite_version: str | None = None
    #: the pages drawn again from the evidence, and the marked fields on them
    pages: int = 0
    fields: int = 0

    @property
    def differences(self) -> list[Difference]:
        """Every difference found, signatures' included."""
        out = list(self.recheck.differences)
        for sig in self.signatures:
            if not sig.intact or not sig.valid:
                out.insert(0, Difference(f"signature {sig.name}", what=sig.sentence()))
            for change in sig.changed_after:
                out.insert(0, Difference(f"signature {sig.name}", what=change))
        return out

    def take(self, drawn: Redrawn) -> None:
        """What drawing the pages again found, added to this verification."""
        self.pages, self.fields = drawn.pages, drawn.fields
        self.recheck.differences += drawn.differences
        self.notes += drawn.notes

    @property
    def verified(self) -> bool:
        """No difference at all (an untrusted or absent signature is reported, not one)."""
        return not self.differences

    @property
    def exit_code(self) -> int:
        """0 verified, 1 differences."""
        return 0 if self.verified else 1

    def headline(self) -> str:
        """The first line `verify` prints."""
        if self.verified:
            return (f"verified: {self.recheck.figures} figures and {self.recheck.statuses} "
                    "statuses re-derived from the attached evidence; its "
                    f"{self.pages} pages draw what the evidence draws")
        n = len(self.differences)
        return f"NOT VERIFIED: {n} difference{'s' * (n != 1)} from the attached evidence"

    def signature_lines(self) -> list[str]:
        """What the signatures say, or that there is none."""
        if not self.signatures:
            return ["unsigned: nothing says who issued this document (its evidence and "
                    "its pages are checked all the same): sign scorecards (report --sign)"]
        return [sig.sentence() for sig in self.signatures]

    def to_json(self) -> dict[str, Json]:
        """`verify --json`."""
        return {"file": str(self.path), "verified": self.verified,
                "figures": self.recheck.figures, "statuses": self.recheck.statuses,
                "pages": self.pages, "fields": self.fields,
                "differences": [d.to_dict() for d in self.differences],
                "signed": bool(self.signatures),
                "signatures": [s.to_dict() for s in self.signatures],
                "notes": self.notes, "tool_version": self.tool_version,
                "suite_version": self.suite_version, "verified_by": evalkit.__version__}


def _json(doc: Document, name: str, out: Verification) -> dict[str, Any] | None:
    data = doc.files.get(name)
    if data is None:
        return None
    try:
        parsed = json.loads(data)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        out.recheck.differences.append(Difference(f"attachment {name}",
                                                  what="not a JSON object"))
        return None
    return parsed


def _unpack_records(data: bytes, dest: Path, limit: int) -> tuple[str, int]:
    """requests.jsonl.gz written out as dest, streamed and bounded: its SHA-256 and size."""
    inflate = zlib.decompressobj(wbits=31)
    digest, size = hashlib.sha256(), 0
    with dest.open("wb") as fh:
        view = memoryview(data)
        for start in range(0, len(view), 1 << 20):
            block = inflate.decompress(view[start:start + (1 << 20)])
            size += len(block)
            if size > limit:
                raise InputError(f"it decompresses to more than the {limit - 1:,} bytes of "
                                 "records the manifest names: the records were edited")
            digest.update(block)
            fh.write(block)
        tail = inflate.flush()
        size += len(tail)
        digest.update(tail)
        fh.write(tail)
    return digest.hexdigest(), size


def _records(doc: Document, manifest: Mapping[str, Any], run_dir: Path | None, tmp: Path,
             out: Verification) -> bool:
    """Put the records into `tmp`/requests.jsonl (the attached ones, or --run DIR's),
    checked against the manifest's digest. False: there are none to re-derive from."""
    rec = manifest.get("records") if isinstance(manifest.get("records"), Mapping) else None
    want = rec.get("sha256") if rec else None
    dest = tmp / "requests.jsonl"
    attached = doc.files.get("requests.jsonl.gz")
    if attached is not None:
        limit = rec.get("bytes") if rec and isinstance(rec.get("bytes"), int) else None
        try:
            got, _ = _unpack_records(attached, dest, (limit + 1) if limit is not None
                                     else MAX_RECORDS_BYTES)
        except (zlib.error, EOFError, gzip.BadGzipFile, InputError) as exc:
            out.recheck.differences.append(Difference(
                "attachment requests.jsonl.gz", what=str(exc) if isinstance(exc, InputError)
                else f"not gzip'd records ({type(exc).__name__})"))
            return False
        if want is not None and got != want:
            out.recheck.differences.append(Difference(
                "attachment requests.jsonl.gz", what=f"decompresses to records with SHA-256 "
                f"{got}; the manifest names {want}: the records were edited"))
    if run_dir is not None:
        theirs = Path(run_dir) / "requests.jsonl"
        try:
            with theirs.open("rb") as fh:
                got = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError as exc:
            raise UsageError(f"--run {run_dir}: cannot read requests.jsonl "
                             f"({exc.strerror or exc})") from None
        if want is not None and got != want:
            out.recheck.differences.append(Difference(
                f"--run {run_dir}", what=f"its requests.jsonl has SHA-256 {got}; this "
                f"scorecard was judged on records with SHA-256 {want}: not the same records"))
        elif attached is None:
            dest.write_bytes(theirs.read_bytes())
            out.notes.append(f"records read from {theirs} (not attached; their SHA-256 "
                             "matches the manifest's)")
    if attached is None and run_dir is None and rec is not None:
        where = rec.get("lives_in") or "the run directory"
        raise UsageError(f"the records are not attached to this PDF (over the size cap): "
                         f"give --run DIR with the run directory they live in ({where}); "
                         "their SHA-256 is in the manifest")
    if attached is None and run_dir is None and "manifest.json" not in doc.files:
        raise UsageError("this PDF carries no records (an evalkit before records were "
                         "attached wrote it): give --run DIR with its run directory")
    return dest.is_file()


def verify_pdf(path: str | Path, run_dir: str | Path | None = None,
               trust: tuple[str | Path, ...] = ()) -> Verification:
    """The scorecard at `path` verified against its own evidence (see the module)."""
    roots = load_trust(trust)  # a bad --trust file is exit 2 before any work
    doc = read_document(Path(path))
    out = Verification(Path(path))
    try:
        out.signatures = check_signatures(doc.data, roots)
    except Exception as exc:  # pyHanko on a malformed signature: said, never a pass
        out.recheck.differences.append(Difference(
            "signature", what=f"cannot be checked ({type(exc).__name__}: {str(exc)[:200]})"))
    written = _json(doc, "scorecard.json", out)  # scorecard.json as the report wrote it
    if written is None:
        return out
    manifest = _json(doc, "manifest.json", out) or {}
    if "manifest.json" not in doc.files:
        out.notes.append("no manifest.json: written by an evalkit before manifests; the "
                         "attachments are checked by re-derivation only")
    else:
        out.recheck.differences += manifest_differences(manifest, doc.files, doc.digests)
    out.tool_version = str(manifest.get("tool_version") or "") or None
    run_doc = _json(doc, "run.json", out)
    suite = str((run_doc or {}).get("suite_version") or manifest.get("suite_version")
                or evalkit.SUITE_VERSION)
    out.suite_version = suite
    if out.tool_version and out.tool_version != evalkit.__version__:
        out.notes.append(f"written by evalkit {out.tool_version}, verified by "
                         f"{evalkit.__version__}")
    if suite != evalkit.SUITE_VERSION and not suite.startswith("import:"):
        out.recheck.differences.append(Difference(
            "suite version", what=f"the run followed suite v{suite}; this evalkit has the "
            f"rules of suite v{evalkit.SUITE_VERSION} only, so its figures are unverifiable "
            f"here (verify it with the evalkit that wrote it, {out.tool_version or '?'})"))
        return out
    with tempfile.TemporaryDirectory(prefix="evalkit-verify-") as tmp:
        _rederive(doc, written, manifest, run_doc, Path(run_dir) if run_dir else None,
                  Path(tmp), out)
    return out


def _rederive(doc: Document, written: dict[str, Any], manifest: Mapping[str, Any],
              run_doc: dict[str, Any] | None, run_dir: Path | None, tmp: Path,
              out: Verification) -> None:
    """Re-derive the summary and the scorecard in `tmp` and compare them (into `out`)."""
    from evalkit.analysis.thresholds import tolerances_from_dict
    from evalkit.review.pipeline import review
    from evalkit.rundir.run import open_run

    run = None
    if run_doc is not None:
        (tmp / "run").mkdir()
        for name in ("run.json", "summary.json", "turns.jsonl"):  # a voice run's turns
            if name in doc.files:
                (tmp / "run" / name).write_bytes(doc.files[name])
        _records(doc, manifest, run_dir, tmp / "run", out)
        try:
            run = open_run(tmp / "run")
        except EvalkitError as exc:
            out.recheck.differences.append(Difference("run.json", what=f"the attached run "
                                                      f"cannot be read back: {exc}"))
            return
        judged = _json(doc, "summary.rebuilt.json", out) if (
            "summary.rebuilt.json" in doc.files) else _json(doc, "summary.json", out)
        if run.rebuilt and "summary.rebuilt.json" not in doc.files:
            out.recheck.differences.append(Difference("summary.json", what=run.rebuilt))
        elif judged is not None:
            out.recheck.add(compare_tree(judged, run.summary, "summary", both_ways=False))
    # attachment names are the PDF's (untrusted): only the names a report gives are read
    questionnaire = next((n for n in QUESTIONNAIRE_NAMES if n in doc.files), None)
    q_path = None
    if questionnaire is not None:  # under its own name: the reasons quote it
        entry = (manifest.get("files") or {}).get(questionnaire)
        source = entry.get("source_name") if isinstance(entry, Mapping) else None
        safe = isinstance(source, str) and 0 < len(source) <= 200 and Path(
            source).name == source and not source.startswith(".")
        q_path = tmp / (str(source) if safe else questionnaire)
        q_path.write_bytes(doc.files[questionnaire])
    tolerances = written.get("tolerances")
    ours = _our_panel(doc, out)
    try:
        tol = tolerances_from_dict(tolerances if isinstance(tolerances, dict) else None)
        done = review(None, q_path, tol, run=run,
                      panel=None if ours is None else lambda _q: ours)
    except EvalkitError as exc:
        out.recheck.differences.append(Difference(
            "scorecard.json", what=f"cannot be judged again from its evidence: {exc}"))
        return
    out.recheck.add(compare_tree(written, done.card.to_json(), "scorecard.json",
                                 skip=frozenset({"tolerances"})))
    out.notes += provenance_notes(run_doc)
    if out.recheck.differences:  # the evidence does not give this scorecard: no page could
        out.notes.append("the pages were not drawn again: the attached evidence does not "
                         "give the scorecard they were drawn from (the differences above)")
        return
    # every page drawn again from that scorecard and compared with what the document draws
    out.take(redraw(doc, done.card, run, manifest, signed=bool(out.signatures)))


def _our_panel(doc: Document, out: Verification) -> OurPanel | None:
    """The panel Q6 was judged beside, as the document attaches it (None: it had none).

    It is evidence like the run's summary: its digest is the manifest's, and Q6 is judged
    again beside it. The catalog's samples it was pooled from are not in the document,
    so the note says that much of Q6 rests on the catalog, not on the attachments."""
    from evalkit.render.evidence import PANEL_FILE
    from evalkit.review.ourpanel import OurPanel

    found = _json(doc, PANEL_FILE, out)
    if found is None:
        return None
    panel = OurPanel.from_panel(found)
    out.notes.append(f"Q6 was judged beside {panel.describe()}, attached as {PANEL_FILE} "
                     "and judged again beside it; the catalog samples it was pooled from are "
                     "not attached (`evalkit panel report` over that catalog rebuilds it)")
    return panel


def provenance_notes(run_doc: Mapping[str, Any] | None) -> list[str]:
    """Where the evalkit that measured the run and the one verifying it part ways."""
    if not run_doc:
        return []
    return [f"run.json provenance: {f}" for f in provenance_findings(run_doc, current())]
