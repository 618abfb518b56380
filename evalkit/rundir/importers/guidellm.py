"""guidellm's benchmarks report read into evalkit's records."""

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
    _iso,
    _json_object,
    _status_of,
    _text,
    _url,
    listed,
)
from evalkit.sanitize import clean

GUIDELLM_REPORT_VERSION = 2


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
    data = as_mapping(next(iter(listed(spec.get("data"))), {}))
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
        for r in listed(groups.get(key)):
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
