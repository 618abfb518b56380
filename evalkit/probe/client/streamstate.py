"""What the prober gathers while it reads one stream, and the outcome those facts give
(`StreamState.verdict`): the state of `evalkit.probe.client.stream.Prober._stream`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from evalkit.probe.apis.fields import NAME_MAX, Delta, EngineTimings
from evalkit.records import Outcome
from evalkit.sanitize import clean

#: the most characters (and logprob entries) a canary's record keeps of its answer
ANSWER_MAX = 16_384


def max_content_chunks(max_tokens: int | None) -> int:
    """The most content chunks one stream may send: an honest one sends at most a chunk
    a token, but reasoning may fall outside max_tokens (some vendors count it apart), so
    four times over and 8,192 more; a flood past that is stopped, never kept."""
    return 4 * (max_tokens or 0) + 8192


@dataclass(slots=True)
class StreamState:
    """Mutable facts gathered while one stream is read (`evalkit.probe.client.stream.Prober`'s;
    apart so that its module stays one reader's size)."""

    status: int | None = None
    end_ns: int = 0
    #: when the bytes that ended a stream read to its end arrived (the socket's stamp)
    last_arrival_ns: int | None = None
    chunk_ns: list[int] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    #: tokens of blank text (whitespace) before the first chunk that carries a word
    blank_tokens: int = 0
    first_answer_ns: int | None = None
    finish_reason: str | None = None
    #: the first finish reason that is not a normal end
    #: (`evalkit.probe.apis.base.NORMAL_FINISHES`)
    abnormal: str | None = None
    usage_ct: int | None = None
    usage_pt: int | None = None
    usage_cached: int | None = None
    #: the engine's own account of the response (the last `timings` it sent)
    timings: EngineTimings | None = None
    done: bool = False
    payload_error: str | None = None
    protocol_error: str | None = None
    transport: tuple[Outcome, str] | None = None
    cut_event: bool = False
    comments: int = 0
    events: int = 0
    role_first: bool = False
    crlf: bool = False
    error_body: str | None = None
    retry_after_s: float | None = None
    limits: dict[str, str] | None = None  # the rate-limit headers (`sanitize.rate_limit_headers`)
    #: the API's required end event (`Adapter.end_event`; None: a finish_reason suffices)
    end_event: str | None = None
    #: the most content chunks kept (`max_content_chunks`): past it, a protocol error
    max_chunks: int = 0
    #: the answer text's digest; a canary's text and logprobs kept whole (bounded); the
    #: distinct `model` and `system_fingerprint` values named (a few at most)
    sha: Any = field(default_factory=hashlib.sha256)
    keep_answer: bool = False
    keep_max: int = ANSWER_MAX
    kept: list[str] = field(default_factory=list)
    kept_chars: int = 0
    logprobs: list[tuple[str, float]] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    fingerprints: list[str] = field(default_factory=list)
    #: the model and fingerprint the last chunk that named them gave, as sent
    raw_names: list[str | None] = field(default_factory=lambda: [None, None])

    def answer(self, delta: Delta) -> None:
        self.sha.update(delta.text.encode("utf-8", "surrogatepass"))
        if self.keep_answer and self.kept_chars < self.keep_max:
            self.kept.append(piece := delta.text[:self.keep_max - self.kept_chars])
            self.kept_chars += len(piece)
            self.logprobs.extend((delta.logprobs or ())[:ANSWER_MAX - len(self.logprobs)])

    def names(self, delta: Delta) -> None:
        # every chunk names the model: a value equal to the last chunk's adds nothing
        if delta.model == self.raw_names[0] and delta.fingerprint == self.raw_names[1]:
            return  # the common chunk, at once
        for i, (seen, value) in enumerate(((self.models, delta.model),
                                           (self.fingerprints, delta.fingerprint))):
            if value is not None and value != self.raw_names[i]:
                self.raw_names[i] = value
                if (v := clean(value, NAME_MAX)) not in seen and len(seen) < 3:
                    seen.append(v)

    def facts(self) -> dict[str, Any]:
        """Format facts of the stream, for the connect phase's report."""
        return {"http_status": self.status, "events": self.events,
                "content_chunks": len(self.chunk_ns), "role_chunk_first": self.role_first,
                "keepalive_comments": self.comments, "crlf_line_ends": self.crlf,
                "done_sentinel": self.done, "finish_reason": self.finish_reason,
                "usage_reported": self.usage_ct is not None,
                "cut_off_final_event": self.cut_event}

    def fail(self, outcome: Outcome, text: str) -> None:
        if self.transport is None:
            self.transport = (outcome, text)

    def verdict(self) -> tuple[Outcome, str | None]:
        """The outcome, in order of what explains the failure best."""
        if self.transport is not None and self.transport[0] in ("rejected", "error", "timeout"):
            return self.transport
        if self.payload_error is not None:
            return "error", f"error payload in stream: {self.payload_error}"
        if self.protocol_error is not None:
            return "error", self.protocol_error
        if self.transport is not None:
            return self.transport
        if self.finish_reason is None or (self.end_event is not None and not self.done):
            why = "cut-off final event" if self.cut_event else "stream ended"
            missing = (f"its end event ({self.end_event})"
                       if self.end_event is not None and not self.done else "a finish_reason")
            return "incomplete", f"{why} without {missing}"
        if self.abnormal is not None:
            return "incomplete", (f"the server ended the stream with finish_reason "
                                  f"{clean(self.abnormal, 40)!r}, not a normal end "
                                  f"({len(self.chunk_ns)} content chunks had arrived)")
        if not self.chunk_ns:
            # an empty 200 stream is no success: nothing was generated to time
            return "error", f"stream finished ({self.finish_reason}) with no content"
        return "ok", None
