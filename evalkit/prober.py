"""The streaming prober: one HTTP stream per request, timed at byte arrival.

Every socket read carries its arrival time on the `time.perf_counter_ns()` clock, taken
from the kernel's receive stamp by `evalkit.stamping` (or, without it, the moment the
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
not the vendor, set the pace (`evalkit.selfcheck.judge_client`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import random
import re
import ssl
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from evalkit.api import AUTH_STYLES, NORMAL_FINISHES, Adapter, Delta, get_adapter
from evalkit.errors import EndpointError
from evalkit.prompts import Prompt, count_tokens
from evalkit.records import Outcome, RequestRecord
from evalkit.sanitize import clean
from evalkit.sse import SSEParser, SSETooLarge
from evalkit.stamping import SendStamp, arrival_ns, stamp_sends, stamped_transport

#: HTTP statuses that mean "not admitted now" rather than "broken"
ADMISSION_STATUSES = frozenset({429, 503})
#: headers that carry a credential; one given with --header replaces the environment's key
CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
#: send-lag samples a prober keeps (the newest): bounded, like every buffer of a long run
MAX_SENDS = 100_000
#: a read this long after the kernel received its bytes was late (the client's doing)
LATE_READ_NS = 1_000_000
#: the longest a Retry-After is honoured (a vendor must not park a probe for an hour)
MAX_RETRY_AFTER_S = 30.0
_ERR_MAX = 300
#: what a record keeps of an error response's body (after sanitising)
ERROR_BODY_MAX = 500


@dataclass(frozen=True)
class Target:
    """Where and how to probe. `secret` is the API key: it never leaves this object."""

    base_url: str
    model: str
    api: str = "openai-chat"
    headers: tuple[tuple[str, str], ...] = ()
    extra_body: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 60.0
    force_length: bool = True
    secret: str | None = field(default=None, repr=False)
    #: the longest one request may take, whatever it streams (None: derived per request
    #: from the output asked for, `request_deadline`)
    deadline_s: float | None = None
    #: how the key is sent, a key of `evalkit.api.AUTH_STYLES` (None: the API's own style)
    auth: str | None = None
    #: query parameters on every request (Azure OpenAI's api-version); not secrets
    params: tuple[tuple[str, str], ...] = ()

    def request_deadline(self, max_tokens: int) -> float:
        """A request's whole-time deadline: an endless trickle must end as a timeout.

        By default the read timeout (the first token may queue that long) plus half a
        second per requested token: a stream slower than 2 tokens/s is far below reading
        speed, so nothing a judgement needs is lost by cutting it there.
        """
        if self.deadline_s is not None:
            return self.deadline_s
        return self.timeout_s + 0.5 * max(max_tokens, 1)

    def redact(self, text: str) -> str:
        """Text with the API key (and any header value) blanked, in every form a vendor
        may echo it: as sent, upper or lower case, URL-encoded, base64 (also of the
        'user:key' pair Basic auth sends). For errors and logs."""
        for form in self._secret_forms():
            text = text.replace(form, "***")
        return text

    def _secret_forms(self) -> list[str]:
        values = [self.secret or "", *(v for _, v in self.headers)]
        values += [v.split(" ", 1)[1] for v in values if " " in v]  # 'Bearer KEY' → KEY
        forms: set[str] = set()
        for v in (v.strip() for v in values):
            if len(v) < 4:
                continue
            raw = v.encode()
            forms |= {v, v.upper(), v.lower(), quote(v, safe=""),
                      base64.b64encode(raw).decode().rstrip("="),
                      base64.urlsafe_b64encode(raw).decode().rstrip("="),
                      base64.b64encode(b":" + raw).decode().rstrip("=")}
        return sorted(forms, key=len, reverse=True)  # longest first: no partial leftovers

    @property
    def credential(self) -> str:
        """Where the credential comes from (never its value), for run.json."""
        named = [k for k, _ in self.headers if k.lower() in CREDENTIAL_HEADERS]
        if named:
            return f"header {named[0]}"
        return "environment" if self.secret else "none"

    def describe(self) -> dict[str, Any]:
        """What run.json may say about the target: header names, never their values."""
        return {"base_url": self.base_url, "model": self.model, "api": self.api,
                "header_names": [k for k, _ in self.headers],
                "extra_body": self.extra_body, "timeout_s": self.timeout_s,
                "force_length": self.force_length, "api_key_set": bool(self.secret),
                "credential": self.credential, "auth": self.auth_style,
                "params": dict(self.params)}

    @property
    def auth_style(self) -> str:
        """The auth style in force: --auth, else the API's own."""
        return self.auth or get_adapter(self.api).auth


