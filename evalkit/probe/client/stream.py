"""The streaming prober: one HTTP stream per request, timed at byte arrival.

Every socket read carries its arrival time on the `time.perf_counter_ns()` clock, taken
from the kernel's receive stamp by `evalkit.probe.wire.stamping` (or, without it, the moment the
bytes reach us), *before* HTTP, SSE or JSON parsing, so neither parsing nor the other
streams' work enters a measured time. Events completed by one read share its stamp
(their bytes arrived together). Each concurrent stream holds its own keep-alive
connection (`_Clients`). A failed request is data: it comes back as a record with an
outcome, never as an exception. The only exceptions are for an endpoint that cannot be
probed at all (`EndpointError`, raised by `check_endpoint`).

Load generation lives here too: `closed_loop` (N workers, each sending its next request
when the previous one ends) and `open_loop` (Poisson arrivals; `t0` is the *scheduled*
send time and the scheduling lag is recorded, so a slow client cannot hide queueing).
`LoopMonitor` measures the client's own event-loop lag and CPU, and the prober counts
chunks read late enough to merge with the next one, so a run can tell when the client,
not the vendor, set the pace (`evalkit.probe.client.selfcheck.judge_client`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from evalkit.probe.apis.base import NORMAL_FINISHES, Adapter, Delta
from evalkit.probe.apis.fields import EngineTimings
from evalkit.probe.client.clients import Target, _Clients
from evalkit.probe.client.loopmonitor import Ring, _pct
from evalkit.probe.client.streamstate import ANSWER_MAX, StreamState, max_content_chunks
from evalkit.probe.plan.privacy import AnswerKey, scrub
from evalkit.probe.plan.prompts import Prompt, count_tokens
from evalkit.probe.wire.chunked import read_body
from evalkit.probe.wire.eventstream import EventStreamFramer
from evalkit.probe.wire.reconnect import Reuse
from evalkit.probe.wire.replies import bounded_retry, error_message, retry_after
from evalkit.probe.wire.sse import SSEParser, SSETooLarge
from evalkit.probe.wire.stamping import SendStamp, stamp_sends
from evalkit.probe.wire.transport import arrival_ns
from evalkit.records import Outcome, RequestRecord
from evalkit.sanitize import clean, rate_limit_headers, shows_nothing

#: HTTP statuses that mean "not admitted now" rather than "broken"
ADMISSION_STATUSES = frozenset({429, 503})
#: send-lag samples a prober keeps (the newest): bounded, like every buffer of a long run
MAX_SENDS = 100_000
#: a read this long after the kernel received its bytes was late (the client's doing)
LATE_READ_NS = 1_000_000
_ERR_MAX = 300
#: what a spent response's body becomes: nothing that points back at the response
_SPENT = httpx.ByteStream(b"")
#: what a record keeps of an error response's body (after sanitising)
ERROR_BODY_MAX = 500
#: the most characters a session turn keeps of its answer, to send back as history: an
#: answer longer than this goes back cut (a product would send it whole), so it is large,
#: and still bounded well inside a record line (`evalkit.rundir.store.MAX_LINE_BYTES`)
HISTORY_MAX = 131_072


class _Arrival:
    """Content chunks that came at one stamp: when, how late we made the first read of
    it (a burst larger than one read is read in parts, parsed in between: the parts
    after the first are late by our parsing, not merged by it), how long after the
    arrival before (the first: after the request was sent), and how many."""

    __slots__ = ("chunks", "gap_ns", "late_ns", "ns")

    def __init__(self, sent_ns: int) -> None:
        self.ns: int = sent_ns
        self.late_ns: int | None = 0
        self.gap_ns = 0
        self.chunks = 0

    def next(self, ns: int, late_ns: int | None) -> None:
        self.ns, self.late_ns, self.gap_ns, self.chunks = ns, late_ns, ns - self.ns, 1

    def merged_by_us(self) -> int:
        """The chunks our lateness merged here. Late by L, we can have merged only chunks
        that came within L of each other: k chunks after a wait `gap` came gap/k apart on
        average, so L merged at most L*k/gap of them (and k-1). A gateway's burst of 16
        after 240 ms, read 3 ms late, is its buffer; 40 chunks 4 ms after our last read
        are ours. Lateness unknown (no kernel stamp): every one counts, as ever."""
        k, late = self.chunks, self.late_ns
        if k < 2 or (late is not None and late <= LATE_READ_NS):
            return 0
        return k - 1 if late is None else min(k - 1, late * k // max(self.gap_ns, 1))


class Prober:
    """Sends streaming requests for one run (or one shard of it) and times them."""

    def __init__(self, target: Target, origin_ns: int, run_tag: str, shard: int = 0,
                 stamped: bool = True, run_id: str | None = None,
                 reuse: Reuse | None = None, answer_key: AnswerKey | None = None) -> None:
        self.target = target
        #: digests a corpus canary's answer pieces (`evalkit.probe.plan.privacy`): one key for
        #: the whole run, so the shards' answers compare with the baseline's
        self.answer_key = answer_key or AnswerKey()
        #: every stream's client shares `reuse`: the run's knowledge of the server's closes
        self.clients = _Clients(target, stamped,
                                reuse if reuse is not None else Reuse(origin_ns))
        self.adapter: Adapter = target.adapter
        self.origin_ns = origin_ns
        self.run_tag = run_tag
        #: the run's id every record carries (a Ray shard's tag is longer than the run's)
        self.run_id = run_id or run_tag
        self.shard = shard
        self.force_length = target.force_length
        #: the sampling settings sent (the connect phase drops what a vendor rejects)
        self.sampling = target.sampling
        self._seq = 0
        #: (url, headers, extensions) every request shares (`_request`)
        self._template: tuple[httpx.URL, list[tuple[bytes, bytes]], dict[str, Any]] | None = None
        #: content chunks timed, and those that shared a socket read with the next content
        #: chunk: servers write one chunk per decode step, so a shared read means we read
        #: late and the earlier chunk carries the later one's stamp (`coalesced_fraction`)
        self.content_chunks = 0
        self.coalesced_chunks = 0
        #: seconds workers spent waiting after rejections and failures (closed_loop)
        self.paused_s = 0.0
        #: per request sent on a plan that streamed content, in order: the client's send
        #: lag (s; from when it was meant to leave to when its bytes did, less any
        #: connection opened meanwhile) and its span, meant-to-leave to end (`send_check`)
        #: (the newest MAX_SENDS, in arrays allocated once: a soak holds flat memory)
        self.sent = Ring(MAX_SENDS, "dd")

    @property
    def sends(self) -> int:
        """Send lags recorded so far (a window's mark: `send_check(since)`)."""
        return self.sent.seen

    async def __aenter__(self) -> Prober:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.clients.aclose()

    def _next_id(self) -> tuple[str, str]:
        """(request id, label): the id sent as X-Request-ID is a UUID, because some servers
        reject any other shape (llama.cpp's answers a bare 400); the label is ours to read
        (run tag, shard, sequence) and the record keeps both."""
        self._seq += 1
        return str(uuid.uuid4()), f"{self.run_tag}-s{self.shard}-{self._seq:06d}"

    def _request(self, client: httpx.AsyncClient, rid: str, prompt: Prompt) -> httpx.Request:
        """The request, built from a template: every client of a Prober has the same URL,
        headers and timeouts, and `client.build_request` merging them anew each time
        cost 3x more, once per request, in the moment a herd of streams sends again."""
        body = self.adapter.build_body(self.target.model, prompt.content, prompt.max_tokens,
                                       self.force_length, self.sampling)
        body.update(self.target.extra_body)
        if self._template is None:
            accept = dict(self.adapter.headers).get("accept", "text/event-stream")
            proto = client.build_request("POST", self.adapter.path, headers={
                "content-type": "application/json", "accept": accept})
            self._template = (proto.url, [(k, v) for k, v in proto.headers.raw if k.lower()
                                          not in (b"content-length", b"x-request-id")],
                              proto.extensions)
        url, head, extensions = self._template
        if self.target.tag_requests:
            head = [*head, (b"x-request-id", rid.encode())]
        return httpx.Request("POST", url, headers=head,
                             content=json.dumps(body).encode(), extensions=dict(extensions))

    async def stream(self, prompt: Prompt, phase: str, level: int | None,
                     scheduled_ns: int | None = None,
                     facts: dict[str, Any] | None = None,
                     intended_ns: int | None = None,
                     after_send: Callable[[], None] | None = None,
                     hold_ns: int | None = None) -> RequestRecord:
        """Send one streaming request and return its record (never raises for a failure).

        The request is *sent* when its first bytes are handed to the socket (stamped by
        `evalkit.probe.wire.stamping`'s writer, so neither httpx's locks nor other streams' work in
        between count). In a closed loop (no `scheduled_ns`) that moment is t0; in an
        open loop t0 is `scheduled_ns`, the time the arrival process set, so a client
        that sends late cannot hide the wait (coordinated omission). Either way the
        record keeps the send stamp (`sent_s`, from t0) and the send lag: sent minus when
        the load generator meant to send, `scheduled_ns`, else `intended_ns` (a closed
        loop's worker: when its previous request ended), else the time of this call.

        `after_send`, if given, is called once, when this request is out: its response
        began, or the send failed (not if the call is cancelled: the caller's own
        clean-up runs then). It is for work that must not delay the send, such as
        writing the previous request's record; what it raises is raised here.

        `facts`, if given, receives the stream's format facts (role chunk first,
        keep-alives, CRLF, [DONE], usage): what the connect phase reports.

        `hold_ns`, if given, holds the request's first write until that moment: called a
        little ahead of its schedule, a request leaves on it, its preparation done.
        """
        called_ns = time.perf_counter_ns()
        if scheduled_ns is not None:
            intended_ns = scheduled_ns
        rid, label = self._next_id()
        self.clients.reuse.where = (phase, level)  # where a switch to fresh connections is
        client = self.clients.acquire()
        try:
            return await self._stream(client, rid, label, prompt, phase, level, scheduled_ns,
                                      facts, called_ns if intended_ns is None else intended_ns,
                                      intended_ns is not None, after_send, hold_ns)
        finally:
            self.clients.release(client)

    def send_check(self, since: int = 0) -> dict[str, Any]:
        """The client's send lag over the requests since `since` (a mark of `sends`).

        `send_lag_fraction` is the share of the workers' time that went to the client's
        own delay in sending: the load it was asked to offer and held back. It grows
        when the client cannot keep up (a herd of streams that ended together sending
        again one after another, or an open loop falling behind its schedule): like
        event-loop lag, a sign the client set the pace (`judge_client`). Only requests
        sent on a plan count (`scheduled_ns` or `intended_ns` given: not a one-off, nor
        a worker's first request), and only those that streamed content: a request that
        failed at once (a 429, a refused connection) takes a few milliseconds, and the
        back-off after it is meant.
        """
        k = self.sends - since
        lags = sorted(self.sent.last(k, 0))
        span = sum(self.sent.last(k, 1))
        return {"send_lag_p50_s": _pct(lags, 0.5), "send_lag_p99_s": _pct(lags, 0.99),
                "send_lag_max_s": lags[-1] if lags else None,
                "send_lag_fraction": round(sum(lags) / span, 5) if span > 0 else None}

    def ended_ns(self, rec: RequestRecord) -> int | None:
        """When `rec`'s request ended, on the perf_counter_ns clock (None: not recorded)."""
        if rec.end_s is None:
            return None
        return self.origin_ns + round((rec.t0_s + rec.end_s) * 1e9)

    async def _stream(self, client: httpx.AsyncClient, rid: str, label: str, prompt: Prompt,
                      phase: str, level: int | None, scheduled_ns: int | None,
                      facts: dict[str, Any] | None, intended_ns: int, judged: bool,
                      after_send: Callable[[], None] | None = None,
                      hold_ns: int | None = None) -> RequestRecord:
        request = self._request(client, rid, prompt)  # built before t0: not part of any time
        st = StreamState(end_event=self.adapter.end_event,
                          max_chunks=max_content_chunks(prompt.max_tokens),
                          keep_answer=prompt.canary is not None or prompt.keep_answer,
                          keep_max=ANSWER_MAX if prompt.canary is not None else HISTORY_MAX)
        deadline = self.target.request_deadline(prompt.max_tokens)
        wire = SendStamp(join=bool(request.content), hold_ns=hold_ns)  # head+body, one send
        tried_ns = time.perf_counter_ns()
        try:
            async with asyncio.timeout(deadline):
                with stamp_sends(wire):  # every write of this send, stamped at the socket
                    response = await client.send(request, stream=True)
                try:
                    if after_send is not None:
                        out = after_send
                        after_send = None  # once: not again below
                        out()
                    st.status = response.status_code
                    st.limits = rate_limit_headers(response.headers)
                    if st.status != 200:
                        await self._read_error(response, st)
                    else:
                        await self._read_stream(response, st, tried_ns)
                        # it ended when its last bytes arrived, not when this task got
                        # to them: a herd that ended together is late from that moment
                        st.last_arrival_ns = arrival_ns(response)
                finally:
                    await response.aclose()
                    # httpx binds the body to its response and the response to its body
                    # (`BoundAsyncStream`): a cycle that only the cyclic GC frees, and a
                    # streamed response lives long enough to reach its oldest generation,
                    # collected when a quarter of the heap is waiting. A soak left ~13
                    # objects a request there (the response, its body, the request, their
                    # headers): a sawtooth of tens of thousands, whose peaks the heap
                    # keeps. Broken here, they go when the request's locals do
                    response.stream = _SPENT
        except TimeoutError:
            st.fail("timeout", f"no end after {deadline:g} s (the request's deadline; "
                               f"{len(st.chunk_ns)} content chunks had arrived)")
        except httpx.TimeoutException as exc:
            st.fail("timeout", f"no bytes for {self.target.timeout_s:g} s ({type(exc).__name__})")
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            st.fail("incomplete" if st.status == 200 else "error",
                    f"connection cut: {exc or type(exc).__name__}")
        except httpx.HTTPError as exc:
            st.fail("error", f"{type(exc).__name__}: {exc}")
        st.end_ns = time.perf_counter_ns()
        if st.last_arrival_ns is not None and st.transport is None:
            st.end_ns = min(st.end_ns, st.last_arrival_ns)
        if after_send is not None:  # the send failed: nothing else is coming
            after_send()
        if facts is not None:
            facts.update(st.facts())
        # no byte reached the socket (no connection): the attempt stands in for the send
        sent_ns = wire.first_ns if wire.first_ns is not None else tried_ns
        t0 = scheduled_ns if scheduled_ns is not None else sent_ns
        if judged and st.chunk_ns:  # late against a plan, and it offered load
            # the client's own delay: a connection opened inside the send is the network's
            own = max(sent_ns - intended_ns - wire.connect_ns, 0)
            self.sent.append(own / 1e9,
                             max(st.end_ns - intended_ns - wire.connect_ns, own) / 1e9)
        return self._record(rid, label, prompt, phase, level, t0, sent_ns, intended_ns,
                            wire, st)

    async def _read_error(self, response: httpx.Response, st: StreamState) -> None:
        body = b""
        async for part in response.aiter_raw():
            body += part
            if len(body) > 4096:
                break
        st.error_body = clean(self.target.redact(body.decode("utf-8", errors="replace")),
                              ERROR_BODY_MAX)
        reply = getattr(self.adapter, "error_reply", None)  # a cloud's own error shapes
        said, throttled, hint = (reply(st.status, response.headers.get, body) if reply
                                 else (None, st.status in ADMISSION_STATUSES, None))
        text = said or error_message(body) or clean(response.reason_phrase, 80) or "(no body)"
        outcome: Outcome = "rejected" if throttled else "error"
        if outcome == "rejected":
            st.retry_after_s = (bounded_retry(hint) if hint is not None
                                else retry_after(response.headers.get("retry-after")))
        st.fail(outcome, f"HTTP {st.status}: {text}")

    async def _read_stream(self, response: httpx.Response, st: StreamState, sent_ns: int
                           ) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            st.protocol_error = (f"the stream is {clean(encoding, 20)}-encoded although "
                                 "'accept-encoding: identity' was asked for; evalkit reads "
                                 "only plain event streams")
            return
        binary = getattr(self.adapter, "framing", "sse") == "eventstream"  # Bedrock's
        parser = EventStreamFramer() if binary else SSEParser()
        parse = self.adapter.parse
        # an adapter whose events need their type (Bedrock's) reads the whole event
        parse_event = getattr(self.adapter, "parse_event", None)
        # the last content chunks' arrival (one stamp), settled when the next one comes
        arrival = _Arrival(sent_ns)

        def on_piece(raw: bytes, now: int, late: int | None) -> bool:
            """One piece of the body, `now` its socket read's stamp (taken before any
            parsing); `late`: how long after the kernel had it we read it (None: unknown).
            Called in the socket's reader callback on a kernel-stamped connection
            (`chunked.read_body`): it must not raise, and returns False to stop."""
            try:
                events = parser.feed(raw)
            except SSETooLarge as exc:
                st.protocol_error = str(exc)
                return False
            for event in events:
                try:
                    delta = (parse(event.data) if parse_event is None
                             else parse_event(event.event, event.data))
                except (ValueError, RecursionError) as exc:  # (JSON nested thousands deep)
                    st.protocol_error = f"malformed event data: {str(exc)[:80]}"
                    continue
                if event.event == "error" and delta.error is None:
                    # an SSE error event is an error in every API, whatever its data holds
                    # (an adapter reads only the data, and {"message": ...} has no "error")
                    delta = Delta(error=clean(event.data, 300) or "an SSE error event")
                st.events += 1
                if st.done and (delta.text or delta.reasoning):
                    # content after the end ([DONE]): an OpenAI client stopped reading at
                    # it. Counted, a flood sent after it read as speed no reader saw
                    st.protocol_error = "content after the stream's end ([DONE])"
                    return False
                if delta.model is not None or delta.fingerprint is not None:
                    st.names(delta)
                if delta.done:  # [DONE], or an API's end event (which may carry more)
                    st.done = True
                if delta.role_only and not st.chunk_ns:
                    st.role_first = True
                if delta.error is not None:
                    if delta.throttled:  # "not now", inside the stream: a rejection
                        st.fail("rejected", f"throttled in the stream: {delta.error}")
                        st.retry_after_s = bounded_retry(delta.retry_after_s)
                        return False
                    st.payload_error = delta.error
                    continue
                if delta.text or delta.reasoning:
                    tokens = count_tokens(delta.text) + count_tokens(delta.reasoning)
                    if not st.chunk_ns and shows_nothing(delta.text) and \
                            shows_nothing(delta.reasoning):
                        # blank text before any word (white space, a zero-width space, a
                        # BOM): nothing a reader sees yet. Timed as
                        # the first token, one space sent at once would read as the TTFT of
                        # a stream whose first word came seconds later (the wait then hides
                        # in TPOT). Its tokens ride on the first chunk that carries a word.
                        st.blank_tokens += tokens
                    else:
                        # two content chunks at one stamp, and we read it late after the
                        # kernel had it: the first carries the second's stamp. (Read
                        # promptly, the server wrote them together: llama.cpp does now and
                        # then, a gateway's buffer by the dozen; not ours: `_Arrival`.)
                        if arrival.ns == now:
                            arrival.chunks += 1
                        else:
                            self.coalesced_chunks += arrival.merged_by_us()
                            arrival.next(now, late)
                        if len(st.chunk_ns) >= st.max_chunks:
                            # a flood of chunks no max_tokens asked for: each kept costs
                            # memory until the request's deadline (GBs, one stream)
                            st.protocol_error = (f"more than {st.max_chunks} content "
                                                 "chunks: far past the output asked for")
                            return False
                        self.content_chunks += 1
                        st.chunk_ns.append(now)
                        st.chunk_tokens.append(tokens + st.blank_tokens)
                        st.blank_tokens = 0
                        if st.first_answer_ns is None and delta.text and \
                                not shows_nothing(delta.text):
                            st.first_answer_ns = now
                if delta.text:
                    st.answer(delta)
                if delta.finish_reason is not None:
                    st.finish_reason = delta.finish_reason
                    if delta.finish_reason not in NORMAL_FINISHES and st.abnormal is None:
                        st.abnormal = delta.finish_reason  # a later 'stop' undoes nothing
                if delta.usage_completion_tokens is not None:
                    st.usage_ct = delta.usage_completion_tokens
                if delta.usage_prompt_tokens is not None:
                    st.usage_pt = delta.usage_prompt_tokens
                if delta.usage_cached_tokens is not None:
                    st.usage_cached = delta.usage_cached_tokens
                if delta.timings is not None:
                    st.timings = delta.timings
            return True

        try:
            await read_body(response, on_piece)  # chunked: unframed there, not by h11
        finally:
            self.coalesced_chunks += arrival.merged_by_us()
        st.cut_event = parser.pending
        st.comments = parser.comments
        st.crlf = parser.saw_cr

    def _record(self, rid: str, label: str, prompt: Prompt, phase: str, level: int | None,
                t0: int, sent_ns: int, intended_ns: int, wire: SendStamp, st: StreamState
                ) -> RequestRecord:
        outcome, error = st.verdict()
        counted = sum(st.chunk_tokens) + st.blank_tokens if st.status == 200 else None
        output = st.usage_ct if st.usage_ct is not None else counted
        chunks = [((ns - t0) / 1e9, n) for ns, n in zip(st.chunk_ns, st.chunk_tokens, strict=True)]
        engine = st.timings or EngineTimings()
        error = clean(self.target.redact(error), _ERR_MAX) if error else None
        error_body = st.error_body
        answer = "".join(st.kept) if st.keep_answer and st.status == 200 else None
        # the vendor's tokens where logprobs named them, else the pieces it streamed
        pieces = ([t for t, _ in st.logprobs] if st.logprobs else list(st.kept)) \
            if prompt.canary is not None and st.status == 200 else None
        if prompt.private:  # nothing of the buyer's corpus is kept (evalkit.probe.plan.privacy)
            error, error_body = scrub(error, prompt.content), scrub(error_body, prompt.content)
            if prompt.canary is not None:
                answer, pieces = None, self.answer_key.pieces(pieces) if pieces else pieces
        return RequestRecord(
            id=rid, phase=phase, level=level, outcome=outcome,
            t0_s=(t0 - self.origin_ns) / 1e9,
            prompt_tokens=st.usage_pt if st.usage_pt is not None else prompt.prompt_tokens,
            prompt_tokens_estimated=st.usage_pt is None,
            counted_prompt_tokens=prompt.prompt_tokens,
            requested_output_tokens=prompt.max_tokens,
            output_tokens=output, output_tokens_estimated=st.usage_ct is None,
            counted_output_tokens=counted, usage_completion_tokens=st.usage_ct,
            ttft_s=chunks[0][0] if chunks else None,
            ttfa_s=(st.first_answer_ns - t0) / 1e9 if st.first_answer_ns is not None else None,
            e2e_s=chunks[-1][0] if chunks else None,
            chunks=chunks, http_status=st.status, finish_reason=st.finish_reason,
            error=error, error_body=error_body, retry_after_s=st.retry_after_s,
            send_lag_s=(sent_ns - intended_ns) / 1e9,
            sent_s=(sent_ns - t0) / 1e9 if wire.first_ns is not None else None,
            connect_s=wire.connect_ns / 1e9 if wire.connect_ns else None,
            tls_s=wire.tls_ns / 1e9 if wire.tls_ns else None,
            reconnects=wire.resent,
            end_s=(st.end_ns - t0) / 1e9 if st.end_ns else None,
            shard=self.shard, prompt_id=prompt.id, label=label, run_id=self.run_id,
            model=", ".join(st.models) or None,
            system_fingerprint=", ".join(st.fingerprints) or None,
            output_sha256=st.sha.hexdigest() if st.status == 200 else None,
            canary=prompt.canary,
            answer_text=answer, answer_tokens=pieces,
            answer_logprobs=[v for _, v in st.logprobs] if prompt.canary is not None and st.logprobs
            else None, rate_limit_headers=st.limits,
            shape=prompt.shape, session=prompt.session, turn=prompt.turn, step=prompt.step,
            planned_turns=prompt.planned_turns, cached_prompt_tokens=st.usage_cached,
            engine_prompt_tokens=engine.prompt_tokens, engine_cached_tokens=engine.cached_tokens,
            engine_prompt_s=engine.prompt_s, engine_output_tokens=engine.output_tokens,
            engine_decode_s=engine.decode_s, prompt_source=prompt.source)
