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
What a vendor claimed is the questionnaire's own answer type (`evalkit.review.claimed`),
what we measured one type per question (`evalkit.review.measured`), and the cost its own
(`evalkit.review.costcard`): each writes its part of the document and reads it back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from evalkit.analysis.jsonread import Json, read_as
from evalkit.analysis.summary import Summary
from evalkit.analysis.thresholds import SloProfile, Tolerances
from evalkit.questionnaire.model import Answer, Questionnaire
from evalkit.questionnaire.schema import QUESTION_IDS, QUESTION_TITLES, RATE_LIMITS_TITLE
from evalkit.review.claimed import claimed_from_json
from evalkit.review.costcard import Cost
from evalkit.review.fit import Fit
from evalkit.review.measured import Measured, measured_from_json
from evalkit.review.ourpanel import OurPanel
from evalkit.review.reconcile import Reconciliation, reconcile
from evalkit.review.rules import STATUSES, RunTarget
from evalkit.review.verdict import Verdict
from evalkit.review.workload_card import Sources, TraceCard, WorkloadCard
from evalkit.rundir.meta import StandIn

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


def fit_to_json(f: Fit) -> dict[str, Json]:
    """A `Fit` as scorecard.json writes it (the start of every use case's entry)."""
    return {"fit": f.fit, "reason": f.reason, "max_concurrency": f.max_concurrency,
            "lower_bound": f.lower_bound, **({"unit": f.unit} if f.unit != "streams" else {})}


@dataclass(frozen=True)
class _FitDoc:
    """A use case's fit as scorecard.json writes it: only True or False is a verdict,
    only a whole number a level."""

    fit: bool | None = None
    reason: str = ""
    max_concurrency: int | None = None
    lower_bound: bool = False
    unit: Literal["streams", "calls"] = "streams"


def fit_from_json(doc: object) -> Fit:
    """A use case's fit read back (a malformed part as not stated)."""
    d = read_as(_FitDoc, doc)
    return Fit(d.fit, d.reason, d.max_concurrency, d.lower_bound, d.unit)


@dataclass(frozen=True)
class _QuestionDoc:
    """A question's entry as scorecard.json writes it; its claim and measurement are read
    by the question's own types (`evalkit.review.claimed`, `evalkit.review.measured`)."""

    title: str | None = None
    status: str | None = None
    finding: str | None = None
    claimed: Json | None = None
    measured: Json | None = None
    reason: str = ""
    tolerance: str = ""


@dataclass(frozen=True)
class QuestionCard:
    """One question as the scorecard states it: the vendor's answer and what we measured,
    each in the question's own type."""

    title: str
    #: one of `rules.STATUSES`; "unknown" only in a document read back that had none
    status: str
    finding: str | None
    #: the vendor's answer (`evalkit.review.claimed`; None: a document without one)
    claimed: Answer | None
    #: what the run measured for it (`evalkit.review.measured`; None: nothing to show)
    measured: Measured | None
    reason: str
    tolerance: str

    @classmethod
    def missing(cls, qid: str) -> QuestionCard:
        """A question a document read back does not mention: nothing known about it."""
        return cls(QUESTION_TITLES.get(qid, qid), "unknown", None, None, None, "", "")

    @classmethod
    def from_json(cls, qid: str, doc: object) -> QuestionCard:
        """An entry read back; a status we do not know is "unknown" (safe as a CSS class)."""
        d = read_as(_QuestionDoc, doc)
        return cls(d.title or QUESTION_TITLES.get(qid, qid),
                   d.status if d.status in STATUSES else "unknown", d.finding,
                   claimed_from_json(qid, d.claimed), measured_from_json(qid, d.measured),
                   d.reason, d.tolerance)

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return {"title": self.title, "status": self.status, "finding": self.finding,
                "claimed": self.claimed.to_dict() if self.claimed is not None else None,
                "measured": self.measured.to_json() if self.measured is not None else None,
                "reason": self.reason, "tolerance": self.tolerance}


@dataclass(frozen=True)
class _UseCaseDoc:
    label: str | None = None
    profile: Mapping[str, Json | None] | None = None


