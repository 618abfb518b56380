"""The reconciliation engine: a questionnaire and a summary in, judgements out. No I/O.

Each question gets one status (SPEC), and a green mark is earned only by evidence:

    ok            answered with numbers, checked against our measurement in the regime
                  the claim names (its concurrency reached, its model and endpoint
                  probed, the run valid and not client-bound there), within tolerance
    unverified    consistent numbers this run could not check; the reason names the
                  run that would (a claims-only review, a level not reached, ...)
    unanswered    missing or empty
    unanswerable  answered, but not with measured numbers
    unreconciled  numbers that disagree with our measurement or with each other

Beside the status, `finding` is "gap" where an honest answer reveals that the endpoint
does not serve the streaming regime (Q5 request-level or no observability, Q3 one
blended price, Q4 a limit below the concurrency sold). Claims are checked one-sidedly:
a claim holds when our measurement is at least as good within tolerance (a vendor that
under-promises is not flagged).

    review = reconcile(questionnaire, summary, Tolerances(), RunTarget(model, url))
    review.judgements["Q1"].status, review.verdict.text, review.use_cases["batch"].fit
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from evalkit.fmt import fmt_s
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.intervals import samples_for
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
    disorders,
)
from evalkit.summary import Level, Pct, Summary, as_count, as_mapping, as_text, measurements
from evalkit.tolerances import PERCENTILE_SHARE, SloProfile, Tolerances

Status = Literal["ok", "unverified", "unanswered", "unanswerable", "unreconciled"]
STATUSES: tuple[Status, ...] = ("ok", "unverified", "unanswered", "unanswerable",
                                "unreconciled")
Finding = Literal["gap"]

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
    #: "gap" when an honest answer shows the endpoint does not serve the streaming regime
    finding: Finding | None = None


@dataclass(frozen=True)
class Fit:
    """Whether the endpoint fits a use case; `fit` is None when it was not measurable."""

    fit: bool | None
    reason: str
    #: highest measured concurrency at which the profile held (None: not even the first)
    max_concurrency: int | None = None
    #: it held at every level tried: `max_concurrency` is a lower bound, not a limit
    lower_bound: bool = False


@dataclass(frozen=True)
class Verdict:
    """Whether the quote is sized for the streaming regime, in one or two sentences."""

    streaming_ready: bool
    text: str


@dataclass(frozen=True)
class RunTarget:
    """What the run probed (from run.json), to hold against what the questionnaire names."""

    model: str | None = None
    endpoint: str | None = None
    #: the model and endpoint this run stood in for (the demo's reference endpoint)
    stands_in_for: Mapping[str, Any] | None = None
    #: the suite profile (quick / standard / a file)
    profile: str | None = None

    @classmethod
    def from_run(cls, run: Mapping[str, Any] | None) -> RunTarget | None:
        """From a run.json dict, read defensively; None without one."""
        if not isinstance(run, Mapping):
            return None
        target = as_mapping(run.get("target"))
        stand = as_mapping(run.get("stands_in_for")) or None
        profile = run.get("profile")
        return cls(as_text(target.get("model")), as_text(target.get("base_url")), stand,
                   as_text(profile))


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
    #: valid | degraded | invalid | unknown (no run: None)
    run_validity: str | None = None
    run_validity_reasons: tuple[str, ...] = ()
    #: why the questionnaire's model/endpoint and the run's do not match (None: they do)
    target_mismatch: str | None = None


# ----------------------------------------------------------------- measured side


def same_endpoint(a: str, b: str) -> bool:
    """Two base URLs name one endpoint: scheme and host case, default ports and a trailing
    slash aside."""
    def norm(url: str) -> tuple[str, str, int | None, str]:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        try:
            port = parts.port or {"http": 80, "https": 443}.get(scheme)
        except ValueError:
            port = None
        return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")
    return norm(a) == norm(b)


def target_mismatch(q: Questionnaire | None, run: RunTarget | None) -> str | None:
    """Why the run cannot stand for the model and endpoint the questionnaire names."""
    if q is None or run is None:
        return None
    probed = run.stands_in_for or {"model": run.model, "endpoint": run.endpoint}
    model, endpoint = as_text(probed.get("model")), as_text(probed.get("endpoint"))
    problems = []
    if not model or not endpoint:
        problems.append("the run does not say which model and endpoint it probed")
    if not q.model or not q.endpoint:
        missing = _join([w for w, v in (("model", q.model), ("endpoint", q.endpoint)) if not v])
        problems.append(f"the questionnaire does not name its {missing}, so the run cannot be "
                        "tied to its claims")
    if q.model and model and q.model.strip() != model:
        problems.append(f"the run probed model {_quote(model, 60)}, the questionnaire names "
                        f"{_quote(q.model, 60)}")
    if q.endpoint and endpoint and not same_endpoint(q.endpoint, endpoint):
        problems.append(f"the run probed {_quote(endpoint, 80)}, the questionnaire names "
                        f"{_quote(q.endpoint, 80)}")
    return "; ".join(problems) or None


@dataclass(frozen=True)
class Evidence:
    """The measurements and, when they cannot verify a claim, why not (and what would)."""

    m: Summary | None
    #: why no measured judgement can be drawn at all, with the run that would verify it
    blocker: str | None = None
    #: the probe command that would verify the questionnaire's claims (`probe_command`)
    command: str = "evalkit probe --questionnaire FILE"

    @property
    def usable(self) -> Summary | None:
        """The measurements, when a claim may be judged against them."""
        return None if self.blocker else self.m


def probe_command(q: Questionnaire | None) -> str:
    """The command that probes what `q` claims: its endpoint and model, planned from it."""
    if q is None:
        return "evalkit probe --base-url URL --model MODEL"
    name = q.path.replace("\\", "/").rsplit("/", 1)[-1] if q.path else "FILE"
    return (f"evalkit probe --base-url {_quote(q.endpoint, 80) or 'URL'} --model "
            f"{_quote(q.model, 60) or 'MODEL'} --questionnaire {_quote(name, 60)}")


def run_blocker(m: Summary | None,
                command: str = "evalkit probe --base-url URL --model MODEL") -> str | None:
    """Why this run supports no measured judgement (None: it does)."""
    if m is None:
        return (f"this is a claims-only review: no probe run was given (run `{command} --out "
                "DIR` and report with --run DIR)")
    if m.validity == "invalid":
        why = f" ({_quote(m.validity_reasons[0], 160)})" if m.validity_reasons else ""
        return (f"the run is invalid{why}, so it verifies nothing; fix the endpoint or the "
                "probe's options and re-run it")
    if m.validity == "unknown":
        return ("the run's summary states no validity (an older evalkit wrote it); re-run the "
                "probe with this version")
    if m.client_bound:
        return ("our run was client-bound where the capacity judgement is drawn, so it "
                "supports none; re-run from a bigger client or on Ray (--ray)")
    return None


# ------------------------------------------------------------------------ format


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


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


_SOURCE_WORDS = {"lab": "from a lab benchmark", "estimate": "as an estimate",
                 None: "without saying where it was measured"}


def _blank(answer: Answer) -> bool:
    return not answer.to_dict()


def _dist_numbers(d: Distribution | None) -> list[float]:
    return [v for v in (d.p50, d.p90, d.p99) if v is not None] if d else []


def _dist_dict(p: Pct) -> dict[str, Any] | None:
    out = {k: v for k, v in asdict(p).items() if v is not None}
    return out or None


def _at_most(rel: float, name: str) -> str:
    """A one-sided tolerance on a latency: ours may be at most this much above the claim."""
    return f"one-sided: measured ≤ claimed × {1 + rel:g} ({name} {rel * 100:.0f}%)"


def _at_least(rel: float, name: str) -> str:
    """A one-sided tolerance on a rate: ours may fall at most this share short of the claim."""
    return f"one-sided: measured ≥ claimed × {1 - rel:g} ({name} {rel * 100:.0f}%)"


def _levels_for(c: int) -> str:
    """Ramp levels that bracket a claimed concurrency: below, at and one above."""
    return ",".join(str(x) for x in sorted({max(1, c // 2), c, 2 * c}))


def rerun_for(c: int, command: str | None = None) -> str:
    """What would measure a claim made at `c` streams: the questionnaire's own plan (it
    brackets every claimed level), with the cap raised past `c`."""
    if command is None:
        return f"re-run the probe with --levels {_levels_for(c)}"
    return f"re-run `{command} --max-concurrency {2 * c} --out DIR`"


#: a level's check: (holds? None when it cannot tell, what we measured, the outcome)
Check = Callable[["Level"], tuple[bool | None, str]]
#: how a measurement stands against a limit once its 95 % interval is taken into account
Decision = Literal["holds", "fails", "undecided"]
#: a claim's check at one level: (decision, None when the level has no such figure;
#: what we measured; the outcome in words)
LevelCheck = Callable[["Level"], tuple[Decision | None, str, str]]
_Q = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


def decide(value: float, interval: tuple[float | None, float | None] | None, limit: float,
           *, at_most: bool, n: int | None, q: float | None,
           fmt: Callable[[float | None], str]) -> tuple[Decision, str]:
    """Does a measurement hold a one-sided limit? `ok` only when its whole 95 % interval
    does, `fails` only when the whole interval is beyond it; straddling is undecided, with
    about how many samples would decide it. Without an interval (a summary written before
    intervals), the point decides, as it did then."""
    if interval is None:
        return ("holds" if (value <= limit if at_most else value >= limit) else "fails"), ""
    lo, hi = interval
    # the end of the interval nearest the limit's bad side decides a hold, the far end
    # decides a failure
    near, far = (hi, lo) if at_most else (lo, hi)
    if near is not None and (near <= limit if at_most else near >= limit):
        return "holds", ""
    if far is not None and (far > limit if at_most else far < limit):
        return "fails", ""
    if lo is None or hi is None:
        need = f"at least {samples_for(q)}" if q is not None else "more"
    else:
        gap = abs(value - limit)
        need = (f"about {math.ceil((n or 1) * ((hi - lo) / 2 / gap) ** 2)}" if gap > 0
                else "many more")
    shown = "–".join(fmt(v) if v is not None else "unbounded" for v in (lo, hi))
    return "undecided", (f"not enough evidence: n = {n}, 95 % interval {shown} straddles "
                         f"the limit {fmt(limit)}; {need} requests there would decide it")


def _in_regime(m: Summary, c: int, check: LevelCheck, command: str | None = None
               ) -> tuple[Status, Level | None, str]:
    """Judge a claim made at `c` streams where it was made, or where the run's levels
    still decide it: a claim already broken at fewer streams cannot hold at more, and one
    that holds at more streams holds at fewer (load only makes latency and per-stream
    rates worse). Anything else is unverified, with the levels that would decide it.

    Returns the status, the level it rests on and the end of a sentence that begins
    "Claimed ... " (e.g. "vs measured 330 ms at 16 streams: holds").
    """
    usable = [lv for lv in m.levels if not lv.client_bound]
    exact = next((lv for lv in usable if lv.concurrency == c), None)
    undecided: tuple[Level, str] | None = None
    if exact is not None:
        state, got, outcome = check(exact)
        if state in ("holds", "fails"):
            return (("ok" if state == "holds" else "unreconciled"), exact,
                    f"vs {got} at {c}: {outcome}")
        if state == "undecided":
            undecided = (exact, f"vs {got} at {c}: {outcome}")
    below = [lv for lv in usable if lv.concurrency < c]
    if below:
        state, got, outcome = check(below[-1])
        if state == "fails":
            return ("unreconciled", below[-1], f"vs {got} already at {below[-1].concurrency} "
                    f"streams, fewer than claimed: {outcome}")
    above = [lv for lv in usable if lv.concurrency > c]
    if above:
        state, got, outcome = check(above[0])
        if state == "holds":
            return ("ok", above[0], f"vs {got} even at {above[0].concurrency} streams, more "
                    f"than claimed: {outcome}")
    if undecided is not None:
        return "unverified", undecided[0], undecided[1]
    reached = (f"the run's levels stop at {m.top}" if m.top is not None and m.top < c
               else f"the run measured no level that decides {c} streams")
    return ("unverified", None,
            f"is consistent; not verified: {reached}; {rerun_for(c, command)}")


# ---------------------------------------------------------------- the questions


def judge_q1(a: TtftAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """TTFT p50/p90 under load vs our TTFT at the claimed concurrency."""
    tolerance = _at_most(tol.ttft_rel, "ttft_rel")

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
    claim = f"TTFT {said} at {c} streams"
    if ev.usable is None:
        return j("unverified", f"{claim} is internally consistent; not verified: {ev.blocker}.")

    def check(level: Level) -> tuple[Decision | None, str, str]:
        if level.mostly_failed:
            return "fails", "a level where most requests failed", "it does not hold"
        pairs = {k: (claims[k], v) for k in claims if (v := level.ttft_s.get(k)) is not None}
        if not pairs:
            return None, "", ""
        decided = {k: decide(v, level.ttft_s.interval(k), cl / 1000 * (1 + tol.ttft_rel),
                             at_most=True, n=level.ttft_s.n, q=_Q[k], fmt=fmt_s)
                   for k, (cl, v) in pairs.items()}
        order = {"fails": 0, "undecided": 1, "holds": 2}
        key = min(pairs, key=lambda k: (order[decided[k][0]],
                                        -(pairs[k][1] * 1000 / pairs[k][0])
                                        if pairs[k][0] else -math.inf))
        claimed_ms, meas_s = pairs[key]
        state, why = decided[key]
        ratio = meas_s * 1000 / claimed_ms if claimed_ms else math.inf
        outcome = {"holds": "holds", "fails": f"{_times(ratio)} slower", "undecided": why}
        return state, f"measured {key} {fmt_s(meas_s)}", outcome[state]

    status, level, text = _in_regime(ev.usable, c, check, ev.command)
    shown = None if level is None else {
        "concurrency": level.concurrency, **{f"ttft_{k}_ms": round(v * 1000, 1) for k in claims
                                              if (v := level.ttft_s.get(k)) is not None}}
    return j(status, f"Claimed {claim} {text}.", shown)


def judge_q2(a: ThroughputAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Per-GPU throughput at the concurrency sold vs measured per-stream and aggregate rates."""
    tolerance = _at_least(tol.throughput_rel, "throughput_rel")

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
                 f"of its own production distribution ({_n(max(dist))}) by more than "
                 f"{tol.throughput_rel * 100:.0f}% (throughput_rel).")
    if a.gpus is None:
        return j("unanswerable", f"{_n(v)} tokens/s per GPU at {c} streams is given without "
                 "the GPU count behind the endpoint, so it cannot be set against what the "
                 "endpoint delivers.")
    aggregate = v * a.gpus
    per_stream = aggregate / c
    claim = (f"{_n(v)} tokens/s per GPU × {a.gpus} GPU{'s' if a.gpus > 1 else ''} at {c} "
             f"streams ({fmt_rate(per_stream)} per stream, {fmt_rate(aggregate)} aggregate)")
    if ev.usable is None:
        return j("unverified", f"{claim} sits within its own production distribution "
                 f"({'/'.join(map(_n, dist))}); not verified: {ev.blocker}.")
    floor = 1 - tol.throughput_rel

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
        decided = [decide(meas, ci, claimed * floor, at_most=False, n=n, q=q, fmt=fmt_rate)
                   for _, claimed, meas, ci, n, q in got]
        said = " and ".join(f"{fmt_rate(meas)} {name}" for name, _, meas, *_ in got)
        if any(d == "fails" for d, _ in decided):
            worst = min((g for g, (d, _) in zip(got, decided, strict=True) if d == "fails"),
                        key=lambda t: t[2] / t[1] if t[1] else math.inf)
            short = worst[1] / worst[2] if worst[2] else math.inf
            return "fails", f"measured {said}", f"{_times(short)} short {worst[0]}"
        unsure = [why for d, why in decided if d == "undecided"]
        if unsure:
            return "undecided", f"measured {said}", unsure[0]
        return "holds", f"measured {said}", "holds"

    status, level, text = _in_regime(ev.usable, c, check, ev.command)
    shown = None if level is None else {
        "concurrency": level.concurrency,
        "stream_tokens_per_s_p50": level.stream_tokens_per_s.p50,
        "aggregate_tokens_per_s": level.aggregate_tokens_per_s}
    return j(status, f"Claimed {claim} {text}.", shown)


