"""A ramp level's canaries tallied as they come back, so a level whose precision is a tie
when its time is up can run on until the tie is decided (evalkit.analysis.precision).

Four canaries at a level decide little: a vendor that swaps a quarter of its answers there
gets 3 of 4 matches, an interval from 19 % to 99 %, a tie; the level was never called and
`degraded_at` came a level late. A tie that its level's time leaves open is what more
answers can settle, so the level goes on, exactly as it ran (the same streams, the same
mix of ordinary requests and canaries, one in `every`: no burst of repeats a vendor
could see), until the interval decides or `budget` canary answers were compared. A spent
budget stays a tie, said as such (`ended`). The same as the ramp's request floors: the
level ends later, nothing about a request changes.

The rule is the summary's own: the same comparison, floor and interval
(`compare_answer`, `precision_call`), so this stop rule and summary.json cannot call a
level differently on the same answers. The sample is looked at once per turn of the
canary set (every `count` answers, each canary equally often between looks) rather than
after every answer: each look at a growing sample is another chance for the interval to
clear the floor by luck, so the looks are few.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalkit.analysis.canarycall import (
    alone_answers,
    compare_answer,
    floor_of,
    precision_call,
)
from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.thresholds import Thresholds
from evalkit.probe.plan.canaries import InTurn
from evalkit.records import RequestRecord


def _fields(rec: RequestRecord) -> Mapping[str, Any]:
    """A record's fields by name, as the summary's frame rows carry them (no copy)."""
    return vars(rec)


def _named(model: str | None) -> list[str]:
    return model.split(", ") if model else []


class LevelTally:
    """One ramp level's canary answers so far, and whether the level should run on."""

    def __init__(self, watch: CanaryWatch, held: Sequence[RequestRecord],
                 sent: Callable[[], int]) -> None:
        self._watch = watch
        self._held = held
        #: how many canaries the level has sent so far
        self._sent = sent
        self._seen = 0
        self._returned = 0
        self.matches = 0
        self.compared = 0
        self._new_models: set[str] = set()
        self._looked_at: int | None = None
        #: the level ran past its planned end for this tally
        self.grew = False
        #: why it stopped growing: "decided" or "budget" (None: still open, or never grew)
        self.stopped: str | None = None

    def _take(self) -> None:
        """Tally the records that came back since the last call."""
        refs, alone_models = self._watch.refs, self._watch.alone_models
        held = self._held
        for rec in held[self._seen:]:
            self._returned += rec.canary is not None
            if rec.outcome != "ok":
                continue
            if alone_models:
                self._new_models.update(m for m in _named(rec.model) if m not in alone_models)
            ref = refs.get(rec.canary) if rec.canary else None
            if ref is None or rec.output_sha256 is None:
                continue
            self.compared += 1
            self.matches += compare_answer(ref, _fields(rec)) != "differs"
        self._seen = len(held)

    def _call(self, matches: int, compared: int) -> str:
        return precision_call(matches, compared, self._watch.floor,
                              sorted(self._new_models))[0]

    def status(self) -> str:
        """The summary's call on the answers tallied so far."""
        self._take()
        return self._call(self.matches, self.compared)

    def _look(self, first: bool) -> str:
        """The call now, decided only where more answers cannot move it. A breach counts
        only if it stands whatever the canaries still in flight answer (the level's
        requests in flight are finished, not dropped, and the summary judges them too).
        At the level's planned end a hold is taken as the summary takes it (on its point:
        a clean endpoint costs nothing more); once the level runs on, only an interval
        wholly at or above the floor ends it as held: stopping at the first look that
        happens to reach the floor would hand a vendor that swaps a quarter of its answers
        a hold by luck, look after look."""
        call = self._call(self.matches, self.compared)
        pending = max(self._sent() - self._returned, 0)
        if call == "breach" and pending and self._call(
                self.matches + pending, self.compared + pending) != "breach":
            return "tie"
        if call == "held" and not first:
            ci = proportion_interval(self.matches, self.compared + pending)
            return "held" if ci is not None and ci[0] >= self._watch.floor else "tie"
        return call

    def wants_more(self) -> bool:
        """Asked once the level's time is up, before each further request: run on? Yes
        while the call is not decided (`_look`) and the answers compared and in flight
        are fewer than `budget`; the call is looked at again once a turn of the canary
        set has come back since the last look. A level once stopped stays stopped."""
        budget = self._watch.budget
        if self.stopped is not None or budget <= 0 or not self._watch.refs:
            return False
        self._take()
        spent = self.compared + max(self._sent() - self._returned, 0) >= budget
        step = max(len(self._watch.refs), 1)
        if self._looked_at is None or spent or self.compared >= self._looked_at + step:
            first = self._looked_at is None
            self._looked_at = self.compared
            if self._look(first) != "tie":
                self.stopped = "decided"
                return False
            if spent:
                self.stopped = "budget"
                return False
        self.grew = True
        return True

    def ended(self) -> str | None:
        """Why the level's sample stopped growing (evalkit.analysis.canarycall.GROWTH_ENDS):
        run.json's `canaries.ended`. None when it never grew (a call at its planned end
        needed no more answers), unless it was a tie on its whole budget already."""
        if self.stopped == "budget":
            return "budget"
        if not self.grew:
            return None
        # still open when the level ended: its time (or the run) ran out first
        return self.stopped or "time"


    def finish(self, level: int) -> str | None:
        """The level is over: keep why its sample stopped growing, if it grew (run.json's
        `canaries.ended`), and say what it came to (None: it did not grow)."""
        end = self.ended()
        if end is None:
            return None
        self._watch.ends[level] = end
        return self.note(level)

    def note(self, level: int) -> str:
        """What running the level on for its canaries came to, in words (every answer
        back, the drain's too): run.json's notes."""
        status = self.status()
        if status != "tie":
            said = f"the call on them: {status}"
        elif self.stopped == "budget":
            said = (f"still a tie at the budget of {self._watch.budget} answers: the sample "
                    f"could not decide")
        else:
            said = "still a tie when the level stopped: the sample could not decide"
        how = "it ran on, in the same mix of requests, to" if self.grew else "it had"
        return (f"ramp level {level}: precision was a tie at the level's planned end; {how} "
                f"{self.compared} canary answers, {said}")


