"""The ramp's verdict so far, kept as it goes, so the ramp knows where to stop.

Each level is summarised once, when it ends, and judged the way summary.json will judge
it (`evalkit.analysis.ramp.judge_ramp`): the stop rule and the summary cannot disagree,
and the run is not re-read after every level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from evalkit.analysis.thresholds import Thresholds
from evalkit.records import RequestRecord


class RampWatch:
    """The ramp's verdict so far, kept as it goes: the baseline and each level are
    summarised once, when they end, and judged the way summary.json will judge them
    (`metrics.judge_ramp`), so the stop rule and the summary cannot disagree."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self.baseline: dict[str, Any] | None = None
        self.levels: list[dict[str, Any]] = []
        self.client_bound: list[int] = []
        #: the requests sent alone so far (their chunks and answers left out): what a
        #: level's failures are set against to tell a shape the endpoint never serves
        #: from load (evalkit.analysis.configuration), as summary.json will
        self.alone: list[RequestRecord] = []

    def add_alone(self, rec: RequestRecord) -> None:
        """A request of a phase that sends one at a time (`ALONE_PHASES`)."""
        self.alone.append(dataclasses.replace(rec, chunks=[], answer_text=None,
                                              answer_tokens=None, answer_logprobs=None))

    def _stats(self, records: Sequence[RequestRecord], level: int) -> dict[str, Any]:
        from evalkit.analysis.configuration import configuration_failures
        from evalkit.analysis.frames import frames  # pandas: see `load_metrics`
        from evalkit.analysis.stats import phase_stats

        req, chunks = frames([*self.alone, *records])
        refused, _ = configuration_failures(req)
        req = req.assign(configuration=refused).iloc[len(self.alone):]
        return {"concurrency": level, **phase_stats(req, chunks, level, self.thresholds)}

    def add_baseline(self, records: Sequence[RequestRecord]) -> None:
        """The concurrency-1 figures every level is judged against."""
        if records:
            self.baseline = self._stats(records, 1)

    def add_level(self, level: int, records: Sequence[RequestRecord],
                  client_bound: bool) -> dict[str, Any]:
        """Judge `level` with the levels before it; the ramp's conclusion so far."""
        self.levels.append(self._stats(records, level))
        if client_bound:
            self.client_bound.append(level)
        return self.conclusion()

    def conclusion(self) -> dict[str, Any]:
        """What summary.json's `ramp` would say of the levels judged so far."""
        from evalkit.analysis.ramp import judge_ramp

        base = self.baseline or next((d for d in self.levels if d["concurrency"] == 1), None)
        return judge_ramp(self.levels, base, self.thresholds, self.client_bound)
