"""One pass over requests.jsonl that keeps what the checks need (counts, outcomes,
TTFTs, a bounded ITL sample), and the run directory's files read inside it."""

from __future__ import annotations

import heapq
import itertools
import math
import random
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import RunDirError
from evalkit.records import RequestRecord

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
#: How run.json's status maps to the status a re-derived summary is judged with:
#: anything else (or "running": the probe never wrote the run up) is a cut run.
RUN_STATUSES = ("complete", "interrupted", "crashed", "failed", "merged")
#: run.json keys the report reads as objects, and as text.
_RUN_OBJECTS = ("target", "settings", "client", "client_checks", "clock", "stands_in_for",
                "config", "connect", "canaries")
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
    #: the same requests' prompts as we counted them (NaN where a record has no count):
    #: the report plots these when the prefill fit was drawn on our count
    prefill_counted: list[float] = field(default_factory=list)
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
            counted = float(rec.counted_prompt_tokens or "nan")
            if len(self.prefill_points) < PREFILL_POINTS:
                self.prefill_points.append(point)
                self.prefill_counted.append(counted)
            elif (j := self._rng.randrange(self._prefill_seen)) < PREFILL_POINTS:
                self.prefill_points[j] = point
                self.prefill_counted[j] = counted
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
