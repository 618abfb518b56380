"""Q4–Q5: the concurrency limit and what degrades first, and what the vendor lets a
customer observe (Q6, the production panel, is `evalkit.review.panel`)."""

from __future__ import annotations

from collections.abc import Callable

from evalkit.analysis.summary import Level, Summary
from evalkit.analysis.summary_checks import VendorMetrics
from evalkit.analysis.thresholds import Tolerances
from evalkit.fmt import times
from evalkit.questionnaire.model import (
    ConcurrencyAnswer,
    ObservabilityAnswer,
)
from evalkit.review.measured import ConcurrencyMeasured, ObservabilityMeasured
from evalkit.review.rules import (
    SOURCE_WORDS,
    Evidence,
    Finding,
    Judgement,
    Status,
    blank,
    join,
    quote,
    rerun_for,
    tolerance_words,
    within,
)
from evalkit.review.streaming import one_stream


def _breaking_level(m: Summary) -> int | None:
    if m.first_degraded is None:
        return None
    if m.first_breach is not None:
        return m.first_breach
    above = [lv.concurrency for lv in m.levels if m.max_sustained is None
             or lv.concurrency > m.max_sustained]
    return min(above) if above else None


def judge_q4(a: ConcurrencyAnswer, ev: Evidence, tol: Tolerances,
             sold: int | None = None) -> Judgement:
    """Maximum streams per node and the first-degrading metric vs the concurrency ramp.

    `sold` is the concurrency Q2 sells: a limit below it is a gap whatever the ramp says.
    """
    tolerance = tolerance_words(tol.concurrency_rel, "concurrency_rel", at_most=True,
                                value="claimed", reference="breaking level")

    def j(status: Status, reason: str, measured: ConcurrencyMeasured | None = None
          ) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance, gap)

    gap: Finding | None = None
    if blank(a):
        return j("unanswered", "Q4 is not answered: no maximum of concurrent streams was given.")
    n, first = a.max_concurrent_streams_per_node, a.first_degrades
    if n is None:
        return j("unanswerable", "Q4 gives no maximum number of concurrent streams per node, so "
                 "nothing can be checked.")
    if first is None:
        return j("unanswerable", f"Q4 gives {n} streams per node but not what degrades first "
                 "(itl, ttft or admission).")
    if a.source not in ("production", "lab"):
        return j("unanswerable", f"{n} streams per node is given {SOURCE_WORDS[a.source]}, "
                 "not from a measurement.")
    nodes = a.nodes or 1
    claimed = n * nodes
    said = (f"{n} streams per node × {a.nodes} node{'s' if nodes > 1 else ''} = {claimed}, "
            f"{_metric(first)} first" if a.nodes else
            f"{n} streams per node (at least {n} for the endpoint), {_metric(first)} first")
    gap_text = ""
    if sold is not None and claimed < sold:
        gap = "gap"
        gap_text = (f"; the stated limit is below the {sold} streams Q2 sells, so the quote "
                    "oversells the endpoint")
    if (serial := one_stream(n)) is not None:
        gap = "gap"
        gap_text += f"; {serial}"
    mu = ev.usable
    if mu is None:
        return j("unverified", f"Claimed {said}; not verified: {ev.blocker}{gap_text}.")
    breaking = _breaking_level(mu)
    shown = ConcurrencyMeasured(mu.max_sustained, mu.first_degraded, breaking, mu.first_tie)
    tie = next((lv for lv in mu.levels if lv.concurrency == mu.first_tie), None)
    if mu.first_degraded is None:
        held = mu.max_sustained
        if tie is not None:
            before = (f"the ramp held up to {held} streams and no level breached, but "
                      if held is not None else "no level was confirmed sustained or breached: ")
            return j("unverified", f"Claimed {said}; not verified: {before}"
                     f"{_tie_words(tie)}{gap_text}.", shown)
        if held is None:
            return j("unverified", f"Claimed {said}; not verified: the ramp judged no level "
                     f"({rerun_for(claimed, ev.command)}){gap_text}.", shown)
        more = rerun_for(max(held, claimed), ev.command)
        if held < claimed:
            return j("unverified", f"Claimed {said}; not verified: the ramp held up to {held} "
                     f"streams and stopped below the claim without degrading; {more}"
                     f"{gap_text}.", shown)
        return j("unverified", f"Claimed {said}; not verified: the ramp held {held} streams, "
                 f"at least the claim, and nothing degraded, so what degrades first was not "
                 f"seen; {more}{gap_text}.", shown)
    broke = (f"broke at {breaking} on {_metric(mu.first_degraded)}" if breaking is not None
             else f"saw {_metric(mu.first_degraded)} degrade first at a level it does not list")
    head = (f"Claimed {said} vs the ramp, which sustained "
            f"{mu.max_sustained if mu.max_sustained is not None else 'no level'} and {broke}")
    problems = []
    limit = breaking if breaking is not None else (mu.max_sustained or 0) + 1
    if not within(claimed, limit, tol.concurrency_rel, at_most=True):
        problems.append(f"the claim is {times(claimed / limit)} the level at which it broke")
    # a tie below the breach may be where it really broke, on one of the tied metrics
    firsts = {mu.first_degraded, *(tie.ties if tie is not None else ())}
    seen = mu.first_degraded
    if seen is not None and seen in UNDISCLOSED:
        problems.append(_undisclosed(seen, first))
    elif first not in firsts:
        problems.append(f"{_metric(mu.first_degraded)}, not {_metric(first)}, degraded first")
    if problems:
        return j("unreconciled", f"{head}: {join(problems)}{gap_text}.", shown)
    if tie is not None and (not within(claimed, tie.concurrency, tol.concurrency_rel,
                                       at_most=True) or firsts != {first}):
        return j("unverified", f"{head}, but {_tie_words(tie)}, so the claim is not decided"
                 f"{gap_text}.", shown)
    return j("ok", f"{head}: holds{gap_text}.", shown)


