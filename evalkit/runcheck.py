"""A run directory handed over is input, not truth: read it bounded, check it, repair it.

`report` and `compare` read run directories a vendor or a colleague handed over, and
directories a killed probe left behind. `read_run(dir)` reads one like any other input:

    run.json        a JSON object (bounded size); a field of the wrong type is dropped
                    and noted, never a traceback further on
    requests.jsonl  streamed a line at a time (`runstore.iter_records`): a line that is not
                    a record is skipped and counted; what the report needs of the records
                    is kept in a bounded `RecordDigest` (the records themselves only
                    while the summary is re-derived, below)
    summary.json    checked on its own (shape, finite numbers, no negative durations or
                    counts, nothing absurd), against the records' digest (requests,
                    outcomes, phases, ramp levels, TTFT n/p50/p90 per level), and then
                    re-derived whole from the records and run.json's write-up and
                    compared figure by figure (`summary_rederived_differences`): the
                    digest's checks leave the validity, rates, throughput and the ramp's
                    verdict to trust, and a summary lifted to 'valid' must not pass. That
                    holds the records at once, so a requests.jsonl over
                    REDERIVE_MAX_BYTES is checked on the digest only (and says so)

A missing summary (a killed probe never wrote one) or one that disagrees with its records
is re-derived from the records (`metrics.summarize`, with the client checks run.json
kept), and the run is marked degraded with the reason. The records are the evidence and
the summary only a digest of them, so when the two disagree the records win: refusing
would stop a review for a defect the records repair, and re-deriving is what a reviewer
would do by hand. What was repaired is said in `notes`, for page one and the terminal.

Only files inside the run directory are read: a `run.json`, `summary.json` or
`requests.jsonl` that is a link resolving outside it is refused (a RunDirError), so
nothing from elsewhere on the machine is hashed, printed or attached.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import random
import statistics
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import evalkit
from evalkit.errors import InputError, RunDirError
from evalkit.records import RequestRecord
from evalkit.runstore import (
    MAX_COUNT,
    MAX_SECONDS,
    REQUESTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    RecordScan,
    iter_records,
    read_json_object,
)
from evalkit.sanitize import clean
from evalkit.summary import as_mapping, as_number

SUMMARY_SCHEMA = "evalkit.summary/1"
#: Per-stream and aggregate rates above this (tokens/s) are absurd.
MAX_RATE = 1e9
#: Concurrency levels above this are absurd.
MAX_LEVEL = 10**7
#: Samples kept per ramp level for the ITL box plots (a fixed-seed reservoir sample).
ITL_SAMPLE = 20_000
#: Streams kept per level for the raster, and chunk times kept per stream.
RASTER_STREAMS, RASTER_CHUNKS = 40, 2_000
#: Distinct error messages counted; the rest are counted together.
ERROR_KINDS = 1_000
PREFILL_POINTS = 500
#: requests.jsonl up to this size has its summary re-derived whole and compared (the
#: records held at once); a larger one is checked on counts, outcomes and TTFT only
REDERIVE_MAX_BYTES = 256 << 20
#: How run.json's status maps to the status a re-derived summary is judged with:
#: anything else (or "running": the probe never wrote the run up) is a cut run.
RUN_STATUSES = ("complete", "interrupted", "crashed", "failed", "merged")
#: run.json keys the report reads as objects, and as text.
_RUN_OBJECTS = ("target", "settings", "client", "client_checks", "clock", "stands_in_for",
                "config", "connect")
_RUN_TEXT = ("schema", "status", "started_at", "ended_at", "profile", "suite_version",
             "tool_version", "error", "run_tag")
_ERROR_TEXT = 200


# --------------------------------------------------------------------------- records


@dataclass
class RecordDigest:
    """What the report and the checks need of the records, gathered in one pass, bounded:
    counts, every ok TTFT of the baseline and each ramp level (8 bytes each), and samples
    for the charts. Build with `add` (or `of`)."""

    n: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    #: ramp level -> outcome counts
    levels: dict[int, Counter[str]] = field(default_factory=dict)
    #: ok TTFT (s; the first chunk's arrival when the record has none, as metrics reads it)
    #: of the baseline ("baseline", None) and of each ramp level ("ramp", level)
    ttft: dict[tuple[str, int | None], array[float]] = field(default_factory=dict)
    #: ramp level -> chunk gaps (s), a fixed-seed reservoir sample of ITL_SAMPLE
    itl: dict[int, list[float]] = field(default_factory=dict)
    itl_seen: dict[int, int] = field(default_factory=dict)
    #: (prompt tokens, TTFT s) of ok prefill requests, a reservoir sample of PREFILL_POINTS
    #: (a scatter of more draws nothing new and makes the PDF slow and large)
    prefill_points: list[tuple[float, float]] = field(default_factory=list)
    #: ramp level -> the RASTER_STREAMS earliest streams: (-t0, id, chunk times, outcome)
    raster: dict[int, list[tuple[float, str, tuple[float, ...], str]]] = field(
        default_factory=dict)
    #: when the last recorded request ended, on the run clock (s from clock.origin_ns)
    last_end_s: float | None = None
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)
    _prefill_seen: int = field(default=0, repr=False)
    #: per level: (the gap count at which the next gap replaces a kept one, algorithm L's w)
    _skip: dict[int, tuple[int, float]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, records: Iterable[RequestRecord]) -> RecordDigest:
        """The digest of records already in memory."""
        d = cls()
        for rec in records:
            d.add(rec)
        return d

    def add(self, rec: RequestRecord) -> None:
        """Count one record in."""
        self.n += 1
        self.outcomes[rec.outcome] += 1
        self.phases[rec.phase] += 1
        if rec.error:
            msg = rec.error[:_ERROR_TEXT]
            if msg in self.errors or len(self.errors) < ERROR_KINDS:
                self.errors[msg] += 1
            else:
                self.errors["(other error messages)"] += 1
        times = [t for t, _ in rec.chunks]
        end = max([rec.end_s or 0.0, rec.e2e_s or 0.0, *times[-1:]])
        if self.last_end_s is None or rec.t0_s + end > self.last_end_s:
            self.last_end_s = rec.t0_s + end
        ttft = rec.ttft_s if rec.ttft_s is not None else (times[0] if times else None)
        if rec.phase == "baseline" and rec.outcome == "ok" and ttft is not None:
            self.ttft.setdefault(("baseline", None), array("d")).append(ttft)
        if rec.phase == "prefill" and rec.outcome == "ok" and rec.prompt_tokens and rec.ttft_s:
            self._prefill_seen += 1
            point = (float(rec.prompt_tokens), rec.ttft_s)
            if len(self.prefill_points) < PREFILL_POINTS:
                self.prefill_points.append(point)
            elif (j := self._rng.randrange(self._prefill_seen)) < PREFILL_POINTS:
                self.prefill_points[j] = point
        if rec.phase != "ramp" or rec.level is None:
            return
        level = rec.level
        self.levels.setdefault(level, Counter())[rec.outcome] += 1
        if rec.outcome == "ok" and ttft is not None:
            self.ttft.setdefault(("ramp", level), array("d")).append(ttft)
        self._sample_itl(level, [b - a for a, b in itertools.pairwise(times)])
        kept = self.raster.setdefault(level, [])
        item = (-rec.t0_s, rec.id, tuple(times[:RASTER_CHUNKS]), rec.outcome)
        if len(kept) < RASTER_STREAMS:
            heapq.heappush(kept, item)
        elif item > kept[0]:  # earlier than the latest kept
            heapq.heapreplace(kept, item)

    def _sample_itl(self, level: int, gaps: list[float]) -> None:
        """Keep a uniform sample of ITL_SAMPLE gaps per level (reservoir sampling, Li's
        algorithm L: a few random draws per replacement, none per gap)."""
        sample = self.itl.setdefault(level, [])
        before = self.itl_seen.get(level, 0)
        seen = self.itl_seen[level] = before + len(gaps)
        room = ITL_SAMPLE - len(sample)
        if room > 0:
            sample.extend(gaps[:room])
            if len(sample) == ITL_SAMPLE:
                self._skip[level] = (ITL_SAMPLE, 1.0)
                self._advance(level)
        while level in self._skip and self._skip[level][0] <= seen:
            index, _ = self._skip[level]
            sample[self._rng.randrange(ITL_SAMPLE)] = gaps[index - before - 1]
            self._advance(level)

    def _advance(self, level: int) -> None:
        """Move level's next replacement on by a geometric skip (algorithm L)."""
        index, w = self._skip[level]
        w *= math.exp(math.log(1.0 - self._rng.random()) / ITL_SAMPLE)
        skip = math.floor(math.log(1.0 - self._rng.random()) / math.log1p(-w)) if w < 1 else 0
        self._skip[level] = (index + skip + 1, w)

    def ttft_values(self, phase: str, level: int | None) -> list[float]:
        """Ok TTFTs of the baseline (level None) or of one ramp level."""
        return list(self.ttft.get((phase, level), ()))

    def raster_streams(self, level: int) -> list[tuple[float, tuple[float, ...], str]]:
        """The earliest streams of a level as (t0, chunk times, outcome), by t0."""
        return [(-neg, times, outcome) for neg, _, times, outcome
                in sorted(self.raster.get(level, []), reverse=True)]


