"""The clouds' own APIs on the reference endpoint: AWS Bedrock (`ConverseStream`) and
Google's Gemini API and
Vertex AI (`streamGenerateContent?alt=sse`): their routes, their request bodies read into
a `Job`, their credentials checked, and their error answers. The frames are
`evalkit.reference.cloudwire`'s.

Routes (the model in the path, percent-decoded by the server):
  POST /model/{modelId}/converse-stream               Bedrock Converse
  POST /v1beta/models/{model}:streamGenerateContent    the Gemini API (`x-goog-api-key`)
  POST /v1/projects/{p}/locations/{l}/publishers/google/models/{model}:streamGenerateContent
                                                       Vertex AI (`Authorization: Bearer`)
  GET  /v1beta/models                                  the Gemini API's model list
The model is `evalkit-reference`, or for Bedrock also `BEDROCK_MODEL`, an id shaped as
Bedrock's are (the `:` is encoded in the path, and twice in the signature's canonical URI).

Bedrock requests must be signed with SigV4 for service `bedrock` in region `AWS_REGION`
with AWS's documented example credentials (`EXAMPLE_ACCESS_KEY`, `EXAMPLE_SECRET_KEY`):
the signature is verified here, by a hand-written SigV4 (the prober signs with botocore,
so a difference between what was signed and what was sent shows as a 403
InvalidSignatureException, as it would at AWS). A Gemini API request needs a key (any),
a Vertex one a bearer token (any).
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import json
import re
import time
from typing import Any
from urllib.parse import parse_qsl, quote

from evalkit.reference.asgi import Scope, Send, header, query_param, send_error
from evalkit.reference.parse import MODEL, BadRequest, Job, _int_field, _part, _sampling

#: the region the reference endpoint plays
AWS_REGION = "us-east-1"
#: AWS's example credentials (its SigV4 documentation uses them): the only ones accepted
EXAMPLE_ACCESS_KEY = "AKIDEXAMPLE"
EXAMPLE_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#: the reference model under a Bedrock-shaped id
BEDROCK_MODEL = "evalkit.reference-v1:0"
#: the APIs of this module (`Job.api`)
CLOUD_APIS = ("converse", "gemini", "vertex")
#: how far a signature's time may be from the server's (SigV4's own bound)
SKEW_S = 300

_BEDROCK = re.compile(r"^/model/([^/]+)/converse-stream$")
_GEMINI = re.compile(r"^/v1beta/models/([^/:]+):streamGenerateContent$")
_VERTEX = re.compile(r"^/v1/projects/[^/]+/locations/[^/]+/publishers/google/models/"
                     r"([^/:]+):streamGenerateContent$")
_SIGNATURE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/,]+)/(\d{8})/([^/,]+)/([^/,]+)/"
                        r"aws4_request, ?SignedHeaders=([a-z0-9;.-]+), ?Signature=([0-9a-f]{64})$")
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                  503: "UNAVAILABLE"}
_AWS_KIND = {400: "ValidationException", 403: "AccessDeniedException",
             404: "ResourceNotFoundException", 429: "ThrottlingException",
             500: "InternalServerException", 503: "ServiceUnavailableException"}


def cloud_route(path: str) -> tuple[str, str] | None:
    """(api, model) of a cloud route, or None."""
    if (found := _BEDROCK.match(path)) is not None:
        return "converse", found.group(1)
    if (found := _GEMINI.match(path)) is not None:
        return "gemini", found.group(1)
    if (found := _VERTEX.match(path)) is not None:
        return "vertex", found.group(1)
    return None


def check_model(api: str, model: str) -> None:
    """A model this endpoint does not serve, in the API's words."""
    if model == MODEL or (api == "converse" and model == BEDROCK_MODEL):
        return
    if api == "converse":
        raise BadRequest(400, "The provided model identifier is invalid.",
                         kind="ValidationException")
    raise BadRequest(404, f"models/{model} is not found for API version v1beta, or is not "
                     "supported for generateContent.")


