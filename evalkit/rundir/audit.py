"""summary.json checked as untrusted: impossible figures, and figures the records
disagree with."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import as_mapping
from evalkit.records import MAX_COUNT, MAX_SECONDS
from evalkit.rundir.digest import MAX_LEVEL, MAX_RATE, RecordDigest

SUMMARY_SCHEMA = "evalkit.summary/1"


# --------------------------------------------------------------------------- summary

_STAT_NAMES = frozenset({"p50", "p90", "p99", "p10", "p1", "mean", "min", "max"})
_COUNTS = frozenset({"requests", "n", "ok", "stalls", "stalled_streams", "checked", "short",
                     "disagreeing", "outliers", "pairs", "lengths", "unlevelled_requests",
                     "reasoning_first", "target_inflight", "max_inflight"})
_LEVELS = frozenset({"concurrency", "max_sustained_concurrency", "first_breach_concurrency"})
#: Figures (and everything under them) that may rightly fall below zero.
_SIGNED = frozenset({"overhead_s", "overhead_s_ci", "send_lag_s", "r2", "slope_s_per_token",
                     "slope_ci", "drift", "excess"})
_SECTIONS = ("connect", "baseline", "prefill", "ramp", "soak", "rate", "checks", "client",
             "validity", "outcomes", "thresholds")
_PHASE_STATS = ("outcomes", "ttft_s", "ttfa_s", "e2e_s", "tpot_s", "itl_s",
                "tokens_per_chunk", "stream_tokens_per_s", "output_tokens", "steady_state",
                "output_length", "validity")
_SUMMARY_TEXT = ("suite_version", "tool_version", "run_status")
#: Sections with one group of requests each, and the record phase each counts.
_PHASE_SECTIONS = ("connect", "baseline", "prefill", "soak", "rate")


def _shown(value: float) -> str:
    text = f"{value:,}" if isinstance(value, int) else f"{value:g}"
    return text if len(text) <= 24 else text[:20] + "…"


def _number_problem(path: str, key: str, parent: str, value: float, signed: bool
                    ) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} is not a finite number"
    if key in _COUNTS or key in _LEVELS or parent == "outcomes":
        if not isinstance(value, int):
            return f"{path} {_shown(value)} is not a whole number"
        low, top = (1, MAX_LEVEL) if key in _LEVELS else (0, MAX_COUNT)
        return None if low <= value <= top else f"{path} {_shown(value)} is out of range"
    unit = _unit(key, parent)
    kind, high = "number", float(MAX_COUNT)
    if "tokens_per_s" in unit or unit == "arrival_rps":
        kind, high = "rate", MAX_RATE
    elif unit.endswith("_s"):
        kind, high = "duration", MAX_SECONDS
    if value < 0 and kind != "number" and not signed:
        return f"{path} {_shown(value)} is a negative {kind}"
    return None if abs(value) <= high else f"{path} {_shown(value)} is absurd"


def _walk(x: Any, path: str, key: str, parent: str, signed: bool, out: list[str]) -> None:
    if isinstance(x, Mapping):
        for k, v in x.items():
            k = str(k)
            _walk(v, f"{path}.{k}" if path else k, k, key, signed or k in _SIGNED, out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _walk(v, f"{path}[{i}]", key, parent, signed, out)
    elif isinstance(x, int | float) and not isinstance(x, bool):
        problem = _number_problem(path, key, parent, x, signed)
        if problem:
            out.append(problem)
    elif x is not None and _is_figure(key, parent):
        out.append(f"{path} is not a number")


def _unit(key: str, parent: str) -> str:
    """The figure a value measures: its key, its statistic's parent (`ttft_s.p50`), or
    what its interval is of (`ttft_s.p50_ci`, `aggregate_tokens_per_s_ci`)."""
    key = key.removesuffix("_ci")
    return parent if key in _STAT_NAMES else key


def _is_figure(key: str, parent: str) -> bool:
    """Does this key name a count, level, duration or rate (a number, or nothing)?"""
    unit = _unit(key, parent)
    return (key in _COUNTS or key in _LEVELS or parent == "outcomes"
            or unit.endswith("_s") or unit == "arrival_rps")


def summary_problems(summary: Mapping[str, Any]) -> list[str]:
    """What is wrong with a summary on its own: its shape, and numbers that are not finite,
    negative where they cannot be (durations, rates, counts) or absurd."""
    out: list[str] = []
    for key in _SECTIONS:
        if summary.get(key) is not None and not isinstance(summary[key], Mapping):
            out.append(f"{key} is not an object")
    for key in _SUMMARY_TEXT:
        if summary.get(key) is not None and not isinstance(summary[key], str):
            out.append(f"{key} is not text")
    if out:
        return out
    groups: list[tuple[str, Mapping[str, Any]]] = [
        (k, summary[k]) for k in ("baseline", "soak", "rate") if summary.get(k)]
    ramp = summary.get("ramp") or {}
    levels = ramp.get("levels")
    seen: set[int] = set()
    if levels is not None and not isinstance(levels, list):
        out.append("ramp.levels is not a list")
    for i, lv in enumerate(levels if isinstance(levels, list) else []):
        c = lv.get("concurrency") if isinstance(lv, Mapping) else None
        if not isinstance(c, int) or isinstance(c, bool) or not 1 <= c <= MAX_LEVEL:
            out.append(f"ramp.levels[{i}] is not a level with a concurrency")
        elif c in seen:
            out.append(f"ramp.levels[{i}]: concurrency {c} appears twice")
        else:
            seen.add(c)
            groups.append((f"ramp level {c}", lv))
    for name, group in groups:
        for key in _PHASE_STATS:
            if group.get(key) is not None and not isinstance(group[key], Mapping):
                out.append(f"{name}: {key} is not an object")
    for key in ("max_sustained_concurrency", "first_breach_concurrency"):
        value = ramp.get(key)
        if value is not None and value not in seen:
            out.append(f"ramp.{key} {str(value)[:20]} is not one of the levels "
                       f"({', '.join(map(str, sorted(seen))) or 'none'})")
    if ramp.get("first_degraded") is not None and not isinstance(ramp["first_degraded"], str):
        out.append("ramp.first_degraded is not text")
    points = (summary.get("prefill") or {}).get("points")
    if points is not None and not (isinstance(points, list)
                                   and all(isinstance(p, Mapping) for p in points)):
        out.append("prefill.points is not a list of objects")
    validity = summary.get("validity") or {}
    if validity and (validity.get("status") not in ("valid", "degraded", "invalid") or not
                     isinstance(validity.get("reasons", []), list)):
        out.append("validity is not a status with reasons")
    _walk(summary, "", "", "", False, out)
    return out


def _counts(x: object) -> dict[str, Json]:
    """A JSON object's truthy entries, as written: compared, never summed (a written count
    that is not a number differs from the records' and is reported)."""
    return {str(k): v for k, v in as_mapping(x).items() if v}


