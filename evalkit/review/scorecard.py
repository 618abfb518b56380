"""The scorecard: the review as one typed object, and as `scorecard.json` (schema
`evalkit.scorecard/1`).

`Scorecard.of(reconciliation, ...)` is what the review stage hands the renderer: frozen
dataclasses whose fields the page reads directly, so a key renamed here is a type error
there rather than a blank on page one. `to_json()` is the contract, key for key and in
order; `Scorecard.from_json` reads a scorecard.json back (an older file, or one written by
hand), and is the one place that reads such a document defensively.

The SPEC's keys (`schema`, `vendor`, `verdict`, `questions`, `use_cases`) are a contract;
the extra keys (`review`, `streams_at_reading_speed`, `tolerances`, `rate_limits` (a row
beside the six questions, outside the verdict), per-question `title`
and `tolerance`) let the report print every judgement beside the threshold it used.
What a vendor claimed and what we measured are free-form per question, so they stay
JSON mappings here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from evalkit.analysis.summary import Summary, as_mapping, as_number
from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.model import Questionnaire
from evalkit.questionnaire.schema import QUESTION_IDS, QUESTION_TITLES, RATE_LIMITS_TITLE
from evalkit.review.fit import Fit
from evalkit.review.ourpanel import OurPanel
from evalkit.review.reconcile import Reconciliation, reconcile
from evalkit.review.rules import STATUSES, RunTarget
from evalkit.review.verdict import Verdict
from evalkit.review.workload_card import Sources, TraceCard, WorkloadCard

SCHEMA_ID = "evalkit.scorecard/1"
NO_VENDOR = "(vendor not named)"

#: what was given to review: both inputs, one of them, or neither
ReviewKind = Literal["claims_and_measurements", "claims_only", "measurements_only", "empty"]
REVIEW_KINDS: tuple[ReviewKind, ...] = ("claims_and_measurements", "claims_only",
                                        "measurements_only", "empty")
#: (a questionnaire given?, a summary given?) -> the kind of review
_KINDS: dict[tuple[bool, bool], ReviewKind] = {
    (True, True): "claims_and_measurements", (True, False): "claims_only",
    (False, True): "measurements_only", (False, False): "empty"}


def _json_safe(value: Any) -> Any:
    """Non-finite floats become None: JSON has no NaN, and a metric we lack is None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _text(value: Any, default: str = "") -> str:
    """A string field of a document read back: any truthy value as text, else `default`."""
    return str(value) if value else default


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping_or_none(value: Any) -> Mapping[str, Any] | None:
    """A free-form part read back: a mapping as it is (even empty), else None."""
    return value if isinstance(value, Mapping) else None


def fit_to_json(f: Fit) -> dict[str, Any]:
    """A `Fit` as scorecard.json writes it (the start of every use case's entry)."""
    return {"fit": f.fit, "reason": f.reason, "max_concurrency": f.max_concurrency,
            "lower_bound": f.lower_bound}


def fit_from_json(doc: Any) -> Fit:
    """A use case's fit read back: only True or False is a verdict, only an int a level."""
    d = as_mapping(doc)
    fit, top = d.get("fit"), d.get("max_concurrency")
    return Fit(fit if isinstance(fit, bool) else None, _text(d.get("reason")),
               top if isinstance(top, int) else None, bool(d.get("lower_bound")))


@dataclass(frozen=True)
class QuestionCard:
    """One question as the scorecard states it; `claimed`/`measured` are free-form JSON."""

    title: str
    #: one of `rules.STATUSES`; "unknown" only in a document read back that had none
    status: str
    finding: str | None
    claimed: Mapping[str, Any] | None
    measured: Mapping[str, Any] | None
    reason: str
    tolerance: str

    @classmethod
    def missing(cls, qid: str) -> QuestionCard:
        """A question a document read back does not mention: nothing known about it."""
        return cls(QUESTION_TITLES.get(qid, qid), "unknown", None, None, None, "", "")

    @classmethod
    def from_json(cls, qid: str, doc: Any) -> QuestionCard:
        """An entry read back; a status we do not know is "unknown" (safe as a CSS class)."""
        d = as_mapping(doc)
        status = d.get("status")
        return cls(_text(d.get("title"), QUESTION_TITLES.get(qid, qid)),
                   status if status in STATUSES else "unknown", _str_or_none(d.get("finding")),
                   _mapping_or_none(d.get("claimed")), _mapping_or_none(d.get("measured")),
                   _text(d.get("reason")), _text(d.get("tolerance")))

    def to_json(self) -> dict[str, Any]:
        """This part of scorecard.json, keys in the contract's order."""
        return {"title": self.title, "status": self.status, "finding": self.finding,
                "claimed": self.claimed, "measured": self.measured, "reason": self.reason,
                "tolerance": self.tolerance}


