"""Precision under load: do the canaries get the same answers under load as alone, and
from the model named? Pure: the records frame in, summary.json's `precision` out.

A canary (evalkit.probe.plan.canaries) is answered several times one at a time during the
baseline, which learns the vendor's own variation when nothing else runs, then again
inside every load level. Each answer is compared with its canary's modal answer alone
by the SHA-256 of its text:

- match rate: the share of a level's canary answers identical to the canary's answer
  alone, with its exact 95 % interval (an answer that is the answer alone cut short
  matches: the same words as far as they go, its length is the `length` limit's to judge);
- first divergence: where a differing answer parts from the answer alone, in the
  vendor's tokens when logprobs gave them, else in the streamed chunks (p50);
- logprob drift: the mean |difference| of the chosen tokens' logprobs over the shared
  prefix (None without logprobs);
- models seen: the `model` and `system_fingerprint` values the level's responses named.

A level breaches precision when its match rate's interval lies wholly below the rate
alone less the tolerance, or when a model answered that did not answer alone; an
interval that straddles it is a tie. What differed is named apart: another model
reported in `model`, answers that differ from their first tokens under the same name
(what another model answering would look like), or answers that varied later, as the
same model's do when a different batch is a different computation.

The comparison of one answer and the call on a level's answers are in
`evalkit.analysis.canarycall` (no pandas): the prober's stop rule uses them too.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from evalkit.analysis.canarycall import (
    GROWTH_ENDS,
    Alone,
    alone_answers,
    answer_pieces,
    compare_answer,
    digested_pieces,
    distinct_names,
    floor_of,
    precision_call,
)
from evalkit.analysis.thresholds import Thresholds

#: the phases whose canary answers are compared with the answers alone, by level
LOAD_PHASES = ("ramp", "soak", "rate")

#: how a level's difference from the answers alone is named (`kind`)
KINDS = {
    "model_reported": "another model answered: the responses named a model that did not "
                      "answer alone",
    "diverged_at_start": "answers differed from their first tokens under the same model "
                         "name, as another model's would",
    "varied": "answers varied under load; the same model was reported",
}


def divergence(reference: Mapping[str, Any], answer: Mapping[str, Any]) -> int | None:
    """The token at which `answer` parts from `reference`: the reference's pieces wholly
    inside the texts' common prefix, or (answers kept as digests) the pieces both share
    from the start (None when either text or the pieces are missing)."""
    if (both := digested_pieces(reference, answer)) is not None:
        ref, got = both
        return next((i for i, (a, b) in enumerate(zip(ref, got, strict=False)) if a != b),
                    min(len(ref), len(got)))
    ref_text, text = reference.get("answer_text"), answer.get("answer_text")
    pieces = answer_pieces(reference)
    if not isinstance(ref_text, str) or not isinstance(text, str) or pieces is None:
        return None
    common = 0
    for a, b in zip(ref_text, text, strict=False):
        if a != b:
            break
        common += 1
    done, at = 0, 0
    for piece in pieces:
        if done + len(piece) > common:
            break
        done += len(piece)
        at += 1
    return at


def logprob_drift(reference: Mapping[str, Any], answer: Mapping[str, Any]) -> float | None:
    """Mean |Δ logprob| of the chosen tokens over the prefix both answers share token for
    token (None without logprobs on both)."""
    ref_lp, lp = reference.get("answer_logprobs"), answer.get("answer_logprobs")
    ref_tok, tok = answer_pieces(reference), answer_pieces(answer)
    if not (isinstance(ref_lp, list) and isinstance(lp, list) and ref_tok and tok):
        return None
    deltas = []
    for a_t, b_t, a, b in zip(ref_tok, tok, ref_lp, lp, strict=False):
        if a_t != b_t:
            break
        deltas.append(abs(float(a) - float(b)))
    return statistics.fmean(deltas) if deltas else None


def _kind(models_new: Sequence[str], where: Sequence[int], th: Thresholds) -> str:
    """What differed: another model named; answers that all (two or more) part within the
    first tokens, as another model's do; else answers that varied. One early parting is
    no pattern: a batch can flip any token, the first among them."""
    if models_new:
        return "model_reported"
    if len(where) >= 2 and max(where) <= th.early_divergence_tokens:
        return "diverged_at_start"
    return "varied"


def judge_group(rows: pd.DataFrame, everyone: pd.DataFrame, refs: Mapping[str, Mapping[str, Any]],
                alone: Alone, th: Thresholds, budget: int | None = None,
                ended: str | None = None) -> dict[str, Any]:
    """One load level's canary answers against the answers alone. `everyone` is every
    request of the level: a model named on any of them counts. `budget`: the most canary
    answers a tie could grow to (None: the run set none); `ended`: why it stopped
    growing (GROWTH_ENDS; None: it did not grow)."""
    compared = rows[rows["ok"] & rows["canary"].isin(list(refs)) & rows["output_sha256"].notna()]
    matches = 0
    where: list[int] = []
    drift: list[float] = []
    cut = 0
    for row in compared.to_dict("records"):
        ref = refs[str(row["canary"])]
        said = compare_answer(ref, row)
        if said != "differs":
            matches += 1
            cut += said == "cut_short"
        elif (at := divergence(ref, row)) is not None:
            where.append(at)
        if (d := logprob_drift(ref, row)) is not None:
            drift.append(d)
    n = len(compared)
    models = distinct_names(everyone.loc[everyone["ok"], "model"])
    fingerprints = distinct_names(everyone.loc[everyone["ok"], "system_fingerprint"])
    new_models = [m for m in models if alone.models_seen and m not in alone.models_seen]
    floor = floor_of(alone, th)
    status, ci = precision_call(matches, n, floor, new_models)
    first = statistics.median(where) if where else None
    return {
        "canaries": len(rows), "compared": n, "matches": matches, "cut_short": cut,
        "match_rate": matches / n if n else None, "match_rate_ci": ci,
        "first_divergence_tokens": first, "logprob_drift": statistics.fmean(drift) if drift
        else None, "models_seen": models, "fingerprints_seen": fingerprints,
        "models_not_seen_alone": new_models, "floor": floor, "status": status,
        "kind": _kind(new_models, where, th) if status in ("breach", "tie") or n > matches
        else None,
        # the sample behind the call: grown past the level's planned end to decide a
        # tie (`grew`: why it stopped), up to `budget` answers; a tie that spent its
        # budget is undecided, said as such
        "budget": budget, "grew": ended if ended in GROWTH_ENDS else None,
        "undecided": status == "tie" and ended in ("budget", "time"),
    }


def precision_section(req: pd.DataFrame, th: Thresholds, budget: int | None = None,
                      ended: Mapping[int, str] | None = None) -> dict[str, Any] | None:
    """summary.json's `precision`: None when the run sent no canary. `budget` and
    `ended`: how far a ramp level's tie could grow and why each grown one stopped
    (run.json's `canaries`)."""
    if "canary" not in req or not req["canary"].notna().any():
        return None
    canary = req["canary"].notna().to_numpy()
    phase = req["phase"].to_numpy()
    alone_rows = req[canary & (phase == "baseline") & req["ok"].to_numpy()]
    refs, alone = alone_answers(alone_rows.to_dict("records"))
    ok = req["ok"].to_numpy()
    # every model that answered the baseline, canary or not
    alone = replace(alone, models_seen=distinct_names(req.loc[(phase == "baseline") & ok,
                                                              "model"]))
    levels: list[dict[str, Any]] = []
    held: dict[str, dict[str, Any]] = {}
    # dropna=False: the open loop's requests have no level, and are judged all the same
    for (ph, level), sub in req[canary].groupby(["phase", "level"], sort=True, dropna=False):
        if ph not in LOAD_PHASES:
            continue
        same = req["level"].isna() if pd.isna(level) else req["level"] == level
        everyone = req[(phase == ph) & same.to_numpy()]
        at = None if pd.isna(level) else int(level)
        ramp = ph == "ramp"
        judged = {"concurrency": at,
                  **judge_group(sub, everyone, refs, alone, th, budget if ramp else None,
                                (ended or {}).get(at or 0) if ramp else None)}
        if ramp:
            levels.append(judged)
        else:
            held[str(ph)] = judged
    logprobs = bool(req.loc[canary, "answer_logprobs"].notna().any())
    degraded = next((lv["concurrency"] for lv in levels if lv["status"] == "breach"), None)
    return {
        "canaries": len(set(req.loc[canary, "canary"])), "alone": alone.to_json(),
        "levels": levels,
        "soak": held.get("soak"), "rate": held.get("rate"), "degraded_at": degraded,
        "divergence_unit": "vendor tokens (logprobs)" if logprobs else "streamed chunks",
        "logprobs": logprobs,
        "kinds": KINDS,
        "budget": budget,
        "rule": (f"a level breaches precision when the 95 % interval of its canary match "
                 f"rate lies wholly below the rate alone less "
                 f"{th.precision_match_tolerance:.0%}, or when a model answered that did "
                 f"not answer alone; an interval that straddles it is a tie"
                 + (f", and a ramp level's tie runs on in the same mix of requests until "
                    f"the interval decides, up to {budget} canary answers"
                    if budget else "")),
    }


def level_precision(section: Mapping[str, Any] | None) -> dict[int, Mapping[str, Any]]:
    """The ramp's precision judgements by concurrency (for the ramp's own judgement)."""
    if not section:
        return {}
    return {int(lv["concurrency"]): lv for lv in section.get("levels") or []}
