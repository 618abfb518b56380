"""API adapters: the one seam between the prober and a vendor's wire format.

An adapter knows which path to POST to, how to build the request body for a prompt, what
one SSE event's data means (`Delta`), how the API authenticates (`auth`, one of
`AUTH_STYLES`, and any fixed `headers` it requires) and which event ends its stream
(`end_event`: None when a `finish_reason` is enough, as in OpenAI chat where `[DONE]` is
optional). The prober does everything else (timing, outcomes, records), so another API
is one adapter more: add a class with the same members and register it in `ADAPTERS`
(`evalkit probe --api` offers exactly its keys).

Every adapter maps its API onto the one set of definitions (docs/methodology.md): a
content chunk is an event that carries generated text, answer or reasoning (`text`,
`reasoning`); the server's own output-token count goes to `usage_completion_tokens`; an
error event inside a 200 stream is `error` (outcome error); the API's end is
`finish_reason` (and `done`, for an API whose end event is required): a stream cut before
it is incomplete.

Vendor payloads are untrusted: every field is read defensively and an unexpected shape
is a protocol error on that request, never a crash of the run.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol

from evalkit.errors import UsageError
from evalkit.probe.apis.chunkscan import chat_token
from evalkit.probe.apis.fields import (
    NAME_MAX,
    EngineTimings,
    as_count,
    as_dict,
    as_name,
    as_str,
    engine_timings,
)
from evalkit.probe.apis.logprobs import chat_logprobs, completion_logprobs
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling
from evalkit.records import MAX_COUNT


class Delta(NamedTuple):
    """What one SSE event carried, reduced to what the metrics need.

    A named tuple, not a frozen dataclass: one is made for every event, and a frozen
    dataclass sets each of its 12 fields through `object.__setattr__` (1.5 µs an event,
    against 0.47 here, measured with timeit): immutable either way."""

    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    usage_completion_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    #: the prompt tokens the vendor says its prefix cache served (chat's usage
    #: `prompt_tokens_details.cached_tokens`, the Responses API's `input_tokens_details`,
    #: Anthropic's `cache_read_input_tokens`)
    usage_cached_tokens: int | None = None
    error: str | None = None
    role_only: bool = False
    done: bool = False
    #: the response's `model` and `system_fingerprint` where the event names them: who
    #: answered, in the vendor's own words (a swap it reports shows here)
    model: str | None = None
    fingerprint: str | None = None
    #: the chosen tokens and their logprobs, where the request asked and the API gives them
    logprobs: tuple[tuple[str, float], ...] | None = None
    #: the engine's own account of the response (llama.cpp's `timings`, in its last chunk)
    timings: EngineTimings | None = None

    @property
    def is_content(self) -> bool:
        """True when the event carries generated text (answer or reasoning)."""
        return bool(self.text or self.reasoning)


DONE = Delta(done=True)

#: The finish reasons of a generation that ran to its end, in every API evalkit speaks:
#: a natural stop, the length asked for, a tool call, a stop sequence, a filter (OpenAI
#: chat and completions, vLLM, SGLang, TGI, llama.cpp, Anthropic, Responses). Anything
#: else (vLLM's and SGLang's `abort`, an `error`, a `cancelled`) is a stream the server
#: gave up on: counted ok it would be a failure that never reaches a failure rate, so an
#: overloaded server that cuts its streams under load would look as if it held the load.
#: A reason outside this list makes the request incomplete, naming the reason: fail
#: closed, and one line to add here if a vendor's normal end is missing.
NORMAL_FINISHES = frozenset({
    "stop", "length", "tool_calls", "function_call", "content_filter",  # OpenAI, vLLM
    "eos", "eos_token", "stop_sequence",                                  # TGI, others
    "end_turn", "max_tokens", "tool_use", "pause_turn", "refusal",        # Anthropic
    "completed", "max_output_tokens",                                     # Responses
})


#: how a credential is sent: the header and the form of its value (`make_client`)
AUTH_STYLES: dict[str, tuple[str, str]] = {
    "bearer": ("authorization", "Bearer {key}"),  # OpenAI and most compatible servers
    "api-key": ("api-key", "{key}"),              # Azure OpenAI (with an api-version query)
    "x-api-key": ("x-api-key", "{key}"),          # Anthropic
}


class Adapter(Protocol):
    """The interface an API adapter provides to the prober."""

    name: str
    path: str
    #: the auth style the API's own service uses (a key of AUTH_STYLES); --auth overrides it
    auth: str
    #: headers the API requires on every request (a user's --header with the name wins)
    headers: tuple[tuple[str, str], ...]
    #: the event that ends a whole stream, when the API has one that must arrive (None:
    #: a finish_reason is enough); a stream without it is incomplete
    end_event: str | None
    #: the API's model list is complete (every servable name is listed), so a model not in
    #: it is an error at connect; False: the connect stream decides
    lists_all_models: bool

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """The JSON body of a streaming request for `prompt`."""
        ...

    def parse(self, data: str) -> Delta:
        """Interpret one SSE event's data; raises ValueError on malformed JSON."""
        ...


