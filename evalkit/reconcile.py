"""The reconciliation engine: a questionnaire and a summary in, judgements out. No I/O.

Each question gets one status (SPEC): `ok`, `unanswered`, `unanswerable`, `unreconciled`,
with a one-sentence reason that names the numbers and the tolerance used. Claims are
checked one-sidedly: a claim holds when our measurement is at least as good as claimed
within tolerance (a vendor that under-promises is not flagged). Either input may be
missing: without a summary the review judges internal consistency only and says so;
without a questionnaire every answer is `unanswered` and the measurements are still
judged for use-case fit.

    review = reconcile(questionnaire, summary, Tolerances())
    review.judgements["Q1"].status, review.verdict.text, review.use_cases["batch"].fit
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from evalkit.questionnaire import (
    QUESTION_IDS,
    Answer,
    ConcurrencyAnswer,
    Distribution,
    ObservabilityAnswer,
    PanelAnswer,
    PricingAnswer,
    Questionnaire,
    ThroughputAnswer,
    TtftAnswer,
)
from evalkit.tolerances import PERCENTILE_SHARE, SloProfile, Tolerances

Status = Literal["ok", "unanswered", "unanswerable", "unreconciled"]
STATUSES: tuple[Status, ...] = ("ok", "unanswered", "unanswerable", "unreconciled")

#: The questions a streaming quote must answer with measured numbers (SPEC).
STREAMING_QUESTIONS = ("Q2", "Q4", "Q6")


@dataclass(frozen=True)
class Judgement:
    """One question's status, what was claimed and measured, and why, with the tolerance."""

    status: Status
    reason: str
    claimed: dict[str, Any]
    measured: dict[str, Any] | None
    tolerance: str


@dataclass(frozen=True)
class Fit:
    """Whether the endpoint fits a use case; `fit` is None when it was not measurable."""

    fit: bool | None
    reason: str
    #: highest measured concurrency at which the profile held (None: not even the first)
    max_concurrency: int | None = None


@dataclass(frozen=True)
class Verdict:
    """Whether the quote is sized for the streaming regime, in one or two sentences."""

    streaming_ready: bool
    text: str


@dataclass(frozen=True)
class Review:
    """Everything the scorecard states."""

    judgements: dict[str, Judgement]
    verdict: Verdict
    use_cases: dict[str, Fit]
    reading_speed: Fit
    has_questionnaire: bool
    has_measurements: bool
    client_bound: bool


# ----------------------------------------------------------------- measured side


