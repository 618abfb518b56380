"""The ramp's verdict: which level first degrades, on which metric, decided on
intervals (a straddling interval is a tie, never a pass)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalkit.analysis.frames import _num, _ratio
from evalkit.analysis.intervals import (
    proportion_interval,
    samples_for,
)
from evalkit.analysis.jsonread import Json
from evalkit.analysis.thresholds import Thresholds
from evalkit.analysis.validity import MOSTLY_FAILED_OK_SHARE

#: What a failure-rate breach is named by, the level's dominant kind of failure:
#: `admission` (not admitted: 429/503, or timed out before any content, the records'
#: admission failures), `incomplete` (a stream cut short), `timeout` (a stream that began
#: and then stalled past the deadline), `error` (any other failure). Equal counts go to
#: the earlier name.
FAILURE_KINDS = ("admission", "incomplete", "timeout", "error")
#: The ramp metrics, in the contract's vocabulary.
#: the answers themselves degrade too: canaries answered otherwise than alone
#: (evalkit.analysis.precision), outputs shorter than the baseline's
ANSWER_METRICS = ("precision", "length")
DEGRADATION_METRICS = ("ttft", "itl", *FAILURE_KINDS, *ANSWER_METRICS)


def failure_kinds(lvl: Mapping[str, Any]) -> dict[str, int]:
    """A level's failed requests by kind (FAILURE_KINDS), so a breach on failures names
    what failed: llama.cpp cuts running streams when new ones arrive, and a ramp that
    called that `admission` told a reader the server refuses work it in fact accepts."""
    outcomes = {str(k): int(v) for k, v in (lvl.get("outcomes") or {}).items()
                if isinstance(v, int | float)}
    requests = int(lvl.get("requests") or 0)
    refused = _configuration(lvl)
    rejected = outcomes.get("rejected", 0)
    share = lvl.get("admission_failure_rate")
    admitted_not = (round(share * requests) if isinstance(share, int | float) and requests
                    else rejected)
    unserved = max(0, admitted_not - rejected)  # timeouts that never streamed
    known = {"ok", "rejected", "incomplete", "timeout"}
    return {"admission": admitted_not,
            "incomplete": outcomes.get("incomplete", 0),
            "timeout": max(0, outcomes.get("timeout", 0) - unserved),
            # errors less a configuration finding's (always errors): no failure of load
            "error": max(0, sum(v for k, v in outcomes.items() if k not in known) - refused)}


def _configuration(lvl: Mapping[str, Any]) -> int:
    """A level's requests refused as a configuration finding (a shape the endpoint
    refuses alone too: evalkit.analysis.configuration), 0 for a level written before."""
    n = lvl.get("configuration_failures")
    return int(n) if isinstance(n, int | float) and not isinstance(n, bool) and n > 0 else 0


def failure_kind(counts: Mapping[str, int]) -> str | None:
    """The dominant kind of failure, None when nothing failed."""
    if not any(counts.get(k, 0) for k in FAILURE_KINDS):
        return None
    return max(FAILURE_KINDS, key=lambda k: (counts.get(k, 0), -FAILURE_KINDS.index(k)))


#: A level whose mean in-flight count over its steady-state window is below this share of
#: its nominal concurrency did not hold that load.
UNDERLOAD_SHARE = 0.9


def achieved_concurrency(lvl: Mapping[str, Any]) -> dict[str, Any] | None:
    """The in-flight concurrency a level achieved over its steady-state window, beside
    its nominal one: workers sitting out a Retry-After, send lag or a lost worker hold a
    level below its name while its peak still reads it. None for a level without a window
    or one written before the window kept its mean."""
    window = lvl.get("steady_state") or {}
    mean, nominal = window.get("mean_inflight"), lvl.get("concurrency")
    if not isinstance(mean, int | float) or not isinstance(nominal, int) or nominal < 1:
        return None
    share = mean / nominal
    return {"mean": mean, "min": window.get("min_inflight"), "nominal": nominal,
            "share": share, "underloaded": share < UNDERLOAD_SHARE}


# --------------------------------------------------------------------------- ramp


def _p90(stats: Mapping[str, Any] | None, key: str) -> float | None:
    """The p90 of one distribution in a stats dict, if there is one."""
    return None if stats is None else (stats.get(key) or {}).get("p90")


#: what one metric's 95 % interval says against its limit
Against = tuple[str | None, list[float | None] | None]


def _latency_against(lvl: Mapping[str, Any], key: str, base: float | None, limit: float
                     ) -> tuple[float | None, list[float | None] | None, str | None]:
    """A level's p90 over the baseline's, its interval likewise, and the call against the
    limit: "breach" (the whole interval above it), "clear" (the whole interval at or
    below), "tie" (it straddles: an open end straddles too). A level dict without an
    interval (written before intervals) is judged on its point, as it was then."""
    point = _ratio(_p90(lvl, key), base)
    if point is None or base is None:
        return None, None, None
    ci = (lvl.get(key) or {}).get("p90_ci")
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return point, None, "breach" if point > limit else "clear"
    ratio_ci = [None if v is None else _ratio(v, base) for v in ci]
    lo, hi = ratio_ci
    call = ("breach" if lo is not None and lo > limit else
            "clear" if hi is not None and hi <= limit else "tie")
    return point, ratio_ci, call


def _failures_against(rate: float | None, failed: int, requests: int, limit: float,
                      given: Any) -> tuple[list[float] | None, str | None]:
    """The failure rate's exact interval and the call: a breach needs the whole interval
    above the limit; an observed rate above the limit whose interval reaches below it is
    a tie. A rate at or below the limit is clear: confirming 1 % from below would take
    367 failure-free requests at every level, and no run could sustain any level."""
    if rate is None:
        return None, None
    ci = (list(given) if isinstance(given, list | tuple) and len(given) == 2
          else proportion_interval(failed, requests))
    if ci is None or ci[0] is None:
        return ci, "breach" if rate > limit else "clear"
    return ci, ("breach" if ci[0] > limit else "tie" if rate > limit else "clear")


def _length_against(lvl: Mapping[str, Any], base: Mapping[str, Any] | None, floor: float
                    ) -> tuple[float | None, list[float] | None, str | None]:
    """A level's mean achieved output length over the baseline's, its 95 % interval (normal,
    on the level's mean; the baseline's mean taken as given, as its p90 is for latency),
    and the call against `floor`: "breach" (the whole interval below), "tie" (the mean
    below, the interval reaching above), "clear"."""
    here = lvl.get("achieved_output_tokens")
    if not base or not here or not base.get("mean") or not here.get("n"):
        return None, None, None
    b = float(base["mean"])
    ratio = float(here["mean"]) / b
    half = 1.96 * float(here.get("sd") or 0.0) / math.sqrt(int(here["n"])) / b
    ci = [ratio - half, ratio + half]
    return ratio, ci, ("breach" if ci[1] < floor else "tie" if ratio < floor else "clear")


def _precision_against(lvl: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """The level's precision call (evalkit.analysis.precision) and how far below its floor
    it lies, as a ratio above 1 when it breaches (another model named: 10)."""
    p = lvl.get("precision")
    if not p or p.get("status") not in ("held", "tie", "breach"):
        return None, None
    call = {"held": "clear", "tie": "tie", "breach": "breach"}[p["status"]]
    if p.get("models_not_seen_alone"):
        return 10.0, call
    rate = p.get("match_rate")
    floor = p.get("floor")
    excess = _num(floor / max(rate, 0.01)) if rate is not None and floor else None
    return excess, call


def _requests_to_decide(n: int, point: float, ci: Sequence[float | None] | None,
                        limit: float, share: bool) -> int | None:
    """About how many requests at the level would turn its tie into a decision, if what
    was seen holds: the interval narrows as 1/sqrt(n)."""
    if ci is None:
        return None
    if share:  # the observed failure rate above the limit, its interval's low end below
        gap = point - limit
        return max(n + 1, math.ceil(1.96 ** 2 * point * (1 - point) / gap ** 2)) if gap > 0 \
            else None
    lo, hi = ci
    if lo is None or hi is None:
        return max(n + 1, samples_for(0.9))
    gap = abs(point - limit)
    return max(n + 1, math.ceil(n * ((hi - lo) / 2 / gap) ** 2)) if gap > 0 else None


def _judge_level(lvl: Mapping[str, Any], base_ttft: float | None, base_tpot: float | None,
                 limits: Mapping[str, float], bound: bool,
                 base_length: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One level against the baseline: its ratios with their 95 % intervals, which limits
    it breaches (the whole interval above), which it ties (the interval straddles), and
    its status."""
    # every request that did not end ok was not served: rejected (429/503) as well as
    # errors, timeouts and cut streams (SPEC: they count toward degradation), except a
    # shape the endpoint refuses alone too: a configuration finding, not load
    refused = _configuration(lvl)
    requests = max(int(lvl.get("requests") or 0) - refused, 0)
    ok = int((lvl.get("outcomes") or {}).get("ok", 0))
    failure_rate = lvl.get("failure_rate")
    if failure_rate is None and requests:
        failure_rate = 1 - ok / requests
    ttft, ttft_ci, ttft_call = _latency_against(lvl, "ttft_s", base_ttft, limits["ttft"])
    tpot, tpot_ci, tpot_call = _latency_against(lvl, "tpot_s", base_tpot, limits["itl"])
    failed = round(failure_rate * requests) if failure_rate is not None else requests - ok
    fail_ci, fail_call = _failures_against(failure_rate, failed, requests,
                                           limits["admission"], lvl.get("failure_rate_ci"))
    kinds = failure_kinds(lvl)
    # the failure limit is one limit; its breach is named by what failed most
    kind = failure_kind(kinds) or "admission"
    limits = {**limits, kind: limits["admission"]}
    values = {"ttft": ttft, "itl": tpot, kind: failure_rate}
    cis = {"ttft": ttft_ci, "itl": tpot_ci, kind: fail_ci}
    calls = {"ttft": ttft_call, "itl": tpot_call, kind: fail_call}
    excess = {k: e for k, v in values.items()
              if v is not None and (e := _num(v / limits[k])) is not None}
    excess_ci = {k: [None if x is None else _num(x / limits[k]) for x in ci]
                 for k, ci in cis.items() if ci is not None}
    # the answers themselves: the canaries' precision, and the output length achieved
    length, length_ci, length_call = _length_against(lvl, base_length, limits["length"])
    if length_call is not None and length:
        calls["length"] = length_call
        excess["length"] = limits["length"] / max(length, 1e-9)
    p_excess, p_call = _precision_against(lvl)
    if p_call is not None:
        calls["precision"] = p_call
        if p_excess is not None:
            excess["precision"] = p_excess
    breaches = [k for k in calls if calls[k] == "breach"]
    ties = [k for k in calls if calls[k] == "tie"]
    if not requests:
        status = "no_data"
    elif ok < MOSTLY_FAILED_OK_SHARE * requests:
        # mostly failed: the server's own answer, whatever the client's state
        status, breaches = "failed", [kind]
    elif bound and (said := [k for k in breaches if k in ANSWER_METRICS]):
        # a busy client slows what it times, never what the vendor says: answers that
        # changed, or came shorter, under at most this load are a breach all the same
        status, breaches = "breached", said
    elif bound:
        status = "client_bound"
    elif breaches:
        status = "breached"
    elif ties:
        status = "tie"
    else:
        status = "sustained"
    achieved = achieved_concurrency(lvl)
    if achieved is not None and achieved["underloaded"] and status in ("sustained", "tie"):
        # it held, or tied, at less than its name: no evidence for the nominal level. A
        # breach stands: the server broke under at most that load
        status = "underloaded"
    n_ok = {"ttft": (lvl.get("ttft_s") or {}).get("n") or ok,
            "itl": (lvl.get("tpot_s") or {}).get("n") or ok, kind: requests}
    to_decide = [r for k in ties if k in values and (v := values[k]) is not None and (
        r := _requests_to_decide(int(n_ok[k]), v, cis[k], limits[k], k == kind)) is not None]
    failures = {k: v - (refused if k == "error" else 0)
                for k, v in (lvl.get("outcomes") or {}).items() if k != "ok" and v}
    failures = {k: v for k, v in failures.items() if v}
    return {**lvl, "ttft_p90_ratio": ttft, "tpot_p90_ratio": tpot,
            # achieved output length over the baseline's, with its 95 % interval
            "length_ratio": length, "length_ratio_ci": length_ci,
            # the level's p90 interval over the baseline's p90 (an end None: unbounded)
            "ttft_p90_ratio_ci": ttft_ci, "tpot_p90_ratio_ci": tpot_ci,
            "breaches": breaches if status in ("breached", "failed") else [],
            "would_breach": breaches if status == "client_bound" else [],
            "ties": ties if status in ("tie", "breached") else [],
            "tie_requests": max(to_decide) if status == "tie" and to_decide else None,
            "failures": failures,
            # the failed requests by kind, and the kind a failure-rate call is named by
            "failure_kinds": kinds, "failure_kind": failure_kind(kinds),
            "achieved_concurrency": achieved,
            "excess": excess, "excess_ci": excess_ci, "client_bound": bound, "status": status}


