"""The six capacity questions, one judge each: an answer and the evidence in, a
`Judgement` out (status, reason, what was claimed and measured). No I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from evalkit.fmt import fmt_s
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.judging import (
    QUANTILES,
    SOURCE_WORDS,
    Decision,
    Evidence,
    Finding,
    Judgement,
    Status,
    blank,
    decide,
    dist_dict,
    dist_numbers,
    in_regime,
    join,
    meets,
    number,
    price,
    quote,
    rerun_for,
    times,
    tolerance_words,
    tolerated,
    within,
)
from evalkit.questionnaire import (
    Answer,
    ConcurrencyAnswer,
    ObservabilityAnswer,
    PanelAnswer,
    PricingAnswer,
    Questionnaire,
    ThroughputAnswer,
    TtftAnswer,
    disorders,
)
from evalkit.summary import Level, Summary, as_count, as_mapping
from evalkit.tolerances import Tolerances


def judge_q1(a: TtftAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """TTFT p50/p90 under load vs our TTFT at the claimed concurrency."""
    tolerance = tolerance_words(tol.ttft_rel, "ttft_rel", at_most=True)

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance)

    if blank(a):
        return j("unanswered", "Q1 is not answered: no TTFT figures were given.")
    claims = {k: v for k, v in (("p50", a.ttft_p50_ms), ("p90", a.ttft_p90_ms)) if v is not None}
    if not claims:
        return j("unanswerable", "Q1 gives no TTFT numbers (only text), so nothing can be "
                 "checked.")
    said = " / ".join(f"{k} {number(v)} ms" for k, v in claims.items())
    if a.source != "production":
        return j("unanswerable", f"TTFT {said} is given {SOURCE_WORDS[a.source]}, where a "
                 "measurement under production load was asked.")
    c = a.at_concurrency
    if c is None or c <= 1:
        where = "in isolation (concurrency 1)" if c == 1 else "with no concurrency stated"
        return j("unanswerable", f"TTFT {said} is given {where}, not under load.")
    if "p50" in claims and "p90" in claims and claims["p50"] > claims["p90"]:
        return j("unreconciled", f"Claimed TTFT p50 {number(claims['p50'])} ms is above its own "
                 f"p90 {number(claims['p90'])} ms: the two cannot both hold.")
    claim = f"TTFT {said} at {c} streams"
    if ev.usable is None:
        return j("unverified", f"{claim} is internally consistent; not verified: {ev.blocker}.")

    def check(level: Level) -> tuple[Decision | None, str, str]:
        if level.mostly_failed:
            return "fails", "a level where most requests failed", "it does not hold"
        pairs = {k: (claims[k], v) for k in claims if (v := level.ttft_s.get(k)) is not None}
        if not pairs:
            return None, "", ""
        decided = {k: decide(v, level.ttft_s.interval(k),
                             tolerated(cl / 1000, tol.ttft_rel, at_most=True), at_most=True,
                             n=level.ttft_s.n, q=QUANTILES[k], fmt=fmt_s)
                   for k, (cl, v) in pairs.items()}
        order = {"fails": 0, "undecided": 1, "holds": 2}
        key = min(pairs, key=lambda k: (order[decided[k][0]],
                                        -(pairs[k][1] * 1000 / pairs[k][0])
                                        if pairs[k][0] else -math.inf))
        claimed_ms, meas_s = pairs[key]
        state, why = decided[key]
        ratio = meas_s * 1000 / claimed_ms if claimed_ms else math.inf
        outcome = {"holds": "holds", "fails": f"{times(ratio)} slower", "undecided": why}
        return state, f"measured {key} {fmt_s(meas_s)}", outcome[state]

    status, level, text = in_regime(ev.usable, c, check, ev.command)
    shown = None if level is None else {
        "concurrency": level.concurrency, **{f"ttft_{k}_ms": round(v * 1000, 1) for k in claims
                                              if (v := level.ttft_s.get(k)) is not None}}
    return j(status, f"Claimed {claim} {text}.", shown)


def judge_q2(a: ThroughputAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Per-GPU throughput at the concurrency sold vs measured per-stream and aggregate rates."""
    tolerance = tolerance_words(tol.throughput_rel, "throughput_rel", at_most=False)

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance)

    if blank(a):
        return j("unanswered", "Q2 is not answered: no throughput per GPU was given.")
    v, c = a.output_tokens_per_s_per_gpu, a.at_concurrency
    if v is None:
        return j("unanswerable", "Q2 gives no sustained output tokens/s per GPU (only text), "
                 "so nothing can be checked.")
    if a.source != "production":
        return j("unanswerable", f"{number(v)} output tokens/s per GPU is given "
                 f"{SOURCE_WORDS[a.source]}, where a measured production figure was asked.")
    if c is None:
        return j("unanswerable", f"{number(v)} output tokens/s per GPU is given without the "
                 "concurrency it holds at.")
    dist = dist_numbers(a.distribution)
    if not dist:
        return j("unanswerable", f"{number(v)} output tokens/s per GPU at {c} streams has no "
                 "measured production distribution (p50/p90/p99) behind it.")
    if dist != sorted(dist):
        return j("unreconciled", f"The production distribution {'/'.join(map(number, dist))} "
                 "tokens/s per GPU is not in increasing order, so its percentiles contradict "
                 "each other.")
    if not within(v, max(dist), tol.throughput_rel, at_most=True):
        return j("unreconciled", f"Claimed sustained {number(v)} tokens/s per GPU exceeds the top "
                 f"of its own production distribution ({number(max(dist))}) by more than "
                 f"{tol.throughput_rel * 100:.0f}% (throughput_rel).")
    if a.gpus is None:
        return j("unanswerable", f"{number(v)} tokens/s per GPU at {c} streams is given without "
                 "the GPU count behind the endpoint, so it cannot be set against what the "
                 "endpoint delivers.")
    aggregate = v * a.gpus
    per_stream = aggregate / c
    claim = (f"{number(v)} tokens/s per GPU × {a.gpus} GPU{'s' if a.gpus > 1 else ''} at {c} "
             f"streams ({fmt_rate(per_stream)} per stream, {fmt_rate(aggregate)} aggregate)")
    if ev.usable is None:
        return j("unverified", f"{claim} sits within its own production distribution "
                 f"({'/'.join(map(number, dist))}); not verified: {ev.blocker}.")

    def check(level: Level) -> tuple[Decision | None, str, str]:
        if level.mostly_failed:
            return "fails", "a level where most requests failed", "it does not hold"
        got = [(name, claimed, meas, ci, n, q) for name, claimed, meas, ci, n, q in
               (("per stream (p50)", per_stream, level.stream_tokens_per_s.p50,
                 level.stream_tokens_per_s.interval("p50"), level.stream_tokens_per_s.n, 0.5),
                ("aggregate", aggregate,
                 level.aggregate_tokens_per_s if level.concurrency == c else None,
                 level.aggregate_ci, level.requests, None))
               if meas is not None]
        if not got:
            return None, "", ""
        decided = [decide(meas, ci, tolerated(claimed, tol.throughput_rel, at_most=False),
                          at_most=False, n=n, q=q, fmt=fmt_rate)
                   for _, claimed, meas, ci, n, q in got]
        said = " and ".join(f"{fmt_rate(meas)} {name}" for name, _, meas, *_ in got)
        if any(d == "fails" for d, _ in decided):
            worst = min((g for g, (d, _) in zip(got, decided, strict=True) if d == "fails"),
                        key=lambda t: t[2] / t[1] if t[1] else math.inf)
            short = worst[1] / worst[2] if worst[2] else math.inf
            return "fails", f"measured {said}", f"{times(short)} short {worst[0]}"
        unsure = [why for d, why in decided if d == "undecided"]
        if unsure:
            return "undecided", f"measured {said}", unsure[0]
        return "holds", f"measured {said}", "holds"

    status, level, text = in_regime(ev.usable, c, check, ev.command)
    shown = None if level is None else {
        "concurrency": level.concurrency,
        "stream_tokens_per_s_p50": level.stream_tokens_per_s.p50,
        "aggregate_tokens_per_s": level.aggregate_tokens_per_s}
    return j(status, f"Claimed {claim} {text}.", shown)


