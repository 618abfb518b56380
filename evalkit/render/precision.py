"""The scorecard's "Precision under load" section and page one's line on the answers,
as plain strings (no I/O), from the summary's typed `precision` section
(`evalkit.analysis.summary_sections.Precision`). The words keep "another model answered"
apart from "answers varied, same model reported" (evalkit.review.answers says why)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evalkit.analysis.summary_levels import Canaries
from evalkit.analysis.summary_sections import Precision
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


@dataclass(frozen=True)
class PrecisionRow:
    """One row of the section's table: a load level (or the soak, or the rate phase)."""

    level: str
    match: str
    divergence: str
    drift: str
    models: str
    status: str


@dataclass(frozen=True)
class PrecisionSection:
    """The "Precision under load" section: what it rests on, and a row a level."""

    intro: str
    rows: tuple[PrecisionRow, ...]


def share_ci(lv: Canaries) -> str:
    """A share's 95 % interval as " [lo–hi]" after it ("" when the level has none)."""
    ci = lv.match_rate_ci
    if ci is None:
        return ""
    return f" [{fmt_pct(ci[0])}–{fmt_pct(ci[1])}]"


def _names(values: Iterable[str]) -> str:
    names = [clip(str(v), 60) for v in values if v]
    return ", ".join(names) or "—"


def _sentence(text: str) -> str:
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def _grown(lv: Canaries) -> str:
    """What a level's call rests on when its sample ran on past the level's planned end
    (evalkit.probe.plan.canarywatch), or was a tie on its whole budget ("" otherwise)."""
    n, budget = lv.compared or 0, lv.budget
    of = f", of the {budget} a tie may grow to" if budget else ""
    if lv.undecided:
        why = ("its budget spent" if lv.grew == "budget"
               else "the level stopped before its budget")
        return f"; undecided: {n} answers could not decide it ({why})"
    if lv.grew:
        return f" (it ran on to decide: {n} answers{of})"
    return ""


def _row(label: str, lv: Canaries) -> PrecisionRow:
    rate = lv.match_rate
    kind = KIND_WORDS.get(str(lv.kind), "")
    return PrecisionRow(
        level=f"{label}{lv.concurrency or ''}".strip() or "—",
        match=(f"{fmt_pct(rate)}{share_ci(lv)} of {lv.compared or 0}"
               if rate is not None else "—"),
        divergence=fmt_num(lv.first_divergence_tokens),
        drift=fmt_num(lv.logprob_drift),
        models=_names(lv.models_seen),
        status=STATUS_WORDS.get(str(lv.status), clip(str(lv.status), 30))
        + (f": {kind}" if kind and lv.status in ("breach", "tie") else "")
        + _grown(lv))


def precision_rows(p: Precision | None) -> tuple[PrecisionRow, ...]:
    """One row a load level (and the soak, and the rate phase), for the section's table."""
    if p is None:
        return ()
    groups = [("", lv) for lv in p.levels]
    groups += [(f"{name} ", lv) for name, lv in (("soak", p.soak), ("rate", p.rate))
               if lv is not None]
    return tuple(_row(label, lv) for label, lv in groups)


def _sent(p: Precision | None) -> bool:
    """Canaries were sent: the section is there and says something (`{}` says nothing)."""
    return p is not None and p != Precision()


def precision_intro(p: Precision | None) -> str | None:
    """What the section rests on: canaries, answers alone, units; None without canaries."""
    if p is None or not _sent(p):
        return None
    alone = p.alone
    unit = clip(str(p.divergence_unit or "streamed chunks"), 40)
    drift = ("" if p.logprobs else " Logprob drift is not measured: the run did not "
             "ask for logprobs (probe --logprobs; the Anthropic and Responses APIs give none).")
    grow = (" The match column gives the answers each call rests on; a tie that ran on "
            "and still could not decide is said to be undecided." if p.budget else "")
    return (f"{p.canaries or 0} canaries (ordinary prompts of this run, "
            f"indistinguishable from the rest) were answered {alone.answers or 0}"
            f" times one at a time: {fmt_pct(alone.match_rate)} of those answers matched "
            f"their canary's usual answer alone ({alone.distinct or 0} distinct answers; "
            f"models named: {_names(alone.models_seen)}). Each load level's canaries "
            f"are compared with those answers; first divergence is in {unit}.{drift} "
            f"{_sentence(clip(str(p.rule or ''), 400))}{grow}")


def precision_section(p: Precision | None) -> PrecisionSection | None:
    """The section, None when the run sent no canary (or no level compared one)."""
    rows = precision_rows(p)
    intro = precision_intro(p)
    return PrecisionSection(intro or "", rows) if rows else None


def answers_figure(p: Precision | None, answers: str | None,
                   swap: str | None) -> tuple[str, str] | None:
    """Page one's key-figure row on the answers under load."""
    if p is None or not _sent(p):
        return None
    if swap or answers:
        return ("Answers under load", clip(" ".join(t for t in (swap, answers) if t), 600))
    degraded = p.degraded_at
    if degraded is not None:
        return ("Answers under load", f"precision degraded at {degraded} streams, above the "
                "concurrency sold (see Precision under load)")
    measured = [lv for lv in p.levels if lv.status in ("held", "tie", "breach")]
    if not measured and any(lv.compared for lv in p.levels):
        return ("Answers under load", "not verified: the endpoint's temperature-0 answers "
                "alone did not repeat, so its answers under load have nothing to match")
    if not measured:
        return ("Answers under load", "not verified: no load level compared a canary "
                "(a longer level, or more canaries, would)")
    ties = [lv for lv in measured if lv.status == "tie"]
    tied = ("; a tie at " + ", ".join(
        f"{lv.concurrency} streams" + (
            f" (undecided on {lv.compared} answers)" if lv.undecided
            else "") for lv in ties)) if ties else ""
    return ("Answers under load", f"held: canaries matched their answers alone at "
            f"{len(measured) - len(ties)} of {len(measured)} levels{tied}, the same model "
            f"named throughout")
