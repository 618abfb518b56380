"""Precision under load: do the canaries get the same answers under load as alone, and
from the model named? Pure: the records frame in, summary.json's `precision` out.

A canary (evalkit.probe.canaries) is answered several times one at a time during the
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
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from evalkit.analysis.intervals import proportion_interval
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


def _names(values: Iterable[Any]) -> list[str]:
    """The distinct names in a column of comma-joined names (a stream may name several)."""
    seen: dict[str, None] = {}
    for v in values:
        if isinstance(v, str):
            for name in v.split(", "):
                seen.setdefault(name, None)
    return sorted(seen)


def _pieces(row: Mapping[str, Any]) -> list[str] | None:
    tokens = row.get("answer_tokens")
    return list(tokens) if isinstance(tokens, list) and tokens else None


def _digested(reference: Mapping[str, Any], answer: Mapping[str, Any]
              ) -> tuple[list[str], list[str]] | None:
    """Both answers' pieces when neither kept its text: a corpus canary's answer is kept
    as keyed digests of its pieces (`evalkit.probe.privacy`), compared piece by piece."""
    if isinstance(reference.get("answer_text"), str) or \
            isinstance(answer.get("answer_text"), str):
        return None
    ref, got = _pieces(reference), _pieces(answer)
    return (ref, got) if ref is not None and got is not None else None


def divergence(reference: Mapping[str, Any], answer: Mapping[str, Any]) -> int | None:
    """The token at which `answer` parts from `reference`: the reference's pieces wholly
    inside the texts' common prefix, or (answers kept as digests) the pieces both share
    from the start (None when either text or the pieces are missing)."""
    if (both := _digested(reference, answer)) is not None:
        ref, got = both
        return next((i for i, (a, b) in enumerate(zip(ref, got, strict=False)) if a != b),
                    min(len(ref), len(got)))
    ref_text, text = reference.get("answer_text"), answer.get("answer_text")
    pieces = _pieces(reference)
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


def _cut_short(reference: Mapping[str, Any], answer: Mapping[str, Any]) -> bool:
    """The answer is the reference's text cut short (a non-empty strict prefix; for
    answers kept as digests, of its pieces)."""
    if (both := _digested(reference, answer)) is not None:
        ref, got = both
        return 0 < len(got) < len(ref) and ref[:len(got)] == got
    ref_text, text = reference.get("answer_text"), answer.get("answer_text")
    return (isinstance(ref_text, str) and isinstance(text, str) and 0 < len(text) < len(ref_text)
            and ref_text.startswith(text))


def logprob_drift(reference: Mapping[str, Any], answer: Mapping[str, Any]) -> float | None:
    """Mean |Δ logprob| of the chosen tokens over the prefix both answers share token for
    token (None without logprobs on both)."""
    ref_lp, lp = reference.get("answer_logprobs"), answer.get("answer_logprobs")
    ref_tok, tok = _pieces(reference), _pieces(answer)
    if not (isinstance(ref_lp, list) and isinstance(lp, list) and ref_tok and tok):
        return None
    deltas = []
    for a_t, b_t, a, b in zip(ref_tok, tok, ref_lp, lp, strict=False):
        if a_t != b_t:
            break
        deltas.append(abs(float(a) - float(b)))
    return statistics.fmean(deltas) if deltas else None


def alone_answers(rows: Iterable[Mapping[str, Any]]
                  ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each canary's reference answer alone (its modal digest, the first answer that has
    it), and the alone summary, from the baseline's ok canary answers (a record's fields
    by name: a frame's rows, or the prober's records as they come).

    The rate alone is the share of the *other* answers alone that match the reference:
    the reference is one of them, and counted as matching itself it made an engine that
    never repeats an answer read 50 % (two repeats) where it agrees with itself 0 % of
    the time, and every level of it a precision breach, level 1 included. Canaries
    answered once alone say nothing of the engine's own variation."""
    by_canary: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_canary.setdefault(str(row["canary"]), []).append(row)
    refs: dict[str, dict[str, Any]] = {}
    matched = others = answered = distinct = 0
    for canary in sorted(by_canary):
        sub = by_canary[canary]
        digests = Counter(d for r in sub if isinstance(d := r.get("output_sha256"), str))
        if not digests:
            continue
        modal, count = digests.most_common(1)[0]
        refs[canary] = dict(next(r for r in sub if r.get("output_sha256") == modal))
        matched += count - 1
        others += sum(digests.values()) - 1
        answered += sum(digests.values())
        distinct += len(digests)
    every = [r for sub in by_canary.values() for r in sub]
    summary = {"answers": answered, "canaries_answered": len(refs),
               "match_rate": matched / others if others else None,
               "distinct": distinct, "models_seen": _names(r.get("model") for r in every),
               "fingerprints_seen": _names(r.get("system_fingerprint") for r in every)}
    return refs, summary