@dataclass(frozen=True)
class Pct:
    """p50/p90/p99 of one metric; any of them may be missing."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    n: int | None = None

    def get(self, name: str) -> float | None:
        """A percentile by name ('p50', 'p90', 'p99')."""
        value: float | None = getattr(self, name, None)
        return value


@dataclass(frozen=True)
class Level:
    """One measured concurrency level (the baseline is level 1)."""

    concurrency: int
    ttft_s: Pct
    tpot_s: Pct
    itl_s: Pct
    stream_tokens_per_s: Pct
    aggregate_tokens_per_s: float | None
    requests: int | None
    failed: int | None
    #: the client was the bottleneck at this level: it supports no conclusion
    client_bound: bool = False
    #: in-stream gaps above the run's stall threshold (default 1 s)
    stalls: int | None = None

    @property
    def failure_rate(self) -> float | None:
        """Share of requests that did not finish ok (None when outcomes are missing)."""
        if not self.requests or self.failed is None:
            return None
        return self.failed / self.requests


@dataclass(frozen=True)
class Measurements:
    """What the summary measured, read defensively: anything missing is None."""

    levels: tuple[Level, ...]
    baseline: Level | None
    prefill_tokens_per_s: float | None
    max_sustained: int | None
    first_degraded: str | None
    client_bound: bool
    #: the ramp's first breaching level, when the summary names it
    first_breach: int | None = None

    def nearest(self, concurrency: int) -> Level | None:
        """The measured level closest to a claimed concurrency (log scale; a tie goes to the
        lower level, which favours the vendor rather than flag it unfairly)."""
        usable = [lv for lv in self.levels if not lv.client_bound]
        if not usable:
            return None
        return min(usable, key=lambda lv: (abs(math.log(lv.concurrency / concurrency)),
                                           lv.concurrency))


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range is no measurement
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _num(value)
    return int(number) if number is not None and number == int(number) else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pct(value: Any) -> Pct:
    d = _map(value)
    return Pct(_num(d.get("p50")), _num(d.get("p90")), _num(d.get("p99")), _int(d.get("n")))


def _level(d: Mapping[str, Any], concurrency: int) -> Level:
    outcomes = _map(d.get("outcomes"))
    counts = {k: _int(v) or 0 for k, v in outcomes.items()}
    requests = _int(d.get("requests")) or (sum(counts.values()) if counts else None)
    failed = (requests - counts.get("ok", 0)) if counts and requests is not None else None
    bound = d.get("client_bound") is True or d.get("status") == "client_bound"
    return Level(concurrency, _pct(d.get("ttft_s")), _pct(d.get("tpot_s")), _pct(d.get("itl_s")),
                 _pct(d.get("stream_tokens_per_s")), _num(d.get("aggregate_tokens_per_s")),
                 requests, failed, bound, _int(d.get("stalls")))


def measurements(summary: Mapping[str, Any] | None) -> Measurements | None:
    """Read an `evalkit.summary/1` dict; None when there is nothing measured in it."""
    if not isinstance(summary, Mapping):
        return None
    ramp = _map(summary.get("ramp"))
    levels: dict[int, Level] = {}
    raw_levels = ramp.get("levels")
    for raw in raw_levels if isinstance(raw_levels, list) else []:
        c = _int(_map(raw).get("concurrency"))
        if c is not None and c >= 1:
            levels[c] = _level(_map(raw), c)
    base = _map(summary.get("baseline"))
    baseline = _level(base, 1) if base else None
    if baseline is not None and 1 not in levels:
        levels[1] = baseline
    prefill = _num(_map(summary.get("prefill")).get("tokens_per_s"))
    if not levels and prefill is None:
        return None
    degraded = ramp.get("first_degraded")
    return Measurements(
        levels=tuple(levels[c] for c in sorted(levels)),
        baseline=baseline,
        prefill_tokens_per_s=prefill,
        max_sustained=_int(ramp.get("max_sustained_concurrency")),
        first_degraded=degraded if degraded in ("ttft", "itl", "admission") else None,
        client_bound=_judgement_affected(_map(summary.get("client"))),
        first_breach=_int(ramp.get("first_breach_concurrency")),
    )


def _judgement_affected(client: Mapping[str, Any]) -> bool:
    """The prober narrows `client_bound` to what voids a capacity judgement; prefer that."""
    affected = client.get("capacity_judgement_affected")
    if isinstance(affected, bool):
        return affected
    return client.get("client_bound") is True


# ------------------------------------------------------------------------ format


def fmt_s(seconds: float | None) -> str:
    """A duration the way a reviewer reads it: ms below a second, else seconds."""
    if seconds is None:
        return "not measured"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_rate(rate: float | None) -> str:
    """Tokens/s with sensible precision."""
    if rate is None:
        return "not measured"
    return f"{rate:,.0f} tokens/s" if rate >= 100 else f"{rate:.1f} tokens/s"


def _n(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 or x == int(x) else f"{x:.2g}" if x < 1 else f"{x:.1f}"


def _price(x: float) -> str:
    return f"{x:,.2f}" if x < 1000 else f"{x:,.0f}"


def _quote(text: str | None, limit: int) -> str:
    """Vendor text inside a reason: one line, clipped (it is untrusted and unbounded)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _times(ratio: float) -> str:
    return f"{ratio:.1f}×" if math.isfinite(ratio) else "infinitely"


def _reach(level: Level, claimed_c: int, tol: Tolerances) -> str:
    """A check at far fewer streams than claimed confirms only that far."""
    if level.concurrency * tol.concurrency_match_factor >= claimed_c:
        return ""
    return (f", though the claimed {claimed_c} streams were not reached, so it is checked only "
            f"up to {level.concurrency}")


def _pm(rel: float) -> str:
    return f"±{rel * 100:.0f}%"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _at(level: Level, claimed_c: int) -> str:
    return (f"at {level.concurrency}" if level.concurrency == claimed_c
            else f"at {level.concurrency} (nearest measured level)")


_SOURCE_WORDS = {"lab": "from a lab benchmark", "estimate": "as an estimate",
                 None: "without saying where it was measured"}


def _blank(answer: Answer) -> bool:
    return not answer.to_dict()


def _dist_numbers(d: Distribution | None) -> list[float]:
    return [v for v in (d.p50, d.p90, d.p99) if v is not None] if d else []


def _dist_dict(p: Pct) -> dict[str, Any] | None:
    out = {k: v for k, v in asdict(p).items() if v is not None}
    return out or None


def _why_unmeasured(m: Measurements | None, what: str) -> str:
    if m is None:
        return " (no probe run was given)"
    if m.client_bound:
        return " (our run was client-bound, so it supports no capacity judgement)"
    return f" (our run has no {what} there)"


def _usable(m: Measurements | None) -> Measurements | None:
    """A client-bound run supports no capacity judgement (SPEC)."""
    return None if m is None or m.client_bound else m


# ---------------------------------------------------------------- the questions


