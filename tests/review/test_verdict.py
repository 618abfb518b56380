"""The verdict (`evalkit.review.verdict`): streaming-ready from the six judgements and the
run's validity."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit.questionnaire.model import Answer
from evalkit.review.rules import Judgement
from evalkit.review.verdict import STREAMING_QUESTIONS, verdict

# ------------------------------------------------------------------ the verdict, pure

QIDS = ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6")


def _judged(finding: str | None = None, **status: str) -> dict[str, Judgement]:
    """Q1..Q6 all `ok` but for the statuses given (and a finding on each of those)."""
    return {qid: Judgement(status.get(qid, "ok"), "r.", Answer(), None, "t",
                           finding if qid in status else None)  # type: ignore[arg-type]
            for qid in QIDS}


class TestVerdict:
    def test_ready_only_when_q2_q4_q6_are_ok_on_a_valid_run(self) -> None:
        """All six ok on a valid run: ready, and the vendor is named."""
        v = verdict(_judged(), "Acme")
        assert v.streaming_ready is True
        assert v.text.startswith("Acme ") and "Also flagged" not in v.text
        assert verdict(_judged(), None).text.startswith("The vendor ")

    @pytest.mark.parametrize("qid", STREAMING_QUESTIONS)
    @pytest.mark.parametrize(("status", "says"), [
        ("unanswered", "cannot answer"), ("unanswerable", "cannot answer"),
        ("unreconciled", "not hold up"), ("unverified", "could not verify")])
    def test_one_streaming_question_short_of_ok_is_not_ready(
            self, qid: str, status: str, says: str) -> None:
        """Q2 alone, Q4 alone or Q6 alone failing (the others ok) denies readiness, and
        the verdict names that question and why."""
        v = verdict(_judged(**{qid: status}), "Acme")
        assert v.streaming_ready is False
        assert says in v.text
        rest = v.text.replace("Q2, Q4 and Q6", "")  # the three it must answer, named
        assert [q for q in STREAMING_QUESTIONS if q in rest] == [qid], v.text

    def test_what_is_missing_outranks_what_is_broken_and_unverified(self) -> None:
        """Unanswered beats unreconciled beats unverified, each naming only its questions."""
        def named(v: Any) -> list[str]:
            rest = v.text.replace("Q2, Q4 and Q6", "")
            return [q for q in STREAMING_QUESTIONS if q in rest]

        v = verdict(_judged(Q2="unverified", Q4="unreconciled", Q6="unanswered"), "Acme")
        assert ("cannot answer" in v.text, named(v)) == (True, ["Q6"])
        v = verdict(_judged(Q2="unverified", Q4="unreconciled", Q6="unreconciled"), "Acme")
        assert ("not hold up" in v.text, named(v)) == (True, ["Q4", "Q6"])
        v = verdict(_judged(Q2="unverified", Q6="unverified"), "Acme")
        assert ("could not verify" in v.text, named(v)) == (True, ["Q2", "Q6"])

    @pytest.mark.parametrize("qid", ["Q1", "Q3", "Q5"])
    def test_the_other_questions_are_flagged_but_do_not_decide(self, qid: str) -> None:
        """Q1, Q3 or Q5 short of ok leaves the quote ready, and is listed with its status;
        a gap is listed wherever it is found."""
        v = verdict(_judged(**{qid: "unreconciled"}), "Acme")
        assert v.streaming_ready is True
        assert v.text.endswith(f" Also flagged: {qid} unreconciled.")
        gap = verdict(_judged("gap", **{qid: "ok"}), "Acme")
        assert gap.streaming_ready is True
        assert gap.text.endswith(f" Gaps found: {qid}.")

    @pytest.mark.parametrize(("validity", "reasons", "says"), [
        ("invalid", ("baseline: no request succeeded",), "RUN INVALID (baseline: no request"),
        ("invalid", (), "RUN INVALID: "),
        ("degraded", ("cache: 1 of 4 failed",), "the run is degraded (cache: 1 of 4 failed)"),
        ("degraded", (), "the run is degraded, so"),
        ("unknown", (), "the run is unknown"),
        (None, (), "claims-only review"),
    ])
    def test_a_run_that_is_not_valid_never_makes_a_quote_ready(
            self, validity: str | None, reasons: tuple[str, ...], says: str) -> None:
        """Every answer ok is still not ready on an invalid, degraded or missing run."""
        v = verdict(_judged(Q1="unanswered"), "Acme", True, validity, reasons)
        assert v.streaming_ready is False
        assert says in v.text
        assert v.text.endswith("Also flagged: Q1 unanswered.")

    def test_an_invalid_run_outranks_a_missing_questionnaire(self) -> None:
        """RUN INVALID is said first, whatever else is missing."""
        v = verdict(_judged(), None, has_questionnaire=False, validity="invalid")
        assert v.text.startswith("RUN INVALID")
        v = verdict(_judged(), None, has_questionnaire=False, validity="valid")
        assert (v.streaming_ready, v.text.startswith("No questionnaire")) == (False, True)


class TestVerdictWords:
    @pytest.mark.parametrize(("broken", "said"), [({"Q2": "unreconciled"}, "Q2 does not hold up"),
                                                  ({"Q2": "unreconciled", "Q6": "unreconciled"},
                                                   "Q2 and Q6 do not hold up")])
    def test_what_does_not_hold_up_is_counted_and_ends_the_sentence(
            self, broken: dict[str, str], said: str) -> None:
        v = verdict(_judged(**broken), "Acme")
        assert v.streaming_ready is False and said in v.text
        assert v.text.endswith("until reconciled.")

    @pytest.mark.parametrize("validity", ["invalid", "degraded"])
    def test_the_run_s_reason_is_quoted_up_to_200_characters(self, validity: str) -> None:
        reason = "r" * 201
        v = verdict(_judged(), "Acme", validity=validity, validity_reasons=(reason, "other"))
        assert f"({'r' * 199}…)" in v.text and "r" * 200 not in v.text
        whole = verdict(_judged(), "Acme", validity=validity, validity_reasons=(reason[:200],))
        assert f"({'r' * 200})" in whole.text

    def test_nothing_else_flagged_adds_nothing(self) -> None:
        v = verdict(_judged(), "Acme")
        assert v.streaming_ready is True and v.text.endswith("sized for the streaming regime.")