def judge_q3(a: PricingAnswer, ev: Evidence, tol: Tolerances) -> Judgement:
    """Separate input/output prices and a capacity model that names prefill and decode."""
    tolerance = _at_least(tol.rate_rel, "rate_rel")

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None,
          finding: Finding | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance, finding)

    if _blank(a):
        return j("unanswered", "Q3 is not answered: no prices or capacity model were given.")
    cur = f" {_quote(a.currency, 12)}" if a.currency else ""
    if a.input_price_per_mtok is None or a.output_price_per_mtok is None:
        if a.blended_price_per_mtok is not None:
            return j("unanswerable", f"Only a single blended price "
                     f"({_price(a.blended_price_per_mtok)}"
                     f"{cur} per million tokens) is given, so prefill and decode costs cannot be "
                     "told apart.", finding="gap")
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
    floor = 1 - tol.rate_rel
    decided = {name: decide(got, cis[name], cl * floor, at_most=False,
                            n=m.prefill_lengths if name == "prefill" else
                            decode.n if decode else None,
                            q=None if name == "prefill" else 0.5, fmt=fmt_rate)
               for name, cl, got in checks}
    short = [(name, cl / got) for name, cl, got in checks if decided[name][0] == "fails"]
    if short:
        name, ratio = max(short, key=lambda t: t[1])
        return j("unreconciled", f"{head}: {name} {_times(ratio)} short.", shown)
    if "prefill" in unmeasured and m.prefill_at_least is not None:
        return j("unverified", f"{head}; not verified: this run saw no measurable prefill "
                 f"cost (above {fmt_rate(m.prefill_at_least)}, the fit's slope could be "
                 "zero), which confirms no claimed rate; probe with longer prompts "
                 "(--profile standard).", shown)
    if unmeasured:
        return j("unverified", f"{head}; not verified: the run did not measure the "
                 f"{_join(unmeasured)} rate (run the prefill and baseline phases).", shown)
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
    tolerance = (f"one-sided: claimed ≤ breaking level × {1 + tol.concurrency_rel:g} "
                 f"(concurrency_rel {tol.concurrency_rel * 100:.0f}%)")

    def j(status: Status, reason: str, measured: dict[str, Any] | None = None) -> Judgement:
        return Judgement(status, reason, a.to_dict(), measured, tolerance, gap)

    gap: Finding | None = None
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
    if claimed > limit * (1 + tol.concurrency_rel):
        problems.append(f"the claim is {_times(claimed / limit)} the level at which it broke")
    # a tie below the breach may be where it really broke, on one of the tied metrics
    firsts = {mu.first_degraded, *(tie.ties if tie is not None else ())}
    if first not in firsts:
        problems.append(f"{_metric(mu.first_degraded)}, not {_metric(first)}, degraded first")
    if problems:
        return j("unreconciled", f"{head}: {_join(problems)}{gap_text}.", shown)
    if tie is not None and (claimed > tie.concurrency * (1 + tol.concurrency_rel)
                            or firsts != {first}):
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
    what = _join([_metric(t) for t in tie.ties]) or "a limit"
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
                 "per-stream rhythm cannot be audited from its side.", "gap")
    if not (a.export or a.metrics_url):
        return j("unanswerable", f"Q5 says {a.observability} but not how it is exported, so we "
                 "cannot read it.")
    how = _quote(a.export or a.metrics_url, 120)
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
    url = _quote(str((vm or {}).get("url") or claimed_url or "URL"), 120)
    if vm is None or ev.m is None or ev.m.validity in ("invalid", "unknown"):
        why = (ev.blocker if ev.m is None or ev.m.validity in ("invalid", "unknown") else
               f"the run did not scrape it: re-run the probe with --metrics-url {url}")
        return j("unverified", f"{said}; not verified: {why}.")
    if not as_count(vm.get("scrapes_ok")):
        errors = vm.get("scrape_errors") or ["no scrape answered"]
        return j("unverified", f"{said}; not verified: the scrape of {url} failed "
                 f"({_quote(str(errors[0]), 120)}); re-run with a --metrics-url the probe "
                 "can reach.")
    families = as_mapping(vm.get("families"))
    itl = _quote(str(families.get("itl") or ""), 80)
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
    other = _quote(str(families.get("tpot_req") or ""), 80)
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
    if a.output_tokens_per_s is not None and _dist_numbers(a.output_tokens_per_s):
        claimed["panel"] = claimed.get("output_tokens_per_s")
    m = ev.usable
    base = m.baseline if m and m.baseline and not m.baseline.client_bound else None
    ours: dict[str, Any] | None = (
        {"baseline_stream_tokens_per_s": _dist_dict(base.stream_tokens_per_s)} if base else None)
    top = next((lv for lv in m.levels if lv.concurrency == m.max_sustained), None) if m else None
    if top is not None:
        ours = ours or {}
        ours[f"stream_tokens_per_s_at_{top.concurrency}"] = _dist_dict(top.stream_tokens_per_s)
    our_p50 = base.stream_tokens_per_s.p50 if base else None
    beside = (f"; we measured {fmt_rate(our_p50)} per stream (p50) with one stream" if our_p50
              else "")

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
        agreed = (f"The production panel ({window}) is given and there is no headline figure "
                  "to reconcile it with")
    elif p50 is None or headline_unit not in (None, "output_tokens_per_s"):
        basis = ("the panel has no per-request p50" if p50 is None
                 else f"the headline is in {headline_unit}, the panel per request")
        if not written:
            return j("unreconciled", f"Headline {_n(headline_value)} and the panel cannot be "
                     f"compared ({basis}) and no written reconciliation bridges them{beside}.")
        agreed = (f"Headline {_n(headline_value)} and the panel cannot be divided ({basis}), "
                  "and a written reconciliation is given")
    else:
        ratio = headline_value / p50 if p50 else math.inf
        head = (f"Headline {_n(headline_value)} tokens/s is {ratio:.1f}× the production "
                f"panel's median {_n(p50)} tokens/s ({window}; limit "
                f"{tol.headline_panel_ratio:g}× without a written reconciliation)")
        if ratio > tol.headline_panel_ratio and not written:
            return j("unreconciled", f"{head}, and no written reconciliation is given{beside}.")
        agreed = head + (": within the limit" if ratio <= tol.headline_panel_ratio
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
    said = _join(found)
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


# ----------------------------------------------------------------------- verdict


def verdict(judgements: Mapping[str, Judgement], vendor: str | None,
            has_questionnaire: bool = True, validity: str | None = "valid",
            validity_reasons: tuple[str, ...] = ()) -> Verdict:
    """Streaming-ready only when Q2, Q4 and Q6 are `ok` (verified) on a valid run.

    `validity` is the run's (None: no run, a claims-only review, which at best reads
    "complete and consistent, not verified").
    """
    who = vendor or "The vendor"
    others = [f"{qid} {judgements[qid].status}" for qid in QUESTION_IDS
              if qid not in STREAMING_QUESTIONS and judgements[qid].status != "ok"]
    gaps = [qid for qid in QUESTION_IDS if judgements[qid].finding == "gap"]
    also = (f" Also flagged: {_join(others)}." if others else "") + (
        f" Gaps found: {_join(gaps)}." if gaps else "")
    if validity == "invalid":
        why = f" ({_quote(validity_reasons[0], 200)})" if validity_reasons else ""
        return Verdict(False, f"RUN INVALID{why}: the run measured nothing a judgement can rest "
                       "on, so no claim is verified and no verdict is drawn from it." + also)
    if not has_questionnaire:
        return Verdict(False, "No questionnaire was given, so nothing shows the quote is sized "
                       "for the streaming regime; only the measurements are judged.")
    trio = {qid: judgements[qid].status for qid in STREAMING_QUESTIONS}
    missing = [qid for qid, st in trio.items() if st in ("unanswered", "unanswerable")]
    if missing:
        return Verdict(False, f"{who} cannot answer {_join(missing)} with measured numbers, so "
                       "it has sized its quote for a regime the product is leaving (batch / "
                       "request-rate), not for concurrent streams." + also)
    broken = [qid for qid, st in trio.items() if st == "unreconciled"]
    if broken:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers, but "
                       f"{_join(broken)} do{'es' if len(broken) == 1 else ''} not hold up, so "
                       "the quote is not shown to be sized for the streaming regime until "
                       "reconciled." + also)
    unverified = [qid for qid, st in trio.items() if st == "unverified"]
    if validity is None:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with measured numbers that are "
                       "complete and consistent, but this is a claims-only review: not verified, "
                       "so not shown streaming-ready until a probe run checks them." + also)
    if unverified:
        return Verdict(False, f"{who} answers Q2, Q4 and Q6 with consistent numbers, but this "
                       f"run could not verify {_join(unverified)}, so it is not shown "
                       "streaming-ready; each reason says which run would verify it." + also)
    if validity != "valid":
        why = f" ({_quote(validity_reasons[0], 200)})" if validity_reasons else ""
        return Verdict(False, f"{who}'s answers to Q2, Q4 and Q6 hold up, but the run is "
                       f"{validity}{why}, so no verdict of readiness is drawn from it; re-run "
                       "the probe." + also)
    return Verdict(True, f"{who} answers Q2, Q4 and Q6 with measured numbers that hold up "
                   "against our measurements, so its quote is sized for the streaming regime."
                   + also)


