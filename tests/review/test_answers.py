"""The answers under load in the review (`evalkit.review.answers`): a precision or length
breach at or below the concurrency sold denies streaming-ready, a swap the responses
reported is named, and "answers varied, same model" is never said as a swap."""

from __future__ import annotations

import json
from typing import Any

from evalkit.review.reconcile import reconcile
from tests.review.helpers import RUN, SUMMARY, forthright_run, sample, typed


def _breached(c: int, metric: str, kind: str = "diverged_at_start",
              models: list[str] | None = None) -> dict[str, Any]:
    """forthright_run() (ready as it stands: 4 streams sold) with a breach on `metric` at
    level `c`, its precision section saying what the canaries showed there."""
    s = json.loads(json.dumps(forthright_run()))
    for lv in s["ramp"]["levels"]:
        if lv["concurrency"] == c:
            lv["breaches"] = [metric]
            lv["length_ratio"] = 0.5
    s["precision"]["levels"] = [lv for lv in s["precision"]["levels"]
                                if lv["concurrency"] != c] + [
        {"concurrency": c, "match_rate": 0.0, "compared": 6, "status": "breach",
         "kind": kind, "models_not_seen_alone": models or []}]
    return s


def test_the_unbroken_run_is_ready() -> None:
    """The control: without a breach forthright is streaming-ready, so each test below
    fails only for the reason it adds."""
    assert sample("forthright", forthright_run()).verdict.streaming_ready is True


def test_answers_not_checked_at_the_concurrency_sold_are_not_ready() -> None:
    """Fail closed: no breach where nothing was compared is no evidence. No canaries at
    all (an imported run), none at the 4 streams sold (sharded on Ray), or none there that
    could be compared: each denies streaming-ready and says what run would check it."""
    none = forthright_run()
    del none["precision"]
    r = sample("forthright", none)
    assert r.verdict.streaming_ready is False and "sent no canaries" in r.verdict.text
    skipped = forthright_run()
    skipped["precision"]["levels"] = [lv for lv in skipped["precision"]["levels"]
                                      if lv["concurrency"] != 4]
    r = sample("forthright", skipped)
    assert r.verdict.streaming_ready is False
    assert "not checked at the 4 streams sold" in r.verdict.text
    assert "re-run the ramp through 4 streams" in r.verdict.text
    failed = forthright_run()
    for lv in failed["precision"]["levels"]:
        if lv["concurrency"] == 4:
            lv["compared"] = 0
    r = sample("forthright", failed)
    assert r.verdict.streaming_ready is False and "could be compared" in r.verdict.text


def test_a_precision_breach_at_the_concurrency_sold_is_not_ready() -> None:
    r = sample("forthright", _breached(4, "precision"))
    assert r.verdict.streaming_ready is False
    assert "not with the same answers" in r.verdict.text
    assert "at 4 streams 0% of 6 canary answers matched" in r.answers
    assert "as another model's answers would" in r.answers and r.swap is None


def test_a_breach_above_the_concurrency_sold_leaves_the_verdict() -> None:
    r = sample("forthright", _breached(8, "precision"))
    assert r.answers is None and r.verdict.streaming_ready is True


def test_a_length_breach_is_said_in_tokens_short() -> None:
    r = sample("forthright", _breached(2, "length"))
    assert r.verdict.streaming_ready is False
    assert "at 2 streams outputs were 50% shorter than alone (length)" in r.answers


def test_a_reported_swap_is_named_wherever_it_happened() -> None:
    r = sample("forthright", _breached(8, "precision", "model_reported", ["m-small"]))
    assert r.swap is not None and "Another model answered under load" in r.swap
    assert "named m-small, where m-large answered alone" in r.swap and "at 8 streams" in r.swap


def test_varied_answers_are_never_called_a_swap() -> None:
    r = sample("forthright", _breached(4, "precision", "varied"))
    assert r.swap is None and "another model" not in r.answers.lower()
    assert "the answers varied under load, the same model reported" in r.answers


def test_no_run_no_answers() -> None:
    assert reconcile(None, typed(SUMMARY), None, RUN).answers is None


def _precision_at(c: int, **level: Any) -> dict[str, Any]:
    """forthright_run() with its precision section's level `c` replaced."""
    s = json.loads(json.dumps(forthright_run()))
    s["precision"]["levels"] = [lv for lv in s["precision"]["levels"]
                                if lv["concurrency"] != c] + [{"concurrency": c, **level}]
    return s


def test_a_tie_at_or_below_the_concurrency_sold_is_not_ready() -> None:
    """Fail closed: a tie (fewer matches than the floor, an interval still reaching it) is
    no evidence the answers held, at the level sold or below it, whether its budget was
    spent or not; above the level sold it leaves the verdict."""
    spent = dict(match_rate=0.6, compared=10, matches=6, status="tie", budget=16,
                 undecided=True)
    r = sample("forthright", _precision_at(4, **spent))
    assert r.verdict.streaming_ready is False
    assert "not shown to hold at 4 streams: 6 of 10 canary answers matched" in r.verdict.text
    assert "undecided after the level's budget of 16 answers" in r.verdict.text
    r = sample("forthright", _precision_at(2, **{**spent, "undecided": False}))
    assert r.verdict.streaming_ready is False
    assert "at 2 streams (below the 4 sold)" in r.verdict.text
    assert "budget" not in r.verdict.text.split("(a tie")[1].split(")")[0]
    assert sample("forthright", _precision_at(8, **spent)).verdict.streaming_ready is True


def test_answers_alone_that_never_repeated_are_not_ready() -> None:
    """A level compared but not judged (the answers alone did not repeat: no floor)."""
    r = sample("forthright", _precision_at(4, match_rate=0.2, compared=5, matches=1,
                                           status="not_measured"))
    assert r.verdict.streaming_ready is False
    assert "not judged at 4 streams" in r.verdict.text
