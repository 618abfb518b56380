"""A canary's answer against its answer alone, and a level's call on its answers: pure
and without pandas, so the prober's stop rule (`evalkit.probe.plan.canarywatch`) uses the
summary's own rule while a level runs, before pandas is loaded (evalkit.probe.run.phases.
load_metrics). `evalkit.analysis.precision` builds summary.json's section on it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.analysis.intervals import proportion_interval
from evalkit.analysis.jsonread import Json
from evalkit.analysis.thresholds import Thresholds

#: why a ramp level's canary sample stopped growing (run.json's `canaries.ended`, by
#: level; evalkit.probe.plan.canarywatch): it was judged at the level's planned end without
#: more (absent), grew until its interval decided, grew to its budget still a tie, or the
#: level's time ran out (or the run stopped) first
GROWTH_ENDS = ("decided", "budget", "time")

#: one canary answer's fields by name: a frame's row, or a prober's record as it comes
#: (the values are the record's: text, digests, a list of pieces, numbers, None)
Row = Mapping[str, object]


@dataclass(frozen=True)
class Alone:
    """The baseline's canary answers alone, as summary.json's `precision.alone` has them."""

    answers: int
    canaries_answered: int
    #: the share of the other answers alone that match their canary's reference (None:
    #: no canary was answered twice alone)
    match_rate: float | None
    distinct: int
    models_seen: list[str]
    fingerprints_seen: list[str]

    def to_json(self) -> dict[str, Json]:
        return {"answers": self.answers, "canaries_answered": self.canaries_answered,
                "match_rate": self.match_rate, "distinct": self.distinct,
                "models_seen": self.models_seen, "fingerprints_seen": self.fingerprints_seen}


def distinct_names(values: Iterable[Any]) -> list[str]:
    """The distinct names in a column of comma-joined names (a stream may name several)."""
    seen: dict[str, None] = {}
    for v in values:
        if isinstance(v, str):
            for name in v.split(", "):
                seen.setdefault(name, None)
    return sorted(seen)


def answer_pieces(row: Row) -> list[str] | None:
    tokens = row.get("answer_tokens")
    return list(tokens) if isinstance(tokens, list) and tokens else None


def digested_pieces(reference: Row, answer: Row
              ) -> tuple[list[str], list[str]] | None:
    """Both answers' pieces when neither kept its text: a corpus canary's answer is kept
    as keyed digests of its pieces (`evalkit.probe.plan.privacy`), compared piece by piece."""
    if isinstance(reference.get("answer_text"), str) or \
            isinstance(answer.get("answer_text"), str):
        return None
    ref, got = answer_pieces(reference), answer_pieces(answer)
    return (ref, got) if ref is not None and got is not None else None


def _cut_short(reference: Row, answer: Row) -> bool:
    """The answer is the reference's text cut short (a non-empty strict prefix; for
    answers kept as digests, of its pieces)."""
    if (both := digested_pieces(reference, answer)) is not None:
        ref, got = both
        return 0 < len(got) < len(ref) and ref[:len(got)] == got
    ref_text, text = reference.get("answer_text"), answer.get("answer_text")
    return (isinstance(ref_text, str) and isinstance(text, str) and 0 < len(text) < len(ref_text)
            and ref_text.startswith(text))


def alone_answers(rows: Iterable[Row]) -> tuple[dict[str, dict[str, object]], Alone]:
    """Each canary's reference answer alone (its modal digest, the first answer that has
    it), and the alone summary, from the baseline's ok canary answers (a record's fields
    by name: a frame's rows, or the prober's records as they come).

    The rate alone is the share of the *other* answers alone that match the reference:
    the reference is one of them, and counted as matching itself it made an engine that
    never repeats an answer read 50 % (two repeats) where it agrees with itself 0 % of
    the time, and every level of it a precision breach, level 1 included. Canaries
    answered once alone say nothing of the engine's own variation."""
    by_canary: dict[str, list[Row]] = {}
    for row in rows:
        by_canary.setdefault(str(row["canary"]), []).append(row)
    refs: dict[str, dict[str, object]] = {}
    matched = others = answered = distinct = 0
    for canary in sorted(by_canary):
        sub = by_canary[canary]
        digests = Counter(d for r in sub if isinstance(d := r.get("output_sha256"), str))
        if not digests:
            continue
        modal, count = digests.most_common(1)[0]
        refs[canary] = dict(next(r for r in sub if r.get("output_sha256") == modal))
        matched += count - 1
        others += sum(digests.values()) - 1
        answered += sum(digests.values())
        distinct += len(digests)
    every = [r for sub in by_canary.values() for r in sub]
    return refs, Alone(answered, len(refs), matched / others if others else None, distinct,
                       distinct_names(r.get("model") for r in every),
                       distinct_names(r.get("system_fingerprint") for r in every))


def floor_of(alone: Alone, th: Thresholds) -> float:
    """The match rate a level may fall to before its interval can breach: the rate alone
    (1 when nothing was answered alone) less the tolerance."""
    rate = alone.match_rate
    return (float(rate) if rate is not None else 1.0) - th.precision_match_tolerance


def compare_answer(reference: Row, answer: Row) -> str:
    """`match` (the same digest), `cut_short` (the answer alone stopped early: the same
    words as far as they go; precision is about what was said, how much of it is the
    `length` limit's to judge) or `differs`."""
    if answer.get("output_sha256") == reference.get("output_sha256"):
        return "match"
    return "cut_short" if _cut_short(reference, answer) else "differs"


def precision_call(k: int, n: int, floor: float, models_new: Sequence[str]
                   ) -> tuple[str, list[float] | None]:
    """A level's status from `k` matches of `n` answers compared: `breach` (another model
    named, or the whole 95 % interval below `floor`), `tie` (the point below, the interval
    reaching above), `held`, or `not_measured` (nothing compared, or a floor at or below
    0: the answers alone never repeated); and the interval."""
    ci = proportion_interval(k, n)
    if models_new:
        return "breach", ci
    if ci is None:
        return "not_measured", None
    if floor <= 0:  # its answers alone did not repeat: no rate under load falls below
        return "not_measured", ci
    if ci[1] < floor:
        return "breach", ci
    return ("tie" if k / n < floor else "held"), ci
