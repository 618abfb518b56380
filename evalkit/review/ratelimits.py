"""The vendor's rate limits, reconciled like a claim: the questionnaire's `rate_limits`
against when the run's 429s began and what the endpoint's headers said. No I/O.

Not one of the six questions: its own row of the scorecard (`rate_limits`), outside the
verdict. The statuses are the questions':

    ok            the run was rejected, and at the first 429 (over the sliding window
                  before it, `evalkit.analysis.ratelimits`) it had reached one of the
                  claimed limits within `rate_limit_rel`: the limit it met is the claimed
    unverified    no 429 (the run never reached a limit), or a first 429 in a window the
                  run only partly saw that neither bound decides; the reason names the run
                  that would
    unreconciled  rejected well below every claimed limit (the reason gives both
                  figures), or an x-ratelimit-limit-* header that states another limit
    unanswered    no rate limit given; unanswerable: given, but not as a number

A partial window (the run began less than a window before its first 429) is judged
conservatively: `ok` only when the count in it already reaches the claim; `unreconciled`
only when even the rate the run offered, scaled to the part observed, stays below it.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalkit.analysis.jsonread import number_entries
from evalkit.analysis.summary_sections import RateFigures, RateLimits, RateWindow
from evalkit.analysis.thresholds import Tolerances
from evalkit.fmt import number
from evalkit.questionnaire.model import RateLimitsAnswer
from evalkit.review.measured import AtRejection, RateLimitsMeasured
from evalkit.review.rules import (
    SOURCE_WORDS,
    Judgement,
    Status,
    blank,
    join,
    within,
)

#: a claimed limit -> (its words, the summary's per-minute figure, the header's key)
LIMITS = {
    "requests_per_minute": ("requests/min", "requests_per_minute", "requests"),
    "tokens_per_minute": ("tokens/min", "tokens_per_minute", "tokens"),
    "input_tokens_per_minute": ("input tokens/min", "input_tokens_per_minute",
                                "input_tokens"),
    "output_tokens_per_minute": ("output tokens/min", "output_tokens_per_minute",
                                 "output_tokens"),
}
_HEADER_NAMES = {"requests": "x-ratelimit-limit-requests",
                 "tokens": "x-ratelimit-limit-tokens",
                 "input_tokens": "x-ratelimit-limit-input-tokens",
                 "output_tokens": "x-ratelimit-limit-output-tokens"}
SCOPE_WORDS = {"per_key": "per key", "per_organisation": "per organisation", None: ""}


def judge_rate_limits(a: RateLimitsAnswer, section: RateLimits | None,
                      blocker: str | None, tol: Tolerances,
                      command: str = "evalkit probe --questionnaire FILE") -> Judgement:
    """The claimed rate limits against the run's `rate_limits` section (None: the summary
    has none). `blocker` is why this run cannot speak for the claim at all (a claims-only
    review, another endpoint); a run made invalid by its rejections still can."""
    measured = _measured(section)
    tolerance = (f"one-sided: measured at the first 429 ≥ claimed × {1 - tol.rate_limit_rel:g}; "
                 f"x-ratelimit-limit-* within ±{tol.rate_limit_rel * 100:.0f}% of the claim "
                 f"(rate_limit_rel {tol.rate_limit_rel * 100:.0f}%)")

    def j(status: Status, reason: str) -> Judgement:
        return Judgement(status, reason, a, measured, tolerance)

    claims = {k: v for k in LIMITS if (v := getattr(a, k)) is not None}
    streams = a.concurrent_streams_per_key
    seen = _seen(section)
    if blank(a):
        return j("unanswered", "No rate limits were given (the questionnaire's optional "
                 f"rate_limits section){seen}.")
    if not claims and streams is None:
        return j("unanswerable", "The rate_limits section states no limit as a number "
                 f"(requests or tokens per minute, concurrent streams per key){seen}.")
    said = _said(a, claims)
    if blocker is not None:
        return j("unverified", f"Claimed {said}; not verified: {blocker}.")
    if section is None or section == RateLimits():
        return j("unverified", f"Claimed {said}; not verified: the run's summary has no "
                 "rate_limits section (an older evalkit wrote it); re-run the probe with this "
                 "version.")
    window = section.window_s or 60.0
    problems = _header_problems(claims, number_entries(section.header_limits), tol)
    w = section.window
    if w is None:
        if problems:
            return j("unreconciled", f"Claimed {said}: {join(problems)}.")
        return j("unverified", f"Claimed {said}; not verified: the run was never rejected "
                 f"with 429{_peak(section)}, so it did not reach a limit; "
                 f"{_rerun(claims, command)}.")
    full = w.full_window
    figures = {k: w.per_minute(LIMITS[k][1]) for k in claims}
    low, high = _edges(w, claims, figures)
    held = w.in_flight
    reached = _reached(claims, low, tol)
    if streams is not None and held is not None and within(
            held, streams, tol.rate_limit_rel, at_most=False):
        reached.append("concurrent_streams_per_key")
    onset = _onset(w, figures, held if streams is not None else None, window, full)
    retry = _retry(section)
    if reached:
        names = join([LIMITS[k][0] if k in LIMITS else "concurrent streams" for k in reached])
        if problems:
            return j("unreconciled", f"Claimed {said}; {onset}, reaching the claimed "
                     f"{names}, but {join(problems)}{retry}.")
        return j("ok", f"Claimed {said}; {onset}: the claimed {names} limit was reached "
                 f"within tolerance, so it holds{retry}.")
    below = _below(claims, figures, held if streams is not None else None)
    headers = f"; {join(problems)}" if problems else ""
    at = w.at_s
    into = "" if at is None else f", {number(at)} s into the run"
    if full and _reached(claims, high, tol):
        edge = (w.edge.s if w.edge is not None else None) or 0.0
        return j("unverified", f"Claimed {said}; not verified: {onset}, and whether the "
                 f"claim was reached turns on requests sent within {number(edge * 1000)} ms "
                 "(the 429's own round trip) of that window's start, which the endpoint "
                 f"may or may not have counted ({_below(claims, high)} with them){headers}"
                 f"{retry}; {_rerun(claims, command)}.")
    if full:
        return j("unreconciled", f"Rejected from {below}; claimed {said}: counted over "
                 f"the {number(window)} s before the first 429{into}{headers}{retry}.")
    seen_s = w.window_s or window
    offered = {k: f * window / seen_s for k, f in figures.items() if f is not None}
    if claims and all(k in offered and not within(offered[k], v, tol.rate_limit_rel,
                                                  at_most=False) for k, v in claims.items()):
        return j("unreconciled", f"Rejected from {below}; claimed {said}: the first 429 "
                 f"came when the run had seen {number(seen_s)} s of the {number(window)} s "
                 f"window, and even the rate it offered then ({_below(claims, offered)}) is "
                 f"below the claim{headers}{retry}.")
    if problems:
        return j("unreconciled", f"Claimed {said}: {join(problems)}; {onset}{retry}.")
    return j("unverified", f"Claimed {said}; not verified: {onset}, and the rate it "
             f"offered there ({_below(claims, offered)}) reached the claim, so whether a "
             f"whole window admits the claimed limit is not decided; {_rerun(claims, command)}"
             f"{retry}.")


def _measured(section: RateLimits | None) -> RateLimitsMeasured | None:
    """What scorecard.json shows as measured: the onset, the Retry-After, the headers."""
    if section is None or section == RateLimits():
        return None
    w = section.window
    return RateLimitsMeasured(section.rejected_429, section.first_rejection_s,
                              section.window_s, None if w is None else AtRejection.of(w),
                              section.peak, section.retry_after_s, section.header_limits)


def _said(a: RateLimitsAnswer, claims: Mapping[str, int]) -> str:
    parts = [f"{number(v)} {LIMITS[k][0]}" for k, v in claims.items()]
    if a.concurrent_streams_per_key is not None:
        parts.append(f"{number(a.concurrent_streams_per_key)} concurrent streams"
                     + ("" if a.scope else " per key"))
    scope = SCOPE_WORDS.get(a.scope, "")
    # a limit is a setting more than a measurement: only a lab or estimated one is marked
    where = f" ({SOURCE_WORDS[a.source]})" if a.source in ("lab", "estimate") else ""
    return join(parts) + (f" {scope}" if scope else "") + where


def _seen(section: RateLimits | None) -> str:
    """What the run met, for a reason that has no claim to set it against."""
    w = section.onset if section is not None else None
    r = w.requests_per_minute if w is not None else None
    if section is None or r is None:
        return ""
    return (f"; the run's first 429 came at {number(r)} requests/min over the "
            f"{number(section.window_s or 60)} s before it")


def _edges(w: RateWindow, claims: Mapping[str, int],
           figures: Mapping[str, float | None]
           ) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """The claimed figures with the window's edge left out and let in (the analysis's
    `edge`; a summary without it: the figures themselves, both ways)."""
    edge = w.edge

    def side(m: RateFigures | None) -> dict[str, float | None]:
        return {k: (m.per_minute(LIMITS[k][1]) if m is not None else figures[k])
                for k in claims}

    return side(edge.low if edge else None), side(edge.high if edge else None)


def _reached(claims: Mapping[str, int], figures: Mapping[str, float | None],
             tol: Tolerances) -> list[str]:
    """The claimed limits the figures reach, within tolerance."""
    return [k for k, v in claims.items()
            if (f := figures.get(k)) is not None and within(f, v, tol.rate_limit_rel,
                                                            at_most=False)]


def _onset(w: RateWindow, figures: Mapping[str, float | None], held: int | None,
           window: float, full: bool) -> str:
    at = w.at_s
    r = w.requests_per_minute
    said = [f"{number(r)} requests/min"] if r is not None else []
    said += [f"{number(f)} {LIMITS[k][0]}" for k, f in figures.items()
             if f is not None and k != "requests_per_minute"]
    held_words = "" if held is None else f", with {held} streams in flight"
    part = "" if full else (f" (the run began {number(at or 0)} s before it, so it saw "
                            "only part of that window)")
    return (f"the first 429{'' if at is None else f' {number(at)} s into the run'} came "
            f"at {join(said) or 'no measured rate'} over the {number(window)} s before it"
            f"{part}{held_words}")


def _below(claims: Mapping[str, int], figures: Mapping[str, float | None],
           held: int | None = None) -> str:
    """The measured figures of the limits claimed, in the claim's units."""
    said = [f"{number(f)} {LIMITS[k][0]}" for k in claims
            if (f := figures.get(k)) is not None]
    held_words = "" if held is None else f" ({held} streams in flight)"
    return (join(said) or "no measured rate") + held_words