def make_client(target: Target, max_connections: int | None = None,
                stamped: bool = True, ssl_context: ssl.SSLContext | None = None
                ) -> httpx.AsyncClient:
    """An httpx client for the target: no compression (bytes as sent).

    `stamped` (default) reads sockets through `evalkit.stamping`, which stamps each read
    with its arrival time (the kernel's, on plain TCP) rather than when the stream's task
    gets to run.
    """
    headers = {"accept-encoding": "identity", "user-agent": "evalkit"}
    headers.update(dict(get_adapter(target.api).headers))  # e.g. anthropic-version
    headers.update({k.lower(): v for k, v in target.headers})
    if target.secret and target.credential == "environment":
        # an explicit credential header wins: the environment's key never goes out beside it
        name, form = AUTH_STYLES[target.auth_style]
        headers[name] = form.format(key=target.secret)
    timeout = httpx.Timeout(target.timeout_s, pool=None)
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=None)
    verify: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
    transport = stamped_transport(limits, verify) if stamped else None
    return httpx.AsyncClient(base_url=target.base_url.rstrip("/"), headers=headers,
                             params=dict(target.params) or None,
                             timeout=timeout, limits=limits, verify=verify,
                             transport=transport)


class _Clients:
    """One single-connection client per concurrent stream, reused with keep-alive.

    httpcore's shared pool scans every connection on each request and release (O(n²)
    at n streams): at 256 streams it blocked the event loop for seconds (measured),
    which is exactly what a timing client must not do. Here each stream holds its own
    client, so nothing scales with the number of streams.
    """

    def __init__(self, target: Target, stamped: bool = True) -> None:
        self.target = target
        self.stamped = stamped
        # one TLS context for all (building one loads the CA bundle: ~50 ms each)
        self._ssl = httpx.create_ssl_context()
        self._free: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []

    def acquire(self) -> httpx.AsyncClient:
        if self._free:
            return self._free.pop()
        client = make_client(self.target, max_connections=1, stamped=self.stamped,
                             ssl_context=self._ssl)
        self._all.append(client)
        return client

    def release(self, client: httpx.AsyncClient) -> None:
        self._free.append(client)

    async def prepare(self, n: int) -> None:
        """Have n clients with an open connection before a level starts.

        A new connection costs a TCP (and TLS) handshake, a few round trips to a remote
        vendor; opened inside a level it would land in the TTFT of that level's first
        requests only, while the baseline ran on a warm connection. So open them first.
        """
        fresh = [make_client(self.target, max_connections=1, stamped=self.stamped,
                             ssl_context=self._ssl) for _ in range(n - len(self._all))]
        self._all += fresh
        self._free += fresh

        async def touch(client: httpx.AsyncClient) -> None:
            with contextlib.suppress(httpx.HTTPError):
                await client.get("/models")

        await asyncio.gather(*(touch(c) for c in fresh))

    async def aclose(self) -> None:
        for client in self._all:
            await client.aclose()
        self._all, self._free = [], []


