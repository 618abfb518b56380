"""`vllm bench serve`'s result JSON read into evalkit's records.

The format, read from vLLM's source (vllm/benchmarks/serve.py `benchmark` and `main_async`,
vllm/benchmarks/lib/endpoint_request_func.py; upstream, read 2026-12-05): one JSON object
a run, written by `--save-result`; the per-request lists only with `--save-detailed`:
`start_times` (the client's `time.perf_counter()` when the request was sent, after the
`--max-concurrency` semaphore), `ttfts`, `itls` (one list a request), `latencies`,
`input_lens`, `output_lens`, `errors` (an empty string for a success). The setup beside
them: `date` (local time, no zone, when the run ended), `backend`, `model_id`,
`num_prompts`, `request_rate` ("inf" for none), `burstiness`, `max_concurrency`, and the
tool's aggregate figures (`mean_ttft_ms`, `p99_itl_ms`, `output_throughput`, ...).

What its figures mean beside ours (run.json's `imported.definitions` and `differs`):
  - TTFT is to the first SSE message with `choices`, whatever it carries: the chat API's
    role-only first chunk, or an empty completion text, stops the clock. Ours waits for
    generated text. Against a server that sends the role before the prefill, vLLM's TTFT
    is its time to first byte, and it cannot be corrected from the file (the texts are
    concatenated): the figure is kept, and named as differing;
  - `itls` are the gaps between those messages, so a chunk's time is exact but its token
    count is not in the file (a message may carry several tokens);
  - `output_lens` are the server's usage when it sent one (every request asks for it),
    else vLLM's tokenizer's count of the text, else 1: the file does not say which, so
    they are marked estimated;
  - the ready-check request and `--num-warmups` warm-up requests are never in the file:
    warm-up is out, as in ours;
  - a failed request's error is the HTTP reason phrase (no status code) or a traceback;
    "Too Many Requests" and "Service Unavailable" read as the admission refusals 429/503.

One file is one level: a closed loop needs `--max-concurrency N` and no `--request-rate`
(an open loop, or every prompt sent at once, has no concurrency level to judge). A
directory of result files imports each as a level; their clocks are separate processes',
so each level's requests keep their own spacing and the levels are placed one after
another in the order of their `date`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import as_number
from evalkit.errors import InputError
from evalkit.records import Outcome, RequestRecord
from evalkit.rundir.importers.common import (
    _ERROR,
    Imported,
    _count,
    _json_object,
    _status_of,
    _text,
)
from evalkit.sanitize import clean

#: the per-request lists `--save-detailed` keeps, which an import needs
DETAILED = ("start_times", "ttfts", "itls", "latencies", "input_lens", "output_lens", "errors")
#: aiohttp's reason phrases for the admission refusals (the file keeps no status code)
_REASONS = {"too many requests": 429, "service unavailable": 503,
            "internal server error": 500, "bad gateway": 502, "gateway timeout": 504,
            "bad request": 400, "unauthorized": 401, "forbidden": 403, "not found": 404}
#: a gap between levels imported from separate files (their clocks are unrelated)
LEVEL_GAP_S = 1.0
_REPORTED = ("completed", "failed", "duration", "request_throughput", "output_throughput",
             "total_token_throughput", "max_concurrent_requests")
_REPORTED_MS = ("ttft", "tpot", "itl", "e2el")


def read_vllm(path: Path) -> Imported:
    """A `vllm bench serve` result JSON, or a directory of them, as records."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path}: a directory without a .json file; expected the result "
                         "files `vllm bench serve --save-result --save-detailed` wrote")
    runs = sorted(((f, *_run(f)) for f in files), key=lambda r: str(r[1].get("date") or ""))
    records: list[RequestRecord] = []
    levels: list[int] = []
    reported: dict[str, Any] = {}
    notes: list[str] = []
    offset = 0.0
    for f, doc, level in runs:
        if level in levels:
            raise InputError(f"{f}: a second run at max_concurrency {level}; import one file "
                             "per level")
        levels.append(level)
        starts = [as_number(t) for t in doc["start_times"]]
        origin = min((t for t in starts if t is not None), default=None)
        if origin is None:
            raise InputError(f"{f}: no request with a start time: nothing to import")
        last = offset
        for i in range(len(doc["start_times"])):
            rec = _record(doc, i, level, origin, offset, f.stem)
            if rec is not None:
                records.append(rec)
                last = max(last, rec.t0_s + (rec.end_s or 0.0))
        offset = last + LEVEL_GAP_S
        reported[str(level)] = _reported(doc)
        prompts = _count(doc.get("num_prompts"))
        if prompts and prompts != len(doc["start_times"]):
            notes.append(f"{f.name}: {len(doc['start_times']):,} requests in the file, "
                         f"num_prompts {prompts:,}")
    first = runs[0][1]
    return Imported(
        tool="vllm", version="(version not recorded)",
        schema="vllm bench serve result", files=[f for f, _, _ in runs], records=records,
        levels=sorted(levels),
        # the file names no URL: the run's endpoint is unknown
        target={"base_url": None, "model": _text(first.get("model_id")),
                "api": "openai-chat" if str(first.get("backend")) == "openai-chat"
                else "openai-completions"},
        settings={"ramp": {"levels": sorted(levels)},
                  "backend": _text(first.get("backend"), 40)},
        started_at=_local(first, before=True), ended_at=_local(runs[-1][1], before=False),
        complete=True, reported=reported,
        notes=[*notes, "vLLM's `date` is its machine's local time, its zone not recorded: "
               "the run's start and end are read as UTC, to the second"])