def judge_q1(a: TtftAnswer, m: Measurements | None, tol: Tolerances) -> Judgement:
    """TTFT p50/p90 under load vs measured TTFT at the nearest concurrency."""
    tolerance = f"{_pm(tol.ttft_rel)} (ttft_rel)"

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance)

    if _blank(a):
        return j("unanswered", "Q1 is not answered: no TTFT figures were given.")
    claims = {k: v for k, v in (("p50", a.ttft_p50_ms), ("p90", a.ttft_p90_ms)) if v is not None}
    if not claims:
        return j("unanswerable", "Q1 gives no TTFT numbers (only text), so nothing can be "
                 "checked.")
    said = " / ".join(f"{k} {_n(v)} ms" for k, v in claims.items())
    if a.source != "production":
        return j("unanswerable", f"TTFT {said} is given {_SOURCE_WORDS[a.source]}, where a "
                 "measurement under production load was asked.")
    c = a.at_concurrency
    if c is None or c <= 1:
        where = "in isolation (concurrency 1)" if c == 1 else "with no concurrency stated"
        return j("unanswerable", f"TTFT {said} is given {where}, not under load.")
    if "p50" in claims and "p90" in claims and claims["p50"] > claims["p90"]:
        return j("unreconciled", f"Claimed TTFT p50 {_n(claims['p50'])} ms is above its own "
                 f"p90 {_n(claims['p90'])} ms: the two cannot both hold.")
    mu = _usable(m)
    level = mu.nearest(c) if mu else None
    measured = {k: level.ttft_s.get(k) for k in claims} if level else {}
    pairs = {k: (claims[k], v) for k, v in measured.items() if v is not None}
    if level is None or not pairs:
        return j("ok", f"Claims-only review: TTFT {said} at {c} streams from production is "
                 f"internally consistent; not checked against a measurement"
                 f"{_why_unmeasured(m, 'TTFT')}.")
    shown = {"concurrency": level.concurrency, **{f"ttft_{k}_ms": round(v * 1000, 1)
                                                   for k, (_, v) in pairs.items()}}
    key = max(pairs, key=lambda k: pairs[k][1] * 1000 / pairs[k][0] if pairs[k][0] else math.inf)
    claimed_ms, meas_s = pairs[key]
    ratio = meas_s * 1000 / claimed_ms if claimed_ms else math.inf
    head = (f"Claimed TTFT {key} {_n(claimed_ms)} ms at {c} streams vs measured "
            f"{fmt_s(meas_s)} {_at(level, c)} (tolerance {_pm(tol.ttft_rel)})")
    if ratio > 1 + tol.ttft_rel:
        return j("unreconciled", f"{head}: {_times(ratio)} slower.", shown)
    return j("ok", f"{head}: holds{_reach(level, c, tol)}.", shown)


def judge_q2(a: ThroughputAnswer, m: Measurements | None, tol: Tolerances) -> Judgement:
    """Per-GPU throughput at the concurrency sold vs measured per-stream and aggregate rates."""
    tolerance = f"{_pm(tol.throughput_rel)} (throughput_rel)"

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance)

    if _blank(a):
        return j("unanswered", "Q2 is not answered: no throughput per GPU was given.")
    v, c = a.output_tokens_per_s_per_gpu, a.at_concurrency
    if v is None:
        return j("unanswerable", "Q2 gives no sustained output tokens/s per GPU (only text), "
                 "so nothing can be checked.")
    if a.source != "production":
        return j("unanswerable", f"{_n(v)} output tokens/s per GPU is given "
                 f"{_SOURCE_WORDS[a.source]}, where a measured production figure was asked.")
    if c is None:
        return j("unanswerable", f"{_n(v)} output tokens/s per GPU is given without the "
                 "concurrency it holds at.")
    dist = _dist_numbers(a.distribution)
    if not dist:
        return j("unanswerable", f"{_n(v)} output tokens/s per GPU at {c} streams has no "
                 "measured production distribution (p50/p90/p99) behind it.")
    if dist != sorted(dist):
        return j("unreconciled", f"The production distribution {'/'.join(map(_n, dist))} "
                 "tokens/s per GPU is not in increasing order, so its percentiles contradict "
                 "each other.")
    if v > max(dist) * (1 + tol.throughput_rel):
        return j("unreconciled", f"Claimed sustained {_n(v)} tokens/s per GPU exceeds the top "
                 f"of its own production distribution ({_n(max(dist))}) by more than the "
                 f"tolerance {_pm(tol.throughput_rel)}.")
    mu = _usable(m)
    level = mu.nearest(c) if mu else None
    if level is None or a.gpus is None:
        why = (" (the GPU count behind the endpoint is not given)" if level is not None
               else _why_unmeasured(m, "level to compare"))
        return j("ok", f"Claims-only review: {_n(v)} tokens/s per GPU at {c} streams sits within "
                 f"its own production distribution ({'/'.join(map(_n, dist))}); not compared "
                 f"with our measurement{why}.")
    aggregate = v * a.gpus
    per_stream = aggregate / c
    meas_stream = level.stream_tokens_per_s.p50
    meas_agg = level.aggregate_tokens_per_s if level.concurrency == c else None
    shown = {"concurrency": level.concurrency, "stream_tokens_per_s_p50": meas_stream,
             "aggregate_tokens_per_s": level.aggregate_tokens_per_s}
    checks = [(name, claimed, got) for name, claimed, got in
              (("per stream (p50)", per_stream, meas_stream), ("aggregate", aggregate, meas_agg))
              if got is not None]
    if not checks:
        return j("ok", f"{_n(v)} tokens/s per GPU × {a.gpus} GPU(s) at {c} streams is internally "
                 f"consistent; our run has no throughput {_at(level, c)} to compare.", shown)
    compared = " and ".join(f"{fmt_rate(got)} {name}" for name, _, got in checks)
    head = (f"Claimed {_n(v)} tokens/s per GPU × {a.gpus} GPU{'s' if a.gpus > 1 else ''} at "
            f"{c} streams implies "
            f"{fmt_rate(per_stream)} per stream and {fmt_rate(aggregate)} aggregate; measured "
            f"{compared} {_at(level, c)} (tolerance {_pm(tol.throughput_rel)})")
    worst = max(checks, key=lambda t: t[1] / t[2] if t[2] else math.inf)
    short = worst[1] / worst[2] if worst[2] else math.inf
    if short > 1 / (1 - tol.throughput_rel):
        return j("unreconciled", f"{head}: {_times(short)} short {worst[0]}.", shown)
    return j("ok", f"{head}: holds{_reach(level, c, tol)}.", shown)


