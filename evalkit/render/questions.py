"""Page one's questions table, its rate-limits row, what the run did not verify and the
use cases' fit; the same rows give Appendix E's answers in full. Pure: the typed
`Scorecard` (and the run's `Summary`, which the measured column quotes) in, strings out;
the words themselves are `evalkit.render.pagetext`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.analysis.summary import Summary
from evalkit.questionnaire.schema import QUESTION_IDS
from evalkit.render import words
from evalkit.render.measuredtext import measured_long, measured_text
from evalkit.render.pagetext import (
    LONG_TEXT,
    SHORT_TEXT,
    claim_text,
    fit_badge,
)
from evalkit.render.pdf import clip
from evalkit.render.ratelimits import rate_limits_text
from evalkit.review.measured import RateLimitsMeasured
from evalkit.review.scorecard import QuestionCard, Scorecard

#: Badge glyphs: a shape and a word per status, so greyscale print still tells them apart.
BADGES = {"ok": "✓", "unverified": "◐", "unanswered": "○", "unanswerable": "?",
          "unreconciled": "✗"}


@dataclass(frozen=True)
class QuestionRow:
    """One row of page one's questions table, and its answer in full (Appendix E)."""

    id: str
    title: str
    status: str
    badge: str
    #: the vendor's answer leaves a gap the question asked about
    gap: bool
    claimed: str
    measured: str
    reason: str
    claimed_long: str
    measured_long: str
    reason_long: str
    tolerance: str


@dataclass(frozen=True)
class UseCaseRow:
    """One use case's fit on page one: its name, badge (style and words) and reason."""

    name: str
    css: str
    label: str
    reason: str


def question_row(qid: str, q: QuestionCard, measured: str) -> QuestionRow:
    """One row of page one's questions table (and its answer in Appendix E)."""
    return QuestionRow(
        id=qid, title=clip(q.title, 80), status=q.status, badge=BADGES.get(q.status, "!"),
        gap=q.finding == "gap",
        claimed=claim_text(q.claimed, brief=True),
        measured=measured,
        reason=clip(q.reason, 3 * SHORT_TEXT),
        claimed_long=claim_text(q.claimed, brief=False),
        measured_long=measured_long(q.measured),
        reason_long=clip(q.reason, LONG_TEXT),
        tolerance=words.tolerance(clip(q.tolerance, SHORT_TEXT)) if q.tolerance else "")


def question_rows(card: Scorecard, summary: Summary | None) -> tuple[QuestionRow, ...]:
    """The six questions, in order, each measured column in the page's words."""
    return tuple(question_row(qid, card.question(qid), measured_text(
        card.question(qid).measured, summary)) for qid in QUESTION_IDS)


def rate_limits_row(card: Scorecard) -> QuestionRow | None:
    """The rate limits' row, shown when claimed or met: no claim and no 429 is no news."""
    limits = card.rate_limits
    if limits is None:
        return None
    rejected = isinstance(limits.measured, RateLimitsMeasured) and limits.measured.rejected_429
    if limits.status == "unanswered" and not rejected:
        return None
    return question_row("rate-limits", limits, rate_limits_text(limits.measured))


def not_verified(questions: tuple[QuestionRow, ...],
                 limits: QuestionRow | None) -> tuple[tuple[str, str], ...]:
    """Page one's "what this run did not verify": each with the run that would."""
    rows = [(q.id, q.reason) for q in questions if q.status == "unverified"]
    if limits is not None and limits.status == "unverified":
        rows.append(("Rate limits", limits.reason))
    return tuple(rows)


def use_case_rows(card: Scorecard) -> tuple[UseCaseRow, ...]:
    """Each use case's fit, in the scorecard's order."""
    rows = []
    for name, uc in card.use_cases.items():
        css, label = fit_badge(uc.fit)
        rows.append(UseCaseRow(clip(uc.label or name.replace("_", " "), 60), css, label,
                               clip(uc.fit.reason, 4 * SHORT_TEXT)))
    return tuple(rows)