def floor_of(alone: Mapping[str, Any], th: Thresholds) -> float:
    """The match rate a level may fall to before its interval can breach: the rate alone
    (1 when nothing was answered alone) less the tolerance."""
    rate = alone.get("match_rate")
    return (float(rate) if rate is not None else 1.0) - th.precision_match_tolerance


def compare_answer(reference: Mapping[str, Any], answer: Mapping[str, Any]) -> str:
    """`match` (the same digest), `cut_short` (the answer alone stopped early: the same
    words as far as they go; precision is about what was said, how much of it is the
    `length` limit's to judge) or `differs`."""
    if answer.get("output_sha256") == reference.get("output_sha256"):
        return "match"
    return "cut_short" if _cut_short(reference, answer) else "differs"


def _kind(models_new: Sequence[str], where: Sequence[int], th: Thresholds) -> str:
    """What differed: another model named; answers that all (two or more) part within the
    first tokens, as another model's do; else answers that varied. One early parting is
    no pattern: a batch can flip any token, the first among them."""
    if models_new:
        return "model_reported"
    if len(where) >= 2 and max(where) <= th.early_divergence_tokens:
        return "diverged_at_start"
    return "varied"


def precision_call(k: int, n: int, floor: float, models_new: Sequence[str]
                   ) -> tuple[str, list[float] | None]:
    """A level's status from `k` matches of `n` answers compared: `breach` (another model
    named, or the whole 95 % interval below `floor`), `tie` (the point below, the interval
    reaching above), `held`, or `not_measured`; and the interval."""
    ci = proportion_interval(k, n)
    if models_new:
        return "breach", ci
    if ci is None:
        return "not_measured", None
    if floor <= 0:  # its answers alone did not repeat: no rate under load falls below
        return "not_measured", ci
    if ci[1] < floor:
        return "breach", ci
    return ("tie" if k / n < floor else "held"), ci


#: why a ramp level's canary sample stopped growing (run.json's `canaries.ended`, by
#: level; evalkit.probe.canarywatch): it was judged at the level's planned end without
#: more (absent), grew until its interval decided, grew to its budget still a tie, or the
#: level's time ran out (or the run stopped) first
GROWTH_ENDS = ("decided", "budget", "time")


def judge_group(rows: pd.DataFrame, everyone: pd.DataFrame, refs: Mapping[str, Mapping[str, Any]],
                alone: Mapping[str, Any], th: Thresholds, budget: int | None = None,
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
    models = _names(everyone.loc[everyone["ok"], "model"])
    fingerprints = _names(everyone.loc[everyone["ok"], "system_fingerprint"])
    new_models = [m for m in models if alone["models_seen"] and m not in alone["models_seen"]]
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
    alone["models_seen"] = _names(req.loc[(phase == "baseline") & req["ok"].to_numpy(), "model"])
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
        "canaries": len(set(req.loc[canary, "canary"])), "alone": alone, "levels": levels,
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