def judge_q3(a: PricingAnswer, m: Measurements | None, tol: Tolerances) -> Judgement:
    """Separate input/output prices and a capacity model that names prefill and decode."""
    tolerance = f"{_pm(tol.rate_rel)} (rate_rel)"

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance)

    if _blank(a):
        return j("unanswered", "Q3 is not answered: no prices or capacity model were given.")
    cur = f" {_quote(a.currency, 12)}" if a.currency else ""
    if a.input_price_per_mtok is None or a.output_price_per_mtok is None:
        if a.blended_price_per_mtok is not None:
            return j("unanswerable", f"Only a single blended price "
                     f"({_price(a.blended_price_per_mtok)}"
                     f"{cur} per million tokens) is given, so prefill and decode costs cannot be "
                     "told apart.")
        return j("unanswerable", "Q3 does not give separate input and output prices per "
                 "million tokens.")
    prices = (f"input {_price(a.input_price_per_mtok)}{cur} and output "
              f"{_price(a.output_price_per_mtok)}{cur} per million tokens")
    low, high = sorted((a.input_price_per_mtok, a.output_price_per_mtok))
    blended = a.blended_price_per_mtok
    if blended is not None and not low <= blended <= high:
        return j("unreconciled", f"The blended price {_price(blended)}{cur} per million tokens "
                 f"lies outside the separate prices ({prices}), which no mix of input and "
                 "output tokens can give.")
    claimed_rates = (("prefill", a.prefill_tokens_per_s, m.prefill_tokens_per_s if m else None),
                     ("decode per stream", a.decode_tokens_per_s_per_stream,
                      m.baseline.stream_tokens_per_s.p50 if m and m.baseline else None))
    if not (a.capacity_model or "").strip() and all(r[1] is None for r in claimed_rates):
        return j("unanswerable", f"Prices are separate ({prices}) but no capacity model names "
                 "how prefill and decode each consume capacity.")
    mu = _usable(m)
    checks = [(name, claimed, got) for name, claimed, got in claimed_rates
              if claimed is not None and got is not None and mu is not None]
    shown = ({"prefill_tokens_per_s": mu.prefill_tokens_per_s,
              "decode_tokens_per_s_per_stream_p50": claimed_rates[1][2]} if mu else None)
    if all(r[1] is None for r in claimed_rates):
        return j("ok", f"Prices are separate ({prices}) and a capacity model is given in words; "
                 "it states no prefill or decode rate to compare with a measurement.", shown)
    if not checks:
        return j("ok", f"Claims-only review: prices are separate ({prices}) and a capacity model "
                 f"is given; its rates are not compared with a measurement"
                 f"{_why_unmeasured(m, 'matching rate')}.", shown)
    compared = "; ".join(f"{name} claimed {fmt_rate(cl)} vs measured {fmt_rate(got)}"
                         for name, cl, got in checks)
    worst = max(checks, key=lambda t: t[1] / t[2] if t[2] else math.inf)
    short = worst[1] / worst[2] if worst[2] else math.inf
    head = f"Prices are separate ({prices}); {compared} (tolerance {_pm(tol.rate_rel)})"
    if short > 1 / (1 - tol.rate_rel):
        return j("unreconciled", f"{head}: {worst[0]} {_times(short)} short.", shown)
    return j("ok", f"{head}: holds.", shown)