def _local(doc: Mapping[str, Any], before: bool) -> str | None:
    """`date` (local, "%Y%m%d-%H%M%S", written when the run ended) as an ISO time; the
    start is that less the run's `duration`."""
    text = doc.get("date")
    try:
        when = datetime.strptime(str(text), "%Y%m%d-%H%M%S")
    except ValueError:
        return None
    duration = as_number(doc.get("duration"))
    if before and duration is not None and 0 <= duration < 1e7:
        when -= timedelta(seconds=duration)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _run(path: Path) -> tuple[dict[str, Any], int]:
    """One result file and its level, checked: detailed, closed-loop, lists of one
    length."""
    doc = _json_object(path, "a `vllm bench serve --save-result` JSON")
    if "model_id" not in doc or "max_concurrency" not in doc:
        raise InputError(f"{path}: no model_id and max_concurrency: not a `vllm bench serve` "
                         "result (the file --save-result writes)")
    missing = [k for k in DETAILED if not isinstance(doc.get(k), list)]
    if missing:
        raise InputError(f"{path}: no per-request {', '.join(missing)}: re-run `vllm bench "
                         "serve` with --save-detailed (without it the file keeps only the "
                         "tool's own averages, which evalkit does not take on trust)")
    n = len(doc["start_times"])
    if any(len(doc[k]) != n for k in DETAILED):
        raise InputError(f"{path}: its per-request lists differ in length: a damaged file")
    rate = doc.get("request_rate")
    level = _count(doc.get("max_concurrency"))
    if not level or rate not in ("inf", None) or doc.get("ramp_up_strategy") is not None:
        raise InputError(
            f"{path}: request_rate {clean(str(rate), 20)}, max_concurrency "
            f"{clean(str(doc.get('max_concurrency')), 20)}: evalkit imports closed-loop runs "
            "only, each a ramp level; re-run with --max-concurrency N and no --request-rate")
    return doc, level


def _record(doc: Mapping[str, Any], i: int, level: int, origin: float, offset: float,
            stem: str) -> RequestRecord | None:
    start = as_number(doc["start_times"][i])
    if start is None or start < origin:
        return None
    message = _text(doc["errors"][i], _ERROR)
    ttft = as_number(doc["ttfts"][i])
    latency = as_number(doc["latencies"][i])
    gaps_raw = doc["itls"][i]
    gaps = [g for x in gaps_raw if (g := as_number(x)) is not None and g >= 0] \
        if isinstance(gaps_raw, list) else []
    outcome: Outcome = "ok"
    status: int | None = 200
    if message:
        status = _REASONS.get(message.strip().lower())
        outcome, status = _status_of(message, status)
    elif ttft is None or latency is None:
        outcome, message = "incomplete", "no first chunk (vLLM recorded no TTFT)"
    ok = outcome == "ok"
    chunks: list[tuple[float, int]] = []
    if ok and ttft is not None:
        t = ttft
        chunks.append((t, 1))
        for g in gaps:
            t += g
            chunks.append((t, 1))
    out = _count(doc["output_lens"][i])
    end = latency if latency is not None and math.isfinite(latency) and latency >= 0 else None
    return RequestRecord(
        id=f"{clean(stem, 60)}-{i}", phase="ramp", level=level, outcome=outcome,
        t0_s=offset + start - origin,
        prompt_tokens=_count(doc["input_lens"][i]), prompt_tokens_estimated=True,
        output_tokens=out if ok else None, output_tokens_estimated=True,
        ttft_s=ttft if ok else None, e2e_s=latency if ok else None,
        chunks=chunks, http_status=status, error=None if ok else message,
        end_s=end if ok else None)


def _reported(doc: Mapping[str, Any]) -> dict[str, Any]:
    """vLLM's own figures for one run, as it reported them (ms where it says so)."""
    out: dict[str, Any] = {k: as_number(doc.get(k)) for k in _REPORTED if k in doc}
    for name in _REPORTED_MS:
        out[f"{name}_ms"] = {k.removesuffix(f"_{name}_ms"): as_number(v)
                             for k, v in doc.items()
                             if isinstance(k, str) and k.endswith(f"_{name}_ms")
                             and k.split("_", 1)[0] in ("mean", "median", "std", "p50",
                                                        "p90", "p95", "p99")}
    return out
