"""`evalkit import aiperf|guidellm PATH --out DIR`: a peer tool's results as a run directory.

A vendor may send an AIPerf or guidellm run as evidence, and an analyst may hold one. The
import turns the tool's own export into a run directory (run.json, requests.jsonl,
summary.json) that `evalkit report` and `evalkit compare` read like any run, with every
figure re-derived from the tool's per-request data under evalkit's definitions where the
export carries what the definition needs, and absent where it does not.

What each export carries (formats read from the tools' source and checked against real
exports made against evalkit's reference endpoint: tests/data/peers/README.md):

    AIPerf (0.13, aggregate schema 1.x)   profile_export.jsonl, one record per request:
        wall-clock start and end, TTFT, the gaps between content chunks
        (inter_chunk_latency), request latency, the server's usage (with
        --use-server-token-count), the error; profile_export_aiperf.json: version,
        configuration, the tool's own aggregate figures.
    guidellm (0.8, report version 2)   benchmarks.json, per benchmark (one concurrency
        each) every request: wall-clock start, first and last token, end, the tool's
        token counts, the error. No per-chunk times, and no mark of whether the server
        sent usage (without it guidellm counts the *requested* length as generated).

Fail closed, in the run's own files:
  - what the export does not carry is absent (None), never zero or ok: per-chunk
    arrivals (guidellm: no ITL, no stalls, no aggregate tokens/s over a window), usage
    (guidellm), our count of the text (both: `usage_honesty` checks nothing), the
    client's self-check (both: whether the client set the pace is unknown);
  - every validity (the run's, each level's) is at most `degraded`, with the reason
    "imported from <tool> <version>: not measured by evalkit". An evalkit run whose
    self-check was lost reads degraded on the same grounds, and a peer's stamping rules
    are not ours (AIPerf's TTFT includes a new connection's TCP connect; guidellm starts
    its clock when the headers go out, so its dispatch delay is outside TTFT):
    bench/peers.md measured both against the reference endpoint's truth. `runcheck`
    applies the same cap when it reads the directory back, so an edited summary.json
    cannot lift it;
  - run.json's `imported` names the tool, its version, each file read with its
    SHA-256, what is absent, how each figure maps to evalkit's, and the tool's own
    aggregate figures as it reported them (`reported`), so a reader can set ours beside
    theirs;
  - the suite version is `import:<tool>`: `compare` sets an imported run beside runs
    of the same tool only, never beside evalkit's own measurements as if alike.

Only closed-loop runs are imported (AIPerf concurrency phases, guidellm concurrent and
synchronous benchmarks), each concurrency a ramp level: an open-loop (request-rate) run
has no concurrency level to judge, and evalkit's open-loop clock starts at the schedule,
which the peers' TTFT does not.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import evalkit
from evalkit.errors import InputError, UsageError
from evalkit.records import Outcome, RequestRecord
from evalkit.runstore import REQUESTS_FILE, RUN_FILE, SUMMARY_FILE
from evalkit.sanitize import clean
from evalkit.summary import as_count, as_mapping, as_number

TOOLS = ("aiperf", "guidellm")
LABELS = {"aiperf": "AIPerf", "guidellm": "guidellm"}
#: an export file larger than this is refused (a 100,000-request AIPerf run is ~250 MB)
MAX_FILE_BYTES = 1 << 30
#: the aggregate / report schema majors read (others: a clear error)
AIPERF_SCHEMA_MAJOR = "1"
GUIDELLM_REPORT_VERSION = 2
_ADMISSION = frozenset({429, 503})
_ID = 120
_ERROR = 300

#: What each figure is, by tool, in evalkit's words: run.json's `imported.definitions`.
DEFINITIONS: dict[str, dict[str, str]] = {
    "aiperf": {
        "ttft_s": "AIPerf's time_to_first_token: from before the request's connection was "
                  "opened (a new connection's TCP connect included: connect_s beside it) to "
                  "the first chunk with content",
        "itl_s": "AIPerf's inter_chunk_latency: the gaps between content chunks, as ours",
        "tpot_s": "re-derived: (last content chunk - first) / (tokens after the first "
                  "chunk); AIPerf's inter_token_latency divides by OSL - 1, the same for "
                  "one-token chunks",
        "e2e_s": "AIPerf's request_latency: to the last content chunk",
        "output_tokens": "AIPerf's output_token_count (the server's usage with "
                         "--use-server-token-count, else its own tokenizer's count)",
        "tokens_per_chunk": "the request's output tokens over its chunks (the export has "
                            "no per-chunk count)",
        "aggregate_tokens_per_s": "re-derived over evalkit's steady-state window; AIPerf's "
                                  "output_token_throughput is total tokens / benchmark "
                                  "duration (in `reported`)",
    },
    "guidellm": {
        "ttft_s": "guidellm's time_to_first_token: from when its request headers started "
                  "to go out (its dispatch delay before that is not in it) to the first "
                  "line with content",
        "tpot_s": "re-derived: (last token - first token) / (output tokens - 1): "
                  "guidellm's inter_token_latency (its time_per_output_token includes "
                  "TTFT and is in `reported` only)",
        "e2e_s": "to guidellm's last token",
        "output_tokens": "guidellm's output token count: the server's usage when sent, "
                         "else the requested length (the export does not say which): "
                         "marked estimated",
    },
}
#: What each export does not carry, said in run.json and in the summary's notes.
ABSENT: dict[str, list[str]] = {
    "aiperf": ["our count of the output text (usage is not checked against it)",
               "per-chunk token counts",
               "the client's self-check (loop lag, CPU): whether the client set the pace "
               "is unknown"],
    "guidellm": ["per-chunk arrival times (no ITL, no stalls, no aggregate tokens/s)",
                 "whether the server sent usage (token counts marked estimated)",
                 "our count of the output text (usage is not checked against it)",
                 "the client's self-check (loop lag, CPU): whether the client set the pace "
                 "is unknown"],
}


@dataclass
class Imported:
    """What an export became: records, run.json's fields, and notes for the terminal."""

    tool: str
    version: str
    schema: str
    files: list[Path]
    records: list[RequestRecord]
    levels: list[int]
    target: dict[str, Any]
    settings: dict[str, Any]
    started_at: str | None
    ended_at: str | None
    complete: bool
    reported: dict[str, Any]
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading


def sha256(path: Path) -> str:
    """The file's SHA-256, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"{path}: {size:,} bytes, more than evalkit reads "
                             f"({MAX_FILE_BYTES >> 20} MiB)")
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _json_object(path: Path, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(_read_bytes(path))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not JSON ({str(exc)[:160]}); expected {what}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a JSON {type(doc).__name__}, expected {what}")
    return doc




def _count(x: Any) -> int | None:
    """A count or timestamp from the file: a whole number, never negative."""
    return as_count(x, least=0)


def _text(x: Any, limit: int = 200) -> str | None:
    """Hostile text as one clean line of at most `limit` characters. Not `as_text`: a
    number here is text too (a numeric request id stays that id), and every string is
    cleaned and capped before it reaches a record."""
    return clean(str(x), limit) or None if x is not None else None


def _url(x: Any) -> str | None:
    """An endpoint URL without credentials (user:password@ is dropped) or query."""
    text = _text(x, 300)
    if text is None:
        return None
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", text.split("?")[0], flags=re.I)


def _iso(ts: float | None) -> str | None:
    if ts is None or not 0 < ts < 1e11:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status_of(message: str | None, code: int | None) -> tuple[Outcome, int | None]:
    """An error's outcome: `rejected` for 429/503 (admission), else `error`."""
    status = code
    if status is None and message:
        m = re.search(r"\b(?:error|status)[ '\"(:]*([1-5]\d\d)\b", message, re.I)
        status = int(m.group(1)) if m else None
    return ("rejected" if status in _ADMISSION else "error"), status


# --------------------------------------------------------------------------- AIPerf


def _aiperf_files(path: Path) -> tuple[Path, Path]:
    """The aggregate JSON and the per-record JSONL of an AIPerf artifact directory (or of
    the directory holding the file named)."""
    folder = path if path.is_dir() else path.parent
    agg, recs = folder / "profile_export_aiperf.json", folder / "profile_export.jsonl"
    missing = [p.name for p in (agg, recs) if not p.is_file()]
    if missing:
        raise InputError(
            f"{path}: not an AIPerf artifact directory: {' and '.join(missing)} not found in "
            f"{folder} (expected the directory `aiperf profile --artifact-dir` wrote, with "
            "profile_export_aiperf.json and the per-record profile_export.jsonl)")
    return agg, recs