# ---------------------------------------------------------------- use-case fit


def _limit(name: str, pct: Pct, pname: str, limit: float, q: float,
           fmt: Callable[[float | None], str]) -> tuple[bool | None, str]:
    """A percentile against an upper limit, on its 95 % interval (`decide`): a straddle
    decides nothing (None), and says how many requests would."""
    value = pct.get(pname)
    if value is None:
        return None, f"{name} not measured"
    state, why = decide(value, pct.interval(pname), limit, at_most=True, n=pct.n, q=q, fmt=fmt)
    if state == "undecided":
        return None, f"{name} {why}"
    ok = state == "holds"
    return ok, f"{name} {fmt(value)} {'≤' if ok else '>'} {fmt(limit)}"


def _reading(level: Level, tol: Tolerances) -> tuple[bool | None, str]:
    pname = tol.reading_speed_percentile
    tpot = level.tpot_s.get(pname)
    share = f"{PERCENTILE_SHARE[pname] * 100:.0f}%"
    if tpot is None or tpot <= 0:
        return None, f"TPOT {pname} not measured"
    rate = 1 / tpot
    ci = level.tpot_s.interval(pname)  # a slow TPOT end is a slow rate end
    rate_ci = None if ci is None else (
        None if ci[1] is None or ci[1] <= 0 else 1 / ci[1],
        None if ci[0] is None or ci[0] <= 0 else 1 / ci[0])
    state, why = decide(rate, rate_ci, tol.reading_speed_tokens_per_s, at_most=False,
                        n=level.tpot_s.n, q=_Q.get(pname), fmt=fmt_rate)
    if state == "undecided":
        return None, f"1/TPOT {pname} {why}"
    ok = state == "holds"
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
    ci = level.failure_ci
    if rate > tol.max_failure_rate and ci is not None and ci[0] is not None \
            and ci[0] <= tol.max_failure_rate:  # as the ramp: above, but not surely
        return None, (f"not enough evidence: {rate * 100:.1f}% of {level.requests} failed, "
                      f"95 % interval {ci[0] * 100:.1f}–{(ci[1] or 1) * 100:.1f}% straddles "
                      f"{tol.max_failure_rate * 100:g}%")
    ok = rate <= tol.max_failure_rate
    return ok, f"{rate * 100:.1f}% failed {'≤' if ok else '>'} {tol.max_failure_rate * 100:g}%"


