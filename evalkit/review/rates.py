"""Q1–Q3: time to first token, throughput, and prefill priced apart from decode,
each judged against the run's measurement on intervals."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from evalkit.analysis.jsonread import Interval
from evalkit.analysis.summary import Level, Pct, Summary
from evalkit.analysis.thresholds import Tolerances
from evalkit.fmt import fmt_s, number, price, times
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.questionnaire.model import (
    PricingAnswer,
    ThroughputAnswer,
    TtftAnswer,
)
from evalkit.review.measured import (
    PrefillDecodeMeasured,
    ThroughputMeasured,
    TtftMeasured,
)
from evalkit.review.rules import (
    QUANTILES,
    SOURCE_WORDS,
    Decision,
    Evidence,
    Finding,
    Judgement,
    Status,
    blank,
    decide,
    dist_numbers,
    in_regime,
    join,
    latency_claim,
    quote,
    tolerance_words,
    tolerated,
    within,
)
from evalkit.review.streaming import placeholder, tiny_rate, with_gap


def judge_q1(a: TtftAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """TTFT p50/p90 under load vs our TTFT at the claimed concurrency."""
    tolerance = tolerance_words(tol.ttft_rel, "ttft_rel", at_most=True)

    def j(status: Status, reason: str, measured: TtftMeasured | None = None) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance)

    if blank(a):
        return j("unanswered", "Q1 is not answered: no TTFT figures were given.")
    opened = latency_claim("TTFT", a.ttft_p50_ms, a.ttft_p90_ms, a.source, a.at_concurrency,
                           none_given="Q1 gives no TTFT numbers (only text), so nothing can "
                           "be checked.", alone="concurrency 1", unstated="concurrency")
    if isinstance(opened, str):
        return j("unanswerable", opened)
    if (contradiction := opened.contradiction()) is not None:
        return j("unreconciled", contradiction)
    claims, said, c = opened.claims, opened.said, opened.at
    claim = f"TTFT {said} at {c} streams"
    m = ev.usable
    if m is None:
        return j("unverified", f"{claim} is internally consistent; not verified: {ev.blocker}.")

    def check(level: Level) -> tuple[Decision | None, str, str]:
        if level.mostly_failed:
            return "fails", "a level where most requests failed", "it does not hold"
        name, pct = level.answer_latency()
        pairs = {k: (claims[k], v) for k in claims if (v := pct.get(k)) is not None}
        if not pairs:
            return None, "", ""
        decided = {k: decide(v, pct.interval(k),
                             tolerated(cl / 1000, tol.ttft_rel, at_most=True), at_most=True,
                             n=pct.n, q=QUANTILES[k], fmt=fmt_s)
                   for k, (cl, v) in pairs.items()}
        order = {"fails": 0, "undecided": 1, "holds": 2}
        key = min(pairs, key=lambda k: (order[decided[k][0]],
                                        -(pairs[k][1] * 1000 / pairs[k][0])
                                        if pairs[k][0] else -math.inf))
        claimed_ms, meas_s = pairs[key]
        state, why = decided[key]
        ratio = meas_s * 1000 / claimed_ms if claimed_ms else math.inf
        outcome = {"holds": "holds", "fails": f"{times(ratio)} slower", "undecided": why}
        label = "TTFA " if name == "TTFA" else ""
        return state, f"measured {label}{key} {fmt_s(meas_s)}{_ttft_beside(level, key)}", \
            outcome[state]

    status, level, text = in_regime(m, c, check, ev.command)
    judged = j(status, f"Claimed {claim} {text}.", None if level is None else
               _q1_measured(level, claims))
    fake = next((why for lv in m.levels if not lv.client_bound
                 and (why := placeholder(lv, tol))), None)
    return with_gap(judged, fake)


def _ttft_beside(level: Level, key: str) -> str:
    """Where TTFA was judged, the TTFT beside it, named: the first chunk was reasoning."""
    if not level.reasoning_came_first:
        return ""
    first = level.ttft_s.get(key)
    of = f" of {level.ttft_s.n}" if level.ttft_s.n else ""
    return (f" (time to the first answer token: reasoning came first in "
            f"{level.reasoning_first}{of} requests, so TTFT {key} "
            f"{fmt_s(first)} is a reasoning chunk's)")


def _q1_measured(level: Level, claims: dict[str, float]) -> TtftMeasured:
    """Q1's measured figures: TTFT always, and TTFA (what was judged) where reasoning came
    first; a percentile only where it was claimed."""
    def ms(pct: Pct, k: str) -> float | None:
        v = pct.get(k) if k in claims else None
        return round(v * 1000, 1) if v is not None else None

    first = level.reasoning_came_first
    return TtftMeasured(level.concurrency, ms(level.ttft_s, "p50"), ms(level.ttft_s, "p90"),
                        ms(level.ttfa_s, "p50") if first else None,
                        ms(level.ttfa_s, "p90") if first else None,
                        level.reasoning_first if first else None)


def judge_q2(a: ThroughputAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Per-GPU throughput at the concurrency sold vs measured per-stream and aggregate rates;
    a per-stream rate no streaming use case can use is a gap whatever the run says (the
    one-sided rule would pass any under-promise)."""
    judged = _judge_q2(a, ev, tol)
    v, c = a.output_tokens_per_s_per_gpu, a.at_concurrency
    if judged.status in ("unanswered", "unanswerable") or v is None or not c or not a.gpus:
        return judged
    return with_gap(judged, tiny_rate(v * a.gpus / c, tol))


