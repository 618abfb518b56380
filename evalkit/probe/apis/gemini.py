"""Google's Gemini API and Vertex AI: `streamGenerateContent?alt=sse` (`--api gemini`).

Follows the Gemini API reference, "models.streamGenerateContent" and "GenerateContentResponse"
(ai.google.dev/api/generate-content), and Vertex AI's "Method: models.streamGenerateContent"
(cloud.google.com/vertex-ai/generative-ai/docs/reference/rest), as stored by our doc
search on 2026-12-05. One path for a model, the model in it:
`{base}/models/{model}:streamGenerateContent?alt=sse`, where the base is
`https://generativelanguage.googleapis.com/v1beta` (the Gemini API, an API key in the
`x-goog-api-key` header) or
`https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}/publishers/google`
(Vertex AI, an OAuth token from application default credentials:
`evalkit.probe.client.cloudauth`).
With `alt=sse` the answer is SSE: every event's data one `GenerateContentResponse`.

Mapped onto evalkit's definitions:
  - content: the text of `candidates[0].content.parts`; a part with `thought: true` is
    reasoning (a thought summary, sent only when the request asks
    `thinkingConfig.includeThoughts`), so TTFA waits for the first part that is not.
  - `candidates[0].finishReason`: `STOP` and `MAX_TOKENS` are normal ends; `SAFETY`,
    `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII` and the like are a safety
    block: the request is `incomplete`, naming the reason. There is no end event.
  - `promptFeedback.blockReason` (the prompt itself was blocked, no candidate): an error
    that names the reason.
  - `usageMetadata`: `candidatesTokenCount` plus `thoughtsTokenCount` → completion tokens
    (the thinking is generated and billed as output; OpenAI's completion_tokens hold
    reasoning too), `promptTokenCount` → prompt tokens (it includes the cached ones),
    `cachedContentTokenCount` → cached tokens. Every event may carry it; the last wins.
  - `modelVersion` → the model that answered.
  - `{"error": {...}}` in the stream: an error; `RESOURCE_EXHAUSTED` (429) a rejection,
    its `google.rpc.RetryInfo` `retryDelay` the retry hint (so too for an error answer).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

from evalkit.probe.apis.fields import (
    Delta,
    as_count,
    as_dict,
    as_name,
    as_str,
    forced_length,
    served,
    system_and_turns,
)
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling
from evalkit.records import MAX_COUNT
from evalkit.sanitize import clean

#: Google's word for "not now" (HTTP 429)
THROTTLED = "RESOURCE_EXHAUSTED"
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def is_vertex(base_url: str) -> bool:
    """A Vertex AI endpoint (its host, or a project/location path, as a private endpoint
    keeps): OAuth, not an API key."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    return host.endswith("aiplatform.googleapis.com") or (
        "/projects/" in parts.path and "/locations/" in parts.path)


def _error(obj: dict[str, Any]) -> tuple[str, bool, float | None]:
    """(text, a throttle?, retry hint) of a Google error object `{"error": {...}}`."""
    err = as_dict(obj.get("error"))
    status = as_str(err.get("status"))
    message = as_str(err.get("message")) or status or json.dumps(err)[:200]
    throttled = status == THROTTLED or err.get("code") == 429
    return (f"{clean(status, 40)}: {clean(message, 300)}" if status else clean(message, 300),
            throttled, retry_delay(err))


def retry_delay(err: dict[str, Any]) -> float | None:
    """The `retryDelay` of a `google.rpc.RetryInfo` among an error's details ("7s"), in
    seconds (the client bounds it)."""
    details = err.get("details")
    for item in details if isinstance(details, list) else []:
        delay = as_str(as_dict(item).get("retryDelay"))
        found = _DELAY.match(delay)
        if found:
            return float(found.group(1))
    return None