def _checks(profile: SloProfile, tol: Tolerances) -> list[Check]:
    checks: list[Check] = []
    if profile.ttft_p90_s is not None:
        lim_t = profile.ttft_p90_s
        checks.append(lambda lv: _limit("TTFT p90", lv.ttft_s, "p90", lim_t, 0.9, fmt_s))
    if profile.tpot_p90_s is not None:
        lim_p = profile.tpot_p90_s
        checks.append(lambda lv: _limit("TPOT p90", lv.tpot_s, "p90", lim_p, 0.9, fmt_s))
    if profile.itl_p99_s is not None:
        lim_i = profile.itl_p99_s
        checks.append(lambda lv: _limit("ITL p99", lv.itl_s, "p99", lim_i, 0.99,
                                             fmt_s))
        checks.append(_no_stalls)
    if profile.above_reading_speed:
        checks.append(lambda lv: _reading(lv, tol))
    checks.append(lambda lv: _failures(lv, tol))
    return checks


def _streams(n: int) -> str:
    return f"{n} stream{'s' if n != 1 else ''}"


def _ladder(m: Summary, checks: list[Check], what: str) -> Fit:
    """Climb the measured levels; the profile holds up to the last level that passes."""
    held: tuple[Level, list[str]] | None = None
    for level in m.levels:
        results = ([(None, f"the client was the bottleneck at {_streams(level.concurrency)}")]
                   if level.client_bound else [check(level) for check in checks])
        if any(ok is None for ok, _ in results):
            missing = _join([text for ok, text in results if ok is None])
            if held is None:
                # a straddling interval is a tie: never a pass, and it says what would decide
                word = ("Not decided" if "not enough evidence" in missing else
                        "Not measurable")
                return Fit(None, f"{word} at {_streams(level.concurrency)}: {missing}.")
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
    return Fit(True, f"{_holds(what, held, every=True)}; not tried above "
               f"{held[0].concurrency}, so that is a lower bound.", held[0].concurrency,
               lower_bound=True)


