"""The canaries' stop rule (`evalkit.probe.plan.canarywatch`) from hand-fed records: a tie at a
level's planned end runs on, only a decided interval or the budget ends it, a breach the
canaries in flight could undo is not yet one, and the rule calls a level as summary.json
does. And the mix (`evalkit.probe.plan.canaries.InTurn`): one canary in each block, at a place
drawn per level, however long the level runs."""

from __future__ import annotations

import hashlib

import pytest

from evalkit.analysis.summarize import summarize
from evalkit.analysis.thresholds import Thresholds
from evalkit.probe.plan.canaries import in_turn, make_canaries
from evalkit.probe.plan.canarywatch import CanaryWatch, LevelTally
from evalkit.probe.plan.prompts import PromptSource
from evalkit.records import RequestRecord
from tests.analysis.helpers import stream

CANARIES = ("k1", "k2", "k3", "k4")


def _answer(rid: str, phase: str, level: int, canary: str | None, text: str,
            model: str = "m") -> RequestRecord:
    return stream(rid, phase, level, canary=canary, model=model, answer_text=text,
                  output_sha256=hashlib.sha256(text.encode()).hexdigest())


def _watch(budget: int = 16) -> CanaryWatch:
    watch = CanaryWatch(Thresholds(), budget)
    watch.learn_alone([_answer(f"a{k}{r}", "baseline", 1, k, f"alone {k}")
                       for r in range(2) for k in CANARIES])
    return watch


class _Level:
    """A level's records as they come back, and the canaries it has sent."""

    def __init__(self, watch: CanaryWatch) -> None:
        self.held: list[RequestRecord] = []
        self.sent = 0
        self.tally = LevelTally(watch, self.held, lambda: self.sent)

    def back(self, matches: list[bool], in_flight: int = 0, model: str = "m") -> None:
        """Canary answers come back (True: the answer alone), `in_flight` more sent."""
        for ok in matches:
            k = CANARIES[len(self.held) % len(CANARIES)]
            self.held.append(_answer(f"r{len(self.held)}", "ramp", 4, k,
                                     f"alone {k}" if ok else f"other {k}", model))
        self.sent = len(self.held) + in_flight


def test_a_level_held_at_its_planned_end_never_runs_on() -> None:
    level = _Level(_watch())
    level.back([True] * 4)
    assert level.tally.wants_more() is False
    assert level.tally.ended() is None and level.tally.status() == "held"


def test_a_tie_runs_on_one_turn_at_a_time_until_its_interval_lies_below_the_floor() -> None:
    level = _Level(_watch())
    level.back([True, True, True, False])  # 3 of 4: [19 %, 99 %], a tie
    assert level.tally.wants_more() is True
    level.back([True, False, True])  # 7 answers, the next look at 8
    assert level.tally.wants_more() is True
    level.back([False])  # 5 of 8 at the look: [24 %, 91 %], still a tie
    assert level.tally.wants_more() is True
    level.back([False, True, False, False])  # 6 of 12: [21 %, 79 %] below 90 %
    assert level.tally.wants_more() is False
    assert level.tally.ended() == "decided" and level.tally.status() == "breach"


def test_a_breach_the_canaries_in_flight_could_undo_is_not_decided_yet() -> None:
    """3 of 6 is a breach ([12 %, 88 %]); with two canaries still out that could bring it
    to 5 of 8 ([24 %, 91 %]), a tie, it runs on: those answers are judged too."""
    level = _Level(_watch())
    level.back([True, False, True, False, True, False], in_flight=2)
    assert level.tally.status() == "breach"
    assert level.tally.wants_more() is True
    level.back([False, False])  # the two came back differing: 3 of 8
    assert level.tally.wants_more() is True  # the next look is a turn (4) after the last
    level.back([False, False])  # 3 of 10: [7 %, 65 %], nothing out
    assert level.tally.wants_more() is False and level.tally.ended() == "decided"


