"""The reference endpoint as a raw ASGI app: OpenAI-compatible HTTP around the engine model.

Routes: `/v1/chat/completions`, `/v1/completions`, `/v1/messages` (Anthropic Messages:
requires `anthropic-version`), `/v1/responses` (OpenAI Responses), `/v1/models`, and
`/metrics` (Prometheus text in vLLM's names, `evalkit.reference.metrics`). The two newer
APIs stream only (their frames: `evalkit.reference.wire`); their truth lines are the same,
plus which credential header and api-version query the request carried (never a value).

Each generation request is parsed (`evalkit.reference.parse`), given its fate
(`evalkit.reference.faults`; the faults under load once it reaches the engine), its words
drawn (`evalkit.reference.answers`), submitted to the engine, which one loop steps on the
monotonic timeline (`evalkit.reference.loop`), and answered by its own writer
(`evalkit.reference.writer`), so a slow client only slows its own stream. The whole story
of each request goes to the ground-truth log (JSON lines) once it ends, in batches
(`TRUTH_FLUSH_S` later, or when `/_reference/state` is asked).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from evalkit.reference.answers import FINGERPRINTS, PRIMARY, SWAP, Answer
from evalkit.reference.asgi import (
    Receive,
    Scope,
    Send,
    header,
    query_param,
    read_body,
    send_error,
    send_json,
)
from evalkit.reference.clouds import (
    CLOUD_APIS,
    check_credentials,
    check_model,
    cloud_route,
    error_sender,
    models_list,
    parse_cloud_job,
)
from evalkit.reference.engine import EngineCore, Seq
from evalkit.reference.faults import plan_request, sticky_draw, under_load
from evalkit.reference.loop import EngineLoop, Stream, sleep_until
from evalkit.reference.metrics import EngineMetrics
from evalkit.reference.params import Profile
from evalkit.reference.parse import MODEL, ROUTES, BadRequest, encoding, parse_job
from evalkit.reference.prefix import PrefixCache, block_hashes, message_digests
from evalkit.reference.ratelimit import RateLimiter, with_headers
from evalkit.reference.spotting import Spotter, prompt_text
from evalkit.reference.writer import Writer

#: the idle pool a vendor keeps for requests it spots (`spot_probes`): no stream slows
#: another, none waits, none is refused, swapped for another model or cut short
IDLE_POOL = {"decode_per_stream_ms": 0.0, "max_batch": 100_000, "admission_limit": 0,
             "swap_above": 0, "truncate_above": 0, "batch_variance": 0.0}
#: the ASGI scope extension where the server's protocol puts the request's arrival stamp
ARRIVAL_EXTENSION = "evalkit.arrival"
#: headers that carry a credential: the truth log names which one came, never its value
_CREDENTIALS = (b"authorization", b"x-api-key", b"api-key", b"x-goog-api-key")
#: truth lines are encoded and written this long after their request ended, in batches:
#: the streams of one decode step end together and their clients' next requests arrive
#: right then, so the server must not be busy with its own log at that moment
TRUTH_FLUSH_S = 0.25


class ReferenceApp:
    """The ASGI application: routes, each request from arrival to its truth line, and the
    ground-truth log."""

    def __init__(self, profile: Profile, seed: int = 0, truth_log: Path | None = None) -> None:
        self.profile = profile
        self.seed = seed
        self.core = EngineCore(profile, seed)
        self.truth_path = truth_log
        self._truth: TextIO | None = None
        self._pending: list[dict[str, Any]] = []
        self._flushing: asyncio.TimerHandle | None = None
        self.engine = EngineLoop(self.core)
        #: `spot_probes`: the idle pool that spotted requests get (made at the first one):
        #: sized for the evaluation, every stream decodes as fast as one alone, none is
        #: queued, turned away, swapped or cut short (`IDLE_POOL`)
        self.spotter = Spotter()
        self.idle_profile = profile.with_overrides(IDLE_POOL)
        self._idle: tuple[EngineCore, EngineLoop] | None = None
        self.requests = 0
        self.in_flight = 0
        self.logged = 0
        self.created = int(time.time())
        self.metrics = EngineMetrics(MODEL)
        #: `rate_limit_rpm`: the gateway's sliding window (`evalkit.reference.ratelimit`)
        self.limiter = RateLimiter(profile)
        #: `prefix_cache`: one cache for the deployment (`evalkit.reference.prefix`)
        self.prefix = (PrefixCache(int(profile["prefix_cache_blocks"]))
                       if bool(profile["prefix_cache"]) else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        received = time.perf_counter_ns()
        path, method = scope["path"], scope["method"]
        if method == "GET" and path == "/v1/models":
            await send_json(send, 200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": self.created,
                 "owned_by": "evalkit"}]})
        elif method == "GET" and path == "/_reference/state":
            self._flush()  # whoever asks sees every ended request in the truth log
            await send_json(send, 200, {"in_flight": self.in_flight, "logged": self.logged,
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
        elif method == "POST" and (cloud := cloud_route(path)) is not None:
            await self._generate(scope, receive, send, received, *cloud)
        elif method == "GET" and path == "/v1beta/models":
            await send_json(send, 200, models_list())
        else:
            err = BadRequest(404, f"no route for {method} {path}", kind="NotFoundError")
            await send_error(send, err)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                encoding()  # build the tokenizer now, not inside the first request's TTFT
                if bool(self.profile["spot_probes"]):
                    self.spotter.learn()  # what a vendor learns from evalkit's source (~1 s)
                if self.truth_path is not None:
                    self._truth = self.truth_path.open("a", encoding="utf-8")
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.engine.stop()
                if self._idle is not None:
                    self._idle[1].stop()
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
                        api: str, model: str | None = None) -> None:
        self.in_flight += 1
        index = self.requests
        self.requests += 1
        rid = header(scope, b"x-request-id") or f"ref-{index}"
        arrival = (scope.get("extensions") or {}).get(ARRIVAL_EXTENSION) or {}
        truth: dict[str, Any] = {
            "request_id": rid, "path": scope["path"], "index": index,
            "arrived_ns": arrival.get("arrived_ns"), "received_ns": received,
            "poll_began_ns": arrival.get("poll_began_ns"), "polled_ns": arrival.get("polled_ns"),
            "kernel_ns": arrival.get("kernel_ns"),
            "queued": False, "admitted_ns": None,
            "first_write_ns": None, "first_answer_ns": None, "writes": [], "end_ns": None,
            "prompt_tokens": None, "cached_prompt_tokens": None, "prefill_s": None,
            "messages": None, "message_count": None,
            "completion_tokens": 0, "status": None,
            "outcome": "error", "faults": [], "client_disconnected": False, "api": api,
            "active_streams": None, "served_by": None, "model_returned": None,
            "system_fingerprint": None, "planned_tokens": None, "truncated": False,
            "first_flip_at": None, "output_sha": None,
            "auth_headers": [k.decode() for k in _CREDENTIALS if header(scope, k) is not None],
            "api_version": query_param(scope, "api-version"),
            "anthropic_version": header(scope, b"anthropic-version")}
        tells = (header(scope, b"user-agent"), header(scope, b"x-request-id"))
        try:
            await self._generate_inner(receive, send, api, index, rid, truth, tells,
                                       (scope, model))
        finally:
            truth["end_ns"] = time.perf_counter_ns()
            self.in_flight -= 1
            self._log(truth)

    def _pool(self, truth: dict[str, Any], tells: tuple[str | None, str | None],
              body: Any) -> tuple[EngineCore, EngineLoop]:
        """The engine a request runs on: the shared one, or (spot_probes) the idle pool
        for a request with a benchmark's marks, which the truth log names."""
        if not bool(self.profile["spot_probes"]) or not isinstance(body, dict):
            return self.core, self.engine
        truth["spotted"] = self.spotter.marks(tells[0], tells[1], body)
        if not truth["spotted"]:
            return self.core, self.engine
        if self._idle is None:
            core = EngineCore(self.idle_profile, self.seed + 1)
            self._idle = (core, EngineLoop(core))
        return self._idle

    def _naming(self, served_by: str) -> tuple[str, str]:
        """The `model` and `system_fingerprint` a response of `served_by` carries:
        `model_returned` names the swap's responses (every response without a swap),
        `swap_fingerprint` gives the swap its own fingerprint."""
        p = self.profile
        named = str(p["model_returned"])
        if served_by == SWAP:
            return named or MODEL, FINGERPRINTS[SWAP if bool(p["swap_fingerprint"]) else PRIMARY]
        return (named if named and not int(p["swap_above"]) else MODEL), FINGERPRINTS[PRIMARY]

    async def _generate_inner(self, receive: Receive, send: Send, api: str, index: int,
                              rid: str, truth: dict[str, Any],
                              tells: tuple[str | None, str | None] = (None, None),
                              routed: tuple[Scope, str | None] | None = None) -> None:
        p = self.profile
        reply_error = error_sender(api)  # a cloud's API answers errors in its own shape
        try:
            raw = await read_body(receive)
            if api == "messages" and truth["anthropic_version"] is None:
                raise BadRequest(400, "anthropic-version: header is required")
            if api in CLOUD_APIS and routed is not None:  # the model is in the path
                check_credentials(api, routed[0], raw)
                check_model(api, routed[1] or "")
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                raise BadRequest(400, "the request body is not valid JSON") from None
            job = (parse_cloud_job(body, api, int(p["default_max_tokens"]))
                   if api in CLOUD_APIS else parse_job(body, api, int(p["default_max_tokens"])))
        except BadRequest as exc:
            truth["status"] = exc.status
            await reply_error(send, exc)
            return
        if (rated := self.limiter.admit(truth["received_ns"])) is not None:
            send = with_headers(send, rated.headers)
            if not rated.admitted:
                truth.update(status=429, outcome="rejected", rejected_by=rated.reason)
                await reply_error(send, BadRequest(429, "rate limit reached for requests",
                                                  kind="rate_limit_exceeded"),
                                 [(b"retry-after", str(rated.retry_after_s).encode())])
                return
        truth["prompt_tokens"] = job.prompt_tokens
        truth["messages"] = message_digests(job.parts)
        truth["message_count"] = len(job.parts)
        # hashed now, inside the request overhead (the tokenizer's time is the gateway's)
        keys = ([] if self.prefix is None else
                block_hashes(job.parts, int(p["prefix_block_tokens"]), encoding().encode_ordinary))
        text = (prompt_text(body) if api not in CLOUD_APIS  # parse_job took only an object
                else "\n".join(part.text for part in job.parts))
        # joins a client's record without a request-id header
        truth["prompt_sha"] = hashlib.sha256(text.encode()).hexdigest()[:16]
        core, engine = self._pool(truth, tells, body)
        plan = plan_request(p, self.seed, index, job.max_tokens, job.min_tokens,
                            job.ignore_eos, job.chat)
        if bool(p["swap_sticky"]):
            plan = replace(plan, swap_draw=sticky_draw(text))
        truth["faults"] = plan.faults
        if plan.http_500:
            truth.update(status=500, outcome="fault:http_500")
            await reply_error(send, BadRequest(500, "injected fault: internal server error",
                                              kind="internal_server_error"))
            return
        overhead = int(float(p["request_overhead_ms"]) * 1e6)
        await sleep_until(truth["received_ns"] + overhead, spin=False)
        # the streams a buyer would count: every request in flight here (received, not yet
        # ended, this one included), whether in the engine or still in its overhead. Counted
        # in the engine alone, a closed loop's synchronised waves would put the first of
        # each wave at 1, however many streams the client held
        truth["active_streams"] = active = self.in_flight
        plan = under_load(plan, self.idle_profile if truth.get("spotted") else p, active)
        answer = Answer(text, plan.served_by, plan.total_tokens, job.logprobs,
                        float(p["batch_variance"]), f"{self.seed}:{index}")
        stream = Stream(plan, int(p["tokens_per_chunk"]), answer)
        # looked up when the request reaches the engine, and its blocks held once it is
        # admitted to the queue: the turn before a session's next has been prefilled by then
        cached = (self.prefix.match(keys) * int(p["prefix_block_tokens"])
                  if self.prefix is not None else 0)
        seq = Seq(job.prompt_tokens, plan.total_tokens, sink=stream,
                  ready_ns=truth["received_ns"] + overhead, cached_tokens=cached)
        truth["queued"] = core.would_queue()
        if not core.submit(seq):
            truth.update(status=429, outcome="rejected", queued=False)
            retry = str(int(p["retry_after_s"])).encode()
            await reply_error(send, BadRequest(429, "too many requests in flight; retry later",
                                              kind="rate_limit_exceeded"),
                             [(b"retry-after", retry)])
            return
        if self.prefix is not None:
            self.prefix.insert(keys)
        truth.update(served_by=plan.served_by, planned_tokens=plan.planned_tokens,
                     truncated=plan.truncated, faults=plan.faults,
                     cached_prompt_tokens=cached, prefill_s=core.prefill_s(seq))
        self.metrics.prompt_tokens += job.prompt_tokens
        engine.wake()
        watcher = asyncio.get_running_loop().create_task(_watch_disconnect(receive, stream))
        try:
            writer = Writer(send, stream, job, rid, self.created, truth, self.metrics,
                            *self._naming(plan.served_by),
                            cached_tokens=None if self.prefix is None else cached)
            if job.stream:
                await writer.stream()
            else:
                await writer.whole()
        finally:
            seq.cancelled = True
            watcher.cancel()
            truth["admitted_ns"] = stream.admitted_ns
            truth["completion_tokens"] = stream.tokens  # generated, whatever reached the wire
            truth["first_flip_at"] = answer.first_flip_at
            truth["output_sha"] = answer.sha(min(plan.reasoning_tokens, stream.tokens),
                                             stream.tokens)
            if stream.gone.is_set():
                truth["client_disconnected"] = True
                if truth["outcome"] == "ok":
                    truth["outcome"] = "disconnected"


async def _watch_disconnect(receive: Receive, stream: Stream) -> None:
    """Flag the stream as gone when the client disconnects (send() stays silent)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            stream.gone.set()
            stream.wake.set()
            return

