"""Where requests go and with what credentials, and the client pool that gives
each concurrent stream its own keep-alive connection."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from evalkit.errors import UsageError
from evalkit.probe.apis.base import AUTH_STYLES, Adapter, bound_adapter
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling
from evalkit.probe.client.cloudauth import CLOUD_AUTHS, GoogleADC, SigV4, cloud_auth
from evalkit.probe.wire import http11
from evalkit.probe.wire.framing import SENDABLE, TOKEN
from evalkit.probe.wire.reconnect import Resending, Reuse
from evalkit.probe.wire.stamping import stamp_sends
from evalkit.probe.wire.transport import StampedBackend, stamped_transport

#: the most of a /models answer read while opening a level's connections (`_Clients`)
PREPARE_MAX_BYTES = 1 << 20
#: headers that carry a credential; one given with --header replaces the environment's key
CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key"})


@dataclass(frozen=True)
class Target:
    """Where and how to probe. `secret` is the API key: it never leaves this object."""

    base_url: str
    model: str
    api: str = "openai-chat"
    headers: tuple[tuple[str, str], ...] = ()
    extra_body: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 60.0
    #: ask for the exact output length (`ignore_eos`, `min_tokens`): a vendor can see those
    #: fields and route the request apart, so only with --force-length
    force_length: bool = False
    #: the user-agent sent (None: the HTTP library's own, as much customer code sends)
    user_agent: str | None = None
    #: send each request's id as X-Request-ID (to match against the vendor's logs; it also
    #: tells the vendor which requests are ours)
    tag_requests: bool = False
    #: temperature, seed and logprobs, the same on every request
    #: (`evalkit.probe.apis.sampling.Sampling`)
    sampling: Sampling = DEFAULT_SAMPLING
    secret: str | None = field(default=None, repr=False)
    #: the longest one request may take, whatever it streams (None: derived per request
    #: from the output asked for, `request_deadline`)
    deadline_s: float | None = None
    #: how the key is sent, a key of `evalkit.probe.apis.base.AUTH_STYLES` (None: the API's
    #: own style)
    auth: str | None = None
    #: query parameters on every request (Azure OpenAI's api-version); not secrets
    params: tuple[tuple[str, str], ...] = ()
    #: the API's adapter, resolved from `api` once, here (an unknown name, or a model id
    #: the API cannot take, is a usage error as the target is made): every stream, client
    #: and check of the run uses this one
    adapter: Adapter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # first: where the credential comes from depends on the API (a cloud's own auth)
        object.__setattr__(self, "adapter", bound_adapter(self.api, self.model))
        # what would fail as the first request is sent (httpx encodes header values as
        # ASCII): a usage error now, naming where it came from and never showing a value
        for name, value in self.headers:
            if TOKEN.fullmatch(name.encode("utf-8", "replace")) is None:
                raise UsageError(header_name_error(name))
            if SENDABLE.fullmatch(value) is None:
                raise UsageError(f"header {name}: its value must be printable ASCII; it is "
                                 "not shown, as it may be a key")
        if (self.secret is not None and self.credential == "environment"
                and SENDABLE.fullmatch(self.secret) is None):  # a credential header wins
            raise UsageError("the API key must be printable ASCII (no control character, no "
                             "accented letter or smart quote pasted with it); it is not shown")
        if self.user_agent is not None and SENDABLE.fullmatch(self.user_agent) is None:
            raise UsageError("the user-agent must be printable ASCII")
        where = urlsplit(self.base_url)
        if where.query or where.fragment or "@" in where.netloc:
            # run.json keeps the base URL, and a query would land inside every request's
            # path (before /chat/completions): a key in it would be written and still fail
            raise UsageError(
                "--base-url must not carry a query (?...), a fragment (#...) or a user "
                "part (user:password@): give a key with --api-key-env or --header, Azure's "
                "api-version with --api-version; the URL is not shown, as it may hold a key")

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
        signer = self.__dict__.get("request_auth")  # a cloud's credentials, once resolved
        if signer is not None:
            values += signer.secret_forms()
        values += [v.split(" ", 1)[1] for v in values if " " in v]  # 'Bearer KEY' → KEY
        forms: set[str] = set()
        for v in (v.strip() for v in values):
            if len(v) < 4:
                continue
            # a stale key that is never sent may hold bytes that are not UTF-8 (the
            # environment's surrogates): its forms are made all the same, never a crash
            raw = v.encode("utf-8", "surrogatepass")
            forms |= {v, v.upper(), v.lower(), quote(v, safe="", errors="surrogatepass"),
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
        if self.auth_style == "sigv4":
            return "AWS credential chain"
        if self.auth_style == "google-adc":
            return "Google application default credentials"
        return "environment" if self.secret else "none"

    def describe(self) -> dict[str, Any]:
        """What run.json may say about the target: header names, never their values."""
        return {"base_url": self.base_url, "model": self.model, "api": self.api,
                "header_names": [k for k, _ in self.headers],
                "extra_body": self.extra_body, "timeout_s": self.timeout_s,
                "force_length": self.force_length, "user_agent": self.user_agent,
                "tag_requests": self.tag_requests,
                "sampling": {"temperature": self.sampling.temperature,
                             "seed": self.sampling.seed, "logprobs": self.sampling.logprobs},
                "api_key_set": bool(self.secret),
                "credential": self.credential, "auth": self.auth_style,
                "params": dict(self.params),
                **({"signing": signer.describe()}
                   if (signer := self.__dict__.get("request_auth")) is not None else {})}

    @property
    def auth_style(self) -> str:
        """The auth style in force: --auth, else the API's own (for its endpoint: the
        Gemini API takes a key, Vertex AI an OAuth token)."""
        if self.auth:
            return self.auth
        auth_for = getattr(self.adapter, "auth_for", None)
        return str(auth_for(self.base_url)) if auth_for is not None else self.adapter.auth

    @cached_property
    def request_auth(self) -> SigV4 | GoogleADC | None:
        """The signer every request goes through (`evalkit.probe.client.cloudauth`) for a
        cloud's own auth; None for a key sent in a header. Its credentials, resolved from
        the cloud's chain the first time this is read, stay in this process."""
        if self.auth_style not in CLOUD_AUTHS:
            return None
        return cloud_auth(self.auth_style, self.base_url)


