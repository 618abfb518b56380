"""Runs picked from the catalog for `evalkit compare`: a vendor's evaluations since a date,
and the last valid evaluation of a run's vendor and model (the quarterly gate's baseline,
without a path to remember)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalkit.catalog.entries import state
from evalkit.catalog.paths import catalog_path
from evalkit.catalog.store import Catalog, Row, utc_iso
from evalkit.rundir.meta import RunMeta
from evalkit.rundir.store import RUN_FILE, read_json_object

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
    ISO 8601), each None when run.json has none that can be one."""

    vendor: str | None
    model: str | None
    started: str | None


def run_identity(run_dir: Path) -> RunIdentity:
    """What the catalog knows a run by, read from its run.json (as `RunMeta`)."""
    doc, _ = read_json_object(Path(run_dir) / RUN_FILE, "a run's metadata")
    run = RunMeta.from_json(doc)
    vendor = run.vendor
    return RunIdentity(vendor if isinstance(vendor, str) and vendor else None,
                       run.target.model or None, utc_iso(run.started_at))


def last_valid(run_dir: Path, vendor: str, model: str | None,
               catalog: str | Path | None = None,
               identity: RunIdentity | None = None) -> Row | None:
    """The last valid evaluation of `vendor` and `model` before `run_dir` started, whose
    files are as registered (None: there is none). `identity` is the run's, when the
    caller has read it already (`run_identity`): run.json is then not read again."""
    me = Path(run_dir).resolve()
    started = (identity or run_identity(me)).started
    rows = [r for r in _evaluations(Catalog(catalog_path(catalog)), vendor, model, None)
            if r.entry.validity == "valid" and Path(r.entry.path) != me
            and (started is None or (r.entry.started or r.registered) < started)
            and state(r.entry)[0] == "present"]
    return max(rows, key=lambda r: (r.entry.started or r.registered, r.id), default=None)