def judge_q3(a: PricingAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Separate input/output prices and a capacity model that names prefill and decode."""
    tolerance = tolerance_words(tol.rate_rel, "rate_rel", at_most=False)

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None,
          finding: Finding | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance, finding)

    if blank(a):
        return j("unanswered", "Q3 is not answered: no prices or capacity model were given.")
    cur = f" {quote(a.currency, 12)}" if a.currency else ""
    if a.input_price_per_mtok is None or a.output_price_per_mtok is None:
        if a.blended_price_per_mtok is not None:
            return j("unanswerable", f"Only a single blended price "
                     f"({price(a.blended_price_per_mtok)}"
                     f"{cur} per million tokens) is given, so prefill and decode costs cannot be "
                     "told apart.", finding="gap")
        return j("unanswerable", "Q3 does not give separate input and output prices per "
                 "million tokens.")
    prices = (f"input {price(a.input_price_per_mtok)}{cur} and output "
              f"{price(a.output_price_per_mtok)}{cur} per million tokens")
    low, high = sorted((a.input_price_per_mtok, a.output_price_per_mtok))
    blended = a.blended_price_per_mtok
    if blended is not None and not low <= blended <= high:
        return j("unreconciled", f"The blended price {price(blended)}{cur} per million tokens "
                 f"lies outside the separate prices ({prices}), which no mix of input and "
                 "output tokens can give.")
    claimed = [(name, rate) for name, rate in (("prefill", a.prefill_tokens_per_s),
                                               ("decode per stream",
                                                a.decode_tokens_per_s_per_stream))
               if rate is not None]
    if not (a.capacity_model or "").strip() and not claimed:
        return j("unanswerable", f"Prices are separate ({prices}) but no capacity model names "
                 "how prefill and decode each consume capacity.")
    if not claimed:
        return j("unverified", f"Prices are separate ({prices}) and a capacity model is given "
                 "in words, but it states no prefill or decode rate, so no run can check it; "
                 "ask for its prefill tokens/s and decode tokens/s per stream.")
    m = ev.usable
    if m is None:
        return j("unverified", f"Prices are separate ({prices}) and the capacity model's rates "
                 f"are stated; not verified: {ev.blocker}.")
    decode = m.baseline.stream_tokens_per_s if m.baseline else None
    ours = {"prefill": m.prefill_tokens_per_s,
            "decode per stream": decode.p50 if decode else None}
    cis = {"prefill": m.prefill_ci if m.prefill_ci is not None else
           (None, None) if m.prefill_ci_missing else None,
           "decode per stream": decode.interval("p50") if decode else None}
    shown = {"prefill_tokens_per_s": ours["prefill"],
             "decode_tokens_per_s_per_stream_p50": ours["decode per stream"],
             "prefill_tokens_per_s_ci": _listed(m.prefill_ci),
             "decode_tokens_per_s_per_stream_p50_ci": _listed(cis["decode per stream"])}
    checks = [(name, rate, got) for name, rate in claimed if (got := ours[name]) is not None]
    unmeasured = [name for name, _ in claimed if ours[name] is None]
    compared = "; ".join(f"{name} claimed {fmt_rate(cl)} vs measured {fmt_rate(got)}"
                         f"{_ci_words(cis[name], fmt_rate)}" for name, cl, got in checks)
    head = f"Prices are separate ({prices}); {compared or 'rates claimed'}"
    decided = {name: decide(got, cis[name], tolerated(cl, tol.rate_rel, at_most=False),
                            at_most=False,
                            n=m.prefill_lengths if name == "prefill" else
                            decode.n if decode else None,
                            q=None if name == "prefill" else 0.5, fmt=fmt_rate)
               for name, cl, got in checks}
    short = [(name, cl / got) for name, cl, got in checks if decided[name][0] == "fails"]
    if short:
        name, ratio = max(short, key=lambda t: t[1])
        return j("unreconciled", f"{head}: {name} {times(ratio)} short.", shown)
    if "prefill" in unmeasured and m.prefill_at_least is not None:
        return j("unverified", f"{head}; not verified: this run saw no measurable prefill "
                 f"cost (above {fmt_rate(m.prefill_at_least)}, the fit's slope could be "
                 "zero), which confirms no claimed rate; probe with longer prompts "
                 "(--profile standard).", shown)
    if unmeasured:
        return j("unverified", f"{head}; not verified: the run did not measure the "
                 f"{join(unmeasured)} rate (run the prefill and baseline phases).", shown)
    open_ = [name for name, _, _ in checks if decided[name][0] == "undecided"]
    if open_:
        why = [_prefill_undecided(m, cis["prefill"]) if name == "prefill" else
               f"decode per stream (the baseline's p50): {decided[name][1]}" for name in open_]
        return j("unverified", f"{head}; not verified: {'; '.join(why)}.", shown)
    return j("ok", f"{head}: holds.", shown)


def _listed(ci: tuple[float | None, float | None] | None) -> list[float | None] | None:
    return None if ci is None else list(ci)


def _ci_words(ci: tuple[float | None, float | None] | None,
              fmt: Callable[[float | None], str]) -> str:
    """ ' (95 % interval a–b)' beside a figure, '' when the summary gives none."""
    if ci is None:
        return ""
    return " (95 % interval " + "–".join(fmt(v) if v is not None else "unbounded"
                                         for v in ci) + ")"


def _prefill_undecided(m: Summary, ci: tuple[float | None, float | None] | None) -> str:
    """Why the prefill rate decides no claim, and the run that would."""
    lengths = m.prefill_lengths
    more = "probe with more prompt lengths or repeats (--profile standard)"
    if lengths is not None and lengths >= 3 and (ci is None or ci == (None, None)):
        return (f"the prefill fit over {lengths} prompt lengths gives no interval on its "
                f"rate; {more}")
    if lengths is None:  # an older or hand-made summary: nothing says what the fit rests on
        return ("the summary does not say how many prompt lengths the prefill fit rests "
                f"on, so its rate decides nothing; {more}")
    if ci is None or lengths < 3 or ci == (None, None):
        return (f"the prefill fit rests on {lengths} prompt length"
                f"{'s' if lengths != 1 else ''}, too few for an interval on its rate (3 "
                "needed); probe with more prompt lengths (--profile standard)")
    if ci[0] is None or ci[1] is None:
        end = (f"from {fmt_rate(ci[0])} up, no upper end" if ci[1] is None else
               f"up to {fmt_rate(ci[1])}, no lower end")
        return (f"not enough evidence: the prefill rate's 95 % interval is open ({end}; a "
                f"fit over {lengths} prompt lengths); {more}")
    return (f"not enough evidence: the prefill rate's 95 % interval "
            f"{fmt_rate(ci[0])}–{fmt_rate(ci[1])} (a fit over {lengths} prompt lengths) "
            f"straddles the claim's tolerance; {more}")


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

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance, gap)

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
    mu = ev.usable
    if mu is None:
        return j("unverified", f"Claimed {said}; not verified: {ev.blocker}{gap_text}.")
    breaking = _breaking_level(mu)
    shown = {"max_sustained_concurrency": mu.max_sustained, "first_degraded": mu.first_degraded,
             "breaking_concurrency": breaking}
    tie = next((lv for lv in mu.levels if lv.concurrency == mu.first_tie), None)
    shown["first_tie_concurrency"] = mu.first_tie
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
    if first not in firsts:
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
METRIC_WORDS = {"itl": "TPOT", "ttft": "TTFT", "admission": "admission"}


def _metric(name: str | None) -> str:
    return METRIC_WORDS.get(name or "", str(name))


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
    (`probe --metrics-url`, `evalkit.vendor_metrics`): a per-token inter-token histogram
    that counted our streams' tokens is `ok`; none, or one that counted none of them, is
    `unreconciled`; no scrape (or a run that verifies nothing) is `unverified`.
    """
    vm = ev.m.vendor_metrics if ev.m is not None else None

    def j(status: Status, reason: str, finding: Finding | None = None) -> Judgement:
        measured = None if vm is None else {
            k: vm.get(k) for k in ("url", "engine", "families", "per_stream_itl",
                                   "itl_observations", "scrapes_ok")}
        return Judgement(status, reason, a.to_dict(), measured, "none (categorical answer)",
                         finding)

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
                   vm: Mapping[str, Any] | None, ev: Evidence,
                   claimed_url: str | None) -> Judgement:
    """A per-stream claim against the scrape of the vendor's metrics page."""
    said = f"The vendor says it exposes per-stream latency via {how}"
    url = quote(str((vm or {}).get("url") or claimed_url or "URL"), 120)
    if vm is None or ev.m is None or ev.m.validity in ("invalid", "unknown"):
        why = (ev.blocker if ev.m is None or ev.m.validity in ("invalid", "unknown") else
               f"the run did not scrape it: re-run the probe with --metrics-url {url}")
        return j("unverified", f"{said}; not verified: {why}.")
    if not as_count(vm.get("scrapes_ok")):
        errors = vm.get("scrape_errors") or ["no scrape answered"]
        return j("unverified", f"{said}; not verified: the scrape of {url} failed "
                 f"({quote(str(errors[0]), 120)}); re-run with a --metrics-url the probe "
                 "can reach.")
    families = as_mapping(vm.get("families"))
    itl = quote(str(families.get("itl") or ""), 80)
    named = (f"the per-token histogram {itl}" if itl else
             "a per-token histogram (its name not recorded)")
    seen = as_count(vm.get("itl_observations")) or 0
    if vm.get("per_stream_itl") is True and seen > 0:
        return j("ok", f"{said}: our scrape of {url} found {named}, "
                 f"which counted {seen:,} inter-token intervals during our run.")
    if vm.get("per_stream_itl") is True:
        return j("unreconciled", f"{said}, and {url} exports {named}, but it counted none of "
                 "our streams' tokens while we probed: it is not the engine that served us "
                 "(another replica?), or it is not fed.")
    other = quote(str(families.get("tpot_req") or ""), 80)
    found = (f"only the request-level {other} (one mean per request)" if other else
             "no inter-token metric at all")
    return j("unreconciled", f"{said}, but our scrape of {url} found {found}: no per-stream "
             "inter-token histogram.")


