"""Q6: the vendor's production panel, set beside its headline and beside what we measured
at the concurrency sold. A panel is only reconciled when it agrees with our run: text can
explain a headline, it cannot outvote a measurement (issue 24). No I/O.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from dataclasses import replace

from evalkit.analysis.summary import Level, Pct, Summary
from evalkit.analysis.thresholds import Tolerances
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.fmt import number
from evalkit.questionnaire.model import PanelAnswer
from evalkit.review.claimed import PanelClaim
from evalkit.review.measured import AtLevel, OurPanelMeasured, PanelMeasured, Shown
from evalkit.review.ourpanel import OurPanel
from evalkit.review.rules import (
    SOURCE_WORDS,
    Decision,
    Evidence,
    Judgement,
    Status,
    blank,
    decide,
    dist_numbers,
    meets,
    quote,
    rerun_for,
    tolerated,
)

#: a rate named in a reconciliation: "70 tokens/s", "1,107 tok/s", "40 tokens per second"
_RATE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(?:output\s+)?(?:tokens?|tok)\s*"
                   r"(?:/\s*s(?:ec(?:ond)?)?\b|per\s+s(?:ec(?:ond)?)?\b)", re.IGNORECASE)
#: words that tie a figure to the panel's median
_MEDIAN = re.compile(r"\b(median|p50)\b", re.IGNORECASE)


def _our_measured(ours: OurPanel) -> OurPanelMeasured:
    """Our panel as the scorecard's Q6 `measured.our_panel` shows it."""
    return OurPanelMeasured(ours.window, ours.samples, ours.pooled, ours.invalid, ours.gaps,
                            ours.concurrency, Shown.of(ours.stream_tokens_per_s),
                            Shown.of(ours.ttft_s))


def start_panel_hint(vendor: str | None, model: str | None) -> str:
    """How to start our own panel, for a scorecard that has none to set beside Q6."""
    model_arg = shlex.quote(quote(model, 80)) if model else "MODEL"
    vendor_arg = shlex.quote(quote(vendor, 60)) if vendor else "VENDOR"
    return (f"start one with `evalkit panel sample --base-url URL --model {model_arg} "
            f"--vendor {vendor_arg}` "
            "every few hours (cron, a systemd timer, a Kubernetes CronJob; docs/panel.md), "
            "then report again")


def _same(a: float, b: float) -> bool:
    """Two figures one text and one answer give are the same, rounding aside."""
    return math.isclose(a, b, rel_tol=0.01, abs_tol=0.5)


def contradiction(text: str | None, figures: list[float], median: float | None) -> str | None:
    """Why a reconciliation contradicts the answer it reconciles (None: it does not): it
    names a rate none of the answer's figures (headline, panel percentiles) gives, or calls
    a rate the median that is not the panel's median. A text that explains a gap with
    numbers the answer does not carry reconciles some other answer."""
    for found in _RATE.finditer(text or ""):
        value = float(found.group(1).replace(",", ""))
        before = (text or "")[max(0, found.start() - 40): found.start()]
        if _MEDIAN.search(before) and median is not None and not _same(value, median):
            return (f"the reconciliation gives the median as {number(value)} tokens/s, the "
                    f"panel as {number(median)}")
        if not any(_same(value, f) for f in figures):
            return (f"the reconciliation names {number(value)} tokens/s, a figure neither the "
                    "headline nor the panel gives")
    return None


def _ours(m: Summary | None, at: Level | None) -> PanelMeasured:
    """Our own distributions beside the panel: one stream alone, at max sustained load and
    at the concurrency sold (per-stream rate and TTFT)."""
    if m is None:
        return PanelMeasured()
    base = m.baseline if m.baseline and not m.baseline.client_bound else None
    top = m.sustained()
    return PanelMeasured(
        Shown.of(base.stream_tokens_per_s) if base is not None else None,
        AtLevel(top.concurrency, Shown.of(top.stream_tokens_per_s))
        if top is not None and (at is None or top.concurrency != at.concurrency) else None,
        AtLevel(at.concurrency, Shown.of(at.stream_tokens_per_s)) if at is not None else None,
        Shown.of(at.ttft_s) if at is not None else None)