@dataclass(frozen=True)
class UseCaseCard:
    """A use case's fit, with the SLO profile it was judged on."""

    fit: Fit
    label: str | None
    #: None only in a document read back that gives none (or an empty one)
    profile: SloProfile | None

    @classmethod
    def from_json(cls, doc: object) -> UseCaseCard:
        """An entry read back; no label means the page names it from its key."""
        d = read_as(_UseCaseDoc, doc)
        return cls(fit_from_json(doc), d.label or None,
                   SloProfile.from_json(d.profile) if d.profile else None)

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return {**fit_to_json(self.fit), "label": self.label,
                "profile": asdict(self.profile) if self.profile is not None else None}


@dataclass(frozen=True)
class _ReadingDoc:
    value: int | None = None
    reading_speed_tokens_per_s: float | None = None
    percentile: str | None = None


@dataclass(frozen=True)
class ReadingSpeedCard:
    """How many streams stay above reading speed, and the rule it was judged by."""

    fit: Fit
    #: 0 when even the first level fails; None when it was not measurable
    value: int | None
    reading_speed_tokens_per_s: float | None
    percentile: str

    @classmethod
    def from_json(cls, doc: object) -> ReadingSpeedCard:
        """The entry read back; the percentile defaults to the Tolerances' own (p90)."""
        d = read_as(_ReadingDoc, doc)
        return cls(fit_from_json(doc), d.value, d.reading_speed_tokens_per_s,
                   d.percentile or "p90")

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return {**fit_to_json(self.fit), "value": self.value,
                "reading_speed_tokens_per_s": self.reading_speed_tokens_per_s,
                "percentile": self.percentile}


@dataclass(frozen=True)
class RunCard:
    """What the scorecard says of the run: its validity, and what it probed."""

    validity: str | None = None
    validity_reasons: tuple[str, ...] = ()
    model: str | None = None
    endpoint: str | None = None
    profile: str | None = None
    #: the model and endpoint a demonstration run stood in for (from run.json)
    stands_in_for: StandIn | None = None
    #: why the questionnaire's model/endpoint and the run's differ (None: they match)
    target_mismatch: str | None = None

    @classmethod
    def from_json(cls, doc: object) -> RunCard:
        """The entry read back; only strings count as reasons (each is printed)."""
        read = read_as(cls, doc)
        return replace(read, target_mismatch=read.target_mismatch or None)

    def to_json(self) -> dict[str, Json]:
        """This part of scorecard.json, keys in the contract's order."""
        return {"validity": self.validity, "validity_reasons": list(self.validity_reasons),
                "model": self.model, "endpoint": self.endpoint, "profile": self.profile,
                "stands_in_for": self.stands_in_for.to_json() if self.stands_in_for else None,
                "target_mismatch": self.target_mismatch}


@dataclass(frozen=True)
class _VerdictDoc:
    streaming_ready: bool = False
    text: str = ""


@dataclass(frozen=True)
class _PrecisionDoc:
    answers: str | None = None
    swap: str | None = None