class CanaryWatch:
    """The answers alone, learnt from the baseline, and a `LevelTally` for each ramp level."""

    def __init__(self, thresholds: Thresholds, budget: int) -> None:
        self.thresholds = thresholds
        self.budget = budget
        self.refs: dict[str, dict[str, Any]] = {}
        self.alone_models: frozenset[str] = frozenset()
        self.floor = 1.0 - thresholds.precision_match_tolerance
        #: why each ramp level that ran on for its canaries stopped (`LevelTally.ended`)
        self.ends: dict[int, str] = {}

    def learn_alone(self, records: Sequence[RequestRecord]) -> None:
        """The baseline's answers: each canary's answer alone, the rate alone (and so the
        floor), and the models that answered alone, as the summary takes them."""
        ok = [r for r in records if r.outcome == "ok"]
        self.refs, alone = alone_answers(_fields(r) for r in ok if r.canary)
        self.alone_models = frozenset(m for r in ok for m in _named(r.model))
        self.floor = floor_of(alone, self.thresholds)

    def level(self, held: Sequence[RequestRecord], turns: InTurn) -> LevelTally:
        """A tally over `held`, the level's records as they come back (read, not copied),
        sent by `turns` (how many canaries it has given out)."""
        return LevelTally(self, held, lambda: turns.canaries_sent)

    def ended(self) -> dict[str, str]:
        """run.json's `canaries.ended`: why each ramp level that ran on stopped."""
        return {str(k): v for k, v in self.ends.items()}
