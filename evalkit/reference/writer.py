"""One request's response: the items its `Stream` queued, written as SSE chunks (or, for a
non-streaming request, one JSON body), every write stamped for the ground-truth log.

Each write is stamped right after its bytes are handed to the transport, next to the time
the engine scheduled it (`truth["writes"]`), and feeds the `/metrics` histograms. While
the writer idles, plain token chunks are written straight from the engine loop (`_direct`),
skipping a task switch per token. Faults the request's plan holds (a malformed line, a
stall, an error event, a cut connection, no usage, no [DONE]) are written here. Frames of
Anthropic Messages and OpenAI Responses come from `evalkit.reference.wire`; OpenAI chat
and completions chunks are built here, with the logprobs a request asked for. The words
are the request's `Answer` (`evalkit.reference.answers`), held by its Stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from evalkit.reference.answers import FINGERPRINTS, PRIMARY, WORD_BYTES
from evalkit.reference.asgi import Send, send_error, send_json
from evalkit.reference.cloudwire import CloudFraming, cloud_framing
from evalkit.reference.loop import Stream
from evalkit.reference.metrics import EngineMetrics
from evalkit.reference.parse import MODEL, BadRequest, Job
from evalkit.reference.wire import AnthropicFraming, Framing, ResponsesFraming


class CutConnection(Exception):
    """Raised inside the app to make uvicorn drop the connection mid-stream."""


class _QuietCut(logging.Filter):
    """Keep the injected disconnect fault out of the server log (it is not a bug)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, CutConnection)


logging.getLogger("uvicorn.error").addFilter(_QuietCut())