def _sold_level(m: Summary | None, sold: int | None) -> Level | None:
    level = m.level(sold) if m is not None and sold else None
    return None if level is None or level.client_bound or level.mostly_failed else level


def _two_sided(p50: float, level: Level, rel: float) -> tuple[Decision, str]:
    """Does our per-stream p50 at the concurrency sold sit within `rel` of the panel's
    median, on both sides and on its whole 95 % interval? A panel far below what we saw is
    as unreconciled as one far above (it describes another load, or another endpoint)."""
    return _agrees(p50, level.stream_tokens_per_s, rel,
                   f"we measured at {level.concurrency} streams", "our run")


def _agrees(p50: float, ours: Pct, rel: float, where: str, who: str) -> tuple[Decision, str]:
    """The vendor panel's median against our per-stream p50 `where` (two-sided, on its
    whole interval)."""
    value = ours.p50
    if value is None:
        return "undecided", f"{who} has no per-stream p50 there"
    states = [decide(value, ours.interval("p50"), tolerated(p50, rel, at_most=side),
                     at_most=side, n=ours.n, q=0.5, fmt=fmt_rate) for side in (False, True)]
    if any(s == "fails" for s, _ in states):
        ratio = max(value / p50 if p50 else math.inf, p50 / value if value else math.inf)
        side = "below" if p50 < value else "above"
        return "fails", (f"the panel's median {number(p50)} tokens/s is {ratio:,.1f}× {side} "
                         f"the {fmt_rate(value)} per stream (p50) {where}")
    open_ = [why for s, why in states if s == "undecided"]
    if open_:
        return "undecided", open_[0]
    return "holds", (f"the panel's median {number(p50)} tokens/s agrees with the "
                     f"{fmt_rate(value)} per stream (p50) {where}")


def _headline_reached(headline: float, m: Summary, tol: Tolerances,
                      command: str) -> tuple[Decision, str]:
    """A headline above the panel by more than the ratio, with a written reconciliation,
    is still only a claim: our best aggregate must reach it (within throughput_rel)."""
    rated = [lv for lv in m.levels if lv.aggregate_tokens_per_s is not None
             and not lv.client_bound and not lv.mostly_failed]
    if not rated:
        return "undecided", "the run measured no aggregate rate to set the headline against"
    best = max(rated, key=lambda lv: lv.aggregate_tokens_per_s or 0.0)
    agg = best.aggregate_tokens_per_s or 0.0
    state, why = decide(agg, best.aggregate_ci, tolerated(headline, tol.throughput_rel,
                                                          at_most=False),
                        at_most=False, n=best.requests, q=None, fmt=fmt_rate)
    got = f"our best aggregate was {fmt_rate(agg)} at {best.concurrency} streams"
    if state == "fails" and m.first_degraded is None:
        return "undecided", (f"{got} and the ramp never broke, so the endpoint may do more; "
                             f"{rerun_for(2 * (m.top or 1), command)}")
    return state, got if state != "undecided" else f"{got}: {why}"


def judge_q6(a: PanelAnswer, headline_value: float | None, headline_unit: str | None,
             ev: Evidence, tol: Tolerances, sold: int | None = None) -> Judgement:
    """The production panel vs our own per-stream distribution at `sold` (the concurrency
    Q2 sells), and vs the headline figure."""
    rel = tol.throughput_rel
    tolerance = (f"headline/panel p50 ≤ {tol.headline_panel_ratio:g}× without a written "
                 "reconciliation (headline_panel_ratio); two-sided: our per-stream p50 at the "
                 f"concurrency sold, and our own panel's, within panel p50 × {1 - rel:g}–"
                 f"{1 + rel:g} (throughput_rel)")
    claimed = PanelClaim.of(a, headline_value, headline_unit)
    m = ev.usable
    level = _sold_level(m, sold)

    ours = _ours(m, level)
    if ev.panel is not None and ev.panel.pooled:
        ours = replace(ours, our_panel=_our_measured(ev.panel))

    def j(status: Status, reason: str) -> Judgement:
        return Judgement(status, reason, claimed, None if ours.empty else ours, tolerance)

    early = _answer_problem(a, headline_value)
    if early is not None:
        return j(*early)
    return _measured(a, headline_value, headline_unit, ev, tol, sold, j)


