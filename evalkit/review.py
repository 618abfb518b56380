"""One review pipeline: a run and a questionnaire in, the scorecard and the evidence out.

    review(run_dir, questionnaire, tolerances)
        load_run(run_dir)          checked run directory; the bytes of run.json and
                                   summary.json kept, exactly as read, for attachment
        read_questionnaire(path)   bounded read, the same bytes parsed, kept and attached
        build_scorecard(...)       reconciled with the tolerances
    -> Review

`evalkit report` and `evalkit compare` both start here, so what a scorecard judged and
what its PDF attaches (and prints the SHA-256 of) are the same bytes, read once.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.questionnaire import Questionnaire
from evalkit.records import RequestRecord
from evalkit.runcheck import RecordDigest, read_run
from evalkit.runstore import iter_records
from evalkit.tolerances import Tolerances


@dataclass(frozen=True)
class RunData:
    """A run directory, read once: parsed documents, records, and the exact bytes we attach.

    `load_run` keeps no record in memory: `records` re-reads requests.jsonl when iterated,
    and `digest` holds what the report shows of them (counts, TTFT per level, chart
    samples). Built by hand (tests, benchmarks), `records` may be any collection and the
    digest is drawn from it.
    """

    run: dict[str, Any]
    summary: dict[str, Any]
    records: Collection[RequestRecord] = ()
    raw: dict[str, bytes] = field(default_factory=dict)
    #: requests.jsonl is too big to attach; its hash is printed so it can still be checked
    requests_sha256: str | None = None
    digest: RecordDigest | None = None
    #: what reading the run directory found and repaired, one sentence each
    notes: tuple[str, ...] = ()
    #: why the summary was re-derived from the records (None: summary.json as written)
    rebuilt: str | None = None
    #: lines of requests.jsonl that are not records (skipped)
    skipped_lines: int = 0

    @functools.cached_property
    def stats(self) -> RecordDigest:
        """What the report shows of the records."""
        return self.digest if self.digest is not None else RecordDigest.of(self.records)


class RecordFile(Collection[RequestRecord]):
    """The records of requests.jsonl, streamed from the file each time they are iterated
    (malformed lines skipped; only the bytes read when the run was loaded)."""

    def __init__(self, path: Path | None, count: int, limit: int) -> None:
        self.path, self.count, self.limit = path, count, limit

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter_records(self.path, limit=self.limit) if self.path else iter(())

    def __len__(self) -> int:
        return self.count

    def __contains__(self, item: object) -> bool:
        return any(item == rec for rec in self)


def load_run(run_dir: Path) -> RunData:
    """Read and check a run directory (`evalkit.runcheck.read_run`): a missing summary or
    one the records do not support is re-derived from them, malformed record lines are
    skipped and counted, and nothing outside the directory is read. Not a run directory
    is a RunDirError; a run.json or summary.json that is not a JSON object an InputError.
    """
    checked = read_run(Path(run_dir))
    scan = checked.scan
    return RunData(checked.run, checked.summary,
                   RecordFile(checked.requests_path, checked.digest.n, scan.bytes),
                   checked.raw, scan.sha256 if checked.requests_path else None,
                   checked.digest, checked.notes, checked.rebuilt, scan.malformed)


@dataclass(frozen=True)
class QuestionnaireFile:
    """A questionnaire as judged: the parsed answers and the very bytes they came from."""

    path: Path
    #: the name it is attached under (questionnaire.yaml, .yml or .json)
    name: str
    data: bytes
    parsed: Questionnaire


def read_questionnaire(path: Path) -> QuestionnaireFile:
    """Read a questionnaire once, bounded (`questionnaire.MAX_BYTES`), and parse those
    bytes; any problem is a QuestionnaireError naming file and line."""
    from evalkit.errors import QuestionnaireError
    from evalkit.questionnaire import MAX_BYTES, parse_questionnaire

    p = Path(path)
    try:
        with p.open("rb") as fh:  # at most one byte over the limit is ever read
            raw = fh.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:  # refused as a whole, saying by how much
            raise QuestionnaireError(f"{p}: {p.stat().st_size:,} bytes is too large for a "
                                     f"questionnaire (limit {MAX_BYTES:,} bytes)")
    except OSError as exc:
        raise QuestionnaireError(f"{p}: cannot read: {exc.strerror or exc}") from None
    parsed = parse_questionnaire(raw, str(p))
    suffix = p.suffix.lower()
    name = "questionnaire" + (suffix if suffix in (".yaml", ".yml", ".json") else ".yaml")
    return QuestionnaireFile(p, name, raw, parsed)


@dataclass(frozen=True)
class Review:
    """What a report or a comparison starts from: the inputs as read, and their scorecard."""

    run: RunData | None
    questionnaire: QuestionnaireFile | None
    scorecard: dict[str, Any]
    tolerances: Tolerances

    @property
    def attachments(self) -> dict[str, bytes]:
        """The input files to embed, by name, exactly as they were read and judged."""
        files = dict(self.run.raw) if self.run else {}
        if self.questionnaire:
            files[self.questionnaire.name] = self.questionnaire.data
        return files


def tolerances_from(tolerances: Tolerances | str | Path | None) -> Tolerances:
    """A `Tolerances`, the override file a path names, or the defaults for None."""
    from evalkit.tolerances import load_tolerances

    return tolerances if isinstance(tolerances, Tolerances) else load_tolerances(tolerances)


def review(run_dir: Path | None, questionnaire: Path | None,
           tolerances: Tolerances | str | Path | None = None,
           run: RunData | None = None) -> Review:
    """Read the inputs once and reconcile them into a scorecard.

    Either input may be omitted (a claims-only or a measurement-only review). `run` is
    the run directory already loaded, if the caller has it.
    """
    from evalkit.reconcile import RunTarget
    from evalkit.scorecard import build_scorecard

    tol = tolerances_from(tolerances)
    if run is None and run_dir is not None:
        run = load_run(Path(run_dir))
    q = read_questionnaire(questionnaire) if questionnaire is not None else None
    scorecard = build_scorecard(q.parsed if q else None, run.summary if run else None, tol,
                                RunTarget.from_run(run.run) if run else None)
    return Review(run, q, scorecard, tol)