@dataclass(frozen=True)
class UseCaseCard:
    """A use case's fit, with the SLO profile it was judged on (as scorecard.json has it)."""

    fit: Fit
    label: str | None
    profile: Mapping[str, Any] | None

    @classmethod
    def from_json(cls, doc: Any) -> UseCaseCard:
        """An entry read back; no label means the page names it from its key."""
        d = as_mapping(doc)
        return cls(fit_from_json(d), _text(d.get("label")) or None,
                   _mapping_or_none(d.get("profile")))

    def to_json(self) -> dict[str, Any]:
        """This part of scorecard.json, keys in the contract's order."""
        return {**fit_to_json(self.fit), "label": self.label, "profile": self.profile}


@dataclass(frozen=True)
class ReadingSpeedCard:
    """How many streams stay above reading speed, and the rule it was judged by."""

    fit: Fit
    #: 0 when even the first level fails; None when it was not measurable
    value: int | None
    reading_speed_tokens_per_s: float | None
    percentile: str

    @classmethod
    def from_json(cls, doc: Any) -> ReadingSpeedCard:
        """The entry read back; the percentile defaults to the Tolerances' own (p90)."""
        d = as_mapping(doc)
        value, pct = d.get("value"), d.get("percentile")
        return cls(fit_from_json(d), value if isinstance(value, int) else None,
                   as_number(d.get("reading_speed_tokens_per_s")),
                   pct if isinstance(pct, str) and pct else "p90")

    def to_json(self) -> dict[str, Any]:
        """This part of scorecard.json, keys in the contract's order."""
        return {**fit_to_json(self.fit), "value": self.value,
                "reading_speed_tokens_per_s": self.reading_speed_tokens_per_s,
                "percentile": self.percentile}


@dataclass(frozen=True)
class RunCard:
    """What the scorecard says of the run: its validity, and what it probed."""

    validity: str | None
    validity_reasons: tuple[str, ...]
    model: str | None
    endpoint: str | None
    profile: str | None
    #: the model and endpoint a demonstration run stood in for (free-form, from run.json)
    stands_in_for: Mapping[str, Any] | None
    #: why the questionnaire's model/endpoint and the run's differ (None: they match)
    target_mismatch: str | None

    @classmethod
    def from_json(cls, doc: Any) -> RunCard:
        """The entry read back; only strings count as reasons (each is printed)."""
        d = as_mapping(doc)
        reasons = d.get("validity_reasons")
        return cls(_str_or_none(d.get("validity")),
                   tuple(r for r in reasons if isinstance(r, str))
                   if isinstance(reasons, list | tuple) else (),
                   _str_or_none(d.get("model")), _str_or_none(d.get("endpoint")),
                   _str_or_none(d.get("profile")), _mapping_or_none(d.get("stands_in_for")),
                   _text(d.get("target_mismatch")) or None)

    def to_json(self) -> dict[str, Any]:
        """This part of scorecard.json, keys in the contract's order."""
        return {"validity": self.validity, "validity_reasons": list(self.validity_reasons),
                "model": self.model, "endpoint": self.endpoint, "profile": self.profile,
                "stands_in_for": self.stands_in_for, "target_mismatch": self.target_mismatch}