def _against_ours(p50: float | None, panel: OurPanel | None, rel: float
                  ) -> tuple[Decision | None, str]:
    """The vendor panel's median against our own panel's per-stream p50 (None: there is
    no panel of ours to set beside it, and why)."""
    if panel is None or not panel.pooled:
        return None, ("the catalog holds no sample of ours of this vendor and model in "
                      + (f"{panel.window}" if panel is not None else "the window")
                      + (f" ({panel.samples} samples, none readable)"
                         if panel is not None and panel.samples else ""))
    if p50 is None:
        return None, (f"{panel.describe()} cannot be set beside it: the vendor's panel gives "
                      "no median rate")
    return _agrees(p50, panel.stream_tokens_per_s, rel, f"of {panel.describe()}",
                   "our own panel")


def _with_ours(done: Judgement, panel: OurPanel | None, state: Decision | None, why: str,
               agreed: str, headline_needed: bool, hint: str) -> Judgement:
    """The run's judgement with our own panel beside it: a panel of ours that agrees
    verifies the vendor's panel when the run could not (unless a headline still needs a
    measured aggregate); one that cannot decide, or is missing, is said."""
    if state is None:
        if panel is None:  # no catalog was read (a library call): nothing to say
            return done
        return replace(done, reason=f"{done.reason} Our own panel: {why}"
                       + (f"; {hint}." if not panel.pooled else "."))
    if state == "holds" and done.status == "unverified" and not headline_needed:
        run_alone = done.reason.removeprefix(agreed).lstrip(";, ")
        return replace(done, status="ok", reason=f"{agreed}; {why}. The run alone: {run_alone}")
    return replace(done, reason=f"{done.reason} Against our own panel: {why}.")


def _answer_problem(a: PanelAnswer, headline: float | None) -> tuple[Status, str] | None:
    """What is wrong with the answer itself, before any measurement (None: nothing)."""
    if blank(a):
        return "unanswered", ("Q6 is not answered: no production panel was given"
                              + (f" to set beside the headline {number(headline)} tokens/s."
                                 if headline is not None else "."))
    panel = dist_numbers(a.output_tokens_per_s)
    if not panel and not dist_numbers(a.latency_s):
        return "unanswerable", ("Q6 gives no production panel numbers (only text), so the "
                                "headline cannot be set against production.")
    if a.source != "production":
        return "unanswerable", (f"The panel is given {SOURCE_WORDS[a.source]}, where the live "
                                "production panel was asked.")
    if not _window(a):
        return "unanswerable", ("The production panel gives no window (when it was measured), "
                                "so it cannot be read as last week's production.")
    for name, values in (("output tokens/s", panel), ("latency", dist_numbers(a.latency_s))):
        if values != sorted(values):
            return "unreconciled", (f"The panel's {name} percentiles "
                                    f"{'/'.join(map(number, values))} are not in increasing "
                                    "order, so they contradict each other.")
    return None


def _window(a: PanelAnswer) -> str | None:
    window = a.window or (a.output_tokens_per_s.window if a.output_tokens_per_s else None)
    return quote(window, 60) if window else None