def ready_target(target: Target) -> Target:
    """`target` checked before anything is sent: a cloud's missing credentials or region,
    or a model ARN of another region, are usage errors now. A cloud's own auth signs
    every request, so no API key from the environment rides along."""
    if target.auth_style not in CLOUD_AUTHS:
        return target
    target = replace(target, secret=None)
    signer = target.request_auth
    check = getattr(target.adapter, "check_region", None)
    if check is not None and isinstance(signer, SigV4):
        check(signer.region)
    return target


def header_name_error(name: str) -> str:
    """Why `name` cannot be a header's name, showing none of it: a key pasted into a
    name ('Authorization Bearer sk-…: x') must not reach a terminal either."""
    bad = next((i for i, ch in enumerate(name) if TOKEN.fullmatch(ch.encode("utf-8",
                                                                            "replace")) is None), 0)
    return (f"a header name of {len(name)} characters has a character a name cannot hold "
            f"at position {bad + 1} (a name is letters, digits and !#$%&'*+-.^_`|~ only; "
            "it is not shown, as it may hold a key)")


def make_client(target: Target, max_connections: int | None = None,
                stamped: bool = True, ssl_context: ssl.SSLContext | None = None,
                reuse: Reuse | None = None) -> httpx.AsyncClient:
    """An httpx client for the target: no compression (bytes as sent).

    `stamped` (default) reads sockets through `evalkit.probe.wire.stamping`, which stamps each read
    with its arrival time (the kernel's, on plain TCP) rather than when the stream's task
    gets to run. A client of one connection (a stream's own, `_Clients`) frames HTTP/1.1
    itself (`evalkit.probe.wire.http11`), without httpcore's pool and h11, and sends a request
    the server's close left unanswered once more (`evalkit.probe.wire.reconnect`; `reuse`: the
    run's knowledge of the server's closes, shared by its stream clients).
    """
    headers = {"accept-encoding": "identity"}
    if target.user_agent:
        headers["user-agent"] = target.user_agent  # else httpx's own, python-httpx/x.y
    headers.update(dict(target.adapter.headers))  # e.g. anthropic-version
    headers.update({k.lower(): v for k, v in target.headers})
    if target.secret and target.credential == "environment" and \
            target.auth_style in AUTH_STYLES:
        # an explicit credential header wins: the environment's key never goes out beside it
        name, form = AUTH_STYLES[target.auth_style]
        headers[name] = form.format(key=target.secret)
    timeout = httpx.Timeout(target.timeout_s, pool=None)
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=None)
    verify: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
    transport: httpx.AsyncBaseTransport | None = None
    if stamped and max_connections == 1 and http11.LEAN:  # a stream's own connection
        transport = http11.LeanTransport(StampedBackend(),
                                         verify if isinstance(verify, ssl.SSLContext)
                                         else httpx.create_ssl_context(verify=verify),
                                         limits.keepalive_expiry, reuse)
    elif stamped:
        transport = stamped_transport(limits, verify)
        if max_connections == 1 and transport is not None:
            transport = Resending(transport, reuse if reuse is not None else Reuse())
    client = httpx.AsyncClient(base_url=target.base_url.rstrip("/"), headers=headers,
                               auth=target.request_auth, params=dict(target.params) or None,
                               timeout=timeout, limits=limits, verify=verify,
                               transport=transport)
    if isinstance(getattr(client, "_cookies", None), httpx.Cookies):
        client._cookies = _NoCookies()
    return client