def _header_problems(claims: Mapping[str, int], limits: Mapping[str, float],
                     tol: Tolerances) -> list[str]:
    """Where the endpoint's own x-ratelimit-limit-* headers state another limit (±tol)."""
    out = []
    for k, v in claims.items():
        key = LIMITS[k][2]
        said = limits.get(key)
        if said is None:
            continue
        if abs(said - v) > tol.rate_limit_rel * v:
            out.append(f"the endpoint's {_HEADER_NAMES[key]} header says {number(said)}, "
                       f"the questionnaire claims {number(v)} {LIMITS[k][0]}")
    return out


def _peak(section: RateLimits) -> str:
    peak = section.peak
    r = peak.requests_per_minute if peak is not None else None
    if peak is None or r is None:
        return ""
    if peak.full_window:
        return f" (it sent at most {number(r)} requests/min over any minute)"
    span = peak.window_s or 0
    return f" (it sent {number(r)} requests/min, scaled from the {number(span)} s it ran)"


def _rerun(claims: Mapping[str, int], command: str) -> str:
    rpm = claims.get("requests_per_minute")
    if rpm is None:
        return ("a run that sends above the claimed limit for at least a minute would "
                f"reach it (`{command} --rate R --out DIR`, R requests/s above the limit, "
                "with a rate phase of 60 s or more, as in --profile standard)")
    rps = rpm * 1.5 / 60
    return (f"a run that sends above {number(rpm)} requests/min for at least a minute would "
            f"reach it: re-run `{command} --profile standard --rate {rps:.3g} --out DIR` "
            "(its rate phase lasts 60 s)")


def _retry(section: RateLimits) -> str:
    r = section.retry_after_s
    lo, mid, hi = (r.min, r.median, r.max) if r is not None else (None, None, None)
    if lo is None or hi is None:
        return ""
    if lo == hi:
        return f"; Retry-After {number(lo)} s"
    return f"; Retry-After {number(lo)}–{number(hi)} s (median {number(mid or lo)} s)"