def read_aiperf(path: Path) -> Imported:
    """An AIPerf profile export as records; see the module docstring."""
    agg_path, rec_path = _aiperf_files(path)
    agg = _json_object(agg_path, "AIPerf's aggregate export (profile_export_aiperf.json)")
    schema = str(agg.get("schema_version") or "")
    version = _text(agg.get("aiperf_version"), 40)
    if version is None or not schema:
        raise InputError(f"{agg_path}: no aiperf_version and schema_version: not an AIPerf "
                         "aggregate export (expected profile_export_aiperf.json, schema "
                         f"{AIPERF_SCHEMA_MAJOR}.x)")
    if schema.split(".")[0] != AIPERF_SCHEMA_MAJOR:
        raise InputError(f"{agg_path}: AIPerf export schema {clean(schema, 20)} (AIPerf "
                         f"{version}); evalkit reads schema {AIPERF_SCHEMA_MAJOR}.x "
                         "(AIPerf 0.13)")
    config = as_mapping(agg.get("input_config"))
    phases = {str(p.get("name")): p for p in config.get("phases") or []
              if isinstance(p, Mapping)}
    open_loop = [n for n, p in phases.items() if p.get("kind") != "warmup"
                 and p.get("type") not in (None, "concurrency")]
    if open_loop:
        raise InputError(
            f"{agg_path}: phase {clean(open_loop[0], 40)!r} ran as "
            f"{clean(str(phases[open_loop[0]].get('type')), 40)!r} (open loop): evalkit "
            "imports concurrency runs only (`aiperf profile --concurrency N`), each a ramp "
            "level")
    records: list[RequestRecord] = []
    skipped = bad = 0
    rows = list(_jsonl(rec_path))
    starts = [_count(as_mapping(r.get("metadata")).get("request_start_ns")) for r, _ in rows]
    origin = min((s for s in starts if s is not None), default=None)
    if origin is None:
        raise InputError(f"{rec_path}: no record with metadata.request_start_ns: not AIPerf's "
                         "per-record export (expected profile_export.jsonl)")
    for row, lineno in rows:
        meta = as_mapping(row.get("metadata"))
        if meta.get("benchmark_phase") == "warmup" or meta.get("phase_kind") == "warmup":
            skipped += 1
            continue
        level = _count(as_mapping(phases.get(str(meta.get("phase_name")))).get("concurrency"))
        if level is None and len(phases) == 1:
            level = _count(next(iter(phases.values())).get("concurrency"))
        rec = _aiperf_record(row, meta, level, origin, lineno)
        if rec is None:
            bad += 1
            continue
        records.append(rec)
    notes = []
    if skipped:
        notes.append(f"{skipped:,} AIPerf warm-up records were left out")
    if bad:
        notes.append(f"{bad:,} lines of {rec_path.name} were not request records and were "
                     "skipped")
    if not records:
        raise InputError(f"{rec_path}: no profiling record: nothing to import")
    url = next(iter(as_mapping(config.get("endpoint")).get("urls") or []), None)
    model = next((m.get("name") for m in as_mapping(config.get("models")).get("items") or []
                  if isinstance(m, Mapping)), None)
    prompts = next((as_mapping(d.get("prompts")) for d in config.get("datasets") or []
                    if isinstance(d, Mapping)), {})
    levels = sorted({r.level for r in records if r.level is not None})
    return Imported(
        tool="aiperf", version=version, schema=clean(schema, 20), files=[agg_path, rec_path],
        records=records, levels=levels,
        target={"base_url": _url(url), "model": _text(model, 200)},
        settings={"prompt_tokens": as_number(as_mapping(prompts.get("isl")).get("mean")),
                  "output_tokens": as_number(as_mapping(prompts.get("osl")).get("mean")),
                  "ramp": {"levels": levels}},
        started_at=_text(agg.get("start_time"), 40), ended_at=_text(agg.get("end_time"), 40),
        complete=agg.get("is_complete") is True and agg.get("was_cancelled") is not True,
        reported=_aiperf_reported(agg), notes=notes)