def _measured(a: PanelAnswer, headline: float | None, unit: str | None, ev: Evidence,
              tol: Tolerances, sold: int | None,
              j: Callable[[Status, str], Judgement]) -> Judgement:
    """A well-formed panel: the headline's ratio, then our run at the concurrency sold."""
    window = _window(a)
    p50 = a.output_tokens_per_s.p50 if a.output_tokens_per_s else None
    panel = dist_numbers(a.output_tokens_per_s)
    text = (a.reconciliation or "").strip()
    contra = contradiction(text, [*panel, *([headline] if headline is not None else [])], p50)
    written = len(text) >= tol.min_reconciliation_chars and contra is None
    unwritten = (f"the written reconciliation is none: {contra}" if contra else
                 "no written reconciliation is given")
    needs_headline = False
    if headline is None:
        agreed = (f"The production panel ({window}) is given and there is no headline figure "
                  "to reconcile it with")
    elif p50 is None or unit not in (None, "output_tokens_per_s"):
        basis = ("the panel has no per-request p50" if p50 is None
                 else f"the headline is in {unit}, the panel per request")
        if not written:
            return j("unreconciled", f"Headline {number(headline)} and the panel cannot be "
                     f"compared ({basis}) and {unwritten}.")
        agreed = (f"Headline {number(headline)} and the panel cannot be divided ({basis}), "
                  "and a written reconciliation is given")
    else:
        ratio = headline / p50 if p50 else math.inf
        head = (f"Headline {number(headline)} tokens/s is {ratio:.1f}× the production "
                f"panel's median {number(p50)} tokens/s ({window}; limit "
                f"{tol.headline_panel_ratio:g}× without a written reconciliation)")
        needs_headline = not meets(ratio, tol.headline_panel_ratio, at_most=True)
        if needs_headline and not written:
            return j("unreconciled", f"{head}, and {unwritten}.")
        agreed = head + (": a written reconciliation explains the gap" if needs_headline
                         else ": within the limit")
    state, why = _against_ours(p50, ev.panel, tol.throughput_rel)
    if state == "fails":
        return j("unreconciled", f"{agreed}, but {why}: outside throughput_rel "
                 f"({tol.throughput_rel * 100:.0f}%) whatever the reconciliation says.")
    done = _against_run(agreed, p50, headline if needs_headline else None, ev, tol, sold, j)
    return _with_ours(done, ev.panel, state, why, agreed, needs_headline, ev.panel_hint)


def _against_run(agreed: str, p50: float | None, headline: float | None, ev: Evidence,
                 tol: Tolerances, sold: int | None,
                 j: Callable[[Status, str], Judgement]) -> Judgement:
    """The panel's median beside our per-stream rate at the concurrency sold, whatever the
    reconciliation says; then a headline that needed one beside our best aggregate."""
    m = ev.usable
    if m is None:
        return j("unverified", f"{agreed}; not verified against our own measurement: "
                 f"{ev.blocker}.")
    if p50 is None:
        return j("unverified", f"{agreed}; not verified against our own measurement: the "
                 "panel gives no per-request median rate to set beside ours.")
    if sold is None:
        return j("unverified", f"{agreed}; not verified against our own measurement: Q2 "
                 "names no concurrency it sells, so there is no level to set the panel "
                 "beside (answer Q2's at_concurrency).")
    level = _sold_level(m, sold)
    if level is None:
        return j("unverified", f"{agreed}; not verified against our own measurement: the "
                 f"run judged no level at the {sold} streams Q2 sells; "
                 f"{rerun_for(sold, ev.command)}.")
    state, why = _two_sided(p50, level, tol.throughput_rel)
    if state == "fails":
        return j("unreconciled", f"{agreed}, but {why}: outside throughput_rel "
                 f"({tol.throughput_rel * 100:.0f}%) whatever the reconciliation says.")
    if state == "undecided":
        return j("unverified", f"{agreed}; against our run at {sold} streams: {why}.")
    if headline is None:
        return j("ok", f"{agreed}; {why}.")
    reached, got = _headline_reached(headline, m, tol, ev.command)
    if reached == "fails":
        return j("unreconciled", f"{agreed}, and {why}, but the headline is not what the "
                 f"endpoint does: {got}, short of {number(headline)} tokens/s beyond "
                 "throughput_rel, whatever the reconciliation says.")
    if reached == "undecided":
        return j("unverified", f"{agreed}, and {why}; the headline is not verified: {got}.")
    return j("ok", f"{agreed}; {why}, and {got}, which reaches the headline.")
