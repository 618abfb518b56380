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

from dataclasses import dataclass, field, replace

from evalkit.analysis.summary import Summary, measurements
from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.model import (
    PricingAnswer,
    Questionnaire,
    RateLimitsAnswer,
    ThroughputAnswer,
)
from evalkit.review.answers import answers_sentence, answers_unchecked, reported_swap
from evalkit.review.cost import session_cost
from evalkit.review.costcard import Cost
from evalkit.review.fit import Fit, streams_at_reading_speed, use_case_fit
from evalkit.review.ourpanel import OurPanel
from evalkit.review.panel import start_panel_hint
from evalkit.review.questions import judge_questions
from evalkit.review.ratelimits import judge_rate_limits
from evalkit.review.rules import (
    Evidence,
    Judgement,
    RunTarget,
    probe_command,
    run_blocker,
    target_mismatch,
)
from evalkit.review.verdict import Verdict, verdict
from evalkit.review.voicecost import call_cost
from evalkit.review.voicefit import with_voice_fit
from evalkit.review.workload import sources, trace_block, workload_block
from evalkit.review.workload_card import Sources, TraceCard, WorkloadCard
from evalkit.sanitize import clean


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
    #: how the answers changed under load at or below the concurrency sold, and a swap
    #: the responses reported anywhere (evalkit.review.answers; None: none seen)
    answers: str | None = None
    swap: str | None = None
    #: the rate limits' row (`evalkit.review.ratelimits`): not one of the six questions,
    #: outside the verdict; None only when built by hand
    rate_limits: Judgement | None = None
    #: what a session costs at Q3's prices (`evalkit.review.cost.session_cost`)
    cost: Cost = field(default_factory=Cost)
    #: the buyer's workload and trace, judged, and which workload each part's figures
    #: come from (`evalkit.review.workload`; None: not run)
    workload: WorkloadCard | None = None
    trace: TraceCard | None = None
    sources: Sources = field(default_factory=Sources)


def reconcile(questionnaire: Questionnaire | None, summary: Summary | None,
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
        # its own reasons still say why (records that were no evidence, a cut run)
        m = Summary((), None, None, None, None, False, validity="invalid",
                    validity_reasons=("the summary holds no measured level",
                                      *summary.sections.validity.reasons))
    mismatch = target_mismatch(questionnaire, run or RunTarget()) if m is not None else None
    command = probe_command(questionnaire)
    blocker = run_blocker(m, command) or (
        f"{mismatch}; re-run `{command} --out DIR` against the model and endpoint the "
        "questionnaire names" if mismatch else None)
    hint = start_panel_hint(questionnaire.vendor if questionnaire else None,
                            questionnaire.model if questionnaire else None)
    judgements = judge_questions(questionnaire, Evidence(m, blocker, command, panel, hint), tol)
    if run is not None and run.ttft_not_ours:
        judgements = {qid: ttft_not_ours(j, run.ttft_not_ours) if qid == "Q1" else j
                      for qid, j in judgements.items()}
    sold = questionnaire.q2.at_concurrency if questionnaire else None
    answers = answers_sentence(m, sold) if m is not None and m.validity != "invalid" else None
    fits = with_voice_fit(use_case_fit(m, tol), m)
    q = questionnaire or Questionnaire()
    cost = session_cost(None if mismatch else m, q.q3 or PricingAnswer(),
                        q.q2 or ThroughputAnswer(),
                        {k: f.max_concurrency for k, f in fits.items()
                         if not tol.slo_profiles[k].throughput_only})
    if mismatch and cost.pricing:
        cost = replace(cost, basis=f"not costed: {mismatch}")
    calls = call_cost(m, q.q3 or PricingAnswer())
    if mismatch and calls is not None and calls.at is not None:
        calls = replace(calls, basis=f"not computed: {mismatch}", at=None, levels=())
    cost = replace(cost, voice=calls)
    void = (f"the run is invalid: {'; '.join(m.validity_reasons) or 'see its validity'}"
            if m is not None and m.validity == "invalid" else None)
    return Reconciliation(
        judgements=judgements,
        verdict=verdict(judgements, questionnaire.vendor if questionnaire else None,
                        questionnaire is not None, m.validity if m else None,
                        m.validity_reasons if m else (), answers,
                        answers_unchecked(m, sold) if m is not None else None),
        answers=answers, swap=reported_swap(m),
        use_cases=fits,
        reading_speed=streams_at_reading_speed(m, tol),
        has_questionnaire=questionnaire is not None,
        has_measurements=m is not None,
        client_bound=bool(m and m.client_bound),
        run_validity=m.validity if m else None,
        run_validity_reasons=m.validity_reasons if m else (),
        target_mismatch=mismatch,
        rate_limits=_rate_limits(questionnaire, summary, m, mismatch, command, tol),
        cost=cost,
        workload=workload_block(summary, tol, void),
        trace=trace_block(summary, void),
        sources=sources(summary, run),
    )


def ttft_not_ours(judged: Judgement, why: str) -> Judgement:
    """Q1 judged on an imported TTFT that is not ours is not decided either way: vLLM's
    stops at a role-only first chunk (earlier than ours: a claim would "hold" that ours
    might break), inference-perf's at the answer (later: a claim would "fail" that ours
    might keep). The figure stays beside the claim; the status is `unverified`."""
    if judged.status not in ("ok", "unreconciled"):
        return judged
    return replace(judged, status="unverified", finding=None, reason=(
        f"{judged.reason.rstrip('.')}; not decided: the TTFT is {clean(why, 400)}. Probe "
        "the endpoint with evalkit to judge Q1."))


def _rate_limits(q: Questionnaire | None, summary: Summary | None,
                 m: Summary | None, mismatch: str | None, command: str,
                 tol: Tolerances) -> Judgement:
    """The rate limits' judgement. A run invalid for its rejections still measured when
    they began, so only a missing run or another endpoint blocks it."""
    blocker = (run_blocker(None, command) if m is None else
               f"{mismatch}; re-run `{command} --out DIR` against the model and endpoint "
               "the questionnaire names" if mismatch else None)
    return judge_rate_limits(q.rate_limits if q else RateLimitsAnswer(),
                             summary.sections.rate_limits if summary is not None else None,
                             blocker, tol, command)
