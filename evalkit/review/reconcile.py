"""The reconciliation engine: a questionnaire and a summary in, judgements out. No I/O.

Each question gets one status (SPEC), and a green mark is earned only by evidence:

    ok            answered with numbers, checked against our measurement in the regime
                  the claim names (its concurrency reached, its model and endpoint
                  probed, the run valid and not client-bound there), within tolerance
    unverified    consistent numbers this run could not check; the reason names the
                  run that would (a claims-only review, a level not reached, ...)
    unanswered    missing or empty
    unanswerable  answered, but not with measured numbers
    unreconciled  numbers that disagree with our measurement or with each other

Beside the status, `finding` is "gap" where an honest answer reveals that the endpoint
does not serve the streaming regime (Q5 request-level or no observability, Q3 one
blended price, Q4 a limit below the concurrency sold). Claims are checked one-sidedly:
a claim holds when our measurement is at least as good within tolerance (a vendor that
under-promises is not flagged).

The parts, one job each: `evalkit.review.rules` (the statuses, the evidence, the
one-sided tolerance rule and `decide`), `evalkit.review.rates` (Q1-Q3) and
`evalkit.review.limits` (Q4-Q6), put together by `evalkit.review.questions`,
`evalkit.review.verdict` and `evalkit.review.fit` (use-case fit). This module puts them
together into a `Reconciliation`.

    review = reconcile(questionnaire, summary, Tolerances(), RunTarget(model, url))
    review.judgements["Q1"].status, review.verdict.text, review.use_cases["batch"].fit
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.analysis.summary import Summary, measurements
from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.model import Questionnaire
from evalkit.review.fit import Fit, streams_at_reading_speed, use_case_fit
from evalkit.review.panel import OurPanel, start_panel_hint
from evalkit.review.questions import judge_questions
from evalkit.review.rules import (
    Evidence,
    Judgement,
    RunTarget,
    probe_command,
    run_blocker,
    target_mismatch,
)
from evalkit.review.verdict import Verdict, verdict


@dataclass(frozen=True)
class Reconciliation:
    """Everything the scorecard states."""

    judgements: dict[str, Judgement]
    verdict: Verdict
    use_cases: dict[str, Fit]
    reading_speed: Fit
    has_questionnaire: bool
    has_measurements: bool
    client_bound: bool
    #: valid | degraded | invalid | unknown (no run: None)
    run_validity: str | None = None
    run_validity_reasons: tuple[str, ...] = ()
    #: why the questionnaire's model/endpoint and the run's do not match (None: they do)
    target_mismatch: str | None = None


def reconcile(questionnaire: Questionnaire | None, summary: Mapping[str, Any] | None,
              tol: Tolerances | None = None, run: RunTarget | None = None,
              panel: OurPanel | None = None) -> Reconciliation:
    """The whole judgement: questions, verdict, use-case fit, streams at reading speed.

    `run` says what the run probed; with a summary but no `run`, the run cannot be tied
    to the questionnaire's model and endpoint, and every measured claim is unverified.
    `panel` is our own production panel of the questionnaire's vendor and model (Q6 sets
    it beside the vendor's).
    """
    tol = tol or Tolerances()
    m = measurements(summary) if summary is not None else None
    if summary is not None and m is None:  # a summary with nothing measured in it
        m = Summary((), None, None, None, None, False, validity="invalid",
                         validity_reasons=("the summary holds no measured level",))
    mismatch = target_mismatch(questionnaire, run or RunTarget()) if m is not None else None
    command = probe_command(questionnaire)
    blocker = run_blocker(m, command) or (
        f"{mismatch}; re-run `{command} --out DIR` against the model and endpoint the "
        "questionnaire names" if mismatch else None)
    hint = start_panel_hint(questionnaire.vendor if questionnaire else None,
                            questionnaire.model if questionnaire else None)
    judgements = judge_questions(questionnaire, Evidence(m, blocker, command, panel, hint), tol)
    return Reconciliation(
        judgements=judgements,
        verdict=verdict(judgements, questionnaire.vendor if questionnaire else None,
                        questionnaire is not None, m.validity if m else None,
                        m.validity_reasons if m else ()),
        use_cases=use_case_fit(m, tol),
        reading_speed=streams_at_reading_speed(m, tol),
        has_questionnaire=questionnaire is not None,
        has_measurements=m is not None,
        client_bound=bool(m and m.client_bound),
        run_validity=m.validity if m else None,
        run_validity_reasons=m.validity_reasons if m else (),
        target_mismatch=mismatch,
    )