def judge_q6(a: PanelAnswer, headline_value: float | None, headline_unit: str | None,
             ev: Evidence, tol: Tolerances) -> Judgement:
    """The production panel vs the headline figure, with our own distribution beside both."""
    tolerance = (f"headline/panel p50 ≤ {tol.headline_panel_ratio:g}× without a written "
                 "reconciliation (headline_panel_ratio)")
    claimed = a.to_dict()
    if headline_value is not None:
        claimed["headline"] = headline_value
        claimed["headline_unit"] = headline_unit or "output_tokens_per_s"
    if a.output_tokens_per_s is not None and dist_numbers(a.output_tokens_per_s):
        claimed["panel"] = claimed.get("output_tokens_per_s")
    m = ev.usable
    base = m.baseline if m and m.baseline and not m.baseline.client_bound else None
    ours: dict[str, Any] | None = (
        {"baseline_stream_tokens_per_s": dist_dict(base.stream_tokens_per_s)} if base else None)
    top = m.sustained() if m else None
    if top is not None:
        ours = ours or {}
        ours[f"stream_tokens_per_s_at_{top.concurrency}"] = dist_dict(top.stream_tokens_per_s)
    our_p50 = base.stream_tokens_per_s.p50 if base else None
    beside = (f"; we measured {fmt_rate(our_p50)} per stream (p50) with one stream" if our_p50
              else "")

    def j(status: Status, reason: str) -> Judgement:
        return Judgement(status, reason, claimed, ours, tolerance)

    if blank(a):
        return j("unanswered", "Q6 is not answered: no production panel was given"
                 + (f" to set beside the headline {number(headline_value)} tokens/s."
                    if headline_value is not None else "."))
    panel = dist_numbers(a.output_tokens_per_s)
    if not panel and not dist_numbers(a.latency_s):
        return j("unanswerable", "Q6 gives no production panel numbers (only text), so the "
                 "headline cannot be set against production.")
    if a.source != "production":
        return j("unanswerable", f"The panel is given {SOURCE_WORDS[a.source]}, where the live "
                 "production panel was asked.")
    window = a.window or (a.output_tokens_per_s.window if a.output_tokens_per_s else None)
    window = quote(window, 60) if window else None
    if not window:
        return j("unanswerable", "The production panel gives no window (when it was measured), "
                 "so it cannot be read as last week's production.")
    latency = dist_numbers(a.latency_s)
    for name, values in (("output tokens/s", panel), ("latency", latency)):
        if values != sorted(values):
            return j("unreconciled", f"The panel's {name} percentiles "
                     f"{'/'.join(map(number, values))} are not in increasing order, so they "
                     "contradict each other.")
    written = len((a.reconciliation or "").strip()) >= tol.min_reconciliation_chars
    p50 = a.output_tokens_per_s.p50 if a.output_tokens_per_s else None
    if headline_value is None:
        agreed = (f"The production panel ({window}) is given and there is no headline figure "
                  "to reconcile it with")
    elif p50 is None or headline_unit not in (None, "output_tokens_per_s"):
        basis = ("the panel has no per-request p50" if p50 is None
                 else f"the headline is in {headline_unit}, the panel per request")
        if not written:
            return j("unreconciled", f"Headline {number(headline_value)} and the panel cannot be "
                     f"compared ({basis}) and no written reconciliation bridges them{beside}.")
        agreed = (f"Headline {number(headline_value)} and the panel cannot be divided ({basis}), "
                  "and a written reconciliation is given")
    else:
        ratio = headline_value / p50 if p50 else math.inf
        head = (f"Headline {number(headline_value)} tokens/s is {ratio:.1f}× the production "
                f"panel's median {number(p50)} tokens/s ({window}; limit "
                f"{tol.headline_panel_ratio:g}× without a written reconciliation)")
        within_limit = meets(ratio, tol.headline_panel_ratio, at_most=True)
        if not within_limit and not written:
            return j("unreconciled", f"{head}, and no written reconciliation is given{beside}.")
        agreed = head + (": within the limit" if within_limit
                         else ": a written reconciliation explains the gap")
    if m is None or base is None:
        why = ev.blocker or "the run has no baseline to set our own distribution beside it"
        return j("unverified", f"{agreed}; not verified against our own measurement: {why}.")
    return j("ok", f"{agreed}{beside}.")