class Prober:
    """Sends streaming requests for one run (or one shard of it) and times them."""

    def __init__(self, target: Target, origin_ns: int, run_tag: str, shard: int = 0,
                 stamped: bool = True) -> None:
        self.target = target
        self.clients = _Clients(target, stamped)
        self.adapter: Adapter = get_adapter(target.api)
        self.origin_ns = origin_ns
        self.run_tag = run_tag
        self.shard = shard
        self.force_length = target.force_length
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
        #: (the newest MAX_SENDS of them: a day-long soak must hold flat memory; `sends`
        #: counts them all, so a window's mark stays valid)
        self.send_lags: deque[float] = deque(maxlen=MAX_SENDS)
        self.send_spans: deque[float] = deque(maxlen=MAX_SENDS)
        self.sends = 0

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
                                       self.force_length)
        body.update(self.target.extra_body)
        if self._template is None:
            proto = client.build_request("POST", self.adapter.path, headers={
                "content-type": "application/json", "accept": "text/event-stream"})
            self._template = (proto.url, [(k, v) for k, v in proto.headers.raw if k.lower()
                                          not in (b"content-length", b"x-request-id")],
                              proto.extensions)
        url, head, extensions = self._template
        return httpx.Request("POST", url, headers=[*head, (b"x-request-id", rid.encode())],
                             content=json.dumps(body).encode(), extensions=dict(extensions))

    async def stream(self, prompt: Prompt, phase: str, level: int | None,
                     scheduled_ns: int | None = None,
                     facts: dict[str, Any] | None = None,
                     intended_ns: int | None = None,
                     after_send: Callable[[], None] | None = None) -> RequestRecord:
        """Send one streaming request and return its record (never raises for a failure).

        The request is *sent* when its first bytes are handed to the socket (stamped by
        `evalkit.stamping`'s writer, so neither httpx's locks nor other streams' work in
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
        """
        called_ns = time.perf_counter_ns()
        if scheduled_ns is not None:
            intended_ns = scheduled_ns
        rid, label = self._next_id()
        client = self.clients.acquire()
        try:
            return await self._stream(client, rid, label, prompt, phase, level, scheduled_ns,
                                      facts, called_ns if intended_ns is None else intended_ns,
                                      intended_ns is not None, after_send)
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
        k = min(self.sends - since, len(self.send_lags))
        lags = sorted(itertools.islice(self.send_lags, len(self.send_lags) - k, None))
        span = sum(itertools.islice(self.send_spans, len(self.send_spans) - k, None))
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
                      after_send: Callable[[], None] | None = None) -> RequestRecord:
        request = self._request(client, rid, prompt)  # built before t0: not part of any time
        st = _StreamState(end_event=self.adapter.end_event)
        deadline = self.target.request_deadline(prompt.max_tokens)
        wire = SendStamp(join=bool(request.content))  # head and body in one send
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
                    if st.status != 200:
                        await self._read_error(response, st)
                    else:
                        await self._read_stream(response, st)
                        # it ended when its last bytes arrived, not when this task got
                        # to them: a herd that ended together is late from that moment
                        st.last_arrival_ns = arrival_ns(response)
                finally:
                    await response.aclose()
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
            self.send_lags.append(own / 1e9)
            self.send_spans.append(max(st.end_ns - intended_ns - wire.connect_ns, own) / 1e9)
            self.sends += 1
        return self._record(rid, label, prompt, phase, level, t0, sent_ns, intended_ns,
                            wire, st)

    async def _read_error(self, response: httpx.Response, st: _StreamState) -> None:
        body = b""
        async for part in response.aiter_raw():
            body += part
            if len(body) > 4096:
                break
        st.error_body = clean(self.target.redact(body.decode("utf-8", errors="replace")),
                              ERROR_BODY_MAX)
        text = _error_message(body) or clean(response.reason_phrase, 80) or "(no body)"
        outcome: Outcome = "rejected" if st.status in ADMISSION_STATUSES else "error"
        if outcome == "rejected":
            st.retry_after_s = retry_after(response.headers.get("retry-after"))
        st.fail(outcome, f"HTTP {st.status}: {text}")

    async def _read_stream(self, response: httpx.Response, st: _StreamState) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            st.protocol_error = (f"the stream is {clean(encoding, 20)}-encoded although "
                                 "'accept-encoding: identity' was asked for; evalkit reads "
                                 "only plain event streams")
            return
        parser = SSEParser()
        parse = self.adapter.parse
        perf = time.perf_counter_ns
        net = response.extensions.get("network_stream")
        pending: int | None = None  # stamp of the last content chunk, until the next event
        async for raw in response.aiter_raw():
            # when the bytes arrived: the socket read's stamp, else now (before any parsing)
            now = getattr(net, "last_arrival_ns", None) or perf()
            try:
                events = parser.feed(raw)
            except SSETooLarge as exc:
                st.protocol_error = str(exc)
                return
            for event in events:
                try:
                    delta = parse(event.data)
                except ValueError as exc:
                    st.protocol_error = f"malformed event data: {str(exc)[:80]}"
                    continue
                if event.event == "error" and delta.error is None:
                    # an SSE error event is an error in every API, whatever its data holds
                    # (an adapter reads only the data, and {"message": ...} has no "error")
                    delta = Delta(error=clean(event.data, 300) or "an SSE error event")
                st.events += 1
                if delta.done:  # [DONE], or an API's end event (which may carry more)
                    st.done = True
                if delta.role_only and not st.chunk_ns:
                    st.role_first = True
                if delta.error is not None:
                    st.payload_error = delta.error
                    continue
                if delta.text or delta.reasoning:
                    tokens = count_tokens(delta.text) + count_tokens(delta.reasoning)
                    if not st.chunk_ns and not (delta.text.strip() or delta.reasoning.strip()):
                        # blank text before any word: nothing a reader sees yet. Timed as
                        # the first token, one space sent at once would read as the TTFT of
                        # a stream whose first word came seconds later (the wait then hides
                        # in TPOT). Its tokens ride on the first chunk that carries a word.
                        st.blank_tokens += tokens
                    else:
                        # two content chunks in one read, and we read it late after the
                        # kernel had it: the first carries the second's stamp. (Read
                        # promptly, the server wrote them together: llama.cpp does now and
                        # then; not ours.)
                        late = getattr(net, "last_read_delay_ns", None)
                        self.coalesced_chunks += pending == now and (
                            late is None or late > LATE_READ_NS)
                        pending = now
                        self.content_chunks += 1
                        st.chunk_ns.append(now)
                        st.chunk_tokens.append(tokens + st.blank_tokens)
                        st.blank_tokens = 0
                        if delta.text and st.first_answer_ns is None:
                            st.first_answer_ns = now
                if delta.finish_reason is not None:
                    st.finish_reason = delta.finish_reason
                    if delta.finish_reason not in NORMAL_FINISHES and st.abnormal is None:
                        st.abnormal = delta.finish_reason  # a later 'stop' undoes nothing
                if delta.usage_completion_tokens is not None:
                    st.usage_ct = delta.usage_completion_tokens
                if delta.usage_prompt_tokens is not None:
                    st.usage_pt = delta.usage_prompt_tokens
        st.cut_event = parser.pending
        st.comments = parser.comments
        st.crlf = parser.saw_cr

    def _record(self, rid: str, label: str, prompt: Prompt, phase: str, level: int | None,
                t0: int, sent_ns: int, intended_ns: int, wire: SendStamp, st: _StreamState
                ) -> RequestRecord:
        outcome, error = st.verdict()
        counted = sum(st.chunk_tokens) + st.blank_tokens if st.status == 200 else None
        output = st.usage_ct if st.usage_ct is not None else counted
        chunks = [((ns - t0) / 1e9, n) for ns, n in zip(st.chunk_ns, st.chunk_tokens, strict=True)]
        return RequestRecord(
            id=rid, phase=phase, level=level, outcome=outcome,
            t0_s=(t0 - self.origin_ns) / 1e9,
            prompt_tokens=st.usage_pt if st.usage_pt is not None else prompt.prompt_tokens,
            prompt_tokens_estimated=st.usage_pt is None,
            requested_output_tokens=prompt.max_tokens,
            output_tokens=output, output_tokens_estimated=st.usage_ct is None,
            counted_output_tokens=counted, usage_completion_tokens=st.usage_ct,
            ttft_s=chunks[0][0] if chunks else None,
            ttfa_s=(st.first_answer_ns - t0) / 1e9 if st.first_answer_ns is not None else None,
            e2e_s=chunks[-1][0] if chunks else None,
            chunks=chunks, http_status=st.status, finish_reason=st.finish_reason,
            error=clean(self.target.redact(error), _ERR_MAX) if error else None,
            error_body=st.error_body, retry_after_s=st.retry_after_s,
            send_lag_s=(sent_ns - intended_ns) / 1e9,
            sent_s=(sent_ns - t0) / 1e9 if wire.first_ns is not None else None,
            connect_s=wire.connect_ns / 1e9 if wire.connect_ns else None,
            end_s=(st.end_ns - t0) / 1e9 if st.end_ns else None,
            shard=self.shard, prompt_id=prompt.id, label=label)


