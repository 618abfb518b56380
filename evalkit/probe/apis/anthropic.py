"""Anthropic Messages streaming: see `AnthropicMessages`."""

from __future__ import annotations

from typing import Any

from evalkit.probe.apis.fields import (
    DONE,
    Delta,
    as_count,
    as_dict,
    as_name,
    as_str,
    error_text,
    forced_length,
    load_event,
    served,
)
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling
from evalkit.records import MAX_COUNT


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
    #: its own variable, as Anthropic's SDK reads it: a buyer's OPENAI_API_KEY is never
    #: sent to Anthropic by default
    key_env = "ANTHROPIC_API_KEY"
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
        return forced_length(sampling.apply(body, None, None, seeded=False), max_tokens,
                             force_length)

    def parse(self, data: str) -> Delta:
        """Read one event by its `type` (the `event:` line repeats it)."""
        obj = load_event(data)
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
                         usage_cached_tokens=served(as_count(usage.get("cache_read_input_tokens")),
                                                     pt),
                         model=as_name(message.get("model")))
        if kind == "message_delta":
            usage = as_dict(obj.get("usage"))
            stop = as_dict(obj.get("delta")).get("stop_reason")
            pt = _input_tokens(usage)
            return Delta(finish_reason=stop if isinstance(stop, str) else None,
                         usage_completion_tokens=as_count(usage.get("output_tokens")),
                         usage_prompt_tokens=pt,
                         usage_cached_tokens=served(as_count(usage.get("cache_read_input_tokens")),
                                                     pt))
        if kind == "message_stop":
            return DONE
        if kind == "error" or "error" in obj:
            return Delta(error=error_text(obj) or "error event")
        return Delta()  # ping, content_block_stop, and types added after this was written


def _input_tokens(usage: dict[str, Any]) -> int | None:
    """Anthropic's prompt tokens: input plus those read from and written to its cache."""
    base = as_count(usage.get("input_tokens"))
    if base is None:
        return None
    total = base + sum(as_count(usage.get(k)) or 0 for k in ("cache_creation_input_tokens",
                                                          "cache_read_input_tokens"))
    return total if total <= MAX_COUNT else None
