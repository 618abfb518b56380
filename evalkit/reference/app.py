"""The reference endpoint as a raw ASGI app: OpenAI-compatible HTTP around the engine model.

Routes: `/v1/chat/completions`, `/v1/completions`, `/v1/messages` (Anthropic Messages:
requires `anthropic-version`), `/v1/responses` (OpenAI Responses), `/v1/models`, and
`/metrics` (Prometheus text in vLLM's names, `evalkit.reference.metrics`). The two newer
APIs stream only (their frames: `evalkit.reference.wire`); their truth lines are the same,
plus which credential header and api-version query the request carried (never a value).

One engine loop (an asyncio task) steps `EngineCore` on the absolute monotonic timeline;
each request's handler owns a writer that turns the tokens it is given into SSE chunks,
so a slow client only slows its own stream. Every write is stamped right after its
bytes are handed to the transport, next to the time the engine scheduled it, and the
whole story of each request goes to the ground-truth log (JSON lines) once it ends, in
batches (`TRUTH_FLUSH_S` later, or when `/_reference/state` is asked).

Prompt tokens are counted with o200k_base (`bpe_openai`, offline): for chat, the sum over
messages of each content's tokens (no chat-template overhead); for completions, the
prompt's tokens. Each generated token is one short word that is one o200k_base token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TextIO

from evalkit.reference.engine import EngineCore, Seq, Step
from evalkit.reference.faults import RequestPlan, plan_request
from evalkit.reference.metrics import EngineMetrics
from evalkit.reference.params import Profile
from evalkit.reference.wire import AnthropicFraming, Framing, ResponsesFraming

MODEL = "evalkit-reference"
#: the ASGI scope extension where the server's protocol puts the request's arrival stamp
ARRIVAL_EXTENSION = "evalkit.arrival"
#: POST routes: path → API (chat and completions are OpenAI's; messages is Anthropic's)
ROUTES = {"/v1/chat/completions": "chat", "/v1/completions": "completions",
          "/v1/messages": "messages", "/v1/responses": "responses"}
#: headers that carry a credential: the truth log names which one came, never its value
_CREDENTIALS = (b"authorization", b"x-api-key", b"api-key")
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: generated text: each word (with its leading space) is one o200k_base token
_WORD_TEXT = (
    "the of and to in is was for on that with as by at from his her they this which are "
    "be had not but have one were all their can said there use an each she do how if will "
    "up other about out many then them these so some would make like him into time has"
)
WORDS = tuple(_WORD_TEXT.split())
#: ahead of a step's end, the engine sleeps until this close, then yields in a tight loop
SPIN_NS = 1_200_000
#: truth lines are encoded and written this long after their request ended, in batches:
#: the streams of one decode step end together and their clients' next requests arrive
#: right then, so the server must not be busy with its own log at that moment
TRUTH_FLUSH_S = 0.25


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai  # ~0.1 s to build; only when the first request arrives

    return bpe_openai.get_encoding("o200k_base")


def count_tokens(text: str) -> int:
    """o200k_base tokens of `text`, the server's own (documented) prompt count."""
    return len(_encoding().encode_ordinary(text)) if text else 0


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class BadRequest(Exception):
    """A request we answer with an OpenAI-shaped error (never a stack trace)."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.param = status, kind, param

    def body(self) -> bytes:
        """The OpenAI error shape."""
        return json.dumps({"error": {"message": str(self), "type": self.kind,
                                     "param": self.param, "code": self.status}}).encode()


@dataclass(frozen=True)
class Job:
    """A validated generation request."""

    chat: bool
    stream: bool
    prompt_tokens: int
    max_tokens: int
    min_tokens: int
    ignore_eos: bool
    include_usage: bool
    #: chat | completions | messages | responses (`ROUTES`)
    api: str = "chat"


def _int_field(body: dict[str, Any], name: str, default: int | None) -> int | None:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(400, f"'{name}' must be a non-negative integer, got {value!r}",
                         param=name)
    return value


def parse_job(body: Any, api: str, default_max_tokens: int) -> Job:
    """Validate a request body of `api`; a BadRequest says what is wrong with it."""
    if not isinstance(body, dict):
        raise BadRequest(400, "the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != MODEL:
        raise BadRequest(404, f"The model `{model}` does not exist; this server has `{MODEL}`",
                         kind="NotFoundError", param="model")
    if api in ("messages", "responses"):
        return _parse_new_api(body, api, default_max_tokens)
    chat = api == "chat"
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and "role" in m for m in messages):
            raise BadRequest(400, "'messages' must be a non-empty list of {role, content}",
                             param="messages")
        prompt = sum(count_tokens(_content_text(m.get("content"))) for m in messages)
    else:
        raw = body.get("prompt")
        if isinstance(raw, str):
            prompt = count_tokens(raw)
        elif isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
            prompt = sum(count_tokens(p) for p in raw)
        else:
            raise BadRequest(400, "'prompt' must be a string or a list of strings",
                             param="prompt")
    max_tokens = _int_field(body, "max_completion_tokens", None)
    if max_tokens is None:
        max_tokens = _int_field(body, "max_tokens", default_max_tokens)
    assert max_tokens is not None
    if max_tokens < 1:
        raise BadRequest(400, "'max_tokens' must be at least 1", param="max_tokens")
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    if min_tokens > max_tokens:
        raise BadRequest(400, f"'min_tokens' ({min_tokens}) exceeds 'max_tokens' ({max_tokens})",
                         param="min_tokens")
    if body.get("n", 1) != 1:
        raise BadRequest(400, "only n=1 is supported by the reference endpoint", param="n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(400, "'stream' must be a boolean", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise BadRequest(400, "'stream_options' must be an object", param="stream_options")
    return Job(chat, stream, prompt, max_tokens, min_tokens, bool(body.get("ignore_eos")),
               bool(options.get("include_usage")), api)


def _parse_new_api(body: dict[str, Any], api: str, default_max_tokens: int) -> Job:
    """Anthropic Messages (`messages`, `system`, `max_tokens` required) or OpenAI Responses
    (`input`: text or messages, `max_output_tokens`); both stream only here, always with
    usage (their APIs always report it)."""
    if api == "messages":
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and m.get("role") in ("user", "assistant")
                for m in messages):
            raise BadRequest(400, "'messages' must be a non-empty list of {role: user|assistant,"
                             " content}", param="messages")
        texts = [_content_text(m.get("content")) for m in messages]
        texts.append(_content_text(body.get("system")))
        if body.get("max_tokens") is None:
            raise BadRequest(400, "max_tokens: Field required", param="max_tokens")
        max_tokens = _int_field(body, "max_tokens", None)
    else:
        raw = body.get("input")
        if isinstance(raw, str):
            texts = [raw]
        elif isinstance(raw, list) and raw and all(isinstance(m, dict) for m in raw):
            texts = [_content_text(m.get("content")) for m in raw]
        else:
            raise BadRequest(400, "'input' must be a string or a list of messages",
                             param="input")
        texts.append(_content_text(body.get("instructions")))
        max_tokens = _int_field(body, "max_output_tokens", default_max_tokens)
    assert max_tokens is not None
    if max_tokens < 1:
        raise BadRequest(400, "the output token limit must be at least 1")
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    if min_tokens > max_tokens:
        raise BadRequest(400, f"'min_tokens' ({min_tokens}) exceeds the output limit "
                         f"({max_tokens})", param="min_tokens")
    if body.get("stream") is not True:
        raise BadRequest(400, f"the reference endpoint serves /v1/{api} streaming only: "
                         "send stream: true", param="stream")
    return Job(True, True, sum(count_tokens(t) for t in texts), max_tokens, min_tokens,
               bool(body.get("ignore_eos")), True, api)


class _Stream:
    """One request's side of the engine: tokens in, chunks queued for its writer."""

    def __init__(self, plan: RequestPlan, chunk_tokens: int) -> None:
        self.plan = plan
        self.k = max(1, chunk_tokens)
        #: (kind, tokens, scheduled_ns, carries the finish_reason)
        self.items: deque[tuple[str, int, int, bool]] = deque()
        self.wake = asyncio.Event()
        self.gone = asyncio.Event()  # the client went away
        self.tokens = 0
        self.pending = 0
        self.admitted_ns: int | None = None
        #: the writer's fast path while it idles: plain chunks are written from the engine
        #: loop itself, skipping a task switch per token (the cost that sets timing error)
        self.direct: Callable[[str, int, int], None] | None = None

    def _push(self, kind: str, tokens: int, at: int, final: bool = False) -> None:
        if (self.direct is not None and not self.items and not final
                and kind in ("content", "reasoning")):
            self.direct(kind, tokens, at)
            return
        self.items.append((kind, tokens, at, final))
        self.wake.set()

    def on_admitted(self, now: int) -> None:
        """Engine admitted us: real engines send the role-only chunk now."""
        self.admitted_ns = now
        if self.plan.role_first_chunk:
            self._push("role", 0, now)

    def on_token(self, at: int, seq: Seq) -> None:
        """One more token, generated at the step end `at`."""
        plan = self.plan
        self.tokens += 1
        self.pending += 1
        reasoning_done = self.tokens == plan.reasoning_tokens
        kind = "reasoning" if self.tokens <= plan.reasoning_tokens else "content"
        last = self.tokens >= plan.total_tokens
        fault_here = self.tokens in (plan.disconnect_at, plan.malformed_at, plan.error_at,
                                     plan.stall_at)
        ends = last and self.tokens not in (plan.error_at, plan.disconnect_at)
        if self.pending >= self.k or last or reasoning_done or fault_here:
            self._push(kind, self.pending, at, final=ends)
            self.pending = 0
        if self.tokens == plan.malformed_at:
            self._push("malformed", 0, at)
        if self.tokens == plan.stall_at:
            self._push("stall", 0, at)
        if self.tokens == plan.error_at:
            seq.cancelled = True
            self._push("error", 0, at)
        elif self.tokens == plan.disconnect_at:
            seq.cancelled = True
            self._push("cut", 0, at)
        elif last:
            self._push("finish", 0, at)


