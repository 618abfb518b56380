"""API adapters: the one seam between the prober and a vendor's wire format.

An adapter knows three things: which path to POST to, how to build the request body for
a prompt, and what one SSE event's data means (`Delta`). The prober does everything else
(timing, outcomes, records), so another API (e.g. Anthropic Messages) is one adapter
more: add a class with the same three members and register it in `ADAPTERS`.

Vendor payloads are untrusted: every field is read defensively and an unexpected shape
is a protocol error on that request, never a crash of the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from evalkit.errors import UsageError


@dataclass(frozen=True, slots=True)
class Delta:
    """What one SSE event carried, reduced to what the metrics need."""

    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    usage_completion_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    error: str | None = None
    role_only: bool = False
    done: bool = False

    @property
    def is_content(self) -> bool:
        """True when the event carries generated text (answer or reasoning)."""
        return bool(self.text or self.reasoning)


DONE = Delta(done=True)


class Adapter(Protocol):
    """The interface an API adapter provides to the prober."""

    name: str
    path: str

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool) -> dict[str, Any]:
        """The JSON body of a streaming request for `prompt`."""
        ...

    def parse(self, data: str) -> Delta:
        """Interpret one SSE event's data; raises ValueError on malformed JSON."""
        ...


def _usage(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = obj.get("usage")
    if not isinstance(usage, dict):
        return None, None
    ct, pt = usage.get("completion_tokens"), usage.get("prompt_tokens")
    return (ct if isinstance(ct, int) else None, pt if isinstance(pt, int) else None)


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


class OpenAIChat:
    """OpenAI `/chat/completions` streaming, with reasoning fields of vLLM/DeepSeek/OpenRouter."""

    name = "openai-chat"
    path = "/chat/completions"

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool) -> dict[str, Any]:
        """Chat body: one user message (or the user's own messages), usage requested."""
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens,
                                "stream": True, "stream_options": {"include_usage": True}}
        return _force(body, max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read content, reasoning, finish reason, usage or an in-stream error."""
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
        return Delta(text=text, reasoning=reasoning,
                     finish_reason=finish if isinstance(finish, str) else None,
                     usage_completion_tokens=ct, usage_prompt_tokens=pt,
                     role_only=bool(delta.get("role")) and not text and not reasoning)


class OpenAICompletions:
    """OpenAI legacy `/completions` streaming (plain prompt, `choices[0].text`)."""

    name = "openai-completions"
    path = "/completions"

    def build_body(self, model: str, prompt: str | list[dict[str, Any]], max_tokens: int,
                   force_length: bool) -> dict[str, Any]:
        """Completions body: the prompt text (chat messages are joined), usage requested."""
        if isinstance(prompt, list):
            prompt = "\n".join(str(m.get("content", "")) for m in prompt)
        body: dict[str, Any] = {"model": model, "prompt": prompt, "max_tokens": max_tokens,
                                "stream": True, "stream_options": {"include_usage": True}}
        return _force(body, max_tokens, force_length)

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
        return Delta(text=text if isinstance(text, str) else "",
                     finish_reason=finish if isinstance(finish, str) else None,
                     usage_completion_tokens=ct, usage_prompt_tokens=pt)


ADAPTERS: dict[str, type[OpenAIChat] | type[OpenAICompletions]] = {
    OpenAIChat.name: OpenAIChat,
    OpenAICompletions.name: OpenAICompletions,
}


def get_adapter(name: str) -> Adapter:
    """The adapter for an `--api` name; an unknown name is a usage error."""
    try:
        return ADAPTERS[name]()
    except KeyError:
        raise UsageError(f"unknown --api {name!r}; choose one of {', '.join(ADAPTERS)}") from None