# --------------------------------------------------------------------------- files


def _inside(run_dir: Path, root: Path, name: str) -> Path | None:
    """run_dir/name if it exists; RunDirError when it resolves outside the run directory
    (a link to a file elsewhere) or is not a regular file."""
    path = run_dir / name
    if not path.exists() and not path.is_symlink():
        return None
    real = path.resolve()
    if not real.is_relative_to(root):
        raise RunDirError(
            f"{path} is a link to {real}, outside the run directory {run_dir}: evalkit reads, "
            "hashes and attaches only files inside the inputs you name (copy the file into "
            "the run directory if it belongs to this run)")
    if not real.is_file():
        raise RunDirError(f"{path}: not a regular file")
    return path


def clean_run(run: dict[str, Any], path: Path) -> tuple[dict[str, Any], list[str]]:
    """run.json with every field the report reads as an object or text of that type:
    others are dropped and named (the file itself is attached as it was)."""
    out, notes = dict(run), []
    for key in _RUN_OBJECTS:
        if out.get(key) is not None and not isinstance(out[key], dict):
            notes.append(f"{path.name}: {key} is not an object; ignored")
            out[key] = None
    for key in _RUN_TEXT:
        if out.get(key) is not None and not isinstance(out[key], str):
            notes.append(f"{path.name}: {key} is not text; ignored")
            out[key] = None
    return out, notes