class ReferenceApp:
    """The ASGI application: routes, the engine loop, and the ground-truth log."""

    def __init__(self, profile: Profile, seed: int = 0, truth_log: Path | None = None) -> None:
        self.profile = profile
        self.seed = seed
        self.core = EngineCore(profile, seed)
        self.truth_path = truth_log
        self._truth: TextIO | None = None
        self._pending: list[dict[str, Any]] = []
        self._flushing: asyncio.TimerHandle | None = None
        self._engine: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self.requests = 0
        self.in_flight = 0
        self.logged = 0
        self.created = int(time.time())
        self.metrics = EngineMetrics(MODEL)

    # ----------------------------------------------------------------- engine loop
    def _ensure_engine(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
            self._engine = asyncio.get_running_loop().create_task(self._run_engine())
        return self._wake

    async def _run_engine(self) -> None:
        assert self._wake is not None
        core = self.core
        step = None
        while True:
            if step is None:
                if not core.running and not core.waiting:
                    self._wake.clear()
                    await self._wake.wait()
                step = core.plan_step(time.perf_counter_ns())
                if step is None:
                    continue
                self._admitted(step)
            await _sleep_until(step.end_ns)
            emitted, _ = core.finish_step()
            # plan the next step at the boundary, before the writes: writing to many streams
            # takes a while, and the model's timeline must not slip by that much every step
            following = core.plan_step(time.perf_counter_ns())
            for seq in emitted:
                try:
                    seq.sink.on_token(step.end_ns, seq)
                except Exception:  # a bug in one stream must not stop every stream
                    seq.cancelled = True
                    _log.exception("reference endpoint: stream failed; cancelled it")
            step = following
            if step is not None:
                self._admitted(step)

    @staticmethod
    def _admitted(step: Step) -> None:
        for seq in step.admitted:
            seq.sink.on_admitted(step.start_ns)

    # ----------------------------------------------------------------- ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        received = time.perf_counter_ns()
        path, method = scope["path"], scope["method"]
        if method == "GET" and path == "/v1/models":
            await _send_json(send, 200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": self.created,
                 "owned_by": "evalkit"}]})
        elif method == "GET" and path == "/_reference/state":
            self._flush()  # whoever asks sees every ended request in the truth log
            await _send_json(send, 200, {"in_flight": self.in_flight, "logged": self.logged,
                                         "requests": self.requests,
                                         "profile": self.profile.name,
                                         "params": dict(self.profile.params)})
        elif method == "GET" and path == "/metrics":
            body = self.metrics.render(len(self.core.running), len(self.core.waiting),
                                       int(self.profile["max_batch"]))
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"text/plain; version=0.0.4; charset=utf-8"),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body, "more_body": False})
        elif method == "POST" and path in ROUTES:
            await self._generate(scope, receive, send, received, ROUTES[path])
        else:
            err = BadRequest(404, f"no route for {method} {path}", kind="NotFoundError")
            await _send_error(send, err)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _encoding()  # build the tokenizer now, not inside the first request's TTFT
                if self.truth_path is not None:
                    self._truth = self.truth_path.open("a", encoding="utf-8")
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._engine is not None:
                    self._engine.cancel()
                self._flush()
                if self._truth is not None:
                    self._truth.close()
                    self._truth = None
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _log(self, record: dict[str, Any]) -> None:
        """Queue a request's truth line; `_flush` writes the batch (TRUTH_FLUSH_S later)."""
        self.logged += 1
        if self._truth is None:
            return
        self._pending.append(record)
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().call_later(TRUTH_FLUSH_S, self._flush)

    def _flush(self) -> None:
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        pending, self._pending = self._pending, []
        if self._truth is not None and pending:
            self._truth.write("".join(json.dumps(r, separators=(",", ":")) + "\n"
                                      for r in pending))
            self._truth.flush()

    async def _generate(self, scope: Scope, receive: Receive, send: Send, received: int,
                        api: str) -> None:
        self.in_flight += 1
        index = self.requests
        self.requests += 1
        rid = _header(scope, b"x-request-id") or f"ref-{index}"
        arrival = (scope.get("extensions") or {}).get(ARRIVAL_EXTENSION) or {}
        truth: dict[str, Any] = {
            "request_id": rid, "path": scope["path"], "index": index,
            "arrived_ns": arrival.get("arrived_ns"), "received_ns": received,
            "poll_began_ns": arrival.get("poll_began_ns"), "polled_ns": arrival.get("polled_ns"),
            "kernel_ns": arrival.get("kernel_ns"),
            "queued": False, "admitted_ns": None,
            "first_write_ns": None, "first_answer_ns": None, "writes": [], "end_ns": None,
            "prompt_tokens": None, "completion_tokens": 0, "status": None,
            "outcome": "error", "faults": [], "client_disconnected": False, "api": api,
            "auth_headers": [k.decode() for k in _CREDENTIALS if _header(scope, k) is not None],
            "api_version": _query_param(scope, "api-version"),
            "anthropic_version": _header(scope, b"anthropic-version")}
        try:
            await self._generate_inner(receive, send, api, index, rid, truth)
        finally:
            truth["end_ns"] = time.perf_counter_ns()
            self.in_flight -= 1
            self._log(truth)

    async def _generate_inner(self, receive: Receive, send: Send, api: str, index: int,
                              rid: str, truth: dict[str, Any]) -> None:
        p = self.profile
        try:
            raw = await _read_body(receive)
            if api == "messages" and truth["anthropic_version"] is None:
                raise BadRequest(400, "anthropic-version: header is required")
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                raise BadRequest(400, "the request body is not valid JSON") from None
            job = parse_job(body, api, int(p["default_max_tokens"]))
        except BadRequest as exc:
            truth["status"] = exc.status
            await _send_error(send, exc)
            return
        truth["prompt_tokens"] = job.prompt_tokens
        plan = plan_request(p, self.seed, index, job.max_tokens, job.min_tokens,
                            job.ignore_eos, job.chat)
        truth["faults"] = plan.faults
        if plan.http_500:
            truth.update(status=500, outcome="fault:http_500")
            await _send_error(send, BadRequest(500, "injected fault: internal server error",
                                               kind="internal_server_error"))
            return
        overhead = int(float(p["request_overhead_ms"]) * 1e6)
        await _sleep_until(truth["received_ns"] + overhead, spin=False)
        stream = _Stream(plan, int(p["tokens_per_chunk"]))
        seq = Seq(job.prompt_tokens, plan.total_tokens, sink=stream,
                  ready_ns=truth["received_ns"] + overhead)
        truth["queued"] = self.core.would_queue()
        if not self.core.submit(seq):
            truth.update(status=429, outcome="rejected", queued=False)
            retry = str(int(p["retry_after_s"])).encode()
            await _send_error(send, BadRequest(429, "too many requests in flight; retry later",
                                               kind="rate_limit_exceeded"),
                              [(b"retry-after", retry)])
            return
        self.metrics.prompt_tokens += job.prompt_tokens
        self._ensure_engine().set()
        watcher = asyncio.get_running_loop().create_task(_watch_disconnect(receive, stream))
        try:
            writer = _Writer(send, stream, job, rid, self.created, truth, self.metrics)
            if job.stream:
                await writer.stream()
            else:
                await writer.whole()
        finally:
            seq.cancelled = True
            watcher.cancel()
            truth["admitted_ns"] = stream.admitted_ns
            truth["completion_tokens"] = stream.tokens  # generated, whatever reached the wire
            if stream.gone.is_set():
                truth["client_disconnected"] = True
                if truth["outcome"] == "ok":
                    truth["outcome"] = "disconnected"