def _with_disorders(j: Judgement, answer: Answer) -> Judgement:
    """Percentiles that contradict each other are always shown: the judges check order only
    on the way to a measured judgement, so an answer refused earlier (lab, no concurrency,
    no window...) would hide them. The earlier status stands (it says why the answer is not
    measured production numbers); the contradiction is added to its reason."""
    found = disorders(answer)
    if not found or j.status == "unreconciled":  # the judge already said so
        return j
    said = join(found)
    if j.status in ("ok", "unverified"):
        return replace(j, status="unreconciled",
                       reason=f"The answer contradicts itself: {said}.")
    return replace(j, reason=f"{j.reason} Its numbers also contradict each other: {said}.")


def judge_questions(q: Questionnaire | None, ev: Evidence,
                    tol: Tolerances) -> dict[str, Judgement]:
    """Q1..Q6 judgements; with no questionnaire every one is `unanswered`."""
    q = q or Questionnaire()
    judged = {
        "Q1": judge_q1(q.q1, ev, tol),
        "Q2": judge_q2(q.q2, ev, tol),
        "Q3": judge_q3(q.q3, ev, tol),
        "Q4": judge_q4(q.q4, ev, tol, q.q2.at_concurrency),
        "Q5": judge_q5(q.q5, ev, tol),
        "Q6": judge_q6(q.q6, q.headline.value, q.headline.unit, ev, tol),
    }
    return {qid: _with_disorders(j, q.questions[qid]) for qid, j in judged.items()}