# --------------------------------------------------------------------------- summary

_STAT_NAMES = frozenset({"p50", "p90", "p99", "p10", "p1", "mean", "min", "max"})
_COUNTS = frozenset({"requests", "n", "ok", "stalls", "stalled_streams", "checked", "short",
                     "disagreeing", "pairs", "lengths", "unlevelled_requests",
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


def _counts(x: Any) -> dict[str, int]:
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


def _differences(given: Any, derived: Any, path: str, out: list[str]) -> None:
    """Where `given` says other than `derived`. A key the derivation writes and `given`
    lacks is a difference at the top level and anywhere in `validity` (the verdict must
    be there); deeper, a summary written before a figure existed lacks it, and a figure
    deleted only leaves a judge less evidence (a status of unverified, never a green
    mark). Keys only in `given` (vendor_metrics, from elsewhere) are not ours."""
    if isinstance(derived, Mapping):
        if not isinstance(given, Mapping):
            out.append(path or "the summary")
            return
        required = not path or path == "validity" or path.startswith("validity.")
        for k, v in derived.items():
            where = f"{path}.{k}" if path else str(k)
            if k in given:
                _differences(given[k], v, where, out)
            elif required:
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


# --------------------------------------------------------------------------- rebuild


#: why a self-check calls the client bound (`selfcheck.judge_client`; a Ray worker lost)
_BOUND_REASONS = frozenset({"cpu", "loop_lag", "send_lag", "late_reads", "lost_worker"})




def _check(v: Any) -> dict[str, Any]:
    v = v if isinstance(v, Mapping) else {}
    reasons = v.get("client_bound_reasons")
    return {"loop_lag_p99_s": as_number(v.get("loop_lag_p99_s")),
            "cpu_fraction": as_number(v.get("cpu_fraction")),
            "send_lag_p99_s": as_number(v.get("send_lag_p99_s")),
            "send_lag_fraction": as_number(v.get("send_lag_fraction")),
            "client_bound": v.get("client_bound") is True,
            # only the reasons the self-check gives: run.json is a file anyone may edit
            "client_bound_reasons": [r for r in reasons if isinstance(r, str)
                                     and r in _BOUND_REASONS]
            if isinstance(reasons, list) else [],
            # Ray workers lost at this level, in words (cleaned, capped: vendor-free but
            # editable text)
            "lost": [clean(w, 200) for w in lost[:64] if isinstance(w, str)]
            if isinstance(lost := v.get("lost"), list) else []}


def derive_summary(records: list[RequestRecord], run: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json as the probe wrote it from these records and run.json's write-up.

    The client checks and round-trip samples come from run.json (the probe writes them
    there when it writes the run up; it summarised with exactly these), as does the run's
    status: a run that never wrote itself up ("running") is judged as one.
    """
    from evalkit.metrics import summarize

    status = run.get("status")
    run_status = status if status in RUN_STATUSES else "running"
    checks = as_mapping(run.get("client_checks"))
    phases, levels = as_mapping(checks.get("phases")), as_mapping(checks.get("levels"))
    rtts = run.get("rtt_samples_s")
    rtt = [x for x in (rtts if isinstance(rtts, list) else [])
           if as_number(x) is not None and 0 <= x <= MAX_SECONDS]
    meta = {"tool_version": str(run.get("tool_version") or evalkit.__version__),
            "suite_version": str(run.get("suite_version") or evalkit.SUITE_VERSION),
            "phases": {str(k): _check(v) for k, v in phases.items()},
            "levels": {int(k): _check(v) for k, v in levels.items()
                       if str(k).isdigit() and 0 < int(k) <= MAX_LEVEL},
            "rtt_s": statistics.median(rtt) if rtt else None,
            "run_status": run_status,
            "run_error": run.get("error") if isinstance(run.get("error"), str) else None}
    summary = dict(summarize(records, meta))
    summary["run_status"] = run_status
    return summary


def rebuild_summary(records: list[RequestRecord], run: Mapping[str, Any], why: str,
                    requests_sha256: str | None, reason: str | None = None) -> dict[str, Any]:
    """summary.json re-derived from the records (`derive_summary`), marked as such.

    A killed probe never wrote its client checks to run.json, and the summary then says
    the client check is unknown. `why` says why the summary was rebuilt (kept in it as
    `rebuilt_from_records.why`); `reason`, a shorter form of it, joins the run's validity
    reasons, and the run is at best degraded.
    """
    from evalkit.validity import worst

    checks = as_mapping(run.get("client_checks"))
    phases, levels = as_mapping(checks.get("phases")), as_mapping(checks.get("levels"))
    summary = derive_summary(records, run)
    validity = summary["validity"]
    reasons = [reason or why]
    if not phases and not levels:
        # the checks died with the probe: whether the client set the pace is unknown
        client = summary["client"]
        client["client_bound"] = client["capacity_judgement_affected"] = None
        reasons.append("the client's self-checks were not written (they are written with the "
                       "run's write-up): whether the client set the pace is unknown")
    validity["status"] = worst(validity["status"], "degraded")
    validity["reasons"] = list(dict.fromkeys([*validity["reasons"], *reasons]))
    summary["rebuilt_from_records"] = {
        "by": f"evalkit {evalkit.__version__}", "why": why, "records": len(records),
        "requests_sha256": requests_sha256}
    return summary


def _vendor_metrics(run_dir: Path, root: Path, records: list[RequestRecord],
                    old: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The vendor's metrics for a re-derived summary, and a note saying where they came
    from: re-derived from the scrape log the probe appended to as it went (a killed run
    keeps it), else carried from the summary being replaced, else none."""
    from evalkit.vendor_metrics import SCRAPES_FILE, digest_log

    log = _inside(run_dir, root, SCRAPES_FILE)
    if log is not None:
        try:
            vendor = digest_log(log, records)
        except (OSError, ValueError) as exc:  # the log is input: a bad one costs only it
            return None, f"{SCRAPES_FILE}: not read ({clean(str(exc), 200)})"
        if vendor is not None:
            skipped = vendor["rebuilt_from"]["skipped_lines"]
            return vendor, (f"the vendor's metrics were re-derived from {SCRAPES_FILE} "
                            f"({vendor['scrapes']:,} scrapes"
                            + (f"; {skipped:,} lines that are not scrapes skipped" if skipped
                               else "") + ")")
    if isinstance(old, Mapping):
        return {**old, "carried_from": SUMMARY_FILE}, (
            f"the vendor's metrics were carried from the {SUMMARY_FILE} being replaced (no "
            f"{SCRAPES_FILE} to re-derive them from)")
    return None, None


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class CheckedRun:
    """A run directory read and checked: what the report shows, and what it must say."""

    run: dict[str, Any]
    summary: dict[str, Any]
    digest: RecordDigest
    scan: RecordScan
    #: exact bytes of the files to attach, by attachment name
    raw: dict[str, bytes]
    #: what reading found and repaired, one sentence each (page one and the terminal)
    notes: tuple[str, ...]
    #: None: summary.json as the probe wrote it; else why it was re-derived
    rebuilt: str | None
    requests_path: Path | None


def read_run(run_dir: Path) -> CheckedRun:
    """Read, check and (where needed) repair a run directory; see the module docstring.

    RunDirError: not a directory, no run.json, a file resolving outside the directory, or
    neither a summary nor a single record. InputError: run.json or summary.json is not a
    JSON object (or is not a summary at all).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: not a directory")
    root = run_dir.resolve()
    run_file = _inside(run_dir, root, RUN_FILE)
    if run_file is None:
        raise RunDirError(f"{run_dir}: no {RUN_FILE}; is this a run directory?")
    summary_file = _inside(run_dir, root, SUMMARY_FILE)
    req_file = _inside(run_dir, root, REQUESTS_FILE)
    run, run_raw = read_json_object(run_file, "a run's metadata")
    run, notes = clean_run(run, run_file)
    raw = {RUN_FILE: run_raw}
    summary: dict[str, Any] | None = None
    if summary_file is not None:
        summary, raw[SUMMARY_FILE] = read_json_object(summary_file, "a run summary")
        if summary.get("schema") != SUMMARY_SCHEMA:
            raise InputError(f"{summary_file}: schema is {str(summary.get('schema'))[:60]!r}, "
                             f"expected {SUMMARY_SCHEMA!r}")
    scan = RecordScan(req_file or run_dir / REQUESTS_FILE)
    digest = RecordDigest()
    kept: list[RequestRecord] | None = [] if summary is None else None
    if req_file is not None:
        for rec in iter_records(req_file, scan):
            digest.add(rec)
            if kept is not None:
                kept.append(rec)
    if summary is None and digest.n == 0:
        raise RunDirError(
            f"{run_dir}: no {SUMMARY_FILE} and no request record in {REQUESTS_FILE}"
            + (f" ({scan.malformed:,} lines that are not records)" if scan.malformed else "")
            + ": nothing was measured, or this is not a run directory")
    if scan.describe():
        notes.append(str(scan.describe()))
    if scan.torn_tail:
        notes.append(f"{REQUESTS_FILE}: its last line was cut mid-write (the probe stopped "
                     "while writing it); that request is not counted")
    rebuilt = reason = None
    records = f"the {digest.n:,} request records"
    if summary is None:
        rebuilt = (f"{SUMMARY_FILE} is missing (the probe stopped before writing it): every "
                   f"figure was rebuilt from {records}")
        reason = f"{SUMMARY_FILE} was missing: rebuilt from {records}"
    elif digest.n == 0:
        rebuilt = reason = (
            f"{REQUESTS_FILE} {'is missing' if req_file is None else 'holds no record'}: no "
            f"figure of {SUMMARY_FILE} has a measurement behind it, so none is shown")
    else:
        malformed = summary_problems(summary)
        problems = malformed or summary_disagreements(summary, digest)
        # an imported run's summary is the importer's (and capped below): not re-derived
        whole = not problems and not isinstance(run.get("imported"), Mapping)
        if whole and req_file is not None and scan.bytes <= REDERIVE_MAX_BYTES:
            kept = list(iter_records(req_file, limit=scan.bytes))
            # run.json's status unreadable (dropped above): the summary's own stands in
            written = run if run.get("status") is not None else {
                **run, "status": summary.get("run_status")}
            differ = summary_rederived_differences(summary, derive_summary(kept, written))
            problems = [f"{', '.join(differ[:3])}"
                        f"{f' (and {len(differ) - 3} more)' if len(differ) > 3 else ''} "
                        "differ from a re-derivation"] if differ else []
            if not problems:
                kept = None
        elif whole:
            notes.append(f"{REQUESTS_FILE} is over {REDERIVE_MAX_BYTES >> 20} MiB: "
                         f"{SUMMARY_FILE} was checked against it on counts, outcomes and "
                         "TTFT, not re-derived whole")
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            what = "is malformed" if malformed else f"does not agree with {REQUESTS_FILE}"
            rebuilt = (f"{SUMMARY_FILE} {what}: "
                       f"{'; '.join(p[:200] for p in problems[:3])}{more}; every figure was "
                       f"re-derived from {records}")
            reason = f"{SUMMARY_FILE} {what}: re-derived from {records}"
    if rebuilt is not None:
        if kept is None:  # read again, exactly the bytes read the first time
            kept = (list(iter_records(req_file, limit=scan.bytes)) if req_file is not None
                    else [])
        old_vendor = summary.get("vendor_metrics") if summary is not None else None
        summary = rebuild_summary(kept, run, rebuilt, scan.sha256, reason)
        vendor, said = _vendor_metrics(run_dir, root, kept, old_vendor)
        if vendor is not None:
            summary["vendor_metrics"] = vendor
        if said:
            notes.append(said)
        del kept
        raw["summary.rebuilt.json"] = (json.dumps(summary, indent=2, allow_nan=False)
                                        + "\n").encode()
        notes.insert(0, rebuilt)
    assert summary is not None
    imported = run.get("imported")
    if isinstance(imported, Mapping):
        # a peer tool's run (`evalkit import`): capped however its summary was written
        from evalkit.importers import fail_closed, imported_reason

        summary = fail_closed(summary, imported)
        notes.insert(0, imported_reason(imported))
    return CheckedRun(run, summary, digest, scan, raw, tuple(clean(n, 800) for n in notes),
                      rebuilt and clean(rebuilt, 800), req_file)