@dataclass
class _StreamState:
    """Mutable facts gathered while one stream is read (private to the prober)."""

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
    #: the first finish reason that is not a normal end (`evalkit.api.NORMAL_FINISHES`)
    abnormal: str | None = None
    usage_ct: int | None = None
    usage_pt: int | None = None
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
    #: the API's required end event (`Adapter.end_event`; None: a finish_reason suffices)
    end_event: str | None = None

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


def retry_after(value: str | None) -> float | None:
    """A Retry-After header in seconds (delta form), bounded; None when absent or an HTTP
    date (a vendor's clock is not ours to trust)."""
    try:
        seconds = float((value or "").strip())
    except ValueError:
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S) if seconds == seconds else None


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _error_message(body: bytes) -> str:
    """The message of an error body (OpenAI's {"error": {"message"}} or FastAPI's
    {"detail"}), else the body itself: one clean line of at most 200 characters."""
    text = body.decode("utf-8", errors="replace")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        if text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
            text = re.sub(r"<(style|script|title)\b.*?</\1\s*>|<[^>]*>", " ", text,
                          flags=re.S | re.I)  # an HTML error page: its words only
        return clean(text, 200)
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj))
        if isinstance(err, dict):
            return clean(str(err.get("message") or err.get("type") or err), 200)
        return clean(str(err), 200)
    return clean(str(obj), 200)