def _breaking_level(m: Measurements) -> int | None:
    if m.first_degraded is None:
        return None
    if m.first_breach is not None:
        return m.first_breach
    above = [lv.concurrency for lv in m.levels if m.max_sustained is None
             or lv.concurrency > m.max_sustained]
    return min(above) if above else None


def judge_q4(a: ConcurrencyAnswer, m: Measurements | None, tol: Tolerances) -> Judgement:
    """Maximum streams per node and the first-degrading metric vs the concurrency ramp."""
    tolerance = f"{_pm(tol.concurrency_rel)} (concurrency_rel)"

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance)

    if _blank(a):
        return j("unanswered", "Q4 is not answered: no maximum of concurrent streams was given.")
    n, first = a.max_concurrent_streams_per_node, a.first_degrades
    if n is None:
        return j("unanswerable", "Q4 gives no maximum number of concurrent streams per node, so "
                 "nothing can be checked.")
    if first is None:
        return j("unanswerable", f"Q4 gives {n} streams per node but not what degrades first "
                 "(itl, ttft or admission).")
    if a.source not in ("production", "lab"):
        return j("unanswerable", f"{n} streams per node is given {_SOURCE_WORDS[a.source]}, "
                 "not from a measurement.")
    nodes = a.nodes or 1
    claimed = n * nodes
    said = (f"{n} streams per node × {a.nodes} node{'s' if nodes > 1 else ''} = {claimed}, "
            f"{first} first" if a.nodes else
            f"{n} streams per node (at least {n} for the endpoint), {first} first")
    mu = _usable(m)
    if mu is None or (mu.max_sustained is None and mu.first_degraded is None):
        return j("ok", f"Claims-only review: {said}; not checked against a concurrency ramp"
                 f"{_why_unmeasured(m, 'ramp')}.")
    breaking = _breaking_level(mu)
    shown = {"max_sustained_concurrency": mu.max_sustained, "first_degraded": mu.first_degraded,
             "breaking_concurrency": breaking}
    ramp = (f"the ramp sustained {mu.max_sustained if mu.max_sustained is not None else 'no level'}"
            + (f" and broke at {breaking} on {mu.first_degraded}" if mu.first_degraded else
               " without degrading"))
    head = f"Claimed {said} vs {ramp} (tolerance {_pm(tol.concurrency_rel)})"
    problems = []
    if mu.first_degraded is not None:
        limit = breaking if breaking is not None else (mu.max_sustained or 0) + 1
        if claimed > limit * (1 + tol.concurrency_rel):
            problems.append(f"the claim is {_times(claimed / limit)} the level at which it "
                            "broke")
        if first != mu.first_degraded:
            problems.append(f"{mu.first_degraded}, not {first}, degraded first")
    if problems:
        return j("unreconciled", f"{head}: {_join(problems)}.", shown)
    if mu.first_degraded is None and (mu.max_sustained or 0) < claimed:
        return j("ok", f"{head}: not contradicted, though the ramp stopped below the claim.",
                 shown)
    return j("ok", f"{head}: holds.", shown)


def judge_q5(a: ObservabilityAnswer, m: Measurements | None, tol: Tolerances) -> Judgement:
    """Per-stream vs request-level observability, and how it is exported."""
    def j(status: Status, reason: str) -> Judgement:
        return Judgement(status, reason, a.to_dict(), None, "none (categorical answer)")

    if _blank(a):
        return j("unanswered", "Q5 is not answered: no observability level was given.")
    if a.observability is None:
        return j("unanswerable", "Q5 does not say whether per-stream inter-token times or only "
                 "request-level latency are exposed (one of per_stream, request_level, none).")
    if a.observability == "none" and (a.export or a.metrics_url):
        return j("unreconciled", "The vendor states that no latency observability is exposed, "
                 f"yet describes an export ({_quote(a.export or a.metrics_url, 80)}): the two "
                 "answers contradict each other.")
    if a.observability == "none":
        return j("ok", "The vendor states that no latency observability is exposed, so "
                 "per-stream rhythm cannot be audited from its side.")
    if not (a.export or a.metrics_url):
        return j("unanswerable", f"Q5 says {a.observability} but not how it is exported, so we "
                 "cannot read it.")
    how = a.export or a.metrics_url
    return j("ok", f"The vendor exposes {a.observability.replace('_', '-')} latency via "
             f"{_quote(how, 120)}; not compared with our measurement (no metrics scrape in "
             "this run).")