def _holds(what: str, held: tuple[Level, list[str]], every: bool = False) -> str:
    notes = f" ({_join(held[1])})" if held[1] else ""
    scope = "at every level tried, up to" if every else "up to"
    return f"Holds {what} {scope} {_streams(held[0].concurrency)}{notes}"


def _batch(m: Summary, tol: Tolerances) -> Fit:
    rated = [lv for lv in m.levels if lv.aggregate_tokens_per_s is not None
             and (lv.failure_rate is None or lv.failure_rate <= tol.max_failure_rate)]
    if not rated:
        return Fit(None, "No aggregate throughput was measured without admission failures.")
    best = max(rated, key=lambda lv: lv.aggregate_tokens_per_s or 0.0)
    return Fit(True, f"No latency limit: peak aggregate {fmt_rate(best.aggregate_tokens_per_s)} "
               f"at {_streams(best.concurrency)}; judge on price and accuracy.", best.concurrency)


def use_case_fit(m: Summary | None, tol: Tolerances) -> dict[str, Fit]:
    """Each SLO profile judged on the measured levels (of a run that supports judgement)."""
    out: dict[str, Fit] = {}
    blocker = run_blocker(m)
    for name, profile in tol.slo_profiles.items():
        if m is None or blocker:
            out[name] = Fit(None, f"Not judged: {blocker}.")
        elif profile.throughput_only:
            out[name] = _batch(m, tol)
        else:
            out[name] = _ladder(m, _checks(profile, tol), f"the {profile.label} limits")
    return out


