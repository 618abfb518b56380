"""Use-case fit: the highest level at which each SLO profile (chat, voice agent, live
suggestions, batch) holds on every limit, decided on intervals, and the streams served
at reading speed. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalkit.analysis.summary import Level, Pct, Summary
from evalkit.analysis.thresholds import PERCENTILE_SHARE, SloProfile, Tolerances
from evalkit.fmt import fmt_s, number
from evalkit.fmt import fmt_tokens_per_s as fmt_rate
from evalkit.review.rules import QUANTILES, decide, join, meets, run_blocker


@dataclass(frozen=True)
class Fit:
    """Whether the endpoint fits a use case; `fit` is None when it was not measurable."""

    fit: bool | None
    reason: str
    #: highest measured concurrency at which the profile held (None: not even the first)
    max_concurrency: int | None = None
    #: it held at every level tried: `max_concurrency` is a lower bound, not a limit
    lower_bound: bool = False
    #: what `max_concurrency` counts: concurrent streams, or a voice run's calls
    unit: str = "streams"


#: a level's check: (holds? None when it cannot tell, what we measured, the outcome)
Check = Callable[["Level"], tuple[bool | None, str]]


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


def _first_answer(level: Level, limit: float) -> tuple[bool | None, str]:
    """The TTFT limit on what the user waits for: TTFA where reasoning came first (a
    reasoning chunk sent at once must not pass a voice agent), TTFT otherwise; the TTFT
    is named beside a TTFA so the page shows both."""
    name, pct = level.answer_latency()
    ok, text = _limit(f"{name} p90", pct, "p90", limit, 0.9, fmt_s)
    if name == "TTFA":
        text += (f" (reasoning came first in {level.reasoning_first} requests; TTFT p90 "
                 f"{fmt_s(level.ttft_s.p90)})")
    return ok, text


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
                        n=level.tpot_s.n, q=QUANTILES.get(pname), fmt=fmt_rate)
    if state == "undecided":
        return None, f"1/TPOT {pname} {why}"
    ok = state == "holds"
    return ok, (f"{share} of streams {'above' if ok else 'below'} "
                f"{number(tol.reading_speed_tokens_per_s)} tokens/s (1/TPOT {pname} = "
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
    ok = meets(rate, tol.max_failure_rate, at_most=True)
    if not ok and ci is not None and ci[0] is not None \
            and meets(ci[0], tol.max_failure_rate, at_most=True):  # as the ramp: above, not surely
        return None, (f"not enough evidence: {rate * 100:.1f}% of {level.requests} failed, "
                      f"95 % interval {ci[0] * 100:.1f}–{(ci[1] or 1) * 100:.1f}% straddles "
                      f"{tol.max_failure_rate * 100:g}%")
    return ok, f"{rate * 100:.1f}% failed {'≤' if ok else '>'} {tol.max_failure_rate * 100:g}%"


def _checks(profile: SloProfile, tol: Tolerances) -> list[Check]:
    checks: list[Check] = []
    if profile.ttft_p90_s is not None:
        lim_t = profile.ttft_p90_s
        checks.append(lambda lv: _first_answer(lv, lim_t))
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
        if level.underloaded and all(ok for ok, _ in results):
            # a pass under a lighter load than the level's is no pass at that level
            results = [(None, f"fewer than {_streams(level.concurrency)} were held in flight")]
        if any(ok is None for ok, _ in results):
            missing = join([text for ok, text in results if ok is None])
            if held is None:
                # a straddling interval is a tie: never a pass, and it says what would decide
                word = ("Not decided" if "not enough evidence" in missing else
                        "Not measurable")
                return Fit(None, f"{word} at {_streams(level.concurrency)}: {missing}.")
            return Fit(True, f"{_holds(what, held)}; not judged at {level.concurrency}: "
                       f"{missing}.", held[0].concurrency)
        if not all(ok for ok, _ in results):
            failed = join([text for ok, text in results if not ok])
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
    notes = f" ({join(held[1])})" if held[1] else ""
    scope = "at every level tried, up to" if every else "up to"
    return f"Holds {what} {scope} {_streams(held[0].concurrency)}{notes}"


def _batch(m: Summary, tol: Tolerances) -> Fit:
    rated = [lv for lv in m.levels if lv.aggregate_tokens_per_s is not None
             and (lv.failure_rate is None
                  or meets(lv.failure_rate, tol.max_failure_rate, at_most=True))]
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
