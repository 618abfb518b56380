"""The verdict: is the vendor streaming-ready, from the six judgements and the run's
validity. Q2, Q4 and Q6 must be `ok` without a `gap`: a streaming quote that leaves any of
them unanswered, unanswerable, unreconciled or unverified is not ready, and neither is one
whose honest answer is no streaming capacity (a tiny rate, one stream, a limit below what
is sold). No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalkit.questionnaire.schema import QUESTION_IDS
from evalkit.review.rules import Judgement, join, quote

#: The questions a streaming quote must answer with measured numbers (SPEC).
STREAMING_QUESTIONS = ("Q2", "Q4", "Q6")


@dataclass(frozen=True)
class Verdict:
    """Whether the quote is sized for the streaming regime, in one or two sentences."""

    streaming_ready: bool
    text: str


def verdict(judgements: Mapping[str, Judgement], vendor: str | None,
            has_questionnaire: bool = True, validity: str | None = "valid",
            validity_reasons: tuple[str, ...] = (), answers: str | None = None,
            unchecked: str | None = None) -> Verdict:
    """Streaming-ready only when Q2, Q4 and Q6 are `ok` (verified), none with the finding
    `gap`, on a valid run, and the answers held under load at or below the concurrency
    sold (`answers`: the sentence that says how they changed, evalkit.review.answers)
    and were checked there at all (`unchecked`: why not, `answers_unchecked`).

    `validity` is the run's (None: no run, a claims-only review, which at best reads
    "complete and consistent, not verified").
    """
    who = vendor or "The vendor"
    others = [f"{qid} {judgements[qid].status}" for qid in QUESTION_IDS
              if qid not in STREAMING_QUESTIONS and judgements[qid].status != "ok"]
    gaps = [qid for qid in QUESTION_IDS if judgements[qid].finding == "gap"]
    also = (f" Also flagged: {join(others)}." if others else "") + (
        f" Gaps found: {join(gaps)}." if gaps else "") + (f" {answers}" if answers else "")
    if validity == "invalid":
        why = f" ({quote(validity_reasons[0], 200)})" if validity_reasons else ""
        return Verdict(False, f"RUN INVALID{why}: the run measured nothing a judgement can rest "
                       "on, so no claim is verified and no verdict is drawn from it." + also)
    if not has_questionnaire:
        return Verdict(False, "No questionnaire was given, so nothing shows the quote is sized "
                       "for the streaming regime; only the measurements are judged.")
    trio = {qid: judgements[qid].status for qid in STREAMING_QUESTIONS}
    missing = [qid for qid, st in trio.items() if st in ("unanswered", "unanswerable")]
    if missing:
        return Verdict(False, f"{who} cannot answer {join(missing)} with measured numbers, so "
                       "it has sized its quote for a regime the product is leaving (batch / "
                       "request-rate), not for concurrent streams." + also)
    broken = [qid for qid, st in trio.items() if st == "unreconciled"]
    if broken:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers, but "
                       f"{join(broken)} do{'es' if len(broken) == 1 else ''} not hold up, so "
                       "the quote is not shown to be sized for the streaming regime until "
                       "reconciled." + also)
    gapped = [qid for qid in STREAMING_QUESTIONS if judgements[qid].finding == "gap"]
    if gapped:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6, but {join(gapped)} show"
                       f"{'s' if len(gapped) == 1 else ''} a gap: what is quoted is not a "
                       "streaming capacity (each reason says why), so it never counts "
                       "toward streaming-ready." + also)
    unverified = [qid for qid, st in trio.items() if st == "unverified"]
    if validity is None:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers that are "
                       "complete and consistent, but this is a claims-only review: not verified, "
                       "so not shown streaming-ready until a probe run checks them." + also)
    if unverified:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with consistent numbers, but this "
                       f"run could not verify {join(unverified)}, so it is not shown "
                       "streaming-ready; each reason says which run would verify it." + also)
    if validity != "valid":
        why = f" ({quote(validity_reasons[0], 200)})" if validity_reasons else ""
        return Verdict(False, f"{who}'s answers to Q2, Q4 and Q6 hold up, but the run is "
                       f"{validity}{why}, so no verdict of readiness is drawn from it; re-run "
                       "the probe." + also)
    if answers:
        others_too = also.replace(f" {answers}", "")
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers that hold "
                       f"up, but not with the same answers: {answers} Speed from answers "
                       "that change under load is not the capacity sold, so the quote is "
                       "not shown streaming-ready." + others_too)
    if unchecked:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers that hold "
                       f"up, but {unchecked}, so the quote is not shown streaming-ready."
                       + also)
    return Verdict(True, f"{who} answers Q2, Q4 and Q6 with measured numbers that hold up "
                   "against our measurements, so its quote is sized for the streaming regime."
                   + also)