def _jsonl(path: Path) -> Iterator[tuple[dict[str, Any], int]]:
    """Each line that is a JSON object, with its line number (others are skipped)."""
    for i, line in enumerate(_read_bytes(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict):
            yield doc, i
        elif i == 1:
            raise InputError(f"{path}: line 1 is not a JSON object: not AIPerf's per-record "
                             "export (expected profile_export.jsonl)")


def _value(metrics: Mapping[str, Any], name: str, scale: float = 1.0) -> float | None:
    v = as_number(as_mapping(metrics.get(name)).get("value"))
    return None if v is None else v * scale


def _aiperf_record(row: Mapping[str, Any], meta: Mapping[str, Any], level: int | None,
                   origin: int, lineno: int) -> RequestRecord | None:
    start, end = _count(meta.get("request_start_ns")), _count(meta.get("request_end_ns"))
    if start is None:
        return None
    m = as_mapping(row.get("metrics"))
    for name in ("time_to_first_token", "request_latency", "inter_chunk_latency"):
        unit = as_mapping(m.get(name)).get("unit")
        if unit not in (None, "ms"):
            raise InputError(f"AIPerf record on line {lineno}: {name} in {clean(str(unit), 20)}"
                             ", expected ms")
    rid = _text(meta.get("x_request_id"), _ID) or f"aiperf-{lineno}"
    ttft = _value(m, "time_to_first_token", 1e-3)
    gaps_raw = as_mapping(m.get("inter_chunk_latency")).get("value")
    gaps = [g / 1e3 for g in gaps_raw if as_number(g) is not None and g >= 0] \
        if isinstance(gaps_raw, list) else []
    chunks: list[tuple[float, int]] = []
    if ttft is not None:
        t = ttft
        chunks.append((t, 1))
        for g in gaps:
            t += g
            chunks.append((t, 1))
    usage_out = _count(_value(m, "usage_completion_tokens"))
    usage_in = _count(_value(m, "usage_prompt_tokens"))
    out = _count(_value(m, "output_token_count"))
    error = as_mapping(row.get("error"))
    end_s = (end - start) / 1e9 if end is not None and end >= start else None
    outcome: Outcome = "ok"
    status: int | None = 200
    message = None
    if error:
        message = _text(error.get("message"), _ERROR) or "error"
        outcome, status = _status_of(message, _count(error.get("code")))
        kind = _text(error.get("type"), 60)
        message = f"{kind}: {message}" if kind else message
    elif meta.get("was_cancelled") is True:
        outcome, status, message = "incomplete", None, "cancelled by AIPerf"
    elif ttft is None:
        outcome, message = "incomplete", "no content (AIPerf recorded no first token)"
    ok = outcome == "ok"
    return RequestRecord(
        id=rid, phase="ramp", level=level, outcome=outcome, t0_s=(start - origin) / 1e9,
        prompt_tokens=usage_in if usage_in is not None else _count(
            _value(m, "input_sequence_length")),
        prompt_tokens_estimated=usage_in is None,
        output_tokens=out if ok else None,
        output_tokens_estimated=usage_out is None,
        usage_completion_tokens=usage_out,
        ttft_s=ttft if ok else None,
        e2e_s=_value(m, "request_latency", 1e-3) if ok else None,
        chunks=chunks if ok else [],
        http_status=status, error=message, end_s=end_s,
        connect_s=_value(m, "http_req_connecting", 1e-3), label=rid)


_AIPERF_REPORTED = ("request_count", "completed_request_count", "request_error_rate",
                    "time_to_first_token", "inter_token_latency", "inter_chunk_latency",
                    "request_latency", "output_token_throughput",
                    "output_token_throughput_per_user", "output_sequence_length",
                    "benchmark_duration", "request_throughput", "total_osl")
_STATS = ("avg", "p50", "p90", "p99", "min", "max", "count", "sum")


def _aiperf_reported(agg: Mapping[str, Any]) -> dict[str, Any]:
    """AIPerf's own aggregate figures, as it reported them (unit kept)."""
    out: dict[str, Any] = {}
    for name in _AIPERF_REPORTED:
        d = as_mapping(agg.get(name))
        if d:
            out[name] = {"unit": _text(d.get("unit"), 30),
                         **{k: as_number(d.get(k)) for k in _STATS if k in d}}
    return out


# --------------------------------------------------------------------------- guidellm


def read_guidellm(path: Path) -> Imported:
    """A guidellm benchmarks JSON as records; see the module docstring."""
    if path.is_dir():  # guidellm's own default name in a directory
        if not (path / "benchmarks.json").is_file():
            raise InputError(f"{path}: a directory without benchmarks.json; expected "
                             "guidellm's JSON report (the file `guidellm run --output "
                             "kind=json,path=FILE` wrote)")
        path = path / "benchmarks.json"
    doc = _json_object(path, "guidellm's JSON report (benchmarks.json)")
    meta = as_mapping(doc.get("metadata"))
    version = _text(meta.get("guidellm_version"), 40)
    if version is None or not isinstance(doc.get("benchmarks"), list):
        raise InputError(f"{path}: no metadata.guidellm_version and benchmarks list: not a "
                         "guidellm JSON report (expected the file `guidellm run --output "
                         f"kind=json` writes, report version {GUIDELLM_REPORT_VERSION})")
    if meta.get("version") != GUIDELLM_REPORT_VERSION:
        raise InputError(f"{path}: guidellm report version {clean(str(meta.get('version')), 20)}"
                         f" (guidellm {version}); evalkit reads version "
                         f"{GUIDELLM_REPORT_VERSION} (guidellm 0.8)")
    benches = [b for b in doc["benchmarks"] if isinstance(b, Mapping)]
    origin = min((t for b in benches for r in _requests(b)
                  if (t := as_number(as_mapping(as_mapping(r.get("info")).get("timings"))
                                     .get("request_start"))) is not None), default=None)
    if origin is None:
        raise InputError(f"{path}: no request with a start time in any benchmark: nothing "
                         "to import")
    records: list[RequestRecord] = []
    levels: list[int] = []
    reported: dict[str, Any] = {}
    notes: list[str] = []
    for i, bench in enumerate(benches, 1):
        strategy = as_mapping(as_mapping(bench.get("config")).get("strategy"))
        kind = str(strategy.get("type_"))
        level = 1 if kind == "synchronous" else _count(strategy.get("streams"))
        if kind not in ("concurrent", "synchronous") or not level:
            raise InputError(
                f"{path}: benchmark {i} ran strategy {clean(kind, 30)!r}: evalkit imports "
                "closed-loop benchmarks only (concurrent, synchronous), each a ramp level; "
                "re-run with --profile kind=concurrent,streams=N")
        if level in levels:
            raise InputError(f"{path}: benchmarks at {level} streams appear twice; import "
                             "one report per set of levels")
        levels.append(level)
        totals = as_mapping(as_mapping(bench.get("metrics")).get("request_totals"))
        kept = 0
        for outcome, r in _requests(bench, with_outcome=True):
            rec = _guidellm_record(r, outcome, level, origin)
            if rec is not None:
                records.append(rec)
                kept += 1
        said = sum(_count(totals.get(k)) or 0 for k in ("successful", "errored", "incomplete"))
        if said and kept < said:
            notes.append(f"benchmark {i} ({level} streams): the report keeps {kept:,} of its "
                         f"{said:,} requests (guidellm samples requests): figures are of "
                         "those kept")
        reported[str(level)] = _guidellm_reported(bench)
    backend = as_mapping(as_mapping(as_mapping(doc.get("config")).get("spec")).get("backend"))
    spec = as_mapping(as_mapping(doc.get("config")).get("spec"))
    data = as_mapping(next(iter(spec.get("data") or []), {}))
    starts = [t for b in benches if (t := as_number(b.get("start_time"))) is not None]
    ends = [t for b in benches if (t := as_number(b.get("end_time"))) is not None]
    return Imported(
        tool="guidellm", version=version, schema=str(GUIDELLM_REPORT_VERSION), files=[path],
        records=records, levels=sorted(levels),
        target={"base_url": _url(backend.get("target")), "model": _text(backend.get("model"))},
        settings={"prompt_tokens": as_number(data.get("prompt_tokens")),
                  "output_tokens": as_number(data.get("output_tokens")),
                  "ramp": {"levels": sorted(levels)}},
        started_at=_iso(min(starts, default=None)), ended_at=_iso(max(ends, default=None)),
        complete=True, reported=reported, notes=notes)


def _requests(bench: Mapping[str, Any], with_outcome: bool = False) -> Iterator[Any]:
    groups = as_mapping(bench.get("requests"))
    for key, outcome in (("successful", "ok"), ("errored", "error"),
                         ("incomplete", "incomplete")):
        for r in groups.get(key) or []:
            if isinstance(r, Mapping):
                yield (outcome, r) if with_outcome else r


def _guidellm_record(r: Mapping[str, Any], outcome: str, level: int, origin: float
                     ) -> RequestRecord | None:
    info = as_mapping(r.get("info"))
    t = as_mapping(info.get("timings"))
    start = as_number(t.get("request_start"))
    if start is None:
        return None

    def since(key: str) -> float | None:
        v = as_number(t.get(key))
        return v - start if v is not None and v >= start else None

    first, last = since("first_token_iteration"), since("last_token_iteration")
    end = since("request_end") or since("resolve_end")
    rid = _text(r.get("request_id") or info.get("request_id"), _ID) or "guidellm-request"
    message = _text(info.get("error"), _ERROR)
    status: int | None = 200
    kind: Outcome = "ok"
    if outcome == "error":
        kind, status = _status_of(message, None)
    elif outcome == "incomplete":
        kind, status = "incomplete", None
        message = message or "cancelled by guidellm (the benchmark ended)"
    elif first is None:
        kind, message = "incomplete", "no content (guidellm recorded no first token)"
    out = _count(r.get("output_tokens"))
    ok = kind == "ok"
    return RequestRecord(
        id=rid, phase="ramp", level=level, outcome=kind, t0_s=start - origin,
        prompt_tokens=_count(r.get("prompt_tokens")), prompt_tokens_estimated=True,
        requested_output_tokens=_requested(r.get("request_args")),
        output_tokens=out if ok else None, output_tokens_estimated=True,
        ttft_s=first if ok else None, e2e_s=last if ok else None,
        http_status=status, error=None if ok else message, end_s=end,
        label=_text(r.get("response_id"), _ID))


def _requested(args: Any) -> int | None:
    """max_completion_tokens / max_tokens from guidellm's request_args (a JSON string)."""
    if not isinstance(args, str) or len(args) > 1 << 20:
        return None
    try:
        body = as_mapping(as_mapping(json.loads(args)).get("body"))
    except (ValueError, RecursionError):
        return None
    return _count(body.get("max_completion_tokens", body.get("max_tokens")))


_GUIDELLM_REPORTED = ("time_to_first_token_ms", "inter_token_latency_ms",
                      "time_per_output_token_ms", "request_latency", "output_token_count",
                      "output_tokens_per_second", "request_dispatch_delay")


def _guidellm_reported(bench: Mapping[str, Any]) -> dict[str, Any]:
    """guidellm's own figures for one benchmark, over its successful requests."""
    metrics = as_mapping(bench.get("metrics"))
    out: dict[str, Any] = {"request_totals": {k: _count(v) for k, v in
                                              as_mapping(metrics.get("request_totals")).items()
                                              if k in ("successful", "errored",
                                                       "incomplete", "total")},
                           "duration_s": as_number(bench.get("duration"))}
    for name in _GUIDELLM_REPORTED:
        d = as_mapping(as_mapping(metrics.get(name)).get("successful"))
        if d:
            pct = as_mapping(d.get("percentiles"))
            out[name] = {"mean": as_number(d.get("mean")), "median": as_number(d.get("median")),
                         "min": as_number(d.get("min")), "max": as_number(d.get("max")),
                         "count": _count(d.get("count")),
                         **{k: as_number(pct.get(k)) for k in ("p50", "p90", "p99")}}
    return out


# --------------------------------------------------------------------------- the run


def imported_reason(imported: Mapping[str, Any]) -> str:
    """The sentence every imported run carries: page one, the terminal, validity."""
    tool = LABELS.get(str(imported.get("tool")), clean(str(imported.get("tool")), 30))
    version = clean(str(imported.get("tool_version") or "?"), 30)
    return (f"imported from {tool} {version}: not measured by evalkit (figures are the "
            "tool's stamps re-derived under evalkit's definitions; the client's self-check "
            "is not in the export)")


def fail_closed(summary: dict[str, Any], imported: Mapping[str, Any]) -> dict[str, Any]:
    """An imported run's summary, capped: absent what the export does not carry, every
    validity at most degraded. Used at import and whenever the summary is re-derived."""
    from evalkit.metrics import percentiles
    from evalkit.validity import worst

    reason = imported_reason(imported)
    no_chunks = not imported.get("per_chunk_times")
    groups = [g for g in (summary.get("baseline"), summary.get("soak"), summary.get("rate"))
              if isinstance(g, dict)]
    groups += [lv for lv in as_mapping(summary.get("ramp")).get("levels") or []
               if isinstance(lv, dict)]
    for g in groups:
        if no_chunks:
            for key in ("itl_s", "tokens_per_chunk"):
                if isinstance(g.get(key), dict):
                    g[key] = percentiles([])  # the shape of a figure with nothing behind it
            g.update(stalls=None, stalled_streams=None, max_gap_s=None,
                     aggregate_tokens_per_s=None, aggregate_tokens_per_s_ci=None)
        v = g.get("validity")
        if isinstance(v, dict) and v.get("status") in ("valid", "degraded", "invalid"):
            v["status"] = worst(v["status"], "degraded")
            v["reasons"] = list(dict.fromkeys([*(v.get("reasons") or []), reason]))
    validity = summary.setdefault("validity", {})
    for v in [*as_mapping(validity.get("phases")).values(),
              *as_mapping(validity.get("levels")).values()]:
        if isinstance(v, dict) and v.get("status") in ("valid", "degraded", "invalid"):
            v["status"] = worst(v["status"], "degraded")
            v["reasons"] = list(dict.fromkeys([*(v.get("reasons") or []), reason]))
    status = validity.get("status")
    validity["status"] = worst(status if status in ("valid", "degraded", "invalid")
                               else "valid", "degraded")
    validity["reasons"] = list(dict.fromkeys([*(validity.get("reasons") or []), reason]))
    client = summary.get("client")
    if isinstance(client, dict):
        client["client_bound"] = client["capacity_judgement_affected"] = None
    summary["imported"] = {k: imported.get(k) for k in ("tool", "tool_version", "files",
                                                        "absent")}
    return summary


def write_run(imp: Imported, out_dir: Path, force: bool = False) -> Path:
    """Write the run directory: run.json, requests.jsonl, summary.json."""
    from evalkit.metrics import summarize

    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise UsageError(f"{out_dir} is not empty: name a new directory (or --force to "
                             "replace a run directory)")
        if not (out_dir / RUN_FILE).is_file():
            raise UsageError(f"{out_dir} holds no {RUN_FILE}: not a run directory; --force "
                             "replaces run directories only")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    imported = {
        "tool": imp.tool, "tool_version": imp.version, "schema": imp.schema,
        "files": [{"name": p.name, "bytes": p.stat().st_size, "sha256": sha256(p)}
                  for p in imp.files],
        "imported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "by": f"evalkit {evalkit.__version__}",
        "per_chunk_times": imp.tool == "aiperf",
        "absent": ABSENT[imp.tool], "definitions": DEFINITIONS[imp.tool],
        "reported": imp.reported, "notes": imp.notes,
    }
    run = {"schema": "evalkit.run/1", "tool": "evalkit", "tool_version": evalkit.__version__,
           "suite_version": f"import:{imp.tool}",
           "status": "complete" if imp.complete else "interrupted",
           "profile": f"imported from {LABELS[imp.tool]}", "target": imp.target,
           "settings": imp.settings, "started_at": imp.started_at, "ended_at": imp.ended_at,
           "requests": len(imp.records), "imported": imported}
    (out_dir / RUN_FILE).write_text(json.dumps(run, indent=2, allow_nan=False) + "\n")
    with (out_dir / REQUESTS_FILE).open("w", encoding="utf-8") as fh:
        for rec in imp.records:
            fh.write(rec.to_json() + "\n")
    summary = summarize(imp.records, {
        "tool_version": evalkit.__version__, "suite_version": run["suite_version"],
        "run_status": run["status"]})
    summary["run_status"] = run["status"]
    fail_closed(summary, imported)
    (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return out_dir


def import_run(tool: str, path: Path, out_dir: Path, force: bool = False) -> Imported:
    """Read a peer tool's export and write it as a run directory; see the module docstring."""
    if tool not in TOOLS:
        raise UsageError(f"import reads {' or '.join(TOOLS)}, not {clean(tool, 30)!r}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    imp = read_aiperf(path) if tool == "aiperf" else read_guidellm(path)
    write_run(imp, out_dir, force)
    return imp
