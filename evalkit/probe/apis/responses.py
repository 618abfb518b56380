"""OpenAI Responses streaming: see `OpenAIResponses`."""

from __future__ import annotations

from typing import Any

from evalkit.probe.apis.fields import (
    Delta,
    as_count,
    as_dict,
    as_name,
    as_str,
    cached_tokens,
    error_text,
    forced_length,
    load_event,
)
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling


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
        return forced_length(sampling.apply(body, None, None, seeded=False), max_tokens,
                             force_length)

    def parse(self, data: str) -> Delta:
        """Read one typed event."""
        obj = load_event(data)
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
                         usage_cached_tokens=cached_tokens(response, pt, "input_tokens_details"))
        if kind == "response.failed":
            return Delta(error=error_text(as_dict(obj.get("response"))) or "response.failed")
        if kind == "error":
            nested = error_text(obj)
            return Delta(error=nested or str(obj.get("message") or obj.get("code")
                                             or "error event")[:500])
        return Delta()
