"""Probe what was claimed: a questionnaire read as a test plan. Pure: claims in, plan out.

A claim is checked only where it was made (evalkit.review.reconcile): a TTFT "at 64 streams"
needs a ramp level at 64, and a p90 from 10 samples verifies little. `plan_probe` turns
the questionnaire's claims into ramp levels that bracket each claimed concurrency
(below, at, one above), a request floor at each claimed level sized for the percentile
claimed, the claimed prompt length, and the soak at the concurrency sold; it says which
claims the run cannot reach (a --max-concurrency cap, the client's ceiling, a budget)
before anything is sent.

How many samples a percentile needs, distribution-free: the smallest n for which the
order statistics bound the q-quantile on both sides with at most 2.5 % in each tail
(evalkit.analysis.intervals), i.e. q^n <= 0.025 and (1-q)^n <= 0.025. p50 needs 6, p90 36, p99
368. Fewer samples cannot bound the percentile from above at all, however they fall.

Sized for a width (`probe --interval-width POINTS`): the interval's ends are order
statistics, so its width *in quantile terms* ((u - l) / n, `intervals.quantile_width`)
depends on n alone, and a level can be sized before anything is sent. A width of 5
points on a p90 means its interval runs from about the p87.5 to the p92.5 of what was
measured: 561 requests (2 points: 3,500; a p99 at 1 point: 1,600). What that width is in
milliseconds depends on the endpoint's spread there, and is printed after the run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalkit.analysis.intervals import quantile_width, samples_for
from evalkit.analysis.jsonread import Json
from evalkit.questionnaire.model import Questionnaire

#: concurrent streams one client process holds within timing accuracy on the machine
#: bench/bench_prober.py was run on (2 cores), over plain HTTP: beyond it, the run would
#: be client-bound
CLIENT_STREAMS_PER_PROCESS = 256
#: the same over HTTPS, where every chunk is a TLS record the client decrypts: its CPU a
#: chunk against plain HTTP's at 256 streams (bench/bench_tls.py, docs/benchmarks.md, the
#: eighth look) shrinks the streams one process holds in proportion
CLIENT_STREAMS_PER_PROCESS_TLS = 224


def client_streams_per_process(base_url: str) -> int:
    """One client process's ceiling for this endpoint: lower over HTTPS (every vendor's
    scheme), where a chunk costs the client a TLS record's decryption too."""
    if base_url.strip().lower().startswith("https:"):
        return CLIENT_STREAMS_PER_PROCESS_TLS
    return CLIENT_STREAMS_PER_PROCESS


@dataclass(frozen=True)
class Claim:
    """One claimed concurrency and what checking it takes."""

    question: str
    concurrency: int
    #: the highest percentile the answer claims there (p50, p90, p99)
    percentile: str
    #: the ramp levels that bracket it: below, at, one above
    levels: tuple[int, ...]
    #: requests the claimed level needs for that percentile
    min_requests: int
    reachable: bool = True
    why_not: str | None = None