def test_once_running_on_a_hold_needs_its_whole_interval_above_the_floor() -> None:
    """A vendor that swaps one answer in seven reaches the floor's point at some look by
    luck; only an interval wholly at or above it (or the budget) ends a level that runs
    on, so that luck is no way out."""
    level = _Level(_watch(budget=16))
    level.back([True, True, True, False])  # a tie: runs on
    assert level.tally.wants_more() is True
    level.back([True] * 4)  # 7 of 8: 87.5 % at the look, [47 %, 99.7 %]
    assert level.tally.wants_more() is True
    level.back([True] * 4)  # 11 of 12: 91.7 %, a hold on its point, [62 %, 99.8 %]
    assert level.tally.status() == "held"
    assert level.tally.wants_more() is True


def test_a_spent_budget_is_a_tie_said_as_such() -> None:
    level = _Level(_watch(budget=8))
    level.back([True, True, True, False])
    assert level.tally.wants_more() is True
    level.back([True, True, False], in_flight=1)  # 7 back and 1 out: the budget's 8
    assert level.tally.wants_more() is False
    level.back([True])  # 6 of 8: [35 %, 97 %]
    assert level.tally.status() == "tie" and level.tally.ended() == "budget"
    assert "still a tie at the budget of 8 answers: the sample could not decide" in \
        level.tally.note(4)


def test_a_model_not_seen_alone_decides_at_once() -> None:
    level = _Level(_watch())
    level.back([True, True, True, False], model="m-mini")
    assert level.tally.status() == "breach" and level.tally.wants_more() is False


@pytest.mark.parametrize("pattern, ended", [
    ([True, True, True, False, True, False, True, False, False, True, False, False],
     "decided"),
    ([True, True, True, False] + [True] * 12, "budget"),
])
def test_the_rule_calls_a_level_as_the_summary_does(pattern: list[bool], ended: str) -> None:
    """Fed the same answers, the stop rule's call is summary.json's, and the summary says
    how far the level grew and why it stopped (run.json's `canaries`)."""
    watch = _watch(budget=16)
    level = _Level(watch)
    level.back(pattern[:4])
    assert level.tally.wants_more() is True
    for i in range(4, len(pattern)):
        level.back(pattern[:i + 1][i:])
        level.tally.wants_more()
    assert level.tally.ended() == ended
    baseline = [_answer(f"a{k}{r}", "baseline", 1, k, f"alone {k}")
                for r in range(2) for k in CANARIES]
    meta = {"canaries": {"level_budget": 16, "ended": {"4": ended}}}
    p = summarize(baseline + level.held, meta)["precision"]
    lv = p["levels"][0]
    assert lv["status"] == level.tally.status()
    assert (lv["compared"], lv["matches"]) == (level.tally.compared, level.tally.matches)
    assert (lv["budget"], lv["grew"]) == (16, ended)
    assert lv["undecided"] is (lv["status"] == "tie")


def test_one_canary_in_each_block_at_a_place_drawn_per_level() -> None:
    """However long a level runs, each block of `every` requests holds one canary, never
    its first request; where in the block is drawn (a fixed period that divides by the
    level would put every canary at the same place in the closed loop's waves)."""
    canaries = make_canaries("t0", 0, 3, 64, 8)
    source = PromptSource("t0", 0)
    turns = in_turn(canaries, 6, lambda: source.next(64, 8), "level 4")
    drawn = [turns().canary for _ in range(600)]
    blocks = [drawn[i:i + 6] for i in range(0, 600, 6)]
    assert all(sum(c is not None for c in b) == 1 and b[0] is None for b in blocks)
    places = {next(i for i, c in enumerate(b) if c) for b in blocks}
    assert places == {1, 2, 3, 4, 5}
    assert turns.canaries_sent == 100
    assert [c for c in drawn if c][:4] == ["k1", "k2", "k3", "k1"]