def streams_at_reading_speed(m: Summary | None, tol: Tolerances) -> Fit:
    """Highest measured concurrency at which nearly every stream stays above reading speed."""
    blocker = run_blocker(m)
    if m is None or blocker:
        return Fit(None, f"Not judged: {blocker}.")
    checks: list[Check] = [lambda lv: _reading(lv, tol), lambda lv: _failures(lv, tol)]
    return _ladder(m, checks, "reading speed")


# ------------------------------------------------------------------------ review


def reconcile(questionnaire: Questionnaire | None, summary: Mapping[str, Any] | None,
              tol: Tolerances | None = None, run: RunTarget | None = None) -> Review:
    """The whole judgement: questions, verdict, use-case fit, streams at reading speed.

    `run` says what the run probed; with a summary but no `run`, the run cannot be tied
    to the questionnaire's model and endpoint, and every measured claim is unverified.
    """
    tol = tol or Tolerances()
    m = measurements(summary) if summary is not None else None
    if summary is not None and m is None:  # a summary with nothing measured in it
        m = Summary((), None, None, None, None, False, validity="invalid",
                         validity_reasons=("the summary holds no measured level",))
    mismatch = target_mismatch(questionnaire, run or RunTarget()) if m is not None else None
    command = probe_command(questionnaire)
    blocker = run_blocker(m, command) or (
        f"{mismatch}; re-run `{command} --out DIR` against the model and endpoint the "
        "questionnaire names" if mismatch else None)
    judgements = judge_questions(questionnaire, Evidence(m, blocker, command), tol)
    return Review(
        judgements=judgements,
        verdict=verdict(judgements, questionnaire.vendor if questionnaire else None,
                        questionnaire is not None, m.validity if m else None,
                        m.validity_reasons if m else ()),
        use_cases=use_case_fit(m, tol),
        reading_speed=streams_at_reading_speed(m, tol),
        has_questionnaire=questionnaire is not None,
        has_measurements=m is not None,
        client_bound=bool(m and m.client_bound),
        run_validity=m.validity if m else None,
        run_validity_reasons=m.validity_reasons if m else (),
        target_mismatch=mismatch,
    )
