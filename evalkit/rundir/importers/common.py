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
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.analysis.summary import as_count, as_number
from evalkit.errors import InputError
from evalkit.records import Outcome, RequestRecord
from evalkit.sanitize import clean

TOOLS = ("aiperf", "guidellm", "vllm", "inference-perf")
LABELS = {"aiperf": "AIPerf", "guidellm": "guidellm", "vllm": "vllm bench serve",
          "inference-perf": "inference-perf"}
#: an export file larger than this is refused (a 100,000-request AIPerf run is ~250 MB)
MAX_FILE_BYTES = 1 << 30
#: a JSON document parsed whole (not line by line) larger than this is refused before it
#: is read: Python's parser holds ~3x its size at once (a vLLM result of 10,000 requests
#: of 256 tokens is ~60 MB)
MAX_JSON_BYTES = 256 << 20
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
    "vllm": {
        "ttft_s": "vLLM's ttfts: from the request's send (after its concurrency semaphore) "
                  "to the first SSE message with choices, whatever it carries (see differs)",
        "itl_s": "vLLM's itls: the gaps between messages with choices, as our chunk gaps "
                 "(a role-only first message is one of them)",
        "tpot_s": "re-derived: (last chunk - first) / (output tokens - 1), as vLLM's TPOT",
        "e2e_s": "vLLM's latencies: to the last message with choices (the usage message "
                 "after it not counted)",
        "output_tokens": "vLLM's output_lens: the server's usage when sent, else vLLM's "
                         "tokenizer's count, else 1 (the file does not say which): marked "
                         "estimated",
        "warmup": "out: the ready check and --num-warmups requests are not in the file",
    },
    "inference-perf": {
        "ttft_s": "re-derived: its first content chunk's stamp (chunk_times) less the "
                  "request's start_time (perf_counter before the request): as ours, but "
                  "reasoning chunks are not kept (see differs)",
        "itl_s": "re-derived from chunk_times: the gaps between content chunks, as ours",
        "e2e_s": "re-derived: to the last content chunk; end_s is its end_time",
        "output_tokens": "the server's usage.completion_tokens where sent (not estimated), "
                         "else its client tokenizer's count (marked estimated)",
        "level": "each stage's concurrency; the per-request file names no stage, so its "
                 "requests are cut by the stages' counts in start order (refused where "
                 "stages overlap)",
        "warmup": "in: inference-perf sends no warm-up, its first stage's first requests "
                  "are in",
    },
}
#: The figures whose meaning differs from evalkit's and cannot be corrected from the
#: export: kept, and named on the scorecard (`differs_notes`) and in run.json.
DIFFERS: dict[str, dict[str, str]] = {
    "vllm": {
        "TTFT": "vllm bench serve stops its TTFT clock at the first SSE message with "
                "choices, a role-only or empty one included; evalkit's waits for generated "
                "text. Against a server that sends the role at once it is time to first "
                "byte, earlier than ours, and the file cannot tell (its texts are joined)",
    },
    "inference-perf": {
        "TTFT": "inference-perf keeps only answer-content chunks: where a model reasoned "
                "first, its first chunk is the answer's (evalkit's TTFA), later than "
                "evalkit's TTFT, and the file cannot tell whether it did",
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
    "vllm": ["per-chunk token counts (a message may carry several tokens)",
             "whether output token counts are the server's usage or vLLM's tokenizer's",
             "the endpoint's URL, and vLLM's version",
             "HTTP status codes (a failure keeps the reason phrase only)",
             "our count of the output text (usage is not checked against it)",
             "the client's self-check (loop lag, CPU): whether the client set the pace "
             "is unknown"],
    "inference-perf": ["per-chunk token counts", "reasoning chunks (only answer content "
                       "is kept)", "request ids and each request's stage",
                       "inference-perf's version",
                       "our count of the output text (usage is not checked against it)",
                       "the client's self-check (loop lag, CPU): whether the client set "
                       "the pace is unknown"],
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
    target: dict[str, Json]
    settings: dict[str, Json]
    started_at: str | None
    ended_at: str | None
    complete: bool
    reported: dict[str, Json]
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading


def sha256(path: Path) -> str:
    """The file's SHA-256, read in blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def listed(value: object) -> list[Json]:
    """A list the tool writes (null or absent: none): any other value is a TypeError, which
    refuses the import naming the file (`evalkit.rundir.importers.run.import_run`), never
    a list read out of a number, a text's letters or an object's keys."""
    if isinstance(value, list):
        return value
    if not value:
        return []
    raise TypeError(f"a JSON {type(value).__name__} where a list belongs")


def differs_notes(imported: Mapping[str, Json]) -> list[str]:
    """One sentence for each figure of an imported run whose meaning differs from ours
    (run.json's `imported.differs`; a hostile file's text cleaned, at most 8)."""
    differs = imported.get("differs")
    if not isinstance(differs, Mapping):
        return []
    tool = LABELS.get(str(imported.get("tool")), clean(str(imported.get("tool")), 30))
    return [f"{clean(str(name), 30)} is {tool}'s, not evalkit's: {clean(str(why), 400)}"
            for name, why in list(differs.items())[:8]]


def _read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, at most `limit`. Opened without blocking and checked on the
    open descriptor: a pipe, a device (a link to /dev/zero) or a file that grows while it
    is read is refused, never read without end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{path}: not a regular file (a pipe, a device or a "
                                 "socket): evalkit reads a tool's exported files only")
            if info.st_size > limit:
                raise InputError(f"{path}: {info.st_size:,} bytes, more than evalkit reads "
                                 f"({limit >> 20} MiB)")
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > limit:
        raise InputError(f"{path}: grew past {limit >> 20} MiB while it was read")
    return data


def inside(folder: Path, path: Path) -> Path:
    """`path`, a file found in `folder`, checked to be there: a link that leads out of
    the folder (to another run's file, /etc/..., a device) is refused, naming it."""
    try:
        real = path.resolve(strict=True)
        if real.is_relative_to(folder.resolve(strict=True)):
            return path
    except (OSError, RuntimeError) as exc:  # a dangling or looping link
        raise InputError(f"{path}: cannot be resolved ({exc}): a broken link") from None
    raise InputError(f"{path}: a link to {clean(str(real), 200)}, outside {folder}: "
                     "evalkit reads only the files in the directory it is given")


def _json_object(path: Path, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(_read_bytes(path, MAX_JSON_BYTES))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not JSON ({str(exc)[:160]}); expected {what}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a JSON {type(doc).__name__}, expected {what}")
    return doc




#: a request's time in an export beyond this (s) is no measurement (a day)
MAX_REQUEST_S = 86_400.0
#: a run's requests spread over more than this (s) is no run (a year)
MAX_RUN_S = 3.2e7
#: a token count beyond this is no count
MAX_TOKENS = 1 << 31


def _shown(x: Any) -> str:
    """A value found where another belongs, as an error names it (short, clean)."""
    if isinstance(x, Mapping | list):
        return f"a JSON {'object' if isinstance(x, Mapping) else 'list'}"
    return clean(repr(x)[:60], 60)


def seconds_field(path: Path, name: str, x: Any, most: float = MAX_REQUEST_S) -> float:
    """A time from a peer's file, strictly: a finite number from 0 to `most`. Anything
    else (NaN, an infinity, a string, a negative or absurd time) refuses the import, naming
    the file and field: a damaged file is never read as a vendor's slow or failed request."""
    number = as_number(x)
    if number is None or not 0 <= number <= most:
        raise InputError(f"{path}: {name} is {_shown(x)}: expected seconds from 0 to "
                         f"{most:,.0f}; a damaged or edited file")
    return number


def count_field(path: Path, name: str, x: Any) -> int:
    """A token count from a peer's file, strictly: a whole number from 0 to MAX_TOKENS."""
    number = as_count(x, least=0)
    if number is None or number > MAX_TOKENS:
        raise InputError(f"{path}: {name} is {_shown(x)}: expected a token count; a damaged "
                         "or edited file")
    return number


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