async def _watch_disconnect(receive: Receive, stream: _Stream) -> None:
    """Flag the stream as gone when the client disconnects (send() stays silent)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            stream.gone.set()
            stream.wake.set()
            return


class _Writer:
    """Turns one stream's queued items into bytes on the wire, stamping every write."""

    def __init__(self, send: Send, stream: _Stream, job: Job, rid: str, created: int,
                 truth: dict[str, Any], metrics: EngineMetrics | None = None) -> None:
        self.send, self.s, self.job, self.truth = send, stream, job, truth
        self.metrics = metrics
        self.last_content_ns: int | None = None
        self.nl = b"\r\n" if stream.plan.crlf else b"\n"
        #: the frames of Anthropic Messages or OpenAI Responses (None: OpenAI chat/completions)
        self.wire: Framing | None = (
            AnthropicFraming(rid, job.prompt_tokens, self.nl) if job.api == "messages" else
            ResponsesFraming(rid, job.prompt_tokens, created, self.nl)
            if job.api == "responses" else None)
        obj = "chat.completion.chunk" if job.chat else "text_completion"
        prefix = "chatcmpl-" if job.chat else "cmpl-"
        self.head = (f'{{"id":{json.dumps(prefix + rid)},"object":"{obj}","created":{created},'
                     f'"model":"{MODEL}",').encode()
        self.words = 0
        self.blocked: asyncio.Future[None] | None = None  # a fast write waiting on drain

    def _text(self, n: int) -> str:
        out = "".join(" " + WORDS[(self.words + i) % len(WORDS)] for i in range(n))
        self.words += n
        return out

    def _choice(self, delta: dict[str, Any] | None, text: str | None,
                finish: str | None) -> bytes:
        if self.job.chat:
            choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "logprobs": None,
                                      "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
        return self.head + b'"choices":[' + json.dumps(choice, separators=(",", ":")).encode() \
            + b"]}"

    def _usage(self) -> dict[str, int]:
        done = self.s.tokens
        return {"prompt_tokens": self.job.prompt_tokens, "completion_tokens": done,
                "total_tokens": self.job.prompt_tokens + done}

    async def _write(self, payload: bytes, kind: str, tokens: int, scheduled: int) -> None:
        await self.send({"type": "http.response.body", "body": payload, "more_body": True})
        self._stamp(kind, tokens, scheduled)

    def _token_payload(self, kind: str, n: int, finish: str | None) -> bytes:
        text = self._text(n)
        if self.wire is not None:  # the end is in its own events (`_end`)
            return self.wire.token(kind, text)
        if finish is None:  # the hot path: a template (the words need no JSON escaping)
            key = b"reasoning_content" if kind == "reasoning" else b"content"
            middle = (b'{"index":0,"delta":{"' + key + b'":"' if self.job.chat
                      else b'{"index":0,"text":"')
            return self._event(self.head + b'"choices":[' + middle + text.encode()
                               + b'"' + (b"}" if self.job.chat else b"")
                               + b',"logprobs":null,"finish_reason":null}]}')
        key_s = "reasoning_content" if kind == "reasoning" else "content"
        return self._event(self._choice({key_s: text}, text, finish))

    def _direct(self, kind: str, n: int, at: int) -> None:
        """Write a token chunk now, from the engine loop, without a task switch.

        uvicorn's send() only suspends when the client's transport is paused (flow
        control); then the rest of that send is finished by a task and later items
        queue behind it, so order is kept and no other stream waits.
        """
        coro: Any = self.send({"type": "http.response.body", "more_body": True,
                               "body": self._token_payload(kind, n, None)})
        try:
            yielded = coro.send(None)
        except StopIteration:
            self._stamp(kind, n, at)
            return
        self.s.direct = None
        self.blocked = asyncio.ensure_future(self._resume(coro, yielded, kind, n, at))

    async def _resume(self, coro: Any, yielded: Any, kind: str, n: int, at: int) -> None:
        """Drive a suspended send() to its end, as a Task would have."""
        while True:
            if yielded is None:  # a bare yield (sleep(0)): just give the loop a turn
                await asyncio.sleep(0)
            else:
                yielded._asyncio_future_blocking = False  # what Task.__step does
                await yielded
            try:
                yielded = coro.send(None)
            except StopIteration:
                break
        self._stamp(kind, n, at)

    def _stamp(self, kind: str, tokens: int, scheduled: int) -> None:
        """Record a write the moment its bytes were handed to the transport."""
        now = time.perf_counter_ns()
        # a tuple: the garbage collector stops tracking it, and a busy server holds
        # thousands (a collection that walks them all is a stall in every stream)
        self.truth["writes"].append((now, scheduled, tokens, kind))
        if kind in ("content", "reasoning") and self.metrics is not None:
            last, self.last_content_ns = self.last_content_ns, now
            if last is None:
                self.metrics.ttft.observe((now - self.truth["received_ns"]) / 1e9)
            else:
                self.metrics.itl.observe((now - last) / 1e9)
            self.metrics.generation_tokens += tokens
        if kind in ("content", "reasoning") and self.truth["first_write_ns"] is None:
            self.truth["first_write_ns"] = now
        if kind == "content" and self.truth["first_answer_ns"] is None:
            self.truth["first_answer_ns"] = now

    def _event(self, data: bytes) -> bytes:
        return b"data: " + data + self.nl + self.nl

    async def _next(self) -> tuple[str, int, int, bool] | None:
        """The next queued item; pings while waiting; None when the client is gone."""
        s = self.s
        interval = s.plan.ping_interval_s
        while not s.items:
            if s.gone.is_set():
                return None
            s.wake.clear()
            if self.job.stream and self.blocked is None:
                s.direct = self._direct
            try:
                if interval > 0:
                    try:
                        await asyncio.wait_for(s.wake.wait(), interval)
                    except TimeoutError:
                        s.direct = None
                        await self._settle()
                        now = time.perf_counter_ns()
                        await self._write(b": ping" + self.nl + self.nl, "ping", 0, now)
                else:
                    await s.wake.wait()
            finally:
                s.direct = None
        await self._settle()
        return None if s.gone.is_set() else s.items.popleft()

    async def _settle(self) -> None:
        """Let a fast write that hit flow control finish before writing anything else."""
        if self.blocked is not None:
            await self.blocked
            self.blocked = None

    async def stream(self) -> None:
        """Write the SSE response; return early (no terminator) to cut the connection."""
        plan, job, truth = self.s.plan, self.job, self.truth
        truth.update(status=200, outcome=plan.outcome)
        await self.send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
            (b"x-request-id", truth["request_id"].encode())]})
        if self.wire is not None:
            now = time.perf_counter_ns()
            await self._write(self.wire.start(), "start", 0, now)
        while True:
            item = await self._next()
            if item is None:
                return  # client gone: nothing more to write
            kind, n, at, final = item
            if kind == "role" and self.wire is not None:
                continue  # its start events already went out
            if kind == "role":
                await self._write(self._event(self._choice({"role": "assistant", "content": ""},
                                                            None, None)), "role", 0, at)
            elif kind in ("content", "reasoning"):
                finish = plan.finish_reason if final else None
                await self._write(self._token_payload(kind, n, finish), kind, n, at)
            elif kind == "malformed":
                bad = self.head + b'"choices":[{"index":0,"delta":{"content":" brok'
                await self._write(self._event(bad) if self.wire is None else self.wire.malformed(),
                                  "malformed", 0, at)
            elif kind == "stall":
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.s.gone.wait(), plan.stall_s)
            elif kind == "error":
                err = {"error": {"message": "injected fault: the engine failed mid-stream",
                                 "type": "internal_server_error", "code": 500}}
                await self._write(self._event(json.dumps(err).encode()) if self.wire is None
                                  else self.wire.error(), "error", 0, at)
                await self._end(at, usage=False, failed=True)
                truth["outcome"] = plan.outcome
                return
            elif kind == "cut":
                truth["outcome"] = plan.outcome
                truth["completion_tokens"] = self.s.tokens
                raise _CutConnection  # uvicorn closes the transport: no terminator
            elif kind == "finish":
                await self._end(at, usage=job.include_usage and not plan.no_usage)
                truth["outcome"] = plan.outcome
                return

    async def _end(self, at: int, usage: bool, failed: bool = False) -> None:
        """Usage chunk if asked, [DONE] unless faulted, then the HTTP terminator (the newer
        APIs: their closing events, none after an error event)."""
        self.truth["completion_tokens"] = self.s.tokens
        if self.wire is not None:
            plan = self.s.plan
            frames = [] if failed else self.wire.end(
                plan.finish_reason, self.s.tokens if usage else None, not plan.no_done,
                min(plan.reasoning_tokens, self.s.tokens))
            for payload, kind in frames:
                await self._write(payload, kind, 0, at)
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if usage:
            data = self.head + b'"choices":[],"usage":' + json.dumps(self._usage()).encode() \
                + b"}"
            await self._write(self._event(data), "usage", 0, at)
        if not self.s.plan.no_done:
            await self._write(self._event(b"[DONE]"), "done", 0, at)
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def whole(self) -> None:
        """Non-streaming: wait for the last token, answer one JSON body."""
        plan, job, truth = self.s.plan, self.job, self.truth
        answer: list[str] = []
        reasoning: list[str] = []
        at = time.perf_counter_ns()
        finished = False
        while not finished:
            item = await self._next()
            if item is None:
                return
            kind, n, at, _ = item
            if kind == "content":
                answer.append(self._text(n))
            elif kind == "reasoning":
                reasoning.append(self._text(n))
            elif kind in ("error", "cut"):
                truth.update(status=500, outcome=plan.outcome)
                await _send_error(self.send, BadRequest(
                    500, "injected fault: the engine failed", kind="internal_server_error"))
                return
            finished = kind == "finish"
        text = "".join(answer)
        if job.chat:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if reasoning:
                message["reasoning_content"] = "".join(reasoning)
            choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": None,
                                      "finish_reason": plan.finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": None,
                      "finish_reason": plan.finish_reason}
        body: dict[str, Any] = {
            "id": ("chatcmpl-" if job.chat else "cmpl-") + truth["request_id"],
            "object": "chat.completion" if job.chat else "text_completion",
            "created": int(time.time()), "model": MODEL, "choices": [choice]}
        if not plan.no_usage:
            body["usage"] = self._usage()
        truth.update(status=200, completion_tokens=self.s.tokens, outcome=plan.outcome)
        await _send_json(self.send, 200, body)
        now = time.perf_counter_ns()
        truth["writes"].append((now, at, self.s.tokens, "content"))
        truth["first_write_ns"] = truth["first_answer_ns"] = now


class _CutConnection(Exception):
    """Raised inside the app to make uvicorn drop the connection mid-stream."""


class _QuietCut(logging.Filter):
    """Keep the injected disconnect fault out of the server log (it is not a bug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, _CutConnection)


logging.getLogger("uvicorn.error").addFilter(_QuietCut())
_log = logging.getLogger("evalkit.reference")


async def _sleep_until(deadline_ns: int, spin: bool = True) -> None:
    """Sleep on the monotonic timeline; the last stretch yields in a loop for precision."""
    delay = deadline_ns - time.perf_counter_ns()
    if delay > SPIN_NS or (not spin and delay > 0):
        await asyncio.sleep((delay - (SPIN_NS if spin else 0)) / 1e9)
    if spin:
        while time.perf_counter_ns() < deadline_ns:
            await asyncio.sleep(0)


def _query_param(scope: Scope, name: str) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return values[0] if values else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest(400, "client went away before sending its body")
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _send_json(send: Send, status: int, payload: Any,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _send_error(send: Send, err: BadRequest,
                      headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = err.body()
    await send({"type": "http.response.start", "status": err.status, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body, "more_body": False})