def _close(a: Any, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return isinstance(a, int | float) and abs(a - b) <= 1e-6 + 1e-6 * abs(b)


def _ttft_disagrees(name: str, stats: Any, values: list[float]) -> str | None:
    if not isinstance(stats, Mapping) or "n" not in stats:
        return None
    import numpy as np

    a = np.asarray(values, dtype=np.float64)
    a = a[np.isfinite(a)]
    if stats.get("n") != a.size:
        return f"{name}: TTFT n {stats.get('n')} in the summary, {a.size} in the records"
    for q in ("p50", "p90"):
        ours = float(np.percentile(a, float(q[1:]))) if a.size else None
        if not _close(stats.get(q), ours):
            return (f"{name}: TTFT {q} {stats.get(q)} s in the summary, "
                    f"{'none' if ours is None else f'{ours:.6g} s'} from the records")
    return None


def summary_disagreements(summary: Mapping[str, Any], digest: RecordDigest) -> list[str]:
    """Where a (well-formed) summary and the records it claims to summarise part ways."""
    out: list[str] = []
    if "requests" in summary and summary["requests"] != digest.n:
        out.append(f"{summary['requests']:,} requests in the summary, {digest.n:,} records")
    if "outcomes" in summary and _counts(summary["outcomes"]) != _counts(digest.outcomes):
        out.append(f"outcomes {_counts(summary['outcomes'])} in the summary, "
                   f"{_counts(digest.outcomes)} in the records")
    for phase in _PHASE_SECTIONS:
        section, n = summary.get(phase), digest.phases.get(phase, 0)
        if section is None and n:
            out.append(f"no {phase} section in the summary, {n:,} {phase} records")
        elif section is not None and section.get("requests", n) != n:
            out.append(f"{phase}: {section['requests']:,} requests in the summary, "
                       f"{n:,} records")
    baseline = summary.get("baseline")
    if baseline:
        out += filter(None, [_ttft_disagrees("baseline", baseline.get("ttft_s"),
                                             digest.ttft_values("baseline", None))])
    ramp = summary.get("ramp")
    levels = {lv["concurrency"]: lv for lv in (ramp or {}).get("levels") or []}
    if ramp is None and digest.phases.get("ramp"):
        out.append(f"no ramp in the summary, {digest.phases['ramp']:,} ramp records")
    elif ramp is not None and set(levels) != set(digest.levels):
        out.append(f"ramp levels {sorted(levels)} in the summary, {sorted(digest.levels)} in "
                   "the records")
    for c, lv in sorted(levels.items()):
        counts = digest.levels.get(c, Counter())
        if lv.get("requests", counts.total()) != counts.total():
            out.append(f"ramp level {c}: {lv['requests']:,} requests in the summary, "
                       f"{counts.total():,} records")
        elif "outcomes" in lv and _counts(lv["outcomes"]) != _counts(counts):
            out.append(f"ramp level {c}: outcomes {_counts(lv['outcomes'])} in the summary, "
                       f"{_counts(counts)} in the records")
        else:
            out += filter(None, [_ttft_disagrees(f"ramp level {c}", lv.get("ttft_s"),
                                                 digest.ttft_values("ramp", c))])
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not (
            isinstance(a, int | float) and isinstance(b, int | float)):
        return bool(a == b)
    return abs(a - b) <= 1e-12 + 1e-9 * abs(b)


#: top-level sections a summary written before they existed lacks: without one its judge
#: has no evidence (rate limits read `unverified`, never `ok`)
_NEWER_SECTIONS = frozenset({"rate_limits"})
#: sections newer than some summaries that are None for a run without their phase: one
#: may be missing only where its records would give None (a run that had a workload
#: cannot lose its section unnoticed)
_NEWER_WHEN_EMPTY = frozenset({"workload", "trace"})
#: top-level figures newer than some summaries that may be missing only where the
#: records give nothing to say: no request sent again (`reconnects` 0), no configuration
#: finding (a run that had one cannot lose it unnoticed)
_NEWER_WHEN_NOTHING = frozenset({"reconnects", "configuration"})


def _nothing(value: Any) -> bool:
    """A newer figure that says nothing happened (0, or a section without findings)."""
    return value == 0 or (isinstance(value, Mapping) and not value.get("findings"))


def _differences(given: Any, derived: Any, path: str, out: list[str]) -> None:
    """Where `given` says other than `derived`. A key the derivation writes and `given`
    lacks is a difference at the top level and anywhere in `validity` (the verdict must
    be there); deeper, a summary written before a figure existed lacks it, and a figure
    deleted only leaves a judge less evidence (a status of unverified, never a green
    mark). Keys only in `given` (vendor_metrics, from elsewhere) are not ours. A top-level
    section newer than the summary (`_NEWER_SECTIONS`) may be missing likewise."""
    if isinstance(derived, Mapping):
        if not isinstance(given, Mapping):
            out.append(path or "the summary")
            return
        required = not path or path == "validity" or path.startswith("validity.")
        for k, v in derived.items():
            where = f"{path}.{k}" if path else str(k)
            if k in given:
                _differences(given[k], v, where, out)
            elif required and not (not path and (
                    k in _NEWER_SECTIONS or (k in _NEWER_WHEN_EMPTY and v is None)
                    or (k in _NEWER_WHEN_NOTHING and _nothing(v)))):
                out.append(f"{where} (missing)")
    elif isinstance(derived, list):
        if not isinstance(given, list) or len(given) != len(derived):
            out.append(path)
            return
        for i, (g, d) in enumerate(zip(given, derived, strict=True)):
            _differences(g, d, f"{path}[{i}]", out)
    elif not _same(given, derived):
        out.append(path)


def summary_rederived_differences(summary: Mapping[str, Any],
                                  derived: Mapping[str, Any]) -> list[str]:
    """The figures of `summary` that its records, re-derived (`derive_summary`), do not give.

    The cheap checks (`summary_disagreements`) cover counts, outcomes and TTFT; this one
    covers everything a judgement reads: the run's validity, TPOT and stream rates,
    aggregate throughput, the ramp's verdict, the client and usage checks. A summary
    lifted to 'valid', or with its rates edited, would otherwise be trusted as written.
    """
    out: list[str] = []
    _differences(summary, derived, "", out)
    return out