def _usage(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = as_dict(obj.get("usage"))
    return as_count(usage.get("completion_tokens")), as_count(usage.get("prompt_tokens"))


def _cached(obj: dict[str, Any], prompt_tokens: int | None,
            details_key: str = "prompt_tokens_details") -> int | None:
    """OpenAI's usage `prompt_tokens_details.cached_tokens` (the Responses API's
    `input_tokens_details`), where a vendor reports it."""
    details = as_dict(as_dict(obj.get("usage")).get(details_key))
    return _served(as_count(details.get("cached_tokens")), prompt_tokens)


def _served(n: int | None, prompt_tokens: int | None) -> int | None:
    """A cached-token count, if it can be one: a count above the vendor's own prompt
    tokens is no count of them (None, never shown as served)."""
    return n if n is not None and prompt_tokens is not None and n <= prompt_tokens else None


def _error_text(obj: dict[str, Any]) -> str | None:
    err = obj.get("error")
    if err is None:
        return None
    if isinstance(err, dict):
        msg = err.get("message") or err.get("type") or json.dumps(err)[:200]
        return str(msg)[:500]
    return str(err)[:500]


def _load(data: str) -> dict[str, Any] | None:
    if data.strip() == "[DONE]":
        return None
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError(f"event data is a JSON {type(obj).__name__}, not an object")
    return obj


def _first_choice(obj: dict[str, Any]) -> dict[str, Any]:
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return {}


def _force(body: dict[str, Any], max_tokens: int, force_length: bool) -> dict[str, Any]:
    if force_length:
        # vendor extensions (vLLM, SGLang, TGI...) to make the output length exact;
        # the output-length check tells whether they were honoured.
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


class _OpenAIStyle:
    """What the OpenAI-style APIs share: Bearer auth, no required end event."""

    auth = "bearer"
    headers: tuple[tuple[str, str], ...] = ()
    end_event: str | None = None
    lists_all_models = True


class OpenAIChat(_OpenAIStyle):
    """OpenAI `/chat/completions` streaming, with reasoning fields of vLLM/DeepSeek/OpenRouter."""

    name = "openai-chat"
    path = "/chat/completions"

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """Chat body: one user message (or the user's own messages), usage requested."""
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens,
                                "stream": True, "stream_options": {"include_usage": True}}
        return _force(sampling.apply(body, "logprobs", True), max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read content, reasoning, finish reason, usage or an in-stream error."""
        hit = chat_token(data)  # the common token chunk, read in one match
        if hit is None:
            return self._parse_full(data)
        model, fingerprint, key, text = hit
        return Delta(text=text if key == "content" else "",
                     reasoning=text if key != "content" else "", model=model[:NAME_MAX],
                     fingerprint=fingerprint[:NAME_MAX] if fingerprint else None)

    def _parse_full(self, data: str) -> Delta:
        """`parse` for any event: json.loads, then every field read defensively."""
        obj = _load(data)
        if obj is None:
            return DONE
        err = _error_text(obj)
        if err is not None:
            return Delta(error=err)
        ct, pt = _usage(obj)
        choice = _first_choice(obj)
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        text = delta.get("content")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        text = text if isinstance(text, str) else ""
        reasoning = reasoning if isinstance(reasoning, str) else ""
        finish = choice.get("finish_reason")
        lp = choice.get("logprobs")
        return Delta(text=text, reasoning=reasoning,
                     finish_reason=finish if isinstance(finish, str) else None,
                     usage_completion_tokens=ct, usage_prompt_tokens=pt,
                     usage_cached_tokens=_cached(obj, pt),
                     role_only=bool(delta.get("role")) and not text and not reasoning,
                     model=as_name(obj.get("model")),
                     fingerprint=as_name(obj.get("system_fingerprint")),
                     logprobs=chat_logprobs(lp) if lp else None,
                     timings=engine_timings(obj.get("timings")))


class OpenAICompletions(_OpenAIStyle):
    """OpenAI legacy `/completions` streaming (plain prompt, `choices[0].text`)."""

    name = "openai-completions"
    path = "/completions"

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """Completions body: the prompt text (chat messages are joined), usage requested."""
        if isinstance(prompt, list):
            prompt = "\n".join(str(m.get("content", "")) for m in prompt)
        body: dict[str, Any] = {"model": model, "prompt": prompt, "max_tokens": max_tokens,
                                "stream": True, "stream_options": {"include_usage": True}}
        return _force(sampling.apply(body, "logprobs", 1), max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read text, finish reason, usage or an in-stream error."""
        obj = _load(data)
        if obj is None:
            return DONE
        err = _error_text(obj)
        if err is not None:
            return Delta(error=err)
        ct, pt = _usage(obj)
        choice = _first_choice(obj)
        text = choice.get("text")
        finish = choice.get("finish_reason")
        lp = choice.get("logprobs")
        return Delta(text=text if isinstance(text, str) else "",
                     finish_reason=finish if isinstance(finish, str) else None,
                     usage_completion_tokens=ct, usage_prompt_tokens=pt,
                     usage_cached_tokens=_cached(obj, pt),
                     model=as_name(obj.get("model")),
                     fingerprint=as_name(obj.get("system_fingerprint")),
                     logprobs=completion_logprobs(lp) if lp else None,
                     timings=engine_timings(obj.get("timings")))


class AnthropicMessages:
    """Anthropic Messages streaming (`POST /v1/messages`, `stream: true`).

    Follows "Streaming Messages", https://platform.claude.com/docs/en/build-with-claude/streaming
    (formerly docs.anthropic.com/en/docs/build-with-claude/streaming), as stored by our doc
    search on 2026-11-30, with API version 2023-06-01 (the `anthropic-version` header it
    requires). A stream is
    `message_start`, then per content block `content_block_start`, `content_block_delta`...,
    `content_block_stop`, then `message_delta` (top-level `stop_reason`; `usage` whose
    `output_tokens` is the cumulative count), then `message_stop`; `ping` events may come
    anywhere, and an `error` event (e.g. `overloaded_error`) may arrive mid-stream.

    Mapped onto evalkit's definitions:
      - content: `content_block_delta` with `text_delta` (answer) or `thinking_delta`
        (reasoning, so TTFA is the first text_delta); a `content_block_start` whose block
        already holds text counts too. `signature_delta`, `input_json_delta` (tool
        arguments), `ping`, `content_block_start/stop` carry no generated text: as a
        tool-call delta in OpenAI chat, they are not content.
      - `message_start` is the role chunk (`role_only`); its `usage.output_tokens` is a
        placeholder and is ignored; its input tokens (plus cache reads and writes) are the
        prompt tokens, and its `cache_read_input_tokens` those the prefix cache served.
      - `message_delta`: `stop_reason` → finish_reason, `usage.output_tokens` → usage.
      - `message_stop` → `done`, and it is the required end event: a stream cut after
        `message_delta` but before `message_stop` is incomplete.
      - `error` → error (outcome error).
    """

    name = "anthropic-messages"
    path = "/messages"
    auth = "x-api-key"
    headers: tuple[tuple[str, str], ...] = (("anthropic-version", "2023-06-01"),)
    end_event: str | None = "message_stop"
    # the list is paginated (20 a page) and aliases such as claude-sonnet-4-5 are not in it
    lists_all_models = False

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """Messages body: system messages go to the top-level `system` (no system role).
        The API has no seed and no logprobs: only the temperature is sent."""
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        system = "\n".join(str(m.get("content", "")) for m in messages
                           if m.get("role") == "system")
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True,
                                "messages": [m for m in messages if m.get("role") != "system"]}
        if system:
            body["system"] = system
        return _force(sampling.apply(body, None, None, seeded=False), max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read one event by its `type` (the `event:` line repeats it)."""
        obj = _load(data)
        if obj is None:  # `[DONE]` is not part of this API; a proxy may add it
            return Delta()
        kind = obj.get("type")
        if kind == "content_block_delta":
            delta = as_dict(obj.get("delta"))
            if delta.get("type") == "text_delta":
                return Delta(text=as_str(delta.get("text")))
            if delta.get("type") == "thinking_delta":
                return Delta(reasoning=as_str(delta.get("thinking")))
            return Delta()
        if kind == "content_block_start":
            block = as_dict(obj.get("content_block"))
            if block.get("type") == "text":
                return Delta(text=as_str(block.get("text")))
            if block.get("type") == "thinking":
                return Delta(reasoning=as_str(block.get("thinking")))
            return Delta()
        if kind == "message_start":
            message = as_dict(obj.get("message"))
            usage = as_dict(message.get("usage"))
            pt = _input_tokens(usage)
            return Delta(role_only=True, usage_prompt_tokens=pt,
                         usage_cached_tokens=_served(as_count(usage.get("cache_read_input_tokens")),
                                                     pt),
                         model=as_name(message.get("model")))
        if kind == "message_delta":
            usage = as_dict(obj.get("usage"))
            stop = as_dict(obj.get("delta")).get("stop_reason")
            pt = _input_tokens(usage)
            return Delta(finish_reason=stop if isinstance(stop, str) else None,
                         usage_completion_tokens=as_count(usage.get("output_tokens")),
                         usage_prompt_tokens=pt,
                         usage_cached_tokens=_served(as_count(usage.get("cache_read_input_tokens")),
                                                     pt))
        if kind == "message_stop":
            return DONE
        if kind == "error" or "error" in obj:
            return Delta(error=_error_text(obj) or "error event")
        return Delta()  # ping, content_block_stop, and types added after this was written


def _input_tokens(usage: dict[str, Any]) -> int | None:
    """Anthropic's prompt tokens: input plus those read from and written to its cache."""
    base = as_count(usage.get("input_tokens"))
    if base is None:
        return None
    total = base + sum(as_count(usage.get(k)) or 0 for k in ("cache_creation_input_tokens",
                                                          "cache_read_input_tokens"))
    return total if total <= MAX_COUNT else None


class OpenAIResponses:
    """OpenAI Responses streaming (`POST /v1/responses`, `stream: true`).

    Follows the guide "Streaming API responses",
    https://developers.openai.com/docs/guides/streaming-responses (read 2026-11-30), and the
    API reference it points to for the event list,
    https://platform.openai.com/docs/api-reference/responses-streaming (its event shapes
    checked against published SDK types and recorded streams, not read first-hand). Every
    event is typed (`type`, and a `sequence_number`); there is
    no `[DONE]`: a stream ends with `response.completed`, `response.incomplete` (e.g. the
    `max_output_tokens` budget spent) or `response.failed`, and an `error` event may
    arrive mid-stream.

    Mapped onto evalkit's definitions:
      - content: `response.output_text.delta` and `response.refusal.delta` (answer);
        `response.reasoning_text.delta` and `response.reasoning_summary_text.delta`
        (reasoning: generated text that comes before the answer, so TTFA waits for the
        first output text). Lifecycle events (`response.created`, `.in_progress`,
        `.output_item.*`, `.content_part.*`, `*.done`) and tool-argument deltas are not
        content.
      - `response.completed` and `response.incomplete` end the stream: `done`, with the
        response's `usage.output_tokens` (reasoning tokens included, as completion_tokens)
        and `input_tokens` (`input_tokens_details.cached_tokens`: served by the prefix
        cache), and finish_reason `completed` or the incomplete reason (such as
        `max_output_tokens`, OpenAI chat's `length`). A stream without either is incomplete.
      - `response.failed` and `error` → error (outcome error).
    """

    name = "openai-responses"
    path = "/responses"
    auth = "bearer"
    headers: tuple[tuple[str, str], ...] = ()
    end_event: str | None = "response.completed"
    lists_all_models = True

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool, sampling: Sampling = DEFAULT_SAMPLING
                   ) -> dict[str, Any]:
        """Responses body: `input` is the prompt text or the user's messages; not stored.
        No seed, and logprobs are not asked here (the API gives them only through an
        `include` option evalkit does not read yet)."""
        body: dict[str, Any] = {"model": model, "input": prompt, "max_output_tokens": max_tokens,
                                "stream": True, "store": False}
        return _force(sampling.apply(body, None, None, seeded=False), max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read one typed event."""
        obj = _load(data)
        if obj is None:
            return Delta()
        kind = obj.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return Delta(text=as_str(obj.get("delta")))
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            return Delta(reasoning=as_str(obj.get("delta")))
        if kind == "response.created":
            return Delta(model=as_name(as_dict(obj.get("response")).get("model")))
        if kind in ("response.completed", "response.incomplete"):
            response = as_dict(obj.get("response"))
            usage = as_dict(response.get("usage"))
            reason = (as_str(as_dict(response.get("incomplete_details")).get("reason"))
                      or as_str(response.get("status")) or kind.split(".")[1])
            pt = as_count(usage.get("input_tokens"))
            return Delta(done=True, finish_reason=reason,
                         usage_completion_tokens=as_count(usage.get("output_tokens")),
                         usage_prompt_tokens=pt,
                         usage_cached_tokens=_cached(response, pt, "input_tokens_details"))
        if kind == "response.failed":
            return Delta(error=_error_text(as_dict(obj.get("response"))) or "response.failed")
        if kind == "error":
            nested = _error_text(obj)
            return Delta(error=nested or str(obj.get("message") or obj.get("code")
                                             or "error event")[:500])
        return Delta()


#: the registry: every API by its `--api` name (a new API is one class and one line here)
ADAPTERS: dict[str, type[Adapter]] = {
    OpenAIChat.name: OpenAIChat,
    OpenAICompletions.name: OpenAICompletions,
    AnthropicMessages.name: AnthropicMessages,
    OpenAIResponses.name: OpenAIResponses,
}


def get_adapter(name: str) -> Adapter:
    """The adapter for an `--api` name; an unknown name is a usage error. Resolved once
    a run, into its `Target` (`evalkit.probe.client.clients.Target.adapter`)."""
    try:
        return ADAPTERS[name]()
    except KeyError:
        raise UsageError(f"unknown --api {name!r}; choose one of {', '.join(ADAPTERS)}") from None