# --------------------------------------------------------------------------- load shapes

OnRecord = Callable[[RequestRecord], None]
NextPrompt = Callable[[], Prompt]


async def closed_loop(prober: Prober, next_prompt: NextPrompt, on_record: OnRecord, *,
                      phase: str, level: int, workers: int, duration_s: float | None,
                      max_requests: int | None, reject_pause_s: float = 0.05,
                      stagger_s: float = 0.0005, max_pause_s: float = 2.0,
                      on_note: Callable[[str], None] | None = None,
                      min_requests: int = 0, overtime_s: float = 120.0,
                      settled: Callable[[], bool] | None = None,
                      stop: Callable[[], bool] | None = None) -> None:
    """`workers` streams in flight: each sends its next request when the last one ends.

    New requests start until `duration_s` has passed or `max_requests` were started
    (whichever first), and, with `min_requests`, until that many were started too (a
    percentile claimed at this level needs them), for at most `overtime_s` past
    `duration_s` and only while `settled()` (when given) says the level is not already
    decided without them; requests in flight then finish (the drain), so no record is cut
    short by the phase ending. No request starts once `stop()` (when given) says so. A
    worker turned away (429/503) waits what its Retry-After asked for (bounded), else
    `reject_pause_s`; one that failed before any content backs off, doubling from
    `reject_pause_s` up to `max_pause_s` while failures repeat: it still offers its load,
    without hammering a vendor in a loop (nor spinning the client's CPU on instant
    failures). The pauses are counted in `prober.paused_s`.
    A request that timed out without a single byte of content ("headers, then silence")
    ends the phase: every further request would cost the same timeout for nothing.
    Worker i starts i x `stagger_s` late (0.13 s for 256 workers): a herd of simultaneous
    first requests would stall the client's own loop for nothing.
    """
    begin = time.perf_counter()
    deadline = begin + duration_s if duration_s is not None else None
    hard = None if deadline is None else deadline + overtime_s
    started = 0
    silent = False

    def more() -> bool:
        if silent or (max_requests is not None and started >= max_requests) or (
                stop is not None and stop()):
            return False
        now = time.perf_counter()
        if deadline is None or now < deadline:
            return True
        return (started < min_requests and hard is not None and now < hard
                and not (settled is not None and settled()))

    async def worker(i: int) -> None:
        nonlocal started, silent
        if i and stagger_s > 0:
            await asyncio.sleep(i * stagger_s)
        pause = reject_pause_s
        kept: list[RequestRecord] = []  # ended, not yet handed to on_record
        due: int | None = None  # when the next request is meant to leave (None: now)

        def keep() -> None:
            while kept:
                on_record(kept.pop(0))

        try:
            while more():
                started += 1
                # the last record is kept once the next request is out: a herd of streams
                # that ended together must not wait for each other's bookkeeping to send
                rec = await prober.stream(next_prompt(), phase, level, intended_ns=due,
                                          after_send=keep if kept else None)
                kept.append(rec)
                due = prober.ended_ns(rec)
                if rec.outcome == "ok" or rec.chunks:
                    pause = reject_pause_s
                    continue
                keep()
                if rec.outcome == "timeout" and not silent:
                    silent = True
                    if on_note is not None:
                        on_note(f"{phase}{f' level {level}' if level > 1 else ''}: a request "
                                f"timed out without any content ({rec.error}); no more are "
                                "sent in this phase, each would cost the same wait")
                    break
                wait = rec.retry_after_s if rec.retry_after_s is not None else pause
                if wait > 0:
                    prober.paused_s += wait
                    await asyncio.sleep(wait)
                    due = None  # the pause was meant: the next request is due after it
                if rec.outcome != "rejected" or rec.retry_after_s is None:
                    pause = min(max(pause, 0.001) * 2, max_pause_s)
        finally:
            keep()

    await asyncio.gather(*(worker(i) for i in range(workers)))


