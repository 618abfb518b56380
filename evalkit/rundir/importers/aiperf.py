"""AIPerf's export (profile_export.jsonl and its aggregate) read into evalkit's
records."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import as_mapping, as_number
from evalkit.errors import InputError
from evalkit.records import Outcome, RequestRecord
from evalkit.rundir.importers.common import (
    _ERROR,
    _ID,
    Imported,
    _count,
    _json_object,
    _read_bytes,
    _status_of,
    _text,
    _url,
    listed,
)
from evalkit.sanitize import clean

#: the aggregate / report schema majors read (others: a clear error)
AIPERF_SCHEMA_MAJOR = "1"


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
    phases = {str(p.get("name")): p for p in listed(config.get("phases"))
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
    url = next(iter(listed(as_mapping(config.get("endpoint")).get("urls"))), None)
    model = next((m.get("name") for m in listed(as_mapping(config.get("models")).get("items"))
                  if isinstance(m, Mapping)), None)
    prompts = next((as_mapping(d.get("prompts")) for d in listed(config.get("datasets"))
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