#: the ramp's metric names (summary.json, the questionnaire's first_degrades) as the page
#: says them: the per-token metric is TPOT everywhere a reader looks
METRIC_WORDS = {"itl": "TPOT", "ttft": "TTFT", "admission": "admission",
                "incomplete": "cut streams (incomplete)", "timeout": "timeouts",
                "error": "errors", "precision": "precision (the canaries' answers)",
                "length": "output length"}

#: What the ramp can find degrading first that Q4's answer cannot name (it allows itl,
#: ttft or admission), and what the vendor therefore did not disclose.
UNDISCLOSED = {
    "incomplete": "its endpoint cuts streams it has already begun under load",
    "timeout": "its streams stall past the client's deadline under load",
    "error": "its endpoint answers with errors under load",
    "precision": "its answers under load are not the answers it gives alone",
    "length": "its outputs under load are cut shorter than alone",
}


def _metric(name: str | None) -> str:
    return METRIC_WORDS.get(name or "", str(name))


def _undisclosed(measured: str, claimed: str) -> str:
    """Why a failure Q4 has no word for is unreconciled whatever was claimed: the answer
    chose among kinds that leave the one seen out."""
    return (f"{_metric(measured)} came first, not {_metric(claimed)}: a degradation Q4's "
            f"answer (itl, ttft or admission) cannot name, so the vendor did not disclose "
            f"that {UNDISCLOSED[measured]}")


def _tie_words(tie: Level) -> str:
    """A tie level in words, with the run that would decide it."""
    what = join([_metric(t) for t in tie.ties]) or "a limit"
    more = (f"about {tie.tie_requests} requests at {tie.concurrency} streams would decide it"
            if tie.tie_requests else f"more requests at {tie.concurrency} streams would "
            "decide it")
    return (f"level {tie.concurrency} is a tie on {what} (its 95 % interval straddles the "
            f"limit, n = {tie.requests}): {more} (re-run with --levels {tie.concurrency} "
            "and --interval-width)")