async def open_loop(prober: Prober, next_prompt: NextPrompt, on_record: OnRecord, *,
                    phase: str, rate: float, duration_s: float, seed: int = 0,
                    max_in_flight: int = 10_000) -> None:
    """Poisson arrivals at `rate` req/s for `duration_s`; t0 is each *scheduled* time."""
    rng = random.Random(seed)
    start = time.perf_counter_ns()
    end = start + int(duration_s * 1e9)
    tasks: set[asyncio.Task[None]] = set()
    sem = asyncio.Semaphore(max_in_flight)
    t = start

    async def one(at: int) -> None:
        async with sem:
            on_record(await prober.stream(next_prompt(), phase, None, scheduled_ns=at))

    while True:
        t += int(rng.expovariate(rate) * 1e9)
        if t >= end:
            break
        delay = (t - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one(t))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)


# --------------------------------------------------------------------------- self-check

class LoopMonitor:
    """Measures event-loop lag (timer overshoot) and process CPU, per window of the run."""

    #: the samples kept (10 minutes at 5 ms): a day-long soak must hold flat memory, so a
    #: window longer than that is judged on its last 10 minutes of loop lag
    MAX_SAMPLES = 120_000

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        #: (when the sleep began, ns; how late it woke, s), the newest MAX_SAMPLES
        self._lags: deque[tuple[int, float]] = deque(maxlen=self.MAX_SAMPLES)
        self._seen = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopMonitor:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        interval_ns = int(self.interval_s * 1e9)
        while True:
            before = time.perf_counter_ns()
            await asyncio.sleep(self.interval_s)
            late = time.perf_counter_ns() - before - interval_ns
            self._lags.append((before, max(late, 0) / 1e9))
            self._seen += 1

    def start_window(self) -> tuple[int, int, float]:
        """Begin a window (a phase or a level); windows may nest or overlap."""
        return (self._seen, time.perf_counter_ns(), time.process_time())

    def end_window(self, mark: tuple[int, int, float]) -> dict[str, Any]:
        """Lag percentiles and CPU share (of one core) since `mark`."""
        seen0, wall0, cpu0 = mark
        wall = (time.perf_counter_ns() - wall0) / 1e9
        cpu = time.process_time() - cpu0
        # a sample belongs to the window its sleep began in: a block *before* the window
        # (e.g. judging the previous level) must not count against it
        recent = itertools.islice(self._lags, max(len(self._lags) - (self._seen - seen0) - 1, 0),
                                  None)
        lags = sorted(lag for began, lag in recent if began >= wall0)
        return {"loop_lag_p50_s": _pct(lags, 0.5), "loop_lag_p99_s": _pct(lags, 0.99),
                "loop_lag_max_s": lags[-1] if lags else None, "lag_samples": len(lags),
                "cpu_fraction": round(cpu / wall, 4) if wall > 0 else None,
                "wall_s": round(wall, 4)}


