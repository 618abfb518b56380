"""One record per probe request: the unit every metric is computed from.

A record is written to `requests.jsonl` the moment its request ends, so an interrupted
run keeps everything it measured. All times are seconds; `t0_s` is an offset from the
run's monotonic origin (`run.json: clock.origin_ns`), every other time is an offset
from the request's own `t0`: when its first bytes were handed to the socket (closed
loop), or when the arrival process scheduled it (open loop). Failed requests are
records too: their outcome says how they failed, and they stay in the denominators.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, overload

Outcome = Literal["ok", "rejected", "error", "incomplete", "timeout"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "rejected", "error", "incomplete", "timeout")
#: the phases that send one request at a time: what a request does there, it does alone
ALONE_PHASES = ("connect", "baseline", "prefill", "cache")
#: Larger than any duration a probe can measure (115 days): a record claiming more is
#: absurd (requests.jsonl is read back with these bounds: `evalkit.rundir.store`).
MAX_SECONDS = 1e7
#: Larger than any count a probe can make (tokens, levels, statuses): absurd beyond it.
MAX_COUNT = 10**12


class Chunks(Sequence[tuple[float, int]]):
    """A record's content chunks as read back: (arrival offset s, tokens) pairs held in two
    flat arrays.

    A run's write-up and a report hold every record at once. As a list of tuples a chunk
    took ~88 bytes (the tuple, its float, the list's pointer), 5.8 KB of a 64-token
    request's ~9.4 KB; as arrays it takes 16, and a record read back ~3.6 KB. It reads
    as the list did: indexing and iteration give (seconds, tokens) tuples, and it equals
    any sequence of the same pairs."""

    __slots__ = ("_times", "_tokens")

    def __init__(self, times: Iterable[float] = (), tokens: Iterable[int] = ()) -> None:
        self._times = array("d", times)
        self._tokens = array("q", tokens)
        if len(self._times) != len(self._tokens):
            raise ValueError("a chunk list needs as many token counts as times")

    @classmethod
    def of(cls, pairs: Iterable[tuple[float, int]]) -> Chunks:
        """The chunks of (seconds, tokens) pairs."""
        pairs = list(pairs)
        return cls([t for t, _ in pairs], [n for _, n in pairs])

    @property
    def times(self) -> array[float]:
        """The arrival offsets (s), in order (a buffer numpy reads without a copy)."""
        return self._times

    @property
    def tokens(self) -> array[int]:
        """The tokens each chunk carried."""
        return self._tokens

    def __len__(self) -> int:
        return len(self._times)

    @overload
    def __getitem__(self, index: int) -> tuple[float, int]: ...

    @overload
    def __getitem__(self, index: slice) -> Chunks: ...

    def __getitem__(self, index: int | slice) -> tuple[float, int] | Chunks:
        if isinstance(index, slice):
            return Chunks(self._times[index], self._tokens[index])
        return self._times[index], self._tokens[index]

    def __iter__(self) -> Iterator[tuple[float, int]]:
        return zip(self._times, self._tokens, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Chunks):
            return self._times == other._times and self._tokens == other._tokens
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(
                tuple(o) == s for o, s in zip(other, self, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable as one

    def __repr__(self) -> str:
        return f"Chunks({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Chunks, (self._times, self._tokens)


@dataclass(frozen=True)
class RequestRecord:
    """What one streamed request did, as the client saw it."""

    id: str
    phase: str
    level: int | None
    outcome: Outcome
    t0_s: float
    #: the vendor's usage.prompt_tokens when it reported usage (`prompt_tokens_estimated`
    #: False), else our count of the prompt
    prompt_tokens: int | None = None
    prompt_tokens_estimated: bool = True
    #: our count of the prompt we sent (o200k_base), kept beside the vendor's whatever it
    #: reports: the prompt-honesty check and the prefill fit need both
    counted_prompt_tokens: int | None = None
    requested_output_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_estimated: bool = True
    counted_output_tokens: int | None = None
    usage_completion_tokens: int | None = None
    ttft_s: float | None = None
    ttfa_s: float | None = None
    e2e_s: float | None = None
    #: [arrival offset from t0 (s), tokens in that chunk] for every content chunk (a
    #: list while the prober makes the record; `Chunks`, two flat arrays, read back)
    chunks: Sequence[tuple[float, int]] = field(default_factory=list)
    http_status: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    #: when the request's bytes were handed to the socket minus when the load generator
    #: meant to send it (s): open loop, its scheduled time (= t0); closed loop, when the
    #: worker's previous request ended (its first: when it was due). Client-side delay
    send_lag_s: float | None = None
    #: when the request ended, whatever its outcome (offset from t0): a request that
    #: failed without content still held a connection until then
    end_s: float | None = None
    shard: int = 0
    prompt_id: str | None = None
    #: a bounded, sanitised excerpt of an error response's body (HTTP status not 200)
    error_body: str | None = None
    #: a 429/503's Retry-After, in seconds (bounded): the pause the vendor asked for
    retry_after_s: float | None = None
    #: our readable name for the request (run tag, shard, sequence); `id` is the UUID
    #: sent to the vendor as X-Request-ID, so its logs can be matched to this record
    label: str | None = None
    #: when the request's first bytes were handed to the socket, offset from t0: 0 in a
    #: closed loop (that moment is t0), the send lag in an open loop (t0 is the schedule);
    #: None when no byte was sent (no connection)
    sent_s: float | None = None
    #: time spent opening a connection (TCP, TLS) inside this request's send, part of its
    #: send lag but the network's, not the client's; None: it left on an open connection
    connect_s: float | None = None
    #: the TLS handshake's part of `connect_s` (the rest is TCP's connect); None: no TLS
    #: handshake inside this request's send
    tls_s: float | None = None
    #: 1 when the request went out a second time, on a fresh connection, because the
    #: server closed the reused one it was written on with no byte of answer (the close
    #: raced it: `evalkit.probe.wire.reconnect`); its times still run from the first send.
    #: Ours, never the vendor's error; 0 otherwise (and not written then)
    reconnects: int = 0
    #: who answered, as the response said (`model`, `system_fingerprint`; several distinct
    #: values in one stream joined by ", "), and the SHA-256 of the answer text: the same
    #: prompt answered the same way has the same digest (evalkit.analysis.precision)
    model: str | None = None
    system_fingerprint: str | None = None
    output_sha256: str | None = None
    #: the canary this request was (evalkit.probe.plan.canaries; None: an ordinary request):
    #: its answer is kept whole (bounded), with the vendor's tokens and their logprobs
    #: where the request asked for them
    canary: str | None = None
    answer_text: str | None = None
    answer_tokens: list[str] | None = None
    answer_logprobs: list[float] | None = None
    #: the run's id (run.json `run_id`, the run tag): a record of another run appended to
    #: this one's requests.jsonl is named as foreign (`evalkit.rundir.evidence`); None in
    #: records written before the suite wrote it
    run_id: str | None = None
    #: the response's rate-limit headers (x-ratelimit-limit-*, -remaining-*, -reset-*,
    #: retry-after), a few, sanitised and short (`evalkit.sanitize.rate_limit_headers`);
    #: None: it sent none
    rate_limit_headers: dict[str, str] | None = None
    #: the workload shape this request belongs to (`evalkit.workload`; None: one of the
    #: suite's own probes), the unit it is part of (a session's or agent task's id), its
    #: turn (sessions, conversations; 1-based) or step (agent loops; 1-based), and how
    #: many turns or steps its unit planned: a unit cut short shows as fewer records
    shape: str | None = None
    session: str | None = None
    turn: int | None = None
    step: int | None = None
    planned_turns: int | None = None
    #: prompt tokens the vendor said it served from its prefix cache (usage
    #: `prompt_tokens_details.cached_tokens`); None: it said nothing
    cached_prompt_tokens: int | None = None
    #: the engine's own account of the response, where it sends one (llama.cpp's
    #: `timings` in its last chunk; `evalkit.probe.apis.fields.EngineTimings`): the prompt
    #: tokens it processed and those its cache served, the prompt's time from when a
    #: slot took the request (its `prompt_ms`, in seconds: no wait for a slot, no
    #: network, no HTTP), the tokens it generated and their time; None: it sent none
    engine_prompt_tokens: int | None = None
    engine_cached_tokens: int | None = None
    engine_prompt_s: float | None = None
    engine_output_tokens: int | None = None
    engine_decode_s: float | None = None
    #: where the prompt's text came from (`evalkit.probe.plan.prompts.Prompt.source`: public,
    #: generated, corpus, prompts, conversations); None in records written before the
    #: suite recorded it, and in imports
    prompt_source: str | None = None

    def to_json(self) -> str:
        """One JSON line, stable key order, no whitespace to spare.

        The fields are read one by one rather than with `dataclasses.asdict`, which deep-
        copies every chunk first (7x slower, measured): a record is written as its
        request ends, when the other streams of its decode step are sending again. For
        the same reason a chunk's time is written with `%.7f` (the digits `round(t, 7)`
        gives, so the line reads back the same floats): `round` and then `json`'s repr
        of every time were 3.7x slower for a 64-chunk record (micro-benchmark).
        """
        head = {name: getattr(self, name) for name in _BEFORE_CHUNKS}
        tail = {name: getattr(self, name) for name in _AFTER_CHUNKS}
        if self.rate_limit_headers is None:  # most vendors send none: no key for nothing
            del tail["rate_limit_headers"]
        for name in _SPARSE:  # no key for nothing (see `_SPARSE`)
            if tail[name] is None:
                del tail[name]
        if not self.reconnects:  # nearly every request: no key for nothing
            del tail["reconnects"]
        chunks = ",".join([f"[{t:.7f},{n:d}]" for t, n in self.chunks])
        return (f'{json.dumps(head, separators=(",", ":"))[:-1]},"chunks":[{chunks}],'
                f'{json.dumps(tail, separators=(",", ":"))[1:]}')

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> RequestRecord:
        """Rebuild a record from a parsed JSON line; unknown keys are ignored."""
        known: dict[str, Any] = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["chunks"] = Chunks.of((float(t), int(n)) for t, n in known.get("chunks") or [])
        return cls(**known)


_FIELDS = tuple(f.name for f in fields(RequestRecord))
#: the fields written before and after `chunks`, in the dataclass's order
_BEFORE_CHUNKS = _FIELDS[:_FIELDS.index("chunks")]
_AFTER_CHUNKS = _FIELDS[_FIELDS.index("chunks") + 1:]
#: written only when set: most records belong to no workload shape, carry no engine
#: account, and left on an open connection (no TLS handshake of their own); imports and
#: older records have no prompt source
_SPARSE = ("shape", "session", "turn", "step", "planned_turns", "cached_prompt_tokens",
           "engine_prompt_tokens", "engine_cached_tokens", "engine_prompt_s",
           "engine_output_tokens", "engine_decode_s", "prompt_source", "tls_s")