@dataclass(frozen=True)
class _CardDoc:
    """scorecard.json's top level as written; each part is read by its own type."""

    vendor: str | None = None
    model: str | None = None
    endpoint: str | None = None
    review: str | None = None
    client_bound: bool = False
    run: Mapping[str, Json | None] | None = None
    verdict: _VerdictDoc = field(default_factory=_VerdictDoc)
    questions: Mapping[str, Json | None] = field(default_factory=dict)
    use_cases: Mapping[str, UseCaseCard] = field(default_factory=dict)
    streams_at_reading_speed: Mapping[str, Json | None] | None = None
    tolerances: Mapping[str, Json | None] = field(default_factory=dict)
    precision: _PrecisionDoc = field(default_factory=_PrecisionDoc)
    rate_limits: Mapping[str, Json | None] | None = None
    cost: Mapping[str, Json | None] | None = None
    workload: WorkloadCard | None = None
    trace: TraceCard | None = None
    sources: Sources = field(default_factory=Sources)


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
    #: the tolerances as judged (the page prints every setting); None only in a document
    #: read back that has none
    tolerances: Tolerances | None
    #: how the answers changed under load at or below the concurrency sold, and a swap the
    #: responses reported (evalkit.review.answers; None: the answers held, or no canaries)
    answers: str | None = None
    swap: str | None = None
    #: the rate limits' row (not one of the six questions; outside the verdict): None
    #: only in a document read back that has none
    rate_limits: QuestionCard | None = None
    #: what a session costs at Q3's prices (`evalkit.review.cost`); None only in a
    #: document read back that has none (scorecard.json then writes {})
    cost: Cost | None = None
    #: the buyer's workload and trace as judged (`evalkit.review.workload`; None: not
    #: run), and which workload each part's figures come from
    workload: WorkloadCard | None = None
    trace: TraceCard | None = None
    sources: Sources = field(default_factory=Sources)

    def question(self, qid: str) -> QuestionCard:
        """The question's card; a blank one if this scorecard does not have it."""
        return self.questions.get(qid) or QuestionCard.missing(qid)

    @property
    def slo_profiles(self) -> dict[str, SloProfile]:
        """The tolerances' SLO profiles, by use case ({}: a document without tolerances)."""
        return dict(self.tolerances.slo_profiles) if self.tolerances is not None else {}

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
                run.profile if run else None, run.stands_in_for if run else None,
                review.target_mismatch),
            verdict=review.verdict,
            questions={qid: QuestionCard(QUESTION_TITLES[qid], j.status, j.finding,
                                         j.claimed, j.measured, j.reason, j.tolerance)
                       for qid, j in review.judgements.items()},
            use_cases={name: UseCaseCard(fit, tol.slo_profiles[name].label,
                                         tol.slo_profiles[name])
                       for name, fit in review.use_cases.items()},
            reading_speed=ReadingSpeedCard(
                rs, 0 if rs.fit is False else rs.max_concurrency,
                _json_safe(tol.reading_speed_tokens_per_s), tol.reading_speed_percentile),
            tolerances=tol,
            answers=review.answers, swap=review.swap,
            rate_limits=None if (rl := review.rate_limits) is None else QuestionCard(
                RATE_LIMITS_TITLE, rl.status, rl.finding, rl.claimed, rl.measured,
                rl.reason, rl.tolerance),
            # as scorecard.json will say it: a figure that is no number is None in both
            cost=Cost.from_json(_json_safe(review.cost.to_json())),
            workload=review.workload, trace=review.trace, sources=review.sources,
        )

    @classmethod
    def from_json(cls, doc: Mapping[str, Json]) -> Scorecard:
        """A scorecard.json document read back, whatever it holds: a missing or malformed
        part reads as not stated (a dash on the page), never as a crash."""
        d = read_as(_CardDoc, doc)
        limits = d.rate_limits
        return cls(
            vendor=d.vendor or NO_VENDOR, model=d.model, endpoint=d.endpoint,
            review=next((k for k in REVIEW_KINDS if k == d.review), None),
            client_bound=d.client_bound,
            run=RunCard.from_json(d.run) if d.run else None,
            verdict=Verdict(d.verdict.streaming_ready, d.verdict.text),
            questions={qid: QuestionCard.from_json(qid, entry) for qid in QUESTION_IDS
                       if isinstance(entry := d.questions.get(qid), Mapping)},
            use_cases=dict(d.use_cases),
            reading_speed=ReadingSpeedCard.from_json(d.streams_at_reading_speed)
            if d.streams_at_reading_speed else None,
            tolerances=Tolerances.from_json(d.tolerances) if d.tolerances else None,
            answers=d.precision.answers, swap=d.precision.swap,
            rate_limits=QuestionCard.from_json("rate_limits", limits)
            if limits is not None else None,
            cost=Cost.from_json(d.cost) if d.cost else None,
            workload=d.workload, trace=d.trace, sources=d.sources,
        )

    def to_json(self) -> dict[str, Json]:
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
            "tolerances": self.tolerances.to_dict() if self.tolerances is not None else {},
            "precision": {"answers": self.answers, "swap": self.swap},
            "rate_limits": self.rate_limits.to_json() if self.rate_limits else None,
            "cost": self.cost.to_json() if self.cost is not None else {},
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
                    run: RunTarget | None = None) -> dict[str, Json]:
    """`build_card(...)` as the scorecard.json dict, for callers that want the document."""
    return build_card(questionnaire, summary, tolerances, run).to_json()