def check_credentials(api: str, scope: Scope, body: bytes) -> None:
    """The request's credentials, as the cloud checks them (a BadRequest if refused)."""
    if api == "converse":
        verify_sigv4(scope, body)
    elif api == "gemini" and not (header(scope, b"x-goog-api-key") or query_param(scope, "key")):
        raise BadRequest(403, "Method doesn't allow unregistered callers (callers without "
                         "established identity). Please use API Key or other form of API "
                         "consumer identity to call this API.")
    elif api == "vertex" and not (header(scope, b"authorization") or "").startswith("Bearer "):
        raise BadRequest(401, "Request is missing required authentication credential. "
                         "Expected OAuth 2 access token.")


def verify_sigv4(scope: Scope, body: bytes, now: float | None = None) -> None:
    """Check a SigV4 signature as AWS does (written from AWS's documentation, apart from
    the botocore the prober signs with)."""
    auth = header(scope, b"authorization")
    if not auth:
        raise BadRequest(403, "Missing Authentication Token",
                         kind="MissingAuthenticationTokenException")
    found = _SIGNATURE.match(auth)
    if found is None:
        raise BadRequest(403, "Authorization header requires 'Credential', 'SignedHeaders' and "
                         "'Signature' parameters.", kind="IncompleteSignatureException")
    key, day, region, service, signed, signature = found.groups()
    if key != EXAMPLE_ACCESS_KEY:
        raise BadRequest(403, "The security token included in the request is invalid.",
                         kind="UnrecognizedClientException")
    if service != "bedrock":
        raise BadRequest(403, "Credential should be scoped to correct service: 'bedrock'.",
                         kind="InvalidSignatureException")
    if region != AWS_REGION:
        raise BadRequest(403, f"Credential should be scoped to a valid region, not "
                         f"'{region[:40]}'.", kind="InvalidSignatureException")
    stamp = header(scope, b"x-amz-date") or ""
    try:
        signed_at = calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise BadRequest(403, "X-Amz-Date is missing or malformed",
                         kind="IncompleteSignatureException") from None
    if abs((time.time() if now is None else now) - signed_at) > SKEW_S or not stamp.startswith(day):
        raise BadRequest(403, "Signature expired: the request's X-Amz-Date is more than 5 "
                         "minutes from the server's time", kind="InvalidSignatureException")
    names = signed.split(";")
    if "host" not in names:
        raise BadRequest(403, "'Host' must be a signed header", kind="InvalidSignatureException")
    received: dict[str, list[str]] = {}
    for raw_name, raw_value in scope.get("headers", []):
        received.setdefault(raw_name.decode("latin-1").lower(), []).append(
            " ".join(raw_value.decode("latin-1").split()))
    canonical_headers = "".join(f"{n}:{','.join(received.get(n, []))}\n" for n in names)
    raw_path = scope.get("raw_path") or scope["path"].encode()
    pairs = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in parse_qsl(
        scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
    canonical = "\n".join([scope["method"], quote(raw_path.decode("latin-1"), safe="/~"),
                           "&".join(f"{k}={v}" for k, v in pairs), canonical_headers, signed,
                           hashlib.sha256(body).hexdigest()])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, f"{day}/{region}/{service}/aws4_request",
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + EXAMPLE_SECRET_KEY).encode()
    for part in (day, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest(),
                               signature):
        raise BadRequest(403, "The request signature we calculated does not match the "
                         "signature you provided.", kind="InvalidSignatureException")


def error_reply(api: str, err: BadRequest, retry_after_s: int | None = None
                ) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """An error answer in the cloud's shape: Bedrock's `{"message"}` with its kind in
    `x-amzn-ErrorType` (a throttle's hint in `x-amz-retry-after`, milliseconds); Google's
    `{"error": {code, message, status}}` (a throttle's hint a RetryInfo `retryDelay`)."""
    if api == "converse":
        kind = err.kind if err.kind.endswith("Exception") else _AWS_KIND.get(
            err.status, "InternalServerException")
        headers = [(b"x-amzn-errortype",
                    f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/".encode())]
        if retry_after_s is not None:
            headers.append((b"x-amz-retry-after", str(retry_after_s * 1000).encode()))
        return json.dumps({"message": str(err)}).encode(), headers
    error: dict[str, Any] = {"code": err.status, "message": str(err),
                             "status": _GOOGLE_STATUS.get(err.status, "UNKNOWN")}
    if retry_after_s is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                             "retryDelay": f"{retry_after_s}s"}]
    return json.dumps({"error": error}).encode(), []