def _judge_q2(a: ThroughputAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    tolerance = tolerance_words(tol.throughput_rel, "throughput_rel", at_most=False)

    def j(status: Status, reason: str, measured: ThroughputMeasured | None = None
          ) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance)

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
    shown = None if level is None else ThroughputMeasured(
        level.concurrency, level.stream_tokens_per_s.p50, level.aggregate_tokens_per_s)
    return j(status, f"Claimed {claim} {text}.", shown)


def judge_q3(a: PricingAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Separate input/output prices and a capacity model that names prefill and decode."""
    tolerance = tolerance_words(tol.rate_rel, "rate_rel", at_most=False)

    def j(status: Status, reason: str, measured: PrefillDecodeMeasured | None = None,
          finding: Finding | None = None) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance, finding)

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
    prefill_ci = (m.prefill_ci if m.prefill_ci is not None else
                  (None, None) if m.prefill_ci_missing else None)
    rates = (_Rate("prefill", a.prefill_tokens_per_s, m.prefill_tokens_per_s, prefill_ci,
                   m.prefill_lengths, None),
             _Rate("decode per stream", a.decode_tokens_per_s_per_stream,
                   decode.p50 if decode else None, decode.interval("p50") if decode else None,
                   decode.n if decode else None, 0.5))
    shown = PrefillDecodeMeasured(rates[0].measured, rates[1].measured, m.prefill_ci,
                                  rates[1].ci)
    said = [r for r in rates if r.claimed is not None]
    checks = [(r, r.claimed, r.measured) for r in said
              if r.claimed is not None and r.measured is not None]
    unmeasured = [r.name for r in said if r.measured is None]
    compared = "; ".join(f"{r.name} claimed {fmt_rate(cl)} vs measured {fmt_rate(got)}"
                         f"{_ci_words(r.ci, fmt_rate)}" for r, cl, got in checks)
    head = f"Prices are separate ({prices}); {compared or 'rates claimed'}"
    decided = [(r, cl, got, decide(got, r.ci, tolerated(cl, tol.rate_rel, at_most=False),
                                   at_most=False, n=r.n, q=r.q, fmt=fmt_rate))
               for r, cl, got in checks]
    short = [(r.name, cl / got) for r, cl, got, (verdict, _) in decided if verdict == "fails"]
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
    why = [_prefill_undecided(m, r.ci) if r.name == "prefill" else
           f"decode per stream (the baseline's p50): {said_why}"
           for r, _, _, (verdict, said_why) in decided if verdict == "undecided"]
    if why:
        return j("unverified", f"{head}; not verified: {'; '.join(why)}.", shown)
    return j("ok", f"{head}: holds.", shown)


@dataclass(frozen=True)
class _Rate:
    """One rate of Q3's capacity model: what the vendor claimed (None: not claimed), what
    the run measured of it, its 95 % interval, and the count and quantile it rests on."""

    name: str
    claimed: float | None
    measured: float | None
    ci: Interval | None
    n: int | None
    q: float | None


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
