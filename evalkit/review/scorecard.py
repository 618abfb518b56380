"""`scorecard.json` (schema `evalkit.scorecard/1`): the review as plain, JSON-safe data.

The SPEC's keys (`schema`, `vendor`, `verdict`, `questions`, `use_cases`) are a contract;
the extra keys (`review`, `streams_at_reading_speed`, `tolerances`, per-question `title`
and `tolerance`) let the report print every judgement beside the threshold it used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from evalkit.analysis.thresholds import Tolerances
from evalkit.questionnaire.model import Questionnaire
from evalkit.questionnaire.schema import QUESTION_TITLES
from evalkit.review.fit import Fit
from evalkit.review.reconcile import reconcile
from evalkit.review.rules import RunTarget

SCHEMA_ID = "evalkit.scorecard/1"


def _json_safe(value: Any) -> Any:
    """Non-finite floats become None: JSON has no NaN, and a metric we lack is None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _fit(f: Fit) -> dict[str, Any]:
    return {"fit": f.fit, "reason": f.reason, "max_concurrency": f.max_concurrency,
            "lower_bound": f.lower_bound}


def build_scorecard(questionnaire: Questionnaire | None, summary: Mapping[str, Any] | None,
                    tolerances: Tolerances | None = None,
                    run: RunTarget | None = None) -> dict[str, Any]:
    """Reconcile the two inputs (either may be None) into the scorecard.json dict.

    `run` is what the run probed (`RunTarget.from_run(run_json)`): without it a run cannot
    be tied to the questionnaire's model and endpoint, and verifies no claim.
    """
    tol = tolerances or Tolerances()
    review = reconcile(questionnaire, summary, tol, run)
    q = questionnaire
    kind = {(True, True): "claims_and_measurements", (True, False): "claims_only",
            (False, True): "measurements_only", (False, False): "empty"}[
        (review.has_questionnaire, review.has_measurements)]
    use_cases = {}
    for name, fit in review.use_cases.items():
        profile = tol.slo_profiles[name]
        use_cases[name] = {**_fit(fit), "label": profile.label, "profile": asdict(profile)}
    card = {
        "schema": SCHEMA_ID,
        "vendor": (q.vendor if q and q.vendor else "(vendor not named)"),
        "model": q.model if q else None,
        "endpoint": q.endpoint if q else None,
        "review": kind,
        "client_bound": review.client_bound,
        "run": None if summary is None else {
            "validity": review.run_validity,
            "validity_reasons": list(review.run_validity_reasons),
            "model": run.model if run else None,
            "endpoint": run.endpoint if run else None,
            "profile": run.profile if run else None,
            "stands_in_for": dict(run.stands_in_for) if run and run.stands_in_for else None,
            "target_mismatch": review.target_mismatch,
        },
        "verdict": {"streaming_ready": review.verdict.streaming_ready,
                    "text": review.verdict.text},
        "questions": {
            qid: {"title": QUESTION_TITLES[qid], "status": j.status, "finding": j.finding,
                  "claimed": j.claimed, "measured": j.measured, "reason": j.reason,
                  "tolerance": j.tolerance}
            for qid, j in review.judgements.items()
        },
        "use_cases": use_cases,
        "streams_at_reading_speed": {
            **_fit(review.reading_speed),
            # 0 when even the first level fails; None when it was not measurable
            "value": (0 if review.reading_speed.fit is False
                      else review.reading_speed.max_concurrency),
            "reading_speed_tokens_per_s": tol.reading_speed_tokens_per_s,
            "percentile": tol.reading_speed_percentile,
        },
        "tolerances": tol.to_dict(),
    }
    return dict(_json_safe(card))
