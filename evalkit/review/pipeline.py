"""One review pipeline: a run and a questionnaire in, the scorecard and the evidence out.

    review(run_dir, questionnaire, tolerances)
        open_run(run_dir)          checked run directory; the bytes of run.json and
                                   summary.json kept, exactly as read, for attachment
        read_questionnaire(path)   bounded read, the same bytes parsed, kept and attached
        build_card(...)            reconciled with the tolerances: a typed `Scorecard`
    -> Review

`evalkit report` and `evalkit compare` both start here, so what a scorecard judged and
what its PDF attaches (and prints the SHA-256 of) are the same bytes, read once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.model import Questionnaire
from evalkit.rundir.run import RunDir, open_run

if TYPE_CHECKING:  # for the annotation only: `review()` imports the judges when it runs
    from evalkit.review.ourpanel import OurPanel
    from evalkit.review.scorecard import Scorecard


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
    from evalkit.questionnaire.load import parse_questionnaire
    from evalkit.questionnaire.reader import MAX_BYTES

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

    run: RunDir | None
    questionnaire: QuestionnaireFile | None
    #: the typed scorecard: what the renderer reads
    card: Scorecard
    tolerances: Tolerances
    #: our own production panel Q6 was judged beside (the catalog's, found by the caller)
    panel: OurPanel | None = None

    @property
    def scorecard(self) -> Scorecard:
        """The typed scorecard (`card`): what the report and the comparison read."""
        return self.card

    @property
    def attachments(self) -> dict[str, bytes]:
        """The input files to embed, by name, exactly as they were read and judged."""
        files = dict(self.run.raw) if self.run else {}
        if self.questionnaire:
            files[self.questionnaire.name] = self.questionnaire.data
        return files


def tolerances_from(tolerances: Tolerances | str | Path | None) -> Tolerances:
    """A `Tolerances`, the override file a path names, or the defaults for None."""
    from evalkit.analysis.thresholds import load_tolerances

    return tolerances if isinstance(tolerances, Tolerances) else load_tolerances(tolerances)


def review(run_dir: Path | None, questionnaire: Path | None,
           tolerances: Tolerances | str | Path | None = None,
           run: RunDir | None = None,
           panel: Callable[[Questionnaire], OurPanel | None] | None = None) -> Review:
    """Read the inputs once and reconcile them into a scorecard.

    Either input may be omitted (a claims-only or a measurement-only review). `run` is
    the run directory already loaded, if the caller has it. `panel` finds our own
    production panel of the questionnaire's vendor and model (the CLI reads it from the
    catalog; review imports no catalog).
    """
    from evalkit.review.rules import RunTarget
    from evalkit.review.scorecard import build_card

    tol = tolerances_from(tolerances)
    if run is None and run_dir is not None:
        run = open_run(Path(run_dir))
    q = read_questionnaire(questionnaire) if questionnaire is not None else None
    ours = panel(q.parsed) if panel is not None and q is not None else None
    card = build_card(q.parsed if q else None, run.summary if run else None, tol,
                      RunTarget.from_meta(run.meta) if run else None, ours)
    return Review(run, q, card, tol, ours)
