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

from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from evalkit.analysis.summary import as_number
from evalkit.errors import InputError
from evalkit.records import Outcome, RequestRecord
from evalkit.rundir.importers.common import (
    _ERROR,
    MAX_FILE_BYTES,
    MAX_RUN_S,
    Imported,
    _count,
    _json_object,
    _shown,
    _status_of,
    _text,
    count_field,
    inside,
    seconds_field,
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
#: a directory of more result files than this is no one ramp
MAX_FILES = 256
#: a max_concurrency beyond this is no level a run measured
MAX_LEVEL = 100_000
#: perf_counter stamps (start_times) are seconds since some boot: below this
MAX_STAMP_S = 1e12


def read_vllm(path: Path) -> Imported:
    """A `vllm bench serve` result JSON, or a directory of them, as records."""
    files = sorted(inside(path, f) for f in path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path}: a directory without a .json file; expected the result "
                         "files `vllm bench serve --save-result --save-detailed` wrote")
    total = sum(f.stat().st_size for f in files)  # every file's document is held at once
    if total > MAX_FILE_BYTES or len(files) > MAX_FILES:
        raise InputError(f"{path}: {len(files):,} result files of {total:,} bytes, more than "
                         f"evalkit reads at once ({MAX_FILES} files, {MAX_FILE_BYTES >> 20} "
                         "MiB): import the levels in smaller directories")
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
        starts = [seconds_field(f, f"start_times[{i}]", t, MAX_STAMP_S)
                  for i, t in enumerate(doc["start_times"])]
        if not starts:
            raise InputError(f"{f}: no request with a start time: nothing to import")
        origin = min(starts)
        if max(starts) - origin > MAX_RUN_S:
            raise InputError(f"{f}: start_times span {max(starts) - origin:,.0f} s: not one "
                             "run's clock; a damaged or edited file")
        last = offset
        for i, start in enumerate(starts):
            rec = _record(f, doc, i, level, start - origin + offset)
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
        started_at=_local(runs[0][0], first, before=True),
        ended_at=_local(runs[-1][0], runs[-1][1], before=False),
        complete=True, reported=reported,
        notes=[*notes, "vLLM's `date` is its machine's local time, its zone not recorded: "
               "the run's start and end are read as UTC, to the second"])


def _local(path: Path, doc: Mapping[str, Any], before: bool) -> str | None:
    """`date` (local, "%Y%m%d-%H%M%S", written when the run ended) as an ISO time; the
    start is that less the run's `duration`."""
    text = doc.get("date")
    try:
        when = datetime.strptime(str(text)[:40], "%Y%m%d-%H%M%S")
    except ValueError:
        return None
    if not 1970 < when.year < 2100:  # a run's date, not a date beyond a trace's clock
        raise InputError(f"{path}: date {clean(str(text), 20)!r} is no time a run ended "
                         "(1970-2100); a damaged or edited file")
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
    if not level or level > MAX_LEVEL or rate not in ("inf", None) \
            or doc.get("ramp_up_strategy") is not None:
        raise InputError(
            f"{path}: request_rate {clean(str(rate), 20)}, max_concurrency "
            f"{clean(str(doc.get('max_concurrency')), 20)}: evalkit imports closed-loop runs "
            "only, each a ramp level; re-run with --max-concurrency N and no --request-rate")
    return doc, level


def _record(path: Path, doc: Mapping[str, Any], i: int, level: int,
            t0_s: float) -> RequestRecord:
    """Request `i` of a checked file. Every field is read strictly (`seconds_field`,
    `count_field`): a value vLLM does not write refuses the import, naming the field,
    rather than read as the vendor's failure or as a figure."""
    error = doc["errors"][i]
    if error is not None and not isinstance(error, str):
        raise InputError(f"{path}: errors[{i}] is {_shown(error)}: expected the error's text "
                         "(an empty string for a success); a damaged or edited file")
    message = _text(error, _ERROR)
    ttft = seconds_field(path, f"ttfts[{i}]", doc["ttfts"][i])
    latency = seconds_field(path, f"latencies[{i}]", doc["latencies"][i])
    gaps_raw = doc["itls"][i]
    if not isinstance(gaps_raw, list):
        raise InputError(f"{path}: itls[{i}] is {_shown(gaps_raw)}: expected a list of "
                         "seconds; a damaged or edited file")
    gaps = [seconds_field(path, f"itls[{i}][{j}]", x) for j, x in enumerate(gaps_raw)]
    prompt = count_field(path, f"input_lens[{i}]", doc["input_lens"][i])
    out = count_field(path, f"output_lens[{i}]", doc["output_lens"][i])
    outcome: Outcome = "ok"
    status: int | None = 200
    if message:
        status = _REASONS.get(message.strip().lower())
        outcome, status = _status_of(message, status)
    elif ttft == 0:  # vLLM's default: no message with choices came (its latency is 0 too)
        outcome, message = "incomplete", "no first chunk (vLLM recorded no TTFT)"
    elif ttft > latency + 1e-6 or ttft + sum(gaps) > latency + 1e-3:
        raise InputError(f"{path}: request {i}'s ttfts and itls end after its latencies "
                         f"({ttft + sum(gaps):.6g} s > {latency:.6g} s): vLLM's latency is "
                         "its last chunk's time; a damaged or edited file")
    ok = outcome == "ok"
    chunks: list[tuple[float, int]] = []
    if ok:
        t = ttft
        chunks.append((t, 1))
        for g in gaps:
            t += g
            chunks.append((t, 1))
    return RequestRecord(
        id=f"{clean(path.stem, 60)}-{i}", phase="ramp", level=level, outcome=outcome,
        t0_s=t0_s, prompt_tokens=prompt, prompt_tokens_estimated=True,
        output_tokens=out if ok else None, output_tokens_estimated=True,
        ttft_s=ttft if ok else None, e2e_s=latency if ok else None,
        chunks=chunks, http_status=status, error=None if ok else message,
        end_s=latency if ok else None)


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
