"""Runs picked from the catalog for `evalkit compare`: a vendor's evaluations since a date,
and the last valid evaluation of a run's vendor, model and kind (voice calls or text
streams: the quarterly gate's baseline, without a path to remember)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import Summary
from evalkit.catalog.entries import headline_figures, state
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog, Row, utc_iso
from evalkit.catalog.voice import KIND_KEY, RunKind, VoiceHeadline, run_kind
from evalkit.errors import EvalkitError
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.store import RUN_FILE, SUMMARY_FILE, read_json_object

#: the kinds of entry that are evaluations of an endpoint (a report is of a run; a panel
#: sample is too light to stand for a quarter)
EVALUATIONS = ("probe", "import")


def _evaluations(catalog: Catalog, vendor: str, model: str | None,
                 since: str | None) -> list[Row]:
    return [r for kind in EVALUATIONS
            for r in catalog.rows(vendor=vendor, model=model, since=since, kind=kind)]


def vendor_runs(vendor: str, model: str | None = None, since: str | None = None,
                catalog: str | Path | None = None) -> tuple[list[Path], list[str]]:
    """The vendor's evaluations (probes and imports), oldest first, whose files are as
    registered, and a sentence for each one left out (missing or edited)."""
    rows = sorted(_evaluations(Catalog(catalog_path(catalog)), vendor, model, since),
                  key=lambda r: (r.entry.started or r.registered, r.id))
    kept, left = [], []
    for r in rows:
        now, why = state(r.entry)
        if now == "present":
            kept.append(Path(r.entry.path))
        else:
            left.append(f"catalog entry {r.id} ({r.entry.started or r.registered}) left out: "
                        f"{now}: {why}")
    return kept, left


@dataclass(frozen=True)
class RunIdentity:
    """What the catalog knows a run by (run.json): its vendor label, model and start (UTC
    ISO 8601), each None when run.json has none that can be one, and the kind of traffic
    it measured (voice: run.json records the caller audio of realtime calls)."""

    vendor: str | None
    model: str | None
    started: str | None
    kind: RunKind = "text"


def run_identity(run_dir: Path) -> RunIdentity:
    """What the catalog knows a run by, read from its run.json (as `RunMeta`)."""
    doc, _ = read_json_object(Path(run_dir) / RUN_FILE, "a run's metadata")
    run = RunMeta.from_json(doc)
    vendor = run.vendor
    return RunIdentity(vendor if isinstance(vendor, str) and vendor else None,
                       run.target.model or None, utc_iso(run.started_at),
                       "voice" if run.audio is not None else "text")


@dataclass(frozen=True)
class Sought:
    """The baseline the gate looks for: a valid evaluation of the same kind (voice calls
    are never held against text streams: nothing in them compares), and for a voice run
    whose own entry records them, the same turn detection and turns per call (calls
    compare only so, `evalkit.review.compare_voice`; the API need not match)."""

    kind: RunKind
    calls: str | None = None

    def words(self) -> str:
        """What was looked for, as the gate's message says it."""
        if self.kind == "text":
            return "text evaluation (text streams)"
        return "voice evaluation (realtime calls" + (f", {self.calls}" if self.calls
                                                    else "") + ")"

    def fits(self, figures: Mapping[str, Json]) -> bool:
        """An entry's figures are of what is sought (and, for voice, judged valid)."""
        if run_kind(figures) != self.kind:
            return False
        if self.kind == "text":
            return True
        voice = VoiceHeadline.from_figures(figures)
        return voice is not None and voice.validity == "valid" and (
            self.calls is None or voice.calls_setting == self.calls)


@dataclass(frozen=True)
class Baseline:
    """The gate's baseline (None: there is none) and what was looked for."""

    row: Row | None
    sought: Sought


def _figures(row: Row) -> Mapping[str, Json]:
    """The entry's figures with its kind: an entry registered before the kind was recorded
    is read again from its summary (its files are as registered), so an older voice run
    is not taken for a text one."""
    if KIND_KEY in row.entry.figures:
        return row.entry.figures
    path = Path(row.entry.path) / SUMMARY_FILE
    try:
        return headline_figures(Summary.from_json(read_json_object(path, "a run summary")[0]))
    except (EvalkitError, OSError, ValueError):
        return row.entry.figures


def baseline(run_dir: Path, vendor: str, model: str | None,
             catalog: str | Path | None = None,
             identity: RunIdentity | None = None) -> Baseline:
    """The last valid evaluation of `vendor` and `model` before `run_dir` started, of the
    same kind, whose files are as registered. `identity` is the run's, when the caller
    has read it already (`run_identity`): run.json is then not read again. A voice run's
    own entry, when the catalog holds it, says its turn detection and turns per call."""
    me = Path(run_dir).resolve()
    identity = identity or run_identity(me)
    rows = _evaluations(Catalog(catalog_path(catalog)), vendor, model, None)
    own = next((r for r in reversed(rows) if Path(r.entry.path) == me
                and state(r.entry)[0] == "present"), None)
    voice = VoiceHeadline.from_figures(own.entry.figures) if own is not None else None
    sought = Sought(identity.kind, voice.calls_setting
                    if voice is not None and identity.kind == "voice" else None)
    started = identity.started
    found = [r for r in rows
             if r.entry.validity == "valid" and Path(r.entry.path) != me
             and (started is None or (r.entry.started or r.registered) < started)
             and state(r.entry)[0] == "present" and sought.fits(_figures(r))]
    return Baseline(max(found, key=lambda r: (r.entry.started or r.registered, r.id),
                        default=None), sought)


def last_valid(run_dir: Path, vendor: str, model: str | None,
               catalog: str | Path | None = None,
               identity: RunIdentity | None = None) -> Row | None:
    """`baseline`'s row: the last valid evaluation of the run's kind (None: none)."""
    return baseline(run_dir, vendor, model, catalog, identity).row
