"""The six capacity questions, one judge each: an answer and the evidence in, a
`Judgement` out (status, reason, what was claimed and measured). No I/O.
"""

from __future__ import annotations

from dataclasses import replace

from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.model import (
    Answer,
    Questionnaire,
    disorders,
)
from evalkit.review.limits import judge_q4, judge_q5
from evalkit.review.panel import judge_q6
from evalkit.review.rates import judge_q1, judge_q2, judge_q3
from evalkit.review.rules import (
    Evidence,
    Judgement,
    join,
)
from evalkit.review.voiceclaims import judge_q1_with_voice, judge_q4_with_voice


def _with_disorders(j: Judgement, answer: Answer) -> Judgement:
    """Percentiles that contradict each other are always shown: the judges check order only
    on the way to a measured judgement, so an answer refused earlier (lab, no concurrency,
    no window...) would hide them. The earlier status stands (it says why the answer is not
    measured production numbers); the contradiction is added to its reason."""
    found = disorders(answer)
    if not found or j.status == "unreconciled":  # the judge already said so
        return j
    said = join(found)
    if j.status in ("ok", "unverified"):
        return replace(j, status="unreconciled",
                       reason=f"The answer contradicts itself: {said}.")
    return replace(j, reason=f"{j.reason} Its numbers also contradict each other: {said}.")


def judge_questions(q: Questionnaire | None, ev: Evidence,
                    tol: Tolerances) -> dict[str, Judgement]:
    """Q1..Q6 judgements; with no questionnaire every one is `unanswered`. Q1 and Q4 judge
    a voice product's claims against the run's realtime calls as well
    (`evalkit.review.voiceclaims`)."""
    q = q or Questionnaire()
    judged = {
        "Q1": judge_q1_with_voice(lambda: judge_q1(q.q1, ev, tol), q.q1, ev, tol, q),
        "Q2": judge_q2(q.q2, ev, tol),
        "Q3": judge_q3(q.q3, ev, tol),
        "Q4": judge_q4_with_voice(lambda: judge_q4(q.q4, ev, tol, q.q2.at_concurrency),
                                  q.q4, ev, tol, q),
        "Q5": judge_q5(q.q5, ev, tol),
        "Q6": judge_q6(q.q6, q.headline.value, q.headline.unit, ev, tol,
                       q.q2.at_concurrency),
    }
    return {qid: _with_disorders(j, q.questions[qid]) for qid, j in judged.items()}
