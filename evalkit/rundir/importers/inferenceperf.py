"""inference-perf's report directory read into evalkit's records.

The format, read from inference-perf's source (kubernetes-sigs/inference-perf, upstream
as read 2026-12-05: inference_perf/reportgen/base.py `generate_reports` and
`summarize_requests`, inference_perf/apis/base.py, inference_perf/apis/streaming_parser.py,
inference_perf/client/modelserver/openai_client.py): a directory `reports-<time>/` with
`per_request_lifecycle_metrics.json` (only with `report.request_lifecycle.per_request:
true`): a list, one object a request, `start_time` and `end_time` (the client's
`time.perf_counter()` before the request and after its stream), `info.response_metrics`
(`chunk_times`: perf_counter stamps of the content-bearing SSE messages only, a role-only
or usage-only message left out; `response_chunks` 1:1 with them; `server_usage`: the
`usage` the server sent; `output_tokens`: the client tokenizer's count),
`info.request_metrics.text.input_tokens` (the client tokenizer's), and `error`
(`error_type`, `error_msg`) or null; beside it `stage_N_lifecycle_metrics.json`, whose
`load_summary` has the stage's `count` and, for a concurrency stage, its `concurrency`.

The per-request file names no stage, so a request's level is found from the stages'
counts: in start order, stage 0's first `count` requests, then stage 1's, ...; accepted
only where each stage ended before the next began (inference-perf runs its stages one
after another), refused otherwise.

What its figures mean beside ours (run.json's `imported.definitions` and `differs`):
  - TTFT and chunk times are re-derived from `chunk_times` under our definitions (the
    first content chunk): the same, except that inference-perf keeps no reasoning
    chunk, so where a model reasoned first its "first token" is the answer's (our TTFA),
    named as differing;
  - token counts are the server's usage where it sent one, else the client tokenizer's
    (marked estimated); per-chunk token counts are not in the file;
  - inference-perf sends no warm-up: the first stage's first requests (new connections,
    cold caches) are in its figures and in these, as they are in a probe's first phase.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import as_mapping, as_number
from evalkit.errors import InputError
from evalkit.records import Outcome, RequestRecord
from evalkit.rundir.importers.common import (
    _ERROR,
    MAX_JSON_BYTES,
    MAX_REQUEST_S,
    MAX_RUN_S,
    Imported,
    _count,
    _json_object,
    _read_bytes,
    _shown,
    _status_of,
    _text,
    _url,
    count_field,
    inside,
    seconds_field,
)
from evalkit.sanitize import clean

PER_REQUEST = "per_request_lifecycle_metrics.json"
_STAGE = re.compile(r"stage_(\d{1,4})_lifecycle_metrics\.json")
#: perf_counter stamps are seconds since some boot: below this
MAX_STAMP_S = 1e12


def read_inference_perf(path: Path) -> Imported:
    """An inference-perf report directory as records; see the module docstring."""
    folder = path if path.is_dir() else path.parent
    per_request = folder / PER_REQUEST
    if not per_request.is_file():
        raise InputError(f"{folder}: no {PER_REQUEST}: expected inference-perf's report "
                         "directory written with `report: request_lifecycle: per_request: "
                         "true` (without it the reports keep only the tool's percentiles)")
    inside(folder, per_request)
    stages = _stages(folder)
    rows = _rows(per_request)
    if len(rows) != sum(n for _, n in stages):
        raise InputError(f"{per_request}: {len(rows):,} requests, the stage reports count "
                         f"{sum(n for _, n in stages):,}: not one run's files")
    rows.sort(key=lambda r: r[0])
    origin = rows[0][0]
    records: list[RequestRecord] = []
    at = 0
    previous_end: float | None = None
    for i, (level, n) in enumerate(stages):
        mine = rows[at:at + n]
        at += n
        if previous_end is not None and mine and mine[0][0] < previous_end:
            raise InputError(f"{folder}: stage {i} began before stage {i - 1} ended: which "
                             "request ran at which concurrency cannot be told from the "
                             "per-request file (it names no stage)")
        previous_end = max((end for _, end, _ in mine), default=previous_end)
        records += [_record(per_request, row, level, origin, at - n + j)
                    for j, (_, _, row) in enumerate(mine)]
    config = _config(folder)
    server = as_mapping(config.get("server"))
    levels = [level for level, _ in stages]
    if len(set(levels)) != len(levels):
        raise InputError(f"{folder}: two stages at one concurrency; import one run per set "
                         "of levels")
    when = re.fullmatch(r"reports-(\d{8}-\d{6})", folder.name)
    started = datetime.strptime(when[1], "%Y%m%d-%H%M%S").strftime("%Y-%m-%dT%H:%M:%S") \
        if when else None
    return Imported(
        tool="inference-perf", version="(version not recorded)",
        schema="inference-perf lifecycle reports",
        files=[per_request, *(folder / f"stage_{i}_lifecycle_metrics.json"
                              for i in range(len(stages)))],
        records=records, levels=sorted(levels),
        target={"base_url": _url(server.get("base_url")),
                "model": _text(server.get("model_name"), 200)},
        settings={"ramp": {"levels": sorted(levels)}},
        started_at=started, ended_at=None, complete=True,
        reported={str(level): _reported(folder / f"stage_{i}_lifecycle_metrics.json")
                  for i, (level, _) in enumerate(stages)},
        notes=["the report directory's time is inference-perf's local time, its zone not "
               "recorded: read as UTC"] if started else [])


def _stages(folder: Path) -> list[tuple[int, int]]:
    """(concurrency, request count) of each stage, in order; refused for a rate stage."""
    found = sorted((int(m[1]), inside(folder, p)) for p in folder.iterdir()
                   if (m := _STAGE.fullmatch(p.name)))
    if not found or [i for i, _ in found] != list(range(len(found))):
        raise InputError(f"{folder}: no stage_0_lifecycle_metrics.json, stage_1_... in "
                         "order: expected inference-perf's report directory with "
                         "`per_stage: true` (its default)")
    out = []
    for i, p in found:
        load = as_mapping(_json_object(p, "inference-perf's stage report").get("load_summary"))
        level, n = _count(load.get("concurrency")), _count(load.get("count"))
        if not level or n is None:
            raise InputError(f"{p}: stage {i} has no concurrency: evalkit imports "
                             "concurrency stages only (load type concurrent), each a ramp "
                             "level; a rate stage has no level to judge")
        out.append((level, n))
    return out


def _rows(path: Path) -> list[tuple[float, float, Mapping[str, Any]]]:
    import json

    try:
        doc = json.loads(_read_bytes(path, MAX_JSON_BYTES))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not JSON ({str(exc)[:160]})") from None
    if not isinstance(doc, list):
        raise InputError(f"{path}: a JSON {type(doc).__name__}, expected inference-perf's "
                         "list of requests")
    rows = []
    for i, row in enumerate(doc):
        if not isinstance(row, Mapping):
            raise InputError(f"{path}: entry {i} is {_shown(row)}: expected a request's "
                             "object; a damaged file")
        start = seconds_field(path, f"[{i}].start_time", row.get("start_time"), MAX_STAMP_S)
        end = seconds_field(path, f"[{i}].end_time", row.get("end_time"), MAX_STAMP_S)
        if not 0 <= end - start <= MAX_REQUEST_S:
            raise InputError(f"{path}: entry {i} ends {end - start:,.6g} s after it starts: "
                             "expected from 0 to a day; a damaged or edited file")
        rows.append((start, end, row))
    if not rows:
        raise InputError(f"{path}: no request: nothing to import")
    if max(r[0] for r in rows) - min(r[0] for r in rows) > MAX_RUN_S:
        raise InputError(f"{path}: start_time spans more than a year: not one run's clock; "
                         "a damaged or edited file")
    return rows


def _record(path: Path, row: Mapping[str, Any], level: int, origin: float,
            index: int) -> RequestRecord:
    """One request; a chunk stamp that is not a number between its request's start and end
    refuses the import (dropped, it would move the TTFT), as does a count that is not one."""
    start, end = float(row["start_time"]), float(row["end_time"])
    info = as_mapping(row.get("info"))
    resp = as_mapping(info.get("response_metrics"))
    usage = as_mapping(resp.get("server_usage"))
    times = resp.get("chunk_times")
    if times is not None and not isinstance(times, list):
        raise InputError(f"{path}: chunk_times of the request with start_time {start!r} is "
                         f"{_shown(times)}: expected a list of perf_counter stamps; a "
                         "damaged or edited file")
    chunks = []
    for j, x in enumerate(times or []):
        t = as_number(x)
        if t is None or not start <= t <= end:
            raise InputError(f"{path}: chunk_times[{j}] of the request with start_time "
                             f"{start!r} is {_shown(x)}: "
                             f"expected a stamp between its start_time ({start:.6f}) and "
                             f"end_time ({end:.6f}); a damaged or edited file")
        chunks.append((t - start, 1))
    for key in ("completion_tokens", "prompt_tokens"):
        if usage.get(key) is not None:
            count_field(path, f"server_usage.{key} of the request with start_time {start!r}",
                        usage[key])
    error = as_mapping(row.get("error"))
    outcome: Outcome = "ok"
    status: int | None = 200
    message = None
    if error:
        kind = _text(error.get("error_type"), 60) or "error"
        message = _text(f"{kind}: {error.get('error_msg')}", _ERROR)
        # a non-200 answer is error_type "HTTP Error <status>" (openai_client.py)
        code = re.fullmatch(r"HTTP Error ([1-5]\d\d)", kind)
        outcome, status = ("timeout", None) if kind == "TimeoutError" else \
            _status_of(message, int(code[1]) if code else None)
    elif not chunks:
        outcome, message = "incomplete", "no content chunk (inference-perf recorded none)"
    ok = outcome == "ok"
    usage_out, usage_in = _count(usage.get("completion_tokens")), _count(
        usage.get("prompt_tokens"))
    counted_in = _count(as_mapping(as_mapping(info.get("request_metrics")).get("text"))
                        .get("input_tokens"))
    out = usage_out if usage_out is not None else _count(resp.get("output_tokens"))
    return RequestRecord(
        id=f"inference-perf-{index}", phase="ramp", level=level, outcome=outcome,
        t0_s=start - origin,
        prompt_tokens=usage_in if usage_in is not None else counted_in,
        prompt_tokens_estimated=usage_in is None,
        output_tokens=out if ok else None, output_tokens_estimated=usage_out is None,
        usage_completion_tokens=usage_out,
        cached_prompt_tokens=_count(as_mapping(usage.get("prompt_tokens_details"))
                                    .get("cached_tokens")),
        ttft_s=chunks[0][0] if ok else None, e2e_s=chunks[-1][0] if ok else None,
        chunks=chunks if ok else [], http_status=status, error=message,
        end_s=end - start)


def _config(folder: Path) -> Mapping[str, Any]:
    """config.yaml beside the reports (the run's configuration), {} when absent."""
    import yaml

    path = folder / "config.yaml"
    if not path.is_file():
        return {}
    try:  # a config is a few KB
        return as_mapping(yaml.safe_load(_read_bytes(inside(folder, path), 1 << 20)))
    except (yaml.YAMLError, RecursionError) as exc:  # the endpoint is then unknown
        raise InputError(f"{path}: not YAML ({clean(str(exc), 160)}); expected "
                         "inference-perf's config") from None


def _reported(path: Path) -> dict[str, Any]:
    """inference-perf's own figures for one stage (s), as it reported them."""
    doc = _json_object(path, "inference-perf's stage report")
    ok = as_mapping(doc.get("successes"))
    latency = as_mapping(ok.get("latency"))
    out: dict[str, Any] = {"count": _count(ok.get("count")),
                           "failures": _count(as_mapping(doc.get("failures")).get("count")),
                           # its names are the file's: cleaned, and a few kept
                           "throughput": {clean(str(k), 60): as_number(v) for k, v in
                                          list(as_mapping(ok.get("throughput")).items())[:16]}}
    for name in ("time_to_first_token", "time_per_output_token", "inter_token_latency",
                 "request_latency"):
        d = as_mapping(latency.get(name))
        if d:
            out[name] = {k: as_number(d.get(k)) for k in ("mean", "median", "p90", "p99")}
    return out
