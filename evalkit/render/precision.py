"""The scorecard's "Precision under load" section and page one's line on the answers,
as plain strings (no I/O). The words keep "another model answered" apart from "answers
varied, same model reported" (evalkit.review.answers says why)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.analysis.summary import as_count, as_mapping, as_number
from evalkit.fmt import fmt_num, fmt_pct
from evalkit.render.pdf import clip

#: a level's precision status as the page says it
STATUS_WORDS = {"held": "held", "tie": "tie (its interval straddles the floor)",
                "breach": "BREACH",
                "not_measured": "not measured (no canary compared, or its answers alone "
                                "did not repeat)"}
KIND_WORDS = {"model_reported": "another model answered",
              "diverged_at_start": "differed from the first tokens, same model name",
              "varied": "answers varied, same model reported"}


def share_ci(d: Mapping[str, Any], key: str = "match_rate_ci") -> str:
    """A share's 95 % interval as " [lo–hi]" after it ("" when the entry has none)."""
    ci = d.get(key)
    if not isinstance(ci, list) or len(ci) != 2:
        return ""
    return f" [{fmt_pct(ci[0])}–{fmt_pct(ci[1])}]"


def _names(values: Any) -> str:
    names = [clip(str(v), 60) for v in values or [] if v]
    return ", ".join(names) or "—"


def _sentence(text: str) -> str:
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def _grown(lv: Mapping[str, Any]) -> str:
    """What a level's call rests on when its sample ran on past the level's planned end
    (evalkit.probe.plan.canarywatch), or was a tie on its whole budget ("" otherwise)."""
    n, budget = as_count(lv.get("compared")) or 0, as_count(lv.get("budget"))
    of = f", of the {budget} a tie may grow to" if budget else ""
    if lv.get("undecided"):
        why = ("its budget spent" if lv.get("grew") == "budget"
               else "the level stopped before its budget")
        return f"; undecided: {n} answers could not decide it ({why})"
    if lv.get("grew"):
        return f" (it ran on to decide: {n} answers{of})"
    return ""


def precision_rows(summary: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """One row a load level (and the soak), for the section's table."""
    p = as_mapping(as_mapping(summary).get("precision"))
    rows = []
    groups = [("", lv) for lv in p.get("levels") or []]
    for name in ("soak", "rate"):
        if isinstance(p.get(name), Mapping):
            groups.append((f"{name} ", p[name]))
    for label, lv in groups:
        if not isinstance(lv, Mapping):
            continue
        rate = as_number(lv.get("match_rate"))
        kind = KIND_WORDS.get(str(lv.get("kind")), "")
        rows.append({
            "level": f"{label}{as_count(lv.get('concurrency')) or ''}".strip() or "—",
            "match": (f"{fmt_pct(rate)}{share_ci(lv)} of {as_count(lv.get('compared')) or 0}"
                      if rate is not None else "—"),
            "divergence": fmt_num(lv.get("first_divergence_tokens")),
            "drift": fmt_num(lv.get("logprob_drift")),
            "models": _names(lv.get("models_seen")),
            "status": STATUS_WORDS.get(str(lv.get("status")), clip(str(lv.get("status")), 30))
            + (f": {kind}" if kind and lv.get("status") in ("breach", "tie") else "")
            + _grown(lv),
        })
    return rows


def precision_intro(summary: Mapping[str, Any] | None) -> str | None:
    """What the section rests on: canaries, answers alone, units; None without canaries."""
    p = as_mapping(as_mapping(summary).get("precision"))
    if not p:
        return None
    alone = as_mapping(p.get("alone"))
    rate = as_number(alone.get("match_rate"))
    unit = clip(str(p.get("divergence_unit") or "streamed chunks"), 40)
    drift = ("" if p.get("logprobs") else " Logprob drift is not measured: the run did not "
             "ask for logprobs (probe --logprobs; the Anthropic and Responses APIs give none).")
    budget = as_count(p.get("budget"))
    grow = (" The match column gives the answers each call rests on; a tie that ran on "
            "and still could not decide is said to be undecided." if budget else "")
    return (f"{as_count(p.get('canaries')) or 0} canaries (ordinary prompts of this run, "
            f"indistinguishable from the rest) were answered {as_count(alone.get('answers')) or 0}"
            f" times one at a time: {fmt_pct(rate)} of those answers matched their canary's "
            f"usual answer alone ({as_count(alone.get('distinct')) or 0} distinct answers; "
            f"models named: {_names(alone.get('models_seen'))}). Each load level's canaries "
            f"are compared with those answers; first divergence is in {unit}.{drift} "
            f"{_sentence(clip(str(p.get('rule') or ''), 400))}{grow}")


def answers_figure(summary: Mapping[str, Any] | None, answers: str | None,
                   swap: str | None) -> tuple[str, str] | None:
    """Page one's key-figure row on the answers under load."""
    p = as_mapping(as_mapping(summary).get("precision"))
    if not p:
        return None
    if swap or answers:
        return ("Answers under load", clip(" ".join(t for t in (swap, answers) if t), 600))
    degraded = as_count(p.get("degraded_at"))
    levels = [lv for lv in p.get("levels") or [] if isinstance(lv, Mapping)]
    if degraded is not None:
        return ("Answers under load", f"precision degraded at {degraded} streams, above the "
                "concurrency sold (see Precision under load)")
    measured = [lv for lv in levels if lv.get("status") in ("held", "tie", "breach")]
    if not measured and any(as_count(lv.get("compared")) for lv in levels):
        return ("Answers under load", "not verified: the endpoint's temperature-0 answers "
                "alone did not repeat, so its answers under load have nothing to match")
    if not measured:
        return ("Answers under load", "not verified: no load level compared a canary "
                "(a longer level, or more canaries, would)")
    ties = [lv for lv in measured if lv.get("status") == "tie"]
    tied = ("; a tie at " + ", ".join(
        f"{as_count(lv.get('concurrency'))} streams" + (
            f" (undecided on {as_count(lv.get('compared'))} answers)" if lv.get("undecided")
            else "") for lv in ties)) if ties else ""
    return ("Answers under load", f"held: canaries matched their answers alone at "
            f"{len(measured) - len(ties)} of {len(measured)} levels{tied}, the same model "
            f"named throughout")
