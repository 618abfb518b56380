"""AWS Bedrock's `ConverseStream` (`--api bedrock-converse`): one request and event shape
for every model Bedrock serves.

Follows the Bedrock Runtime API reference, "ConverseStream"
(docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html), as
stored by our doc search on 2026-12-05. A request is `POST /model/{modelId}/converse-stream`
on `bedrock-runtime.{region}.amazonaws.com`, the model id percent-encoded in the path (an
inference profile's or an ARN's `:` and `/` too), signed with SigV4 for the service
`bedrock` (`evalkit.probe.client.cloudauth`). The answer is
`application/vnd.amazon.eventstream`: binary messages (`evalkit.probe.wire.eventstream`),
each an event whose `:event-type` names it and whose JSON payload carries it (the service
pads payloads with a `p` field; ignored).

Mapped onto evalkit's definitions:
  - content: `contentBlockDelta` whose `delta` has `text` (answer) or
    `reasoningContent.text` (reasoning: TTFA waits for the first text). A tool call's
    `toolUse` input, `contentBlockStart/Stop` and a reasoning `signature` are not content.
  - `messageStart` is the role chunk; `messageStop.stopReason` the finish reason
    (`end_turn`, `max_tokens`, `stop_sequence`, `tool_use` are normal ends; a
    `guardrail_intervened` or `content_filtered` is a safety block: not a normal end, so
    the request is `incomplete`, naming it).
  - `metadata` ends the stream (its required end event): `usage.outputTokens` →
    completion tokens, `inputTokens` plus `cacheReadInputTokens` and
    `cacheWriteInputTokens` → prompt tokens (as Anthropic counts them), cache reads →
    cached tokens.
  - an exception message mid-stream (`:message-type` exception): `throttlingException`
    and `serviceUnavailableException` are a rejection (the HTTP 429 and 503 of a stream
    already begun); `modelStreamErrorException`, `internalServerException`,
    `validationException`, `modelTimeoutException` are errors.

An error answer (not 200) names its kind in the `x-amzn-ErrorType` header and says why in
`{"message": ...}`; a 429 `ThrottlingException` is a rejection, its hint the
`x-amz-retry-after` header (milliseconds, what botocore's retries honour) or a
`Retry-After`.

`InvokeModelWithResponseStream` (the model family's own body) is not spoken yet: Converse
serves every model Bedrock has, and its figures are the ones compared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from evalkit.errors import UsageError
from evalkit.probe.apis.fields import Delta, as_count, as_dict, as_str, served, system_and_turns
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling
from evalkit.records import MAX_COUNT
from evalkit.sanitize import clean

#: exceptions that say "not now": a rejection, as an HTTP 429 or 503 is
THROTTLES = frozenset({"throttlingException", "serviceUnavailableException",
                       "ThrottlingException", "ServiceUnavailableException",
                       "ModelNotReadyException"})
#: how the event-stream framing names a message that is no event (`evalkit.probe.wire.
#: eventstream`): `exception:<type>` (a modelled error) and `error:<code>`
EXCEPTION, ERROR = "exception:", "error:"
#: an ARN's region: arn:aws:bedrock:REGION:ACCOUNT:...
_ARN = re.compile(r"^arn:aws[a-z-]*:bedrock:([a-z0-9-]*):")
#: what a Bedrock model id may look like: a provider-dot-name id, an inference profile
#: (`us.`, `global.` before it) or an ARN; white space, or a slash outside an ARN, was
#: pasted wrong
_MODEL_ID = re.compile(r"^(arn:aws[a-z-]*:bedrock:\S+|[A-Za-z0-9][A-Za-z0-9._:-]*)$")


def check_model_id(model: str, region: str | None) -> None:
    """A usage error for a model id Bedrock cannot take, or an ARN of another region
    than the one signed for, said with what to fix: before anything is sent."""
    if _MODEL_ID.fullmatch(model) is None:
        raise UsageError(f"--model {clean(model, 80)!r} is no Bedrock model id: give a model "
                         "id (anthropic.claude-3-5-haiku-20241022-v1:0), an inference profile "
                         "(us.anthropic.claude-3-5-haiku-20241022-v1:0) or an ARN")
    arn = _ARN.match(model)
    if arn and arn.group(1) and region and arn.group(1) != region:
        raise UsageError(f"the model ARN names region {arn.group(1)} but requests are signed "
                         f"for {region}: use the endpoint of {arn.group(1)} "
                         f"(--base-url https://bedrock-runtime.{arn.group(1)}.amazonaws.com) "
                         "or that region's ARN")


def _payload(data: str) -> dict[str, Any]:
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError(f"event payload is a JSON {type(obj).__name__}, not an object")
    return obj


def _exception(kind: str, data: str) -> Delta:
    """An exception or error message mid-stream: a rejection when it says "not now"."""
    name = kind.split(":", 1)[1]
    try:
        text = as_str(_payload(data).get("message")) or data
    except (ValueError, RecursionError):
        text = data
    return Delta(error=f"{clean(name, 60) or 'exception'}: {clean(text, 300)}",
                 throttled=name in THROTTLES)


def _prompt_tokens(usage: dict[str, Any]) -> int | None:
    base = as_count(usage.get("inputTokens"))
    if base is None:
        return None
    total = base + sum(as_count(usage.get(k)) or 0 for k in ("cacheReadInputTokens",
                                                          "cacheWriteInputTokens"))
    return total if total <= MAX_COUNT else None


class BedrockConverse:
    """`ConverseStream`, bound to one model (`bind`): its path names the model."""

    name = "bedrock-converse"
    auth = "sigv4"
    headers: tuple[tuple[str, str], ...] = (("accept", "application/vnd.amazon.eventstream"),)
    end_event: str | None = "metadata"
    lists_all_models = False
    #: the runtime endpoint lists no models (that is the control plane's, another host
    #: and permission): the connect stream decides
    lists_models = False
    #: the body's framing: AWS event-stream messages, not SSE
    framing = "eventstream"
    path = ""
    model = ""

    def bind(self, model: str) -> BedrockConverse:
        """This adapter for one model: the path carries its id, percent-encoded (an id
        Bedrock cannot take is a usage error)."""
        check_model_id(model, None)
        bound = BedrockConverse()
        bound.model = model
        bound.path = f"/model/{quote(model, safe='')}/converse-stream"
        return bound

    def check_region(self, region: str) -> None:
        """A model ARN of another region than the one signed for is a usage error."""
        check_model_id(self.model, region)

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """Converse body: messages of text blocks, the system prompt apart, the output
        limit and temperature in `inferenceConfig`. No seed, no logprobs in this API; the
        length-forcing fields go to the model as `additionalModelRequestFields`."""
        system, turns = system_and_turns(prompt)
        inference: dict[str, Any] = {"maxTokens": max_tokens}
        if sampling.temperature is not None:
            inference["temperature"] = sampling.temperature
        body: dict[str, Any] = {
            "messages": [{"role": role, "content": [{"text": text}]} for role, text in turns],
            "inferenceConfig": inference}
        if system:
            body["system"] = [{"text": system}]
        if force_length:
            body["additionalModelRequestFields"] = {"ignore_eos": True, "min_tokens": max_tokens}
        return body

    def parse(self, data: str) -> Delta:
        """Events need their type (`parse_event`); a bare payload says nothing."""
        return Delta()

    def parse_event(self, kind: str, data: str) -> Delta:
        """Read one event by its type (`:event-type`, or `exception:`/`error:` and its
        type); ValueError for a payload that is no JSON object."""
        if kind == "contentBlockDelta":
            delta = as_dict(_payload(data).get("delta"))
            if "text" in delta:
                return Delta(text=as_str(delta.get("text")))
            return Delta(reasoning=as_str(as_dict(delta.get("reasoningContent")).get("text")))
        if kind == "messageStart":
            return Delta(role_only=True)
        if kind == "messageStop":
            stop = _payload(data).get("stopReason")
            return Delta(finish_reason=stop if isinstance(stop, str) else None)
        if kind == "metadata":
            usage = as_dict(_payload(data).get("usage"))
            prompt = _prompt_tokens(usage)
            return Delta(done=True, usage_completion_tokens=as_count(usage.get("outputTokens")),
                         usage_prompt_tokens=prompt,
                         usage_cached_tokens=served(as_count(usage.get("cacheReadInputTokens")),
                                                    prompt))
        if kind.startswith((EXCEPTION, ERROR)):
            return _exception(kind, data)
        return Delta()  # contentBlockStart/Stop, and types added after this was written

    @staticmethod
    def error_reply(status: int, header: Callable[[str], str | None], body: bytes
                    ) -> tuple[str | None, bool, float | None]:
        """(what the error answer says, None: the body's message; whether it is a
        throttle; its retry hint in seconds, None: the Retry-After header's)."""
        kind = clean((header("x-amzn-errortype") or "").split(":", 1)[0], 60)
        try:
            obj = json.loads(body)
            said = clean(as_str(as_dict(obj).get("message") or as_dict(obj).get("Message")),
                         200)
        except (ValueError, RecursionError):
            said = ""
        text = f"{kind}: {said}" if kind and said else (kind or None)
        hint = header("x-amz-retry-after")
        try:
            seconds = int(hint) / 1000 if hint is not None else None
        except ValueError:
            seconds = None
        return text, kind in THROTTLES or status in (429, 503), seconds

    def advice(self, status: int | None, body: str) -> str | None:
        """What to fix when the connect stream fails, in Bedrock's terms (None: the
        general advice holds)."""
        if status in (401, 403):
            if "unrecognizedclient" in body or "security token" in body:
                return ("AWS does not know these credentials: check the AWS credential chain "
                        "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, "
                        "AWS_PROFILE, the instance role) and that a session token is fresh")
            if "signature" in body or "credential should be scoped" in body:
                return ("the request's signature was refused: check the secret key the AWS "
                        "chain gives for its access key id (AWS_SECRET_ACCESS_KEY or the "
                        "profile's), that the region of --base-url (bedrock-runtime.REGION."
                        "amazonaws.com) or AWS_REGION is the model's, and the machine's clock "
                        "(SigV4 allows 5 minutes)")
            return (f"access to {self.model!r} was denied: enable the model in the Bedrock "
                    "console for this region (Model access) and allow bedrock:"
                    "InvokeModelWithResponseStream to these credentials")
        if status in (400, 404) and ("model" in body or "identifier" in body):
            return (f"Bedrock does not serve {self.model!r} here: check --model (a model id, "
                    "an inference profile such as us.anthropic.… where on-demand use needs "
                    "one, or an ARN) and that the region of --base-url offers it")
        return None