class Gemini:
    """`streamGenerateContent?alt=sse`, the Gemini API's and Vertex AI's alike."""

    name = "gemini"
    path = ""
    auth = "x-goog-api-key"
    #: where the Gemini API's key is read from unless --api-key-env says (Google's SDKs'
    #: name); never OPENAI_API_KEY, so no other vendor's key goes to Google by default
    key_env = "GEMINI_API_KEY"
    headers: tuple[tuple[str, str], ...] = ()
    end_event: str | None = None
    #: the list is paginated, its names are `models/…`: the connect stream decides
    lists_all_models = False
    model = ""

    def bind(self, model: str) -> Gemini:
        """This adapter for one model (`gemini-2.5-flash`, or `models/gemini-2.5-flash`)."""
        bound = Gemini()
        bound.model = model
        name = model.removeprefix("models/")
        bound.path = f"/models/{quote(name, safe='')}:streamGenerateContent?alt=sse"
        return bound

    @staticmethod
    def auth_for(base_url: str) -> str:
        """Vertex AI takes OAuth (application default credentials); the Gemini API a key."""
        return "google-adc" if is_vertex(base_url) else "x-goog-api-key"

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """`contents` (an assistant's turn is the `model` role), the system prompt as
        `systemInstruction`, the output limit, temperature, seed and logprobs in
        `generationConfig` (the API takes all three)."""
        system, turns = system_and_turns(prompt)
        config: dict[str, Any] = {"maxOutputTokens": max_tokens}
        if sampling.temperature is not None:
            config["temperature"] = sampling.temperature
        if sampling.seed is not None:
            config["seed"] = sampling.seed
        if sampling.logprobs:
            config["responseLogprobs"] = True
        body: dict[str, Any] = {
            "contents": [{"role": "model" if role == "assistant" else "user",
                          "parts": [{"text": text}]} for role, text in turns],
            "generationConfig": config}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        return forced_length(body, max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read one `GenerateContentResponse` (or an error object)."""
        obj = json.loads(data)
        if not isinstance(obj, dict):
            raise ValueError(f"event data is a JSON {type(obj).__name__}, not an object")
        if "error" in obj:
            text, throttled, delay = _error(obj)
            return Delta(error=text, throttled=throttled, retry_after_s=delay)
        candidates = obj.get("candidates")
        first = as_dict(candidates[0]) if isinstance(candidates, list) and candidates else {}
        parts = as_dict(first.get("content")).get("parts")
        answer: list[str] = []
        thought: list[str] = []
        for item in parts if isinstance(parts, list) else []:
            part = as_dict(item)
            (thought if part.get("thought") is True else answer).append(as_str(part.get("text")))
        finish = first.get("finishReason")
        usage = as_dict(obj.get("usageMetadata"))
        prompt = as_count(usage.get("promptTokenCount"))
        cached = as_count(usage.get("cachedContentTokenCount"))
        blocked = as_str(as_dict(obj.get("promptFeedback")).get("blockReason"))
        return Delta(
            text="".join(answer), reasoning="".join(thought),
            finish_reason=finish if isinstance(finish, str) else None,
            usage_completion_tokens=_output_tokens(usage), usage_prompt_tokens=prompt,
            usage_cached_tokens=served(cached, prompt),
            error=(f"the vendor's safety filter blocked the prompt (blockReason "
                   f"{clean(blocked, 40)})") if blocked else None,
            model=as_name(obj.get("modelVersion")), logprobs=_logprobs(first))

    @staticmethod
    def error_reply(status: int, header: Callable[[str], str | None], body: bytes
                    ) -> tuple[str | None, bool, float | None]:
        """(what the error answer says, None: the body's message; whether it is a
        throttle; its retry hint in seconds, None: the Retry-After header's)."""
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            text, throttled, delay = _error(obj)
            return text, throttled or status in (429, 503), delay
        return None, status in (429, 503), None

    def advice(self, status: int | None, body: str) -> str | None:
        """What to fix when the connect stream fails, in Google's terms."""
        if status in (400, 401, 403) and ("api key" in body or "api_key" in body):
            return ("the Gemini API refused the key, or got none: export it in "
                    "GEMINI_API_KEY (or in the variable --api-key-env names)")
        if status in (401, 403):
            return ("Vertex AI refused the credentials: run `gcloud auth application-default "
                    "login` (or set GOOGLE_APPLICATION_CREDENTIALS to a service account's key "
                    "file), and grant it roles/aiplatform.user on the project in --base-url")
        if status == 404:
            return (f"no model {self.model!r} here: check --model (e.g. gemini-2.5-flash) "
                    "and, for Vertex AI, the project and region in --base-url")
        return None


def _output_tokens(usage: dict[str, Any]) -> int | None:
    """Generated tokens: the answer's and the thinking's (both billed as output)."""
    answer = as_count(usage.get("candidatesTokenCount"))
    if answer is None:
        return None
    total = answer + (as_count(usage.get("thoughtsTokenCount")) or 0)
    return total if total <= MAX_COUNT else None


def _logprobs(candidate: dict[str, Any]) -> tuple[tuple[str, float], ...] | None:
    """`logprobsResult.chosenCandidates`: the chosen tokens and their logprobs."""
    chosen = as_dict(candidate.get("logprobsResult")).get("chosenCandidates")
    if not isinstance(chosen, list) or not chosen:
        return None
    out = []
    for c in chosen:
        c = as_dict(c)
        value = c.get("logProbability")
        if isinstance(value, int | float) and not isinstance(value, bool) and \
                math.isfinite(value):
            out.append((as_str(c.get("token")), float(value)))
    return tuple(out) or None
