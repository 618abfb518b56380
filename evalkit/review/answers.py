"""The answers under load, in words: did the canaries get the answers they got alone,
from the model named, and did outputs keep their length? Pure: a `Summary` in, the
sentence page one and the verdict carry out.

The wording keeps two findings apart that a reader must not confuse: "another model
answered" (the responses named a model that did not answer alone) and "answers varied,
same model reported" (a different batch is a different computation; at temperature 0 one
model's answers can still change with load). Answers that differ from their first tokens
under the same name are said as what they look like, and no more.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.analysis.summary import Summary
from evalkit.analysis.summary_levels import Canaries
from evalkit.analysis.summary_sections import Precision
from evalkit.fmt import fmt_pct
from evalkit.review.rules import join, quote


def _level_words(lv: Canaries) -> str:
    """One precision breach, in words."""
    c = lv.concurrency
    rate, n = lv.match_rate, lv.compared or 0
    seen = f"{fmt_pct(rate)} of {n} canary answers matched their answers alone" \
        if rate is not None else "no canary answer could be compared"
    if lv.kind == "model_reported":
        names = join([quote(m, 60) for m in lv.models_not_seen_alone])
        return f"at {c} streams another model answered (the responses named {names}); {seen}"
    if lv.kind == "diverged_at_start":
        return (f"at {c} streams {seen}, differing from their first tokens under the same "
                f"model name, as another model's answers would")
    return f"at {c} streams {seen}: the answers varied under load, the same model reported"


def _canaries(m: Summary) -> Precision:
    """The summary's precision section (empty: the run sent no canaries)."""
    return m.sections.precision or Precision()


def answer_breaches(m: Summary | None, sold: int | None) -> list[str]:
    """What degraded the answers at or below the concurrency sold (every level when
    nothing is sold: a breach anywhere is then unexplained), each in words."""
    if m is None:
        return []
    cap = sold if sold is not None else max((lv.concurrency for lv in m.ramp), default=0)
    canaries = _canaries(m)
    precision = {c.concurrency: c for c in canaries.levels}
    found: list[str] = []
    for lv in m.ramp:
        if lv.concurrency > cap:
            continue
        if "precision" in lv.breaches and lv.concurrency in precision:
            found.append(_level_words(precision[lv.concurrency]))
        if "length" in lv.breaches:
            ratio = lv.length_ratio
            found.append(f"at {lv.concurrency} streams outputs were "
                         f"{fmt_pct(1 - ratio) if ratio is not None else 'much'} shorter than "
                         "alone (length)")
    soak = canaries.soak
    if soak is not None and soak.status == "breach" and (soak.concurrency or 0) <= cap:
        found.append(f"in the soak, {_level_words(soak)}")
    return found


def answers_unchecked(m: Summary | None, sold: int | None) -> str | None:
    """Why the answers under load were not shown to hold up to the concurrency sold
    (None: they were, or nothing is sold). Fail closed: a verdict of readiness needs the
    canaries compared there, not the absence of a breach where none was looked for (an
    imported run, a level sharded on Ray, canaries that all failed, a summary before
    canaries), and a call on them: a tie at or below the level sold (fewer matches than
    the floor, an interval that still reaches it) is neither held nor breached, and
    answers alone that never repeated leave no rate to hold to."""
    if m is None or sold is None:
        return None
    if not m.precision:  # no section, or an empty one
        return (f"the answers under load were not checked: the run sent no canaries (an "
                f"imported run, or one written before canaries), so nothing shows the "
                f"{sold} streams sold answer as one stream does")
    levels = {c.concurrency: c for c in _canaries(m).levels}
    at = levels.get(sold)
    if at is not None and (at.compared or 0) >= 1:
        return _undecided(levels, sold)
    why = ("no canary answer there could be compared with its answer alone" if at else
           "the run sent no canary at that level (not run, or sharded over Ray workers, "
           "which send none)")
    return (f"the answers under load were not checked at the {sold} streams sold: {why}; "
            f"re-run the ramp through {sold} streams in one process")


def _undecided(levels: Mapping[int | None, Canaries], sold: int) -> str | None:
    """The first level at or below `sold` whose canaries were compared but not called
    (a tie, or nothing to hold to), in words; None when every one was called."""
    for c in sorted(k for k in levels if k is not None and k <= sold):
        lv = levels[c]
        if lv.status == "not_measured" and (lv.compared or 0) >= 1:
            return (f"the answers under load were not judged at {c} streams: the canaries' "
                    "answers alone did not repeat, so there is no rate to hold them to; "
                    "re-run at temperature 0 with the model's own settings, or ask the "
                    "vendor why one prompt alone gets different answers")
        if lv.status == "tie":
            n, k, budget = lv.compared or 0, lv.matches, lv.budget
            spent = (f", undecided after the level's budget of {budget} answers"
                     if lv.undecided and budget else "")
            return (f"the answers under load were not shown to hold at {c} streams"
                    f"{'' if c == sold else f' (below the {sold} sold)'}: "
                    f"{k if k is not None else 'some'} of {n} canary answers matched their "
                    f"answers alone, fewer than the floor but not surely so (a tie{spent}); "
                    "re-run with more canaries (the standard profile, or a larger "
                    "canaries.level_budget)")
    return None


def answers_sentence(m: Summary | None, sold: int | None) -> str | None:
    """Page one's and the verdict's sentence, None when the answers held."""
    found = answer_breaches(m, sold)
    if not found:
        return None
    where = f"at or below the {sold} streams sold" if sold is not None else "under load"
    return f"The answers changed {where}: {'; '.join(found)}."


def reported_swap(m: Summary | None) -> str | None:
    """The levels where the responses named a model that did not answer alone, in words
    (page one names a reported swap wherever it happened)."""
    if m is None:
        return None
    canaries = _canaries(m)
    levels = [lv for lv in canaries.levels if lv.models_not_seen_alone]
    if not levels:
        return None
    names = sorted({n for lv in levels for n in lv.models_not_seen_alone})
    at = join([str(lv.concurrency) for lv in levels])
    alone = join([quote(n, 60) for n in canaries.alone.models_seen]) or "no model name"
    return (f"Another model answered under load: at {at} streams the responses named "
            f"{join([quote(n, 60) for n in names])}, where {alone} answered alone.")