def judge_q6(a: PanelAnswer, headline_value: float | None, headline_unit: str | None,
             m: Measurements | None, tol: Tolerances) -> Judgement:
    """The production panel vs the headline figure, with our own distribution beside both."""
    tolerance = (f"headline/panel p50 ≤ {tol.headline_panel_ratio:g}× without a written "
                 "reconciliation (headline_panel_ratio)")
    claimed = a.to_dict()
    if headline_value is not None:
        claimed["headline"] = headline_value
        claimed["headline_unit"] = headline_unit or "output_tokens_per_s"
    if a.output_tokens_per_s is not None and _dist_numbers(a.output_tokens_per_s):
        claimed["panel"] = claimed.get("output_tokens_per_s")
    # one stream alone is no capacity judgement: shown beside the panel unless that phase
    # itself was client-bound
    base = m.baseline if m and m.baseline and not m.baseline.client_bound else None
    ours: dict[str, Any] | None = (
        {"baseline_stream_tokens_per_s": _dist_dict(base.stream_tokens_per_s)} if base else None)
    mu = _usable(m)
    top = next((lv for lv in mu.levels if lv.concurrency == mu.max_sustained), None) if mu else None
    if top is not None:
        ours = ours or {}
        ours[f"stream_tokens_per_s_at_{top.concurrency}"] = _dist_dict(top.stream_tokens_per_s)
    our_p50 = base.stream_tokens_per_s.p50 if base else None
    beside = (f"; we measured {fmt_rate(our_p50)} per stream (p50) with one stream" if our_p50
              else "; our own distribution was not measured")

    def j(status: Status, reason: str) -> Judgement:
        return Judgement(status, reason, claimed, ours, tolerance)

    if _blank(a):
        return j("unanswered", "Q6 is not answered: no production panel was given"
                 + (f" to set beside the headline {_n(headline_value)} tokens/s."
                    if headline_value is not None else "."))
    panel = _dist_numbers(a.output_tokens_per_s)
    if not panel and not _dist_numbers(a.latency_s):
        return j("unanswerable", "Q6 gives no production panel numbers (only text), so the "
                 "headline cannot be set against production.")
    if a.source != "production":
        return j("unanswerable", f"The panel is given {_SOURCE_WORDS[a.source]}, where the live "
                 "production panel was asked.")
    window = a.window or (a.output_tokens_per_s.window if a.output_tokens_per_s else None)
    window = _quote(window, 60) if window else None
    if not window:
        return j("unanswerable", "The production panel gives no window (when it was measured), "
                 "so it cannot be read as last week's production.")
    latency = _dist_numbers(a.latency_s)
    for name, values in (("output tokens/s", panel), ("latency", latency)):
        if values != sorted(values):
            return j("unreconciled", f"The panel's {name} percentiles "
                     f"{'/'.join(map(_n, values))} are not in increasing order, so they "
                     "contradict each other.")
    written = len((a.reconciliation or "").strip()) >= tol.min_reconciliation_chars
    p50 = a.output_tokens_per_s.p50 if a.output_tokens_per_s else None
    if headline_value is None:
        return j("ok", f"The production panel ({window}) is given and there is no headline "
                 f"figure to reconcile it with{beside}.")
    if p50 is None or headline_unit not in (None, "output_tokens_per_s"):
        basis = ("the panel has no per-request p50" if p50 is None
                 else f"the headline is in {headline_unit}, the panel per request")
        if written:
            return j("ok", f"Headline {_n(headline_value)} and the panel cannot be divided "
                     f"({basis}), and a written reconciliation is given{beside}.")
        return j("unreconciled", f"Headline {_n(headline_value)} and the panel cannot be "
                 f"compared ({basis}) and no written reconciliation bridges them{beside}.")
    ratio = headline_value / p50 if p50 else math.inf
    head = (f"Headline {_n(headline_value)} tokens/s is {ratio:.1f}× the production panel's "
            f"median {_n(p50)} tokens/s ({window}; limit {tol.headline_panel_ratio:g}× without "
            "a written reconciliation)")
    if ratio <= tol.headline_panel_ratio:
        return j("ok", f"{head}: within the limit{beside}.")
    if written:
        return j("ok", f"{head}: a written reconciliation explains the gap{beside}.")
    return j("unreconciled", f"{head}, and no written reconciliation is given{beside}.")