def _underload_note(judged: Sequence[Mapping[str, Any]], floor: float, cap: float
                    ) -> str | None:
    """The lowest under-loaded level between the max sustained level and the breach, in
    words: the true limit may lie there, and the run did not put that load on it."""
    lv = next((d for d in judged if d["status"] == "underloaded"
               and floor < d["concurrency"] < cap), None)
    if lv is None:
        return None
    return (f"level {lv['concurrency']} held a mean of "
            f"{lv['achieved_concurrency']['mean']:.1f} streams in flight, under "
            f"{UNDERLOAD_SHARE:.0%} of {lv['concurrency']}: not judged")


def _ramp_conclusion(judged: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first confirmed breach, what degraded there, the highest level held below it,
    and the ties that keep the answer open (a tie never counts as held or as breached)."""
    first = next((d for d in judged if d["status"] in ("breached", "failed")), None)
    ranked = [] if first is None else sorted(first["breaches"], key=lambda k: -first["excess"][k])
    cap = math.inf if first is None else first["concurrency"]
    held = [d["concurrency"] for d in judged
            if d["status"] == "sustained" and d["concurrency"] < cap]
    above = [d for d in judged if d["concurrency"] > cap
             and d["status"] in ("breached", "failed", "sustained", "tie")]
    floor = max(held) if held else 0
    open_ties = [d for d in judged if d["status"] == "tie" and floor < d["concurrency"] < cap]
    tie = open_ties[0] if open_ties else None
    note: str | None
    if not held and tie is not None:
        note = (f"no level was confirmed sustained: level {tie['concurrency']} is a tie "
                f"(its 95 % interval straddles the limit on {', '.join(tie['ties'])})")
    elif not held:
        note = ("no level could be judged" if first is None else
                f"the lowest judged level ({first['concurrency']}) already breaches")
    elif first is None:
        note = "no level breached: the highest level measured is a lower bound"
    else:
        note = None
    if tie is not None:
        more = (f"; about {tie['tie_requests']} requests there would decide it"
                if tie.get("tie_requests") else "")
        bounded = (f"level {tie['concurrency']} is a tie ({', '.join(tie['ties'])}: its 95 % "
                   f"interval straddles the limit), so the max sustained level may be higher"
                   f"{more}")
        note = bounded if held else f"{note}{more}"
    if (said := _underload_note(judged, floor, cap)) is not None:
        note = f"{note}; {said}" if note else said
    metric = {"ttft": "ttft_s p90 / baseline", "itl": "tpot_s p90 / baseline",
              "length": "achieved output tokens / baseline",
              "precision": "canary match rate / the rate alone",
              **dict.fromkeys(FAILURE_KINDS, "failure_rate")}
    return {
        "max_sustained_concurrency": max(held) if held else None,
        "first_degraded": ranked[0] if ranked else None,
        "first_degraded_metric": metric[ranked[0]] if ranked else None,
        "first_breach_concurrency": None if first is None else first["concurrency"],
        "first_degraded_tied": ranked if len(ranked) > 1 else [],
        "first_degraded_tie_rule": "largest excess over its threshold"
        if len(ranked) > 1 else None,
        "breach_confirmed": ({"breached": True, "failed": True, "sustained": False}.get(
            above[0]["status"]) if above else None),
        "max_sustained_is_lower_bound": bool(held) and first is None,
        # what the failed requests at the first breach were, when failures breached
        "first_breach_failures": (first["failures"] or None) if first else None,
        # ties: levels whose 95 % interval straddled a limit (neither held nor breached)
        "tie_levels": [d["concurrency"] for d in judged if d["status"] == "tie"],
        # the lowest tie above the max sustained level and below the first breach: the
        # level whose re-run (more requests there) would move the answer
        "first_tie_concurrency": None if tie is None else tie["concurrency"],
        "max_sustained_bounded_by_tie": tie is not None,
        # levels that held or tied below UNDERLOAD_SHARE of their nominal concurrency:
        # neither held nor breached
        "underloaded_levels": [d["concurrency"] for d in judged
                               if d["status"] == "underloaded"],
        "underload_rule": f"a level whose mean in-flight count over its steady-state "
                          f"window is below {UNDERLOAD_SHARE:.0%} of its concurrency is not "
                          f"judged as that concurrency (status underloaded) unless it "
                          f"breached: a breach under less load stands",
        "breach_rule": "a level breaches when the 95 % interval of its p90 (TTFT, TPOT over "
                       "the baseline's p90) or of its failure rate lies wholly above the "
                       "limit, when that of its mean output length lies wholly below the "
                       "baseline's less the tolerance (length), or when its canaries' "
                       "answers differ from the answers alone (precision: "
                       "evalkit.analysis.precision); an interval that straddles the limit "
                       "is a tie",
        "failure_kind_rule": "a failure-rate breach is named by the level's most frequent "
                             "kind of failure: admission (rejected, or timed out before "
                             "any content), incomplete (cut short), timeout (stalled after "
                             "streaming began) or error",
        "note": note,
    }


def judge_ramp(levels: Sequence[Mapping[str, Json]], baseline: Mapping[str, Json] | None,
               thresholds: Thresholds | None = None,
               client_bound: Iterable[int] = ()) -> dict[str, Json]:
    """Which level first degrades, on which metric, and the highest level held before it.

    A client-bound level (or one with no data) gives no capacity conclusion: it is neither
    sustained nor breached.
    """
    th = thresholds or Thresholds()
    bound = set(client_bound)
    limits = {"ttft": th.ttft_p90_ratio, "itl": th.tpot_p90_ratio,
              "admission": th.admission_failure_rate, "length": 1 - th.length_tolerance}
    base_ttft, base_tpot = _p90(baseline, "ttft_s"), _p90(baseline, "tpot_s")
    base: Mapping[str, Any] = baseline or {}
    base_length = base.get("achieved_output_tokens")
    # summary.json's level entries, read here where they are judged
    entries: Sequence[Mapping[str, Any]] = levels
    judged = [_judge_level(lvl, base_ttft, base_tpot, limits, int(lvl["concurrency"]) in bound,
                           base_length)
              for lvl in sorted(entries, key=lambda d: d["concurrency"])]
    return {
        "levels": judged,
        **_ramp_conclusion(judged),
        "client_bound_levels": sorted(d["concurrency"] for d in judged if d["client_bound"]),
        "judged_on": [k for k, base in (("ttft", base_ttft), ("itl", base_tpot))
                      if base is not None] + ["admission"]
        + (["length"] if base_length else [])
        + (["precision"] if any(lv.get("precision") for lv in levels) else []),
        "thresholds": {"ttft_p90_ratio": th.ttft_p90_ratio, "tpot_p90_ratio": th.tpot_p90_ratio,
                       "admission_failure_rate": th.admission_failure_rate,
                       "length_tolerance": th.length_tolerance,
                       "precision_match_tolerance": th.precision_match_tolerance},
    }