@dataclass(frozen=True)
class Plan:
    """What the run will do to verify the questionnaire, and what it cannot verify."""

    levels: tuple[int, ...]
    max_concurrency: int
    #: request floor per claimed level (other levels run for the profile's duration)
    min_requests: dict[int, int]
    claims: tuple[Claim, ...]
    prompt_tokens: int | None = None
    soak_concurrency: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: the interval width every level was sized for (None: only the claims' floors)
    interval_width: float | None = None
    #: what a level counts: streams, or a voice run's calls
    unit: str = "streams"

    @property
    def unreachable(self) -> list[Claim]:
        """Claims the run cannot reach, each with the reason."""
        return [c for c in self.claims if not c.reachable]

    def to_dict(self) -> dict[str, Json]:
        """Plain data for run.json: which claim asked for which level."""
        d = asdict(self)
        d["min_requests"] = {str(k): v for k, v in self.min_requests.items()}
        return d


#: percentile names and their quantiles
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
#: the percentile every ramp level is judged on (the breach rule, evalkit.analysis.summarize)
RAMP_PERCENTILE = "p90"


def requests_for_width(q: float, width: float) -> int:
    """How many samples make the 95 % interval for the q-quantile bounded on both ends
    and at most `width` wide in quantile terms (0.05: about the p87.5 to the p92.5 for a
    p90). Exact on the order-statistic ranks evalkit.analysis.intervals uses: n fits, n - 1 not."""
    if not 0 < width < 1:
        raise ValueError(f"an interval width is a share between 0 and 1, got {width!r}")

    def fits(n: int) -> bool:
        w = quantile_width(n, q)
        return w is not None and w <= width

    # the normal approximation's n, from a little below: the ranks' rounding moves it
    start = max(samples_for(q), math.floor(0.8 * (2 * 1.959964) ** 2 * q * (1 - q)
                                           / width ** 2))
    n = start
    if fits(n):
        while n > 1 and fits(n - 1):
            n -= 1
    else:
        while not fits(n):
            n += 1
    return n


def size_levels(levels: Iterable[int], width: float, floors: Mapping[int, int] | None = None,
                claims: Iterable[Claim] = ()) -> dict[int, int]:
    """Each level's request floor for `width` on the percentile it is judged on: the p90
    at every ramp level (its breach rule), a claim's own percentile where a claim names
    the level; never below a floor already planned."""
    out = {int(c): int(n) for c, n in (floors or {}).items()}
    judged = {int(c): [RAMP_PERCENTILE] for c in levels}
    for cl in claims:
        if cl.reachable and cl.concurrency in judged:
            judged[cl.concurrency].append(cl.percentile)
    for c, pcts in judged.items():
        need = max(requests_for_width(QUANTILES[p], width) for p in pcts)
        out[c] = max(out.get(c, 0), need)
    return dict(sorted(out.items()))


def _bracket(c: int) -> tuple[int, ...]:
    return tuple(sorted({max(1, c // 2), c, 2 * c}))


def voice_claimed(q: Questionnaire) -> bool:
    """The questionnaire names concurrent calls (a voice product's claims)."""
    return bool(q.q1.voice_at_calls and q.q1.voice_at_calls > 1) or bool(
        q.q4.voice_max_calls_per_node)


def claims_of(q: Questionnaire, voice: bool = False) -> list[tuple[str, int, str]]:
    """(question, concurrency, highest percentile) for every concurrency a claim names;
    for a voice run (`voice`), the calls its voice claims name (Q1's `voice_at_calls`,
    Q4's `voice_max_calls_per_node`) where it makes any: the streams of its text claims
    are not calls, and are bracketed only when nothing else names a level."""
    out: list[tuple[str, int, str]] = []
    if voice and voice_claimed(q):
        if q.q1.voice_at_calls and q.q1.voice_at_calls > 1:
            pct = "p90" if q.q1.voice_ttfa_p90_ms is not None else "p50"
            out.append(("Q1", q.q1.voice_at_calls, pct))
        if q.q4.voice_max_calls_per_node:
            out.append(("Q4", q.q4.voice_max_calls_per_node * (q.q4.nodes or 1), "p90"))
        return out
    if q.q1.at_concurrency and q.q1.at_concurrency > 1:
        pct = "p90" if q.q1.ttft_p90_ms is not None else "p50"
        out.append(("Q1", q.q1.at_concurrency, pct))
    if q.q2.at_concurrency and q.q2.at_concurrency > 1:
        out.append(("Q2", q.q2.at_concurrency, "p50"))  # per stream p50, aggregate
    if q.q4.max_concurrent_streams_per_node:
        total = q.q4.max_concurrent_streams_per_node * (q.q4.nodes or 1)
        out.append(("Q4", total, "p90"))  # degradation is judged on p90 ratios
    return out


def plan_probe(q: Questionnaire, base_levels: Sequence[int], *, max_concurrency: int | None,
               levels_given: bool, processes: int = 1, prompt_given: bool = False,
               budget_requests: int | None = None, default_requests: int = 0,
               interval_width: float | None = None,
               per_process: int = CLIENT_STREAMS_PER_PROCESS, voice: bool = False) -> Plan:
    """The levels, request floors and prompt length that check the questionnaire's claims.

    `base_levels` are the profile's ramp levels; `max_concurrency` is the user's cap
    (None: raised to bracket every reachable claim); `levels_given`: the user named the
    levels, so they are kept as given and claims outside them are unreachable.
    `default_requests` is what a level sends without a floor (the estimate for a budget).
    `interval_width` (a share, 0.05 for 5 points): every level sized for it
    (`size_levels`), each claim for its own percentile. `per_process`: the streams one
    client process holds (`client_streams_per_process`: fewer over HTTPS), times
    `processes` (Ray's workers) the client's ceiling. `voice`: a voice run's plan, from
    the calls the voice claims name (`claims_of`).
    """
    ceiling = per_process * max(processes, 1)
    claims: list[Claim] = []
    for question, c, pct in claims_of(q, voice):
        need = samples_for(QUANTILES[pct])
        if interval_width is not None:
            need = max(need, requests_for_width(QUANTILES[pct], interval_width))
        why = None
        if max_concurrency is not None and c > max_concurrency:
            why = f"above --max-concurrency {max_concurrency}"
        elif c > ceiling:
            why = (f"above the client's ceiling of about {ceiling} streams "
                   f"({per_process} per process on a 2-core machine"
                   f"{' over HTTPS' if per_process == CLIENT_STREAMS_PER_PROCESS_TLS else ''}"
                   "): add --ray auto or --ray ADDRESS (a cluster) or run from a bigger client")
        if why and question == "Q4":  # a breach below the cap still decides a limit claim
            why = f"verified only if the endpoint degrades below that ({why})"
        claims.append(Claim(question, c, pct, _bracket(c), need, why is None, why))
    reachable = [cl for cl in claims if cl.reachable]
    if max_concurrency is not None:
        cap = max_concurrency
    else:  # raised to bracket every reachable claim, never past the client's ceiling
        cap = min(ceiling, max([max(base_levels), *(2 * cl.concurrency for cl in reachable)]))
    if levels_given:
        levels = sorted(set(base_levels))
    else:
        wanted = set(base_levels) | {lv for cl in reachable for lv in cl.levels}
        levels = sorted(lv for lv in wanted if lv <= cap)
    claims = [_reached(cl, levels) for cl in claims]
    floors: dict[int, int] = {}
    for cl in claims:
        if cl.reachable:
            floors[cl.concurrency] = max(floors.get(cl.concurrency, 0), cl.min_requests)
    if interval_width is not None:
        floors = size_levels(levels, interval_width, floors, claims)
    notes: list[str] = []
    if budget_requests is not None:
        levels, floors, claims, dropped = _fit_budget(levels, floors, claims, budget_requests,
                                                      default_requests)
        if dropped:
            notes.append(f"levels {', '.join(map(str, dropped))} left out to stay within "
                         f"--budget {budget_requests} requests")
    calls = voice and voice_claimed(q)
    prompt = q.q1.prompt_tokens if (q.q1.prompt_tokens and not prompt_given
                                    and not calls) else None
    return Plan(tuple(levels), max(levels) if levels else cap, floors, tuple(claims), prompt,
                None if calls else q.q2.at_concurrency, tuple(notes), interval_width,
                "calls" if calls else "streams")


def _reached(cl: Claim, levels: Iterable[int]) -> Claim:
    """A reachable claim whose level is not among the levels is unreachable after all."""
    if cl.reachable and cl.concurrency not in set(levels):
        return Claim(cl.question, cl.concurrency, cl.percentile, cl.levels, cl.min_requests,
                     False, f"{cl.concurrency} is not among the ramp levels given (--levels)")
    return cl


def _fit_budget(levels: list[int], floors: dict[int, int], claims: list[Claim], budget: int,
                per_level: int) -> tuple[list[int], dict[int, int], list[Claim], list[int]]:
    """Drop the highest levels until the planned requests fit the budget."""
    def cost(lv: list[int]) -> int:
        return sum(max(floors.get(c, 0), per_level) for c in lv)

    kept, dropped = list(levels), []
    while kept and cost(kept) > budget:
        dropped.append(kept.pop())
    out = [cl if not cl.reachable or cl.concurrency in kept else
           Claim(cl.question, cl.concurrency, cl.percentile, cl.levels, cl.min_requests, False,
                 f"beyond the --budget of {budget} requests") for cl in claims]
    return kept, {c: n for c, n in floors.items() if c in kept}, out, sorted(dropped)


def describe(plan: Plan) -> list[str]:
    """The plan in lines a user reads before the run starts."""
    lines = [f"plan: ramp levels {', '.join(map(str, plan.levels)) or 'none'}"]
    for cl in plan.claims:
        state = (f"level {cl.concurrency}, at least {cl.min_requests} "
                 f"{'turns' if plan.unit == 'calls' else 'requests'} for its "
                 f"{cl.percentile}" if cl.reachable else f"UNREACHABLE: {cl.why_not}")
        lines.append(f"  {cl.question} claims {cl.concurrency} {plan.unit}: {state}")
    if plan.prompt_tokens:
        lines.append(f"  prompt length {plan.prompt_tokens} tokens (as Q1 states)")
    lines += [f"  note: {n}" for n in plan.notes]
    return lines


def estimate(levels: Sequence[int], floors: dict[int, int], level_duration_s: float,
             e2e_s: float | None) -> dict[str, Any]:
    """Requests and seconds the ramp takes if every level runs, at a request's pace `e2e_s`
    (the baseline's end-to-end time; None before it is known: the floors alone)."""
    if e2e_s is None or e2e_s <= 0:
        return {"requests": sum(floors.values()), "seconds": None}
    requests = seconds = 0.0
    for c in levels:
        n = max(float(floors.get(c, 0)), c * level_duration_s / e2e_s)
        requests += n
        seconds += max(level_duration_s, n * e2e_s / c) + e2e_s  # the drain: one request
    return {"requests": math.ceil(requests), "seconds": math.ceil(seconds)}