def error_sender(api: str) -> Any:
    """`send_error` for an API: the cloud's error shapes for a cloud API (a 429's
    `retry-after` turned into the cloud's own hint)."""
    if api not in CLOUD_APIS:
        return send_error

    async def send_cloud_error(send: Send, err: BadRequest,
                               headers: list[tuple[bytes, bytes]] | None = None) -> None:
        hint = next((int(v) for k, v in headers or [] if k == b"retry-after"), None)
        body, extra = error_reply(api, err, hint)
        await send({"type": "http.response.start", "status": err.status, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return send_cloud_error


def models_list() -> dict[str, Any]:
    """The Gemini API's `GET /v1beta/models` (one page)."""
    return {"models": [{"name": f"models/{MODEL}", "displayName": "evalkit reference",
                        "supportedGenerationMethods": ["generateContent",
                                                       "streamGenerateContent"]}]}


def _texts(blocks: Any, key: str = "text") -> str:
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        return ""
    return "".join(b.get(key, "") for b in blocks if isinstance(b, dict)
                   and isinstance(b.get(key, ""), str))


def parse_cloud_job(body: Any, api: str, default_max_tokens: int) -> Job:
    """Validate a cloud API's body into a Job (a BadRequest names what is wrong). These
    APIs stream (the route is the streaming operation) and always report usage."""
    if not isinstance(body, dict):
        raise BadRequest(400, "the request body must be a JSON object")
    extra: dict[str, Any] = {}
    if api == "converse":
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in messages):
            raise BadRequest(400, "messages: a non-empty list of {role: user|assistant, "
                             "content: [{text}]} is required")
        parts = [_part("system", _texts(body.get("system")))] if body.get("system") else []
        parts += [_part(m["role"], _texts(m.get("content"))) for m in messages]
        config = body.get("inferenceConfig") or {}
        if not isinstance(config, dict):
            raise BadRequest(400, "inferenceConfig must be an object")
        max_tokens = _int_field(config, "maxTokens", default_max_tokens)
        _sampling({"temperature": config.get("temperature")}, api)
        extra = body.get("additionalModelRequestFields") or {}
    else:
        unknown = sorted(set(body) - {"contents", "systemInstruction", "generationConfig",
                                      "safetySettings", "tools", "toolConfig", "cachedContent"})
        if unknown:
            raise BadRequest(400, f'Invalid JSON payload received. Unknown name "{unknown[0]}":'
                             " Cannot find field.")
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents or not all(
                isinstance(c, dict) for c in contents):
            raise BadRequest(400, "contents is not specified")
        system = body.get("systemInstruction")
        parts = ([_part("system", _texts(system.get("parts")))]
                 if isinstance(system, dict) else [])
        parts += [_part("assistant" if c.get("role") == "model" else "user",
                        _texts(c.get("parts"))) for c in contents]
        config = body.get("generationConfig") or {}
        if not isinstance(config, dict):
            raise BadRequest(400, "generationConfig must be an object")
        max_tokens = _int_field(config, "maxOutputTokens", default_max_tokens)
        _sampling({"temperature": config.get("temperature"), "seed": config.get("seed")},
                  "chat")
    assert max_tokens is not None
    if max_tokens < 1:
        raise BadRequest(400, "the output token limit must be at least 1")
    extra = extra if isinstance(extra, dict) else {}
    min_tokens = _int_field(extra, "min_tokens", 0) or 0
    if min_tokens > max_tokens:
        raise BadRequest(400, f"min_tokens ({min_tokens}) exceeds the output limit "
                         f"({max_tokens})")
    return Job(True, True, sum(p.tokens for p in parts), max_tokens, min_tokens,
               bool(extra.get("ignore_eos")), True, api, parts=tuple(parts))