def judge_questions(q: Questionnaire | None, m: Measurements | None,
                    tol: Tolerances) -> dict[str, Judgement]:
    """Q1..Q6 judgements; with no questionnaire every one is `unanswered`."""
    q = q or Questionnaire()
    return {
        "Q1": judge_q1(q.q1, m, tol),
        "Q2": judge_q2(q.q2, m, tol),
        "Q3": judge_q3(q.q3, m, tol),
        "Q4": judge_q4(q.q4, m, tol),
        "Q5": judge_q5(q.q5, m, tol),
        "Q6": judge_q6(q.q6, q.headline.value, q.headline.unit, m, tol),
    }


# ----------------------------------------------------------------------- verdict


def verdict(judgements: Mapping[str, Judgement], vendor: str | None,
            has_questionnaire: bool = True, client_bound: bool = False,
            measured: bool = True) -> Verdict:
    """Sized for the streaming regime only when Q2, Q4 and Q6 are measured and hold up."""
    who = vendor or "The vendor"
    tail = (" Our own run was client-bound, so no capacity judgement is drawn from it."
            if client_bound else "")
    others = [f"{qid} {judgements[qid].status}" for qid in QUESTION_IDS
              if qid not in STREAMING_QUESTIONS and judgements[qid].status != "ok"]
    also = f" Also flagged: {_join(others)}." if others else ""
    if not has_questionnaire:
        return Verdict(False, "No questionnaire was given, so nothing shows the quote is sized "
                       "for the streaming regime; only the measurements are judged." + tail)
    missing = [qid for qid in STREAMING_QUESTIONS
               if judgements[qid].status in ("unanswered", "unanswerable")]
    if missing:
        return Verdict(False, f"{who} cannot answer {_join(missing)} with measured numbers, so "
                       "it has sized its quote for a regime the product is leaving (batch / "
                       "request-rate), not for concurrent streams." + also + tail)
    broken = [qid for qid in STREAMING_QUESTIONS if judgements[qid].status == "unreconciled"]
    if broken:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers, but "
                       f"{_join(broken)} do{'es' if len(broken) == 1 else ''} not hold up, so "
                       "the quote is not shown to be sized for the streaming regime until "
                       "reconciled." + also + tail)
    if not measured:
        return Verdict(True, f"{who} answers Q2, Q4 and Q6 with measured numbers that agree with "
                       "each other, so its quote is sized for the streaming regime on its own "
                       "account; no usable probe run has checked them yet." + also + tail)
    return Verdict(True, f"{who} answers Q2, Q4 and Q6 with measured numbers that hold up "
                   "against our measurements, so its quote is sized for the streaming regime."
                   + also + tail)


# ---------------------------------------------------------------- use-case fit

Check = Callable[[Level], tuple[bool | None, str]]


def _limit(name: str, value: float | None, limit: float, fmt: Callable[[float | None], str]
           ) -> tuple[bool | None, str]:
    if value is None:
        return None, f"{name} not measured"
    ok = value <= limit
    return ok, f"{name} {fmt(value)} {'≤' if ok else '>'} {fmt(limit)}"


def _reading(level: Level, tol: Tolerances) -> tuple[bool | None, str]:
    pname = tol.reading_speed_percentile
    tpot = level.tpot_s.get(pname)
    share = f"{PERCENTILE_SHARE[pname] * 100:.0f}%"
    if tpot is None or tpot <= 0:
        return None, f"TPOT {pname} not measured"
    rate = 1 / tpot
    ok = rate >= tol.reading_speed_tokens_per_s
    return ok, (f"{share} of streams {'above' if ok else 'below'} "
                f"{_n(tol.reading_speed_tokens_per_s)} tokens/s (1/TPOT {pname} = "
                f"{fmt_rate(rate)})")


def _no_stalls(level: Level) -> tuple[bool | None, str]:
    """Any stall the prober counted (its threshold is ≥ the profile's gap limit) breaks it."""
    if level.stalls is None:
        return True, ""
    return level.stalls == 0, ("no stalls" if level.stalls == 0 else
                               f"{level.stalls} stall{'s' if level.stalls > 1 else ''}")


def _failures(level: Level, tol: Tolerances) -> tuple[bool | None, str]:
    rate = level.failure_rate
    if rate is None:
        return True, ""
    ok = rate <= tol.max_failure_rate
    return ok, f"{rate * 100:.1f}% failed {'≤' if ok else '>'} {tol.max_failure_rate * 100:g}%"


def _checks(profile: SloProfile, tol: Tolerances) -> list[Check]:
    checks: list[Check] = []
    if profile.ttft_p90_s is not None:
        lim_t = profile.ttft_p90_s
        checks.append(lambda lv: _limit("TTFT p90", lv.ttft_s.p90, lim_t, fmt_s))
    if profile.tpot_p90_s is not None:
        lim_p = profile.tpot_p90_s
        checks.append(lambda lv: _limit("TPOT p90", lv.tpot_s.p90, lim_p, fmt_s))
    if profile.itl_p99_s is not None:
        lim_i = profile.itl_p99_s
        checks.append(lambda lv: _limit("ITL p99", lv.itl_s.p99, lim_i, fmt_s))
        checks.append(_no_stalls)
    if profile.above_reading_speed:
        checks.append(lambda lv: _reading(lv, tol))
    checks.append(lambda lv: _failures(lv, tol))
    return checks