def judge_q5(a: ObservabilityAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Per-stream vs request-level observability, and how it is exported.

    A per-stream claim is checked against the probe's scrape of the vendor's metrics page
    (`probe --metrics-url`, `evalkit.analysis.vendor_metrics`): a per-token inter-token histogram
    that counted our streams' tokens is `ok`; none, or one that counted none of them, is
    `unreconciled`; no scrape (or a run that verifies nothing) is `unverified`.
    """
    vm = ev.m.sections.vendor_metrics if ev.m is not None else None
    vm = None if vm == VendorMetrics() else vm  # an empty scrape section says nothing

    def j(status: Status, reason: str, finding: Finding | None = None) -> Judgement:
        measured = None if vm is None else ObservabilityMeasured(
            vm.url, vm.engine, dict(vm.families), vm.per_stream_itl, vm.itl_observations,
            vm.scrapes_ok)
        return Judgement(status, reason, a, measured, "none (categorical answer)", finding)

    if blank(a):
        return j("unanswered", "Q5 is not answered: no observability level was given.")
    if a.observability is None:
        return j("unanswerable", "Q5 does not say whether per-stream inter-token times or only "
                 "request-level latency are exposed (one of per_stream, request_level, none).")
    if a.observability == "none" and (a.export or a.metrics_url):
        return j("unreconciled", "The vendor states that no latency observability is exposed, "
                 f"yet describes an export ({quote(a.export or a.metrics_url, 80)}): the two "
                 "answers contradict each other.")
    if a.observability == "none":
        return j("ok", "The vendor states that no latency observability is exposed, so "
                 "per-stream rhythm cannot be audited from its side.", "gap")
    if not (a.export or a.metrics_url):
        return j("unanswerable", f"Q5 says {a.observability} but not how it is exported, so we "
                 "cannot read it.")
    how = quote(a.export or a.metrics_url, 120)
    if a.observability == "request_level":
        return j("ok", f"The vendor exposes request-level latency only (via {how}): "
                 "per-stream inter-token rhythm, which a streaming product lives on, cannot be "
                 "audited from its side.", "gap")
    return _q5_per_stream(j, how, vm, ev, a.metrics_url)


def _q5_per_stream(j: Callable[[Status, str], Judgement], how: str,
                   vm: VendorMetrics | None, ev: Evidence,
                   claimed_url: str | None) -> Judgement:
    """A per-stream claim against the scrape of the vendor's metrics page."""
    said = f"The vendor says it exposes per-stream latency via {how}"
    url = quote((vm.url if vm is not None else None) or claimed_url or "URL", 120)
    if vm is None or ev.m is None or ev.m.validity in ("invalid", "unknown"):
        why = (ev.blocker if ev.m is None or ev.m.validity in ("invalid", "unknown") else
               f"the run did not scrape it: re-run the probe with --metrics-url {url}")
        return j("unverified", f"{said}; not verified: {why}.")
    if not vm.scrapes_ok:
        errors = vm.scrape_errors or ("no scrape answered",)
        return j("unverified", f"{said}; not verified: the scrape of {url} failed "
                 f"({quote(errors[0], 120)}); re-run with a --metrics-url the probe "
                 "can reach.")
    itl = quote(vm.itl_name or "", 80)
    named = (f"the per-token histogram {itl}" if itl else
             "a per-token histogram (its name not recorded)")
    seen = vm.itl_observations or 0
    if vm.per_stream_itl is True and seen > 0:
        return j("ok", f"{said}: our scrape of {url} found {named}, "
                 f"which counted {seen:,} inter-token intervals during our run.")
    if vm.per_stream_itl is True:
        return j("unreconciled", f"{said}, and {url} exports {named}, but it counted none of "
                 "our streams' tokens while we probed: it is not the engine that served us "
                 "(another replica?), or it is not fed.")
    other = quote(vm.tpot_req_name or "", 80)
    held = vm.unrecognised_names
    found = (f"only the request-level {other} (one mean per request)" if other else
             "no inter-token metric at all" if vm.families or not held else
             f"none of the metric families evalkit reads (the page held {len(held)} others,"
             f" among them {quote(', '.join(held[:4]), 160)})")
    return j("unreconciled", f"{said}, but our scrape of {url} found {found}: no per-stream "
             "inter-token histogram.")