class _NoCookies(httpx.Cookies):
    """A jar that keeps no vendor cookie: probe requests are built from a template
    (`Prober._request`) that never carries the client's cookies, so whatever a vendor
    sets could never go back to it. Keeping it anyway cost ~10-16 µs of every response
    (httpx builds urllib request and response stand-ins for `http.cookiejar`, in the
    moment a herd of streams ends together)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        """Nothing is kept (see the class)."""


@dataclass(frozen=True)
class Warmup:
    """What opening a level's connections before it cost, one entry per connection
    opened (s): TCP's connect and TLS's handshake together, and the handshake alone (0 on
    plain HTTP). Paid here, so in no request's TTFT; what a customer's first request on
    a new connection would wait on top of it."""

    connect_s: tuple[float, ...] = ()
    tls_s: tuple[float, ...] = ()


class _Clients:
    """One single-connection client per concurrent stream, reused with keep-alive.

    httpcore's shared pool scans every connection on each request and release (O(n²)
    at n streams): at 256 streams it blocked the event loop for seconds (measured),
    which is exactly what a timing client must not do. Here each stream holds its own
    client, so nothing scales with the number of streams.
    """

    def __init__(self, target: Target, stamped: bool = True, reuse: Reuse | None = None
                 ) -> None:
        self.target = target
        self.stamped = stamped
        #: what the run knows of the server's closes (`evalkit.probe.wire.reconnect`)
        self.reuse = reuse if reuse is not None else Reuse()
        # one TLS context for all (building one loads the CA bundle: ~50 ms each)
        self._ssl = httpx.create_ssl_context()
        self._free: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []

    def acquire(self) -> httpx.AsyncClient:
        if self._free:
            return self._free.pop()
        client = make_client(self.target, max_connections=1, stamped=self.stamped,
                             ssl_context=self._ssl, reuse=self.reuse)
        self._all.append(client)
        return client

    def release(self, client: httpx.AsyncClient) -> None:
        self._free.append(client)

    async def prepare(self, n: int) -> Warmup:
        """Have n clients with an open connection before a level starts; what opening
        them cost (`Warmup`).

        A new connection costs a TCP (and TLS) handshake, a few round trips to a remote
        vendor; opened inside a level it would land in the TTFT of that level's first
        requests only, while the baseline ran on a warm connection. So open them first.

        Each opens with a `GET /models`, not a bare connect: only an answer shows the
        server has taken the connection (a plain-TCP handshake completes in the kernel
        before the server accepts, so a slow accept would land in the first TTFTs,
        unseen), and a server that drops fresh idle connections drops them here, not
        under the level's first requests. A vendor sees a level begin either way, as a
        burst of new connections.

        Not once the server was seen closing after its streams (`reuse.fresh`): each
        request opens its own connection then, and a warmed one would go unused.
        """
        fresh = [make_client(self.target, max_connections=1, stamped=self.stamped,
                             ssl_context=self._ssl, reuse=self.reuse)
                 for _ in range(n - len(self._all))]
        self._all += fresh
        self._free += fresh
        if self.reuse.fresh:
            return Warmup()  # each request opens its own: its record says what it cost

        async def touch(client: httpx.AsyncClient) -> tuple[int, int]:
            # bounded like any vendor answer: a trickled or endless body costs at most
            # the timeout and PREPARE_MAX_BYTES, and the connection is then not kept
            with contextlib.suppress(httpx.HTTPError, TimeoutError), stamp_sends() as wire:
                async with asyncio.timeout(self.target.timeout_s), \
                        client.stream("GET", "/models") as response:
                    read = 0
                    async for part in response.aiter_raw():
                        read += len(part)
                        if read > PREPARE_MAX_BYTES:
                            break
            return wire.connect_ns, wire.tls_ns

        opened = [c for c in await asyncio.gather(*(touch(c) for c in fresh)) if c[0]]
        return Warmup(tuple(c / 1e9 for c, _ in opened), tuple(t / 1e9 for _, t in opened))

    async def aclose(self) -> None:
        for client in self._all:
            await client.aclose()
        self._all, self._free = [], []
