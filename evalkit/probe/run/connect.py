"""The connect gate: one request before any load, and advice that says what to fix
when the endpoint refuses it; the network round trip."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from evalkit.errors import EndpointError
from evalkit.probe.client.clients import PREPARE_MAX_BYTES, Target
from evalkit.probe.client.stream import ADMISSION_STATUSES
from evalkit.probe.wire.replies import bounded_get, error_message, json_or_none
from evalkit.records import RequestRecord
from evalkit.sanitize import clean

# --------------------------------------------------------------------------- connect

#: the environment's proxy variables, which httpx reads for a client without a transport
_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
               "all_proxy")


def _proxy_hint() -> str:
    """Why an endpoint only a proxy reaches is unreachable: a stream's client never uses
    the environment's proxy (it would sit inside every timed figure)."""
    named = next((v for v in _PROXY_VARS if os.environ.get(v)), None)
    return (f" ({named} is set, but evalkit connects straight to the endpoint and uses no "
            "proxy: a proxy would sit inside every timed figure; probe from a host that "
            "reaches the endpoint)") if named else ""


async def check_endpoint(client: httpx.AsyncClient, target: Target,
                         api_key_env: str) -> dict[str, Any]:
    """List models: an unreachable endpoint, a 401 or an unknown model is an EndpointError.
    An API with no model list on its endpoint (Bedrock's runtime) lists none: the connect
    stream decides."""
    if not getattr(target.adapter, "lists_models", True):
        return {"models_listed": False, "models": []}
    try:  # bounded: a trickled or endless list must not hold the run before it starts
        response = await bounded_get(client, "/models", target.timeout_s, PREPARE_MAX_BYTES)
    except httpx.HTTPError as exc:
        raise EndpointError(f"cannot reach {target.base_url}: "
                            f"{target.redact(str(exc)) or type(exc).__name__}"
                            f"{_proxy_hint()}") from None
    if response.status_code in (401, 403):
        hint = (f"check the {target.credential}" if target.request_auth is not None
                else f"check the key in ${api_key_env}" if target.secret
                else f"${api_key_env} is not set")
        raise EndpointError(f"{target.base_url} answered HTTP {response.status_code} "
                            f"(unauthorised): {hint}")
    if response.status_code == 404:
        return {"models_listed": False, "models": []}
    if response.status_code != 200:
        raise EndpointError(f"{target.base_url}/models answered HTTP {response.status_code}: "
                            f"{target.redact(error_message(response.content))}")
    try:
        data = response.json().get("data", [])
        models = [str(m.get("id")) for m in data[:1000] if isinstance(m, dict)]
    except (ValueError, AttributeError, RecursionError):
        models = []
    listed_all = target.adapter.lists_all_models and target.auth_style != "api-key"
    if isinstance(response_obj := json_or_none(response), dict) and \
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
    own = getattr(target.adapter, "advice", None)  # a cloud's own words for what to fix
    said = own(status, f"{body} {(rec.error or '').lower()}") if own is not None else None
    if said is not None:
        return str(said)
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


async def measure_rtt(client: httpx.AsyncClient, samples: int,
                      timeout_s: float) -> list[float]:
    """Round trips of a tiny request (GET /models) on a warm connection, apart from
    generation; each bounded in time and size like the connect gate's."""
    out: list[float] = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        try:
            await bounded_get(client, "/models", timeout_s, PREPARE_MAX_BYTES)
        except httpx.HTTPError:
            continue
        out.append((time.perf_counter_ns() - t0) / 1e9)
    return out
