"""Page one's question rows and use cases (`evalkit.render.questions`)."""

from __future__ import annotations

from pathlib import Path

from evalkit.render.questions import (
    BADGES,
    not_verified,
    question_rows,
    rate_limits_row,
    use_case_rows,
)
from evalkit.review.pipeline import review

QUESTIONNAIRE = Path(__file__).resolve().parents[2] / "questionnaires" / "forthright.yaml"


def test_claims_only_rows_say_what_would_verify_them() -> None:
    card = review(None, QUESTIONNAIRE, None).card
    rows = question_rows(card, None)
    assert [r.id for r in rows] == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert all(r.status == "unverified" and r.badge == BADGES["unverified"] for r in rows)
    limits = rate_limits_row(card)
    said = not_verified(rows, limits)
    assert [qid for qid, _ in said][:6] == [r.id for r in rows]
    assert (limits is None) == ("Rate limits" not in dict(said))
    assert all(reason for _, reason in said)


def test_use_cases_are_named_from_their_key_without_a_label() -> None:
    card = review(None, QUESTIONNAIRE, None).card
    names = [uc.name for uc in use_case_rows(card)]
    assert names and all("_" not in n for n in names)