def _streams(n: int) -> str:
    return f"{n} stream{'s' if n != 1 else ''}"


def _ladder(m: Measurements, checks: list[Check], what: str) -> Fit:
    """Climb the measured levels; the profile holds up to the last level that passes."""
    held: tuple[Level, list[str]] | None = None
    for level in m.levels:
        results = ([(None, f"the client was the bottleneck at {_streams(level.concurrency)}")]
                   if level.client_bound else [check(level) for check in checks])
        if any(ok is None for ok, _ in results):
            missing = _join([text for ok, text in results if ok is None])
            if held is None:
                return Fit(None, f"Not measurable at {_streams(level.concurrency)}: {missing}.")
            return Fit(True, f"{_holds(what, held)}; not judged at {level.concurrency}: "
                       f"{missing}.", held[0].concurrency)
        if not all(ok for ok, _ in results):
            failed = _join([text for ok, text in results if not ok])
            if held is None:
                return Fit(False, f"Fails {what} even at {_streams(level.concurrency)}: "
                           f"{failed}.", None)
            return Fit(True, f"{_holds(what, held)}; at {level.concurrency}: {failed}.",
                       held[0].concurrency)
        held = (level, [text for _, text in results if text])
    if held is None:
        return Fit(None, "No measured level to judge.")
    return Fit(True, f"{_holds(what, held, every=True)}.", held[0].concurrency)


def _holds(what: str, held: tuple[Level, list[str]], every: bool = False) -> str:
    notes = f" ({_join(held[1])})" if held[1] else ""
    scope = "at every measured level up to" if every else "up to"
    return f"Holds {what} {scope} {_streams(held[0].concurrency)}{notes}"


def _batch(m: Measurements, tol: Tolerances) -> Fit:
    rated = [lv for lv in m.levels if lv.aggregate_tokens_per_s is not None
             and (lv.failure_rate is None or lv.failure_rate <= tol.max_failure_rate)]
    if not rated:
        return Fit(None, "No aggregate throughput was measured without admission failures.")
    best = max(rated, key=lambda lv: lv.aggregate_tokens_per_s or 0.0)
    return Fit(True, f"No latency limit: peak aggregate {fmt_rate(best.aggregate_tokens_per_s)} "
               f"at {_streams(best.concurrency)}; judge on price and accuracy.", best.concurrency)


def use_case_fit(m: Measurements | None, tol: Tolerances) -> dict[str, Fit]:
    """Each SLO profile judged on the measured levels."""
    out: dict[str, Fit] = {}
    for name, profile in tol.slo_profiles.items():
        if m is None:
            out[name] = Fit(None, "Not measured: no probe run was given.")
        elif m.client_bound:
            out[name] = Fit(None, "Not judged: the client was the bottleneck of the run.")
        elif profile.throughput_only:
            out[name] = _batch(m, tol)
        else:
            out[name] = _ladder(m, _checks(profile, tol), f"the {profile.label} limits")
    return out


def streams_at_reading_speed(m: Measurements | None, tol: Tolerances) -> Fit:
    """Highest measured concurrency at which nearly every stream stays above reading speed."""
    if m is None:
        return Fit(None, "Not measured: no probe run was given.")
    if m.client_bound:
        return Fit(None, "Not judged: the client was the bottleneck of the run.")
    checks: list[Check] = [lambda lv: _reading(lv, tol), lambda lv: _failures(lv, tol)]
    return _ladder(m, checks, "reading speed")


# ------------------------------------------------------------------------ review


def reconcile(questionnaire: Questionnaire | None, summary: Mapping[str, Any] | None,
              tol: Tolerances | None = None) -> Review:
    """The whole judgement: questions, verdict, use-case fit, streams at reading speed."""
    tol = tol or Tolerances()
    m = measurements(summary)
    judgements = judge_questions(questionnaire, m, tol)
    client_bound = bool(m and m.client_bound)
    return Review(
        judgements=judgements,
        verdict=verdict(judgements, questionnaire.vendor if questionnaire else None,
                        questionnaire is not None, client_bound, _usable(m) is not None),
        use_cases=use_case_fit(m, tol),
        reading_speed=streams_at_reading_speed(m, tol),
        has_questionnaire=questionnaire is not None,
        has_measurements=m is not None,
        client_bound=client_bound,
    )