def _pct(sorted_values: Sequence[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(int(q * len(sorted_values)), len(sorted_values) - 1)]


# --------------------------------------------------------------------------- connect

async def check_endpoint(client: httpx.AsyncClient, target: Target,
                         api_key_env: str) -> dict[str, Any]:
    """List models: an unreachable endpoint, a 401 or an unknown model is an EndpointError."""
    try:
        response = await client.get("/models")
    except httpx.HTTPError as exc:
        raise EndpointError(f"cannot reach {target.base_url}: "
                            f"{target.redact(str(exc)) or type(exc).__name__}") from None
    if response.status_code in (401, 403):
        hint = (f"check the key in ${api_key_env}" if target.secret
                else f"${api_key_env} is not set")
        raise EndpointError(f"{target.base_url} answered HTTP {response.status_code} "
                            f"(unauthorised): {hint}")
    if response.status_code == 404:
        return {"models_listed": False, "models": []}
    if response.status_code != 200:
        raise EndpointError(f"{target.base_url}/models answered HTTP {response.status_code}: "
                            f"{target.redact(_error_message(response.content))}")
    try:
        data = response.json().get("data", [])
        models = [str(m.get("id")) for m in data[:1000] if isinstance(m, dict)]
    except (ValueError, AttributeError):
        models = []
    listed_all = get_adapter(target.api).lists_all_models and target.auth_style != "api-key"
    if isinstance(response_obj := _json_or_none(response), dict) and \
            response_obj.get("has_more") is True:
        listed_all = False  # one page of a paginated list (Anthropic's)
    if models and target.model not in models and not listed_all:
        # a partial list, aliases it omits, or Azure's deployment names: the stream decides
        return {"models_listed": True, "models": [clean(m, 200) for m in models[:50]],
                "model_not_listed": True}
    if models and target.model not in models:
        shown = ", ".join(clean(m, 80) for m in models[:10])
        raise EndpointError(f"model {target.model!r} is not served by {target.base_url}; "
                            f"it lists: {shown}")
    return {"models_listed": True, "models": [clean(m, 200) for m in models[:50]]}


#: the request body fields we send, which a 400's body may name
_BODY_FIELDS = ("model", "messages", "prompt", "max_tokens", "stream_options", "stream",
                "ignore_eos", "min_tokens")
_SENT_HEADERS = ("x-request-id", "authorization", "content-type", "accept", "user-agent",
                 "accept-encoding")


def explain_failure(rec: RequestRecord, target: Target, path: str, api_key_env: str) -> str:
    """Why the connect stream failed and what to try, from the record of that stream.

    The server's status and (bounded, sanitised) body come first; the advice follows
    from the status: a 404 points at the base URL, 401/403 at the key, a 400 at the
    body field or header it names, anything else at --extra-body / --header / --api.
    """
    url = target.base_url.rstrip("/") + path
    status = rec.http_status
    head = (f"the connect stream failed: POST {url} answered {rec.error}"
            f"{'' if rec.error_body else ' (empty body)'}" if status not in (None, 200)
            else f"the connect stream failed: {rec.error or rec.outcome}")
    return f"{target.redact(head)}\nwhat to try: {_advice(rec, target, url, api_key_env)}"


def _advice(rec: RequestRecord, target: Target, url: str, api_key_env: str) -> str:
    status, body = rec.http_status, (rec.error_body or "").lower()
    if status is None:
        return (f"check that the server is running and that --base-url {target.base_url} "
                "is right (scheme, host, port)")
    if status == 404 and "model" in body:
        return f"the endpoint does not serve model {target.model!r}: check --model"
    if status == 404:
        return (f"nothing is served at {url}: check --base-url (the URL that serves /models "
                "and /chat/completions, usually ending in /v1) and --api")
    if status in (401, 403):
        return (f"check the key in ${api_key_env}" if target.secret else
                f"${api_key_env} is not set: export the API key there (or name another "
                "variable with --api-key-env)")
    if status in (405, 501):
        return (f"{url} does not take POST: is this an OpenAI-compatible server? check "
                "--base-url and --api")
    if status == 400:
        return _advice_400(body, target)
    if status in ADMISSION_STATUSES:
        return "the endpoint is not admitting requests now (quota or load): try again later"
    if status == 200:
        return ("the server streamed, but not in the format --api expects: check --api "
                f"({target.api}) and the model's output")
    return ("the server failed on our request: check --extra-body and --header, or try "
            "again later")


def _advice_400(body: str, target: Target) -> str:
    """A 400 names what it rejects, sometimes: point at that field or header."""
    extra = [k for k in target.extra_body if k.lower() in body]
    if extra:
        return f"the server rejects {extra[0]!r} from --extra-body: leave it out or fix it"
    header = next((h for h, _ in target.headers if h.lower() in body), None) or next(
        (h for h in _SENT_HEADERS if h in body), None)
    if header:
        return (f"the server rejects the {header!r} header: check --header (evalkit sends "
                "X-Request-ID as a UUID)")
    field = next((f for f in _BODY_FIELDS if f in body), None)
    if field == "model":
        return f"the server rejects model {target.model!r}: check --model"
    if field:
        return (f"the server rejects the request field {field!r}: check --api "
                f"({target.api}); add or override fields with --extra-body")
    return ("the server rejected the request without saying which part: try without "
            "--extra-body and --header, check --api, or ask the vendor what it expects")


async def measure_rtt(client: httpx.AsyncClient, samples: int) -> list[float]:
    """Round trips of a tiny request (GET /models) on a warm connection, apart from generation."""
    out: list[float] = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        try:
            response = await client.get("/models")
            await response.aread()
        except httpx.HTTPError:
            continue
        out.append((time.perf_counter_ns() - t0) / 1e9)
    return out