class Writer:
    """Turns one stream's queued items into bytes on the wire, stamping every write."""

    def __init__(self, send: Send, stream: Stream, job: Job, rid: str, created: int,
                 truth: dict[str, Any], metrics: EngineMetrics | None = None,
                 model: str = MODEL, fingerprint: str = FINGERPRINTS[PRIMARY],
                 cached_tokens: int | None = None) -> None:
        self.send, self.s, self.job, self.truth = send, stream, job, truth
        #: prompt tokens the prefix cache served, reported in usage as real vendors do
        #: (`prompt_tokens_details.cached_tokens`); None: no cache, no such field
        self.cached_tokens = cached_tokens
        self.metrics = metrics
        self.answer = stream.answer
        self.model, self.fingerprint = model, fingerprint
        self.last_content_ns: int | None = None
        self.nl = b"\r\n" if stream.plan.crlf else b"\n"
        #: the prompt tokens usage reports (the profile's prompt_usage_factor may bill more
        #: than the prompt held); the truth log keeps it beside the true count
        self.prompt_billed = truth["billed_prompt_tokens"] = stream.plan.billed_prompt(
            job.prompt_tokens)
        #: the frames of Anthropic Messages or OpenAI Responses (None: OpenAI chat/completions)
        self.wire: Framing | CloudFraming | None = (
            AnthropicFraming(rid, self.prompt_billed, self.nl, model, cached_tokens)
            if job.api == "messages" else
            ResponsesFraming(rid, self.prompt_billed, created, self.nl, model, cached_tokens)
            if job.api == "responses" else
            cloud_framing(job.api, rid, self.prompt_billed, self.nl, model, cached_tokens))
        #: what the response's `model` and `system_fingerprint` fields said (the newer
        #: APIs have no fingerprint)
        truth["model_returned"] = model
        truth["system_fingerprint"] = fingerprint if self.wire is None else None
        obj = "chat.completion.chunk" if job.chat else "text_completion"
        prefix = "chatcmpl-" if job.chat else "cmpl-"
        self.head = (f'{{"id":{json.dumps(prefix + rid)},"object":"{obj}","created":{created},'
                     f'"model":{json.dumps(model)},'
                     f'"system_fingerprint":{json.dumps(fingerprint)},').encode()
        self.words = 0
        self.offset = 0  # completions logprobs' text_offset: characters of answer so far
        self.blocked: asyncio.Future[None] | None = None  # a fast write waiting on drain

    def _text(self, n: int) -> str:
        out = self.answer.text(self.words, n)
        self.words += n
        return out

    def _logprobs(self, start: int, n: int) -> bytes:
        """The `logprobs` object of answer tokens start..start+n, in the API's shape (words
        need no escaping, numbers are repr'd floats: no json.dumps per token)."""
        a = self.answer
        words = a.words[start:start + n]
        if self.job.chat:
            return ('{"content":[' + ",".join(
                f'{{"token":"{w}","logprob":{a.logprob(start + i)!r},'
                f'"bytes":[{WORD_BYTES[w]}],"top_logprobs":[]}}'
                for i, w in enumerate(words)) + "]}").encode()
        offsets = []
        for w in words:
            offsets.append(str(self.offset))
            self.offset += len(w)
        return ('{"tokens":[' + ",".join(f'"{w}"' for w in words) + '],"token_logprobs":['
                + ",".join(repr(a.logprob(start + i)) for i in range(len(words)))
                + '],"top_logprobs":null,"text_offset":[' + ",".join(offsets) + "]}").encode()

    def _choice(self, delta: dict[str, Any] | None, text: str | None,
                finish: str | None, logprobs: bytes = b"null") -> bytes:
        dumps = json.dumps
        first = (b'"delta":' + dumps(delta or {}, separators=(",", ":")).encode()
                 if self.job.chat else b'"text":' + dumps(text or "").encode())
        return (self.head + b'"choices":[{"index":0,' + first + b',"logprobs":' + logprobs
                + b',"finish_reason":' + dumps(finish).encode() + b"}]}")

    def _usage(self) -> dict[str, Any]:
        done = self._billed()
        usage: dict[str, Any] = {"prompt_tokens": self.prompt_billed, "completion_tokens": done,
                                 "total_tokens": self.prompt_billed + done}
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage

    def _billed(self) -> int:
        """Usage's completion_tokens (the profile's usage_factor may bill more than was
        streamed); the truth log keeps it beside the tokens streamed."""
        self.truth["billed_tokens"] = billed = self.s.plan.billed(self.s.tokens)
        return billed

    async def _write(self, payload: bytes, kind: str, tokens: int, scheduled: int) -> None:
        await self.send({"type": "http.response.body", "body": payload, "more_body": True})
        self._stamp(kind, tokens, scheduled)

    def _token_payload(self, kind: str, n: int, finish: str | None) -> bytes:
        start = self.words
        text = self._text(n)
        if self.wire is not None:  # the end is in its own events (`_end`)
            return self.wire.token(kind, text)
        lp = (self._logprobs(start, n) if self.job.logprobs and kind == "content"
              else b"null")
        if finish is None:  # the hot path: a template (the words need no JSON escaping)
            key = b"reasoning_content" if kind == "reasoning" else b"content"
            middle = (b'{"index":0,"delta":{"' + key + b'":"' if self.job.chat
                      else b'{"index":0,"text":"')
            return self._event(self.head + b'"choices":[' + middle + text.encode()
                               + b'"' + (b"}" if self.job.chat else b"")
                               + b',"logprobs":' + lp + b',"finish_reason":null}]}')
        key_s = "reasoning_content" if kind == "reasoning" else "content"
        return self._event(self._choice({key_s: text}, text, finish, lp))

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

    def _stamp(self, kind: str, tokens: int, scheduled: int, now: int | None = None) -> None:
        """Record a write the moment its bytes were handed to the transport (`now`: the
        one write several events went out in, stamped once)."""
        now = time.perf_counter_ns() if now is None else now
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
                        ping = getattr(self.wire, "ping", b": ping" + self.nl + self.nl)
                        if ping:  # (a binary framing has no comment to send)
                            await self._write(ping, "ping", 0, now)
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
            (b"content-type", getattr(self.wire, "content_type", b"text/event-stream")),
            (b"cache-control", b"no-cache"), (b"x-request-id", truth["request_id"].encode())]})
        if self.wire is not None and (opening := self.wire.start()):
            await self._write(opening, "start", 0, time.perf_counter_ns())
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
                payload = self._token_payload(kind, n, finish)
                if final and self.s.items and self.s.items[0][0] == "finish":
                    # the engine's last step made the end with it: one write (`_end`)
                    end_at = self.s.items.popleft()[2]
                    await self._end(end_at, usage=job.include_usage and not plan.no_usage,
                                    last=(payload, kind, n, at))
                    truth["outcome"] = plan.outcome
                    return
                await self._write(payload, kind, n, at)
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
                raise CutConnection  # uvicorn closes the transport: no terminator
            elif kind == "finish":
                await self._end(at, usage=job.include_usage and not plan.no_usage)
                truth["outcome"] = plan.outcome
                return

    async def _end(self, at: int, usage: bool, failed: bool = False,
                   last: tuple[bytes, str, int, int] | None = None) -> None:
        """Usage chunk if asked, [DONE] unless faulted, then the HTTP terminator (the newer
        APIs: their closing events, none after an error event), after `last` (the final
        token's chunk: payload, kind, tokens, scheduled) when the same step made both.

        All in one write, each stamped as written: an engine's last step produces them
        together, and a batching engine ends many streams in one step. Written one by one
        (four writes a stream, each a TLS record over HTTPS) they made a burst the next
        requests of those streams waited behind, in every client's TTFT error against
        this truth log (docs/benchmarks.md, the eighth look)."""
        self.truth["completion_tokens"] = self.s.tokens
        pieces = [last] if last is not None else []
        if self.wire is not None:
            plan = self.s.plan
            frames = [] if failed else self.wire.end(
                plan.finish_reason, self._billed() if usage else None, not plan.no_done,
                min(plan.reasoning_tokens, self.s.tokens))
            pieces += [(payload, kind, 0, at) for payload, kind in frames]
        else:
            if usage:
                data = (self.head + b'"choices":[],"usage":' + json.dumps(self._usage()).encode()
                        + b"}")
                pieces.append((self._event(data), "usage", 0, at))
            if not self.s.plan.no_done:
                pieces.append((self._event(b"[DONE]"), "done", 0, at))
        await self.send({"type": "http.response.body", "more_body": False,
                         "body": b"".join(payload for payload, _, _, _ in pieces)})
        now = time.perf_counter_ns()
        for _, kind, tokens, scheduled in pieces:
            self._stamp(kind, tokens, scheduled, now)

    async def whole(self) -> None:
        """Non-streaming: wait for the last token, answer one JSON body."""
        plan, job, truth = self.s.plan, self.job, self.truth
        answer: list[str] = []
        reasoning: list[str] = []
        first_answer: int | None = None  # the answer's first token position
        at = time.perf_counter_ns()
        finished = False
        while not finished:
            item = await self._next()
            if item is None:
                return
            kind, n, at, _ = item
            if kind == "content":
                first_answer = self.words if first_answer is None else first_answer
                answer.append(self._text(n))
            elif kind == "reasoning":
                reasoning.append(self._text(n))
            elif kind in ("error", "cut"):
                truth.update(status=500, outcome=plan.outcome)
                await send_error(self.send, BadRequest(
                    500, "injected fault: the engine failed", kind="internal_server_error"))
                return
            finished = kind == "finish"
        text = "".join(answer)
        logprobs = (json.loads(self._logprobs(first_answer, self.words - first_answer))
                    if job.logprobs and first_answer is not None else None)
        if job.chat:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if reasoning:
                message["reasoning_content"] = "".join(reasoning)
            choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": logprobs,
                                      "finish_reason": plan.finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": logprobs,
                      "finish_reason": plan.finish_reason}
        body: dict[str, Any] = {
            "id": ("chatcmpl-" if job.chat else "cmpl-") + truth["request_id"],
            "object": "chat.completion" if job.chat else "text_completion",
            "created": int(time.time()), "model": self.model,
            "system_fingerprint": self.fingerprint, "choices": [choice]}
        if not plan.no_usage:
            body["usage"] = self._usage()
        truth.update(status=200, completion_tokens=self.s.tokens, outcome=plan.outcome)
        await send_json(self.send, 200, body)
        now = time.perf_counter_ns()
        truth["writes"].append((now, at, self.s.tokens, "content"))
        truth["first_write_ns"] = truth["first_answer_ns"] = now

