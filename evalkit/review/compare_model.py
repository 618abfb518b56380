"""The comparison's typed parts: a run as the comparison sees it (`RunView`), a key figure
and how to read it (`Figure`), one run's value of it (`Cell`) and a row of them (`Row`).

Apart from `evalkit.review.compare` (which sets runs side by side) so that the rows of
each kind (the suite's, the costs, the buyer's workload, realtime voice calls:
`evalkit.review.compare_voice`) are built from the same types without an import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import Summary, measurements
from evalkit.analysis.summary_voice import VoiceSection
from evalkit.review.scorecard import Scorecard

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class RunView:
    """One run as the comparison needs it; `label` is what a reader calls it."""

    label: str
    target: str
    started: str
    suite_version: str | None
    settings: dict[str, Json]
    summary: Summary
    scorecard: Scorecard | None = None
    #: TTFT samples (s) of ok ramp requests by concurrency level, for distribution charts
    ttft_by_level: dict[int, list[float]] = field(default_factory=dict)
    #: how `target` was found (questionnaire, probe-time vendor label, model and endpoint…),
    #: so a run that landed in no trend can be explained
    grouped_by: str = ""
    #: a voice run's caller audio: the SHA-256 of each utterance sent, as run.json lists
    #: them (empty: not a voice run, or not recorded); two runs' calls compare only when
    #: the callers said the same thing
    voice_audio: tuple[str, ...] = ()
    #: the summary read once (`Summary`), which every figure reads; None: nothing measured
    measured: Summary | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "measured", measurements(self.summary))

    @property
    def voice(self) -> VoiceSection | None:
        """The run's realtime calls (None: not a voice run, or nothing measured)."""
        return self.measured.voice if self.measured is not None else None


def _max_sustained(measured: Summary) -> int | None:
    """The text ramp's max sustained streams (a load figure's ★ is capped at it)."""
    return measured.max_sustained


@dataclass(frozen=True)
class Figure:
    """A key figure: how to read it from a summary, which way is better, what it needs."""

    key: str
    title: str
    unit: str
    better: Better
    read: Callable[[Summary], float | None]
    #: settings that must be equal for two runs' values to mean the same thing
    needs: tuple[str, ...] = ("prompt_tokens", "output_tokens")
    #: the concurrency level a run's value was read at (None: not a load figure)
    level: Callable[[Summary], int | None] | None = None
    #: a figure of the run's scorecard instead of its summary (the costs, the buyer's
    #: workload); its values compare only in the same currency
    from_card: Callable[[Scorecard], float | None] | None = None
    #: whether the row may star its best value
    star: bool = True
    #: a row of the buyer's workload: compares only runs of the same workload file
    workload: bool = False
    #: a row of realtime voice calls (`evalkit.review.compare_voice`): its own table
    voice: bool = False
    #: why a run's value is not the vendor's and is withheld (a level where our client
    #: was the bottleneck, an invalid run), or None
    withheld: Callable[[Summary], str | None] | None = None
    #: what the value counts ("2 of 6 answers"), or why there is none ("no level of 4
    #: calls"), in words; None: nothing to add
    detail: Callable[[Summary], str | None] | None = None
    #: why `run`'s value cannot be set beside the others (a rule of the figure's own,
    #: beyond the suite version and `needs`), or None when it can
    comparable: Callable[[RunView], str | None] | None = None
    #: what a load level counts (streams; a voice run's calls)
    load_unit: str = "stream"
    #: the highest level the run held: a value read above it wins no ★
    sustained: Callable[[Summary], int | None] = _max_sustained


@dataclass(frozen=True)
class Cell:
    """One run's value of one figure, and whether it is the best of its row (★)."""

    value: float | None
    best: bool = False
    excluded: str | None = None
    #: the concurrency the value was read at, for a load figure
    level: int | None = None
    #: why this run can win no ★ (not streaming-ready, read above its sustained level)
    unstarred: str | None = None
    #: why the run's value is not the vendor's and is not shown (client-bound, invalid)
    withheld: str | None = None
    #: what the value counts, or why the run has none, in words
    detail: str | None = None


@dataclass(frozen=True)
class Row:
    figure: Figure
    cells: list[Cell]
    #: why the row has no ★ although two runs have a value (measured at different loads)
    no_star: str | None = None