@dataclass(frozen=True)
class Scorecard:
    """Everything a scorecard states, typed: what the review hands the renderer."""

    vendor: str
    model: str | None
    endpoint: str | None
    #: None only in a document read back that does not say
    review: ReviewKind | None
    client_bound: bool
    #: None: no run was reviewed
    run: RunCard | None
    verdict: Verdict
    questions: Mapping[str, QuestionCard]
    use_cases: Mapping[str, UseCaseCard]
    #: None only in a document read back that has none
    reading_speed: ReadingSpeedCard | None
    #: the tolerances as judged, in scorecard.json's form: the page prints every setting
    tolerances: Mapping[str, Any]
    #: how the answers changed under load at or below the concurrency sold, and a swap the
    #: responses reported (evalkit.review.answers; None: the answers held, or no canaries)
    answers: str | None = None
    swap: str | None = None
    #: the rate limits' row (not one of the six questions; outside the verdict): None
    #: only in a document read back that has none
    rate_limits: QuestionCard | None = None
    #: what a session costs at Q3's prices (`evalkit.review.cost`), as scorecard.json
    #: writes it; {} in a document read back that has none
    cost: Mapping[str, Any] = field(default_factory=dict)
    #: the buyer's workload and trace as judged (`evalkit.review.workload`; None: not
    #: run), and which workload each part's figures come from
    workload: WorkloadCard | None = None
    trace: TraceCard | None = None
    sources: Sources = field(default_factory=Sources)

    def question(self, qid: str) -> QuestionCard:
        """The question's card; a blank one if this scorecard does not have it."""
        return self.questions.get(qid) or QuestionCard.missing(qid)

    @property
    def slo_profiles(self) -> dict[str, Mapping[str, Any]]:
        """The tolerances' SLO profiles, by use case, as scorecard.json writes them."""
        profiles = as_mapping(self.tolerances.get("slo_profiles"))
        return {str(name): as_mapping(p) for name, p in profiles.items()}

    @classmethod
    def of(cls, review: Reconciliation, questionnaire: Questionnaire | None,
           tol: Tolerances, run: RunTarget | None = None) -> Scorecard:
        """The scorecard of a reconciliation; free-form parts made JSON-safe, so the page
        shows exactly what scorecard.json says (a NaN is None in both)."""
        q = questionnaire
        kind = _KINDS[(review.has_questionnaire, review.has_measurements)]
        rs = review.reading_speed
        return cls(
            vendor=q.vendor if q and q.vendor else NO_VENDOR,
            model=q.model if q else None, endpoint=q.endpoint if q else None,
            review=kind, client_bound=review.client_bound,
            run=None if not review.has_measurements else RunCard(
                review.run_validity, tuple(review.run_validity_reasons),
                run.model if run else None, run.endpoint if run else None,
                run.profile if run else None,
                _json_safe(run.stands_in_for) if run and run.stands_in_for else None,
                review.target_mismatch),
            verdict=review.verdict,
            questions={qid: QuestionCard(QUESTION_TITLES[qid], j.status, j.finding,
                                         _json_safe(j.claimed), _json_safe(j.measured),
                                         j.reason, j.tolerance)
                       for qid, j in review.judgements.items()},
            use_cases={name: UseCaseCard(fit, tol.slo_profiles[name].label,
                                         _json_safe(asdict(tol.slo_profiles[name])))
                       for name, fit in review.use_cases.items()},
            reading_speed=ReadingSpeedCard(
                rs, 0 if rs.fit is False else rs.max_concurrency,
                _json_safe(tol.reading_speed_tokens_per_s), tol.reading_speed_percentile),
            tolerances=_json_safe(tol.to_dict()),
            answers=review.answers, swap=review.swap,
            rate_limits=None if (rl := review.rate_limits) is None else QuestionCard(
                RATE_LIMITS_TITLE, rl.status, rl.finding, _json_safe(rl.claimed),
                _json_safe(rl.measured), rl.reason, rl.tolerance),
            cost=_json_safe(dict(review.cost)),
            workload=review.workload, trace=review.trace, sources=review.sources,
        )

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Scorecard:
        """A scorecard.json document read back, whatever it holds: a missing or malformed
        part reads as not stated (a dash on the page), never as a crash."""
        verdict = as_mapping(doc.get("verdict"))
        run, reading = doc.get("run"), doc.get("streams_at_reading_speed")
        kind = doc.get("review")
        questions = as_mapping(doc.get("questions"))
        return cls(
            vendor=_text(doc.get("vendor"), NO_VENDOR),
            model=_str_or_none(doc.get("model")), endpoint=_str_or_none(doc.get("endpoint")),
            review=next((k for k in REVIEW_KINDS if k == kind), None),
            client_bound=bool(doc.get("client_bound")),
            run=RunCard.from_json(run) if isinstance(run, Mapping) and run else None,
            verdict=Verdict(bool(verdict.get("streaming_ready")), _text(verdict.get("text"))),
            questions={qid: QuestionCard.from_json(qid, questions[qid])
                       for qid in QUESTION_IDS if isinstance(questions.get(qid), Mapping)},
            use_cases={str(name): UseCaseCard.from_json(uc)
                       for name, uc in as_mapping(doc.get("use_cases")).items()},
            reading_speed=ReadingSpeedCard.from_json(reading)
            if isinstance(reading, Mapping) and reading else None,
            tolerances=dict(as_mapping(doc.get("tolerances"))),
            answers=_str_or_none(as_mapping(doc.get("precision")).get("answers")),
            swap=_str_or_none(as_mapping(doc.get("precision")).get("swap")),
            rate_limits=QuestionCard.from_json("rate_limits", limits)
            if isinstance(limits := doc.get("rate_limits"), Mapping) else None,
            cost=dict(as_mapping(doc.get("cost"))),
            workload=WorkloadCard.from_json(workload)
            if isinstance(workload := doc.get("workload"), Mapping) else None,
            trace=TraceCard.from_json(trace)
            if isinstance(trace := doc.get("trace"), Mapping) else None,
            sources=Sources.from_json(doc.get("sources")),
        )

    def to_json(self) -> dict[str, Any]:
        """scorecard.json's dict, key for key and in order (schema evalkit.scorecard/1)."""
        card = {
            "schema": SCHEMA_ID, "vendor": self.vendor, "model": self.model,
            "endpoint": self.endpoint, "review": self.review, "client_bound": self.client_bound,
            "run": self.run.to_json() if self.run else None,
            "verdict": {"streaming_ready": self.verdict.streaming_ready,
                        "text": self.verdict.text},
            "questions": {qid: q.to_json() for qid, q in self.questions.items()},
            "use_cases": {name: uc.to_json() for name, uc in self.use_cases.items()},
            "streams_at_reading_speed": self.reading_speed.to_json()
            if self.reading_speed else None,
            "tolerances": self.tolerances,
            "precision": {"answers": self.answers, "swap": self.swap},
            "rate_limits": self.rate_limits.to_json() if self.rate_limits else None,
            "cost": dict(self.cost),
            "sources": self.sources.to_json(),
            "workload": self.workload.to_json() if self.workload else None,
            "trace": self.trace.to_json() if self.trace else None,
        }
        return dict(_json_safe(card))


def build_card(questionnaire: Questionnaire | None, summary: Summary | None,
               tolerances: Tolerances | None = None, run: RunTarget | None = None,
               panel: OurPanel | None = None) -> Scorecard:
    """Reconcile the two inputs (either may be None) into the typed scorecard.

    `run` is what the run probed (`RunTarget.from_run(run_json)`): without it a run cannot
    be tied to the questionnaire's model and endpoint, and verifies no claim. `panel` is
    our own production panel of the vendor (Q6 sets it beside the vendor's).
    """
    tol = tolerances or Tolerances()
    return Scorecard.of(reconcile(questionnaire, summary, tol, run, panel), questionnaire,
                        tol, run)


def build_scorecard(questionnaire: Questionnaire | None, summary: Summary | None,
                    tolerances: Tolerances | None = None,
                    run: RunTarget | None = None) -> dict[str, Any]:
    """`build_card(...)` as the scorecard.json dict, for callers that want the document."""
    return build_card(questionnaire, summary, tolerances, run).to_json()
