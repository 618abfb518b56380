"""OpenAI chat completions (`POST /v1/chat/completions`, `stream: true`): the API most
vendors and engines serve, its common token chunk read by one regex match
(`evalkit.probe.apis.chunkscan`) and any other event by the full parse."""

from __future__ import annotations

from typing import Any

from evalkit.probe.apis.chunkscan import chat_token
from evalkit.probe.apis.fields import (
    NAME_MAX,
    ChoiceRead,
    Delta,
    OpenAIStyle,
    forced_length,
    openai_event,
)
from evalkit.probe.apis.logprobs import chat_logprobs
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling


class OpenAIChat(OpenAIStyle):
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
        return forced_length(sampling.apply(body, "logprobs", True), max_tokens, force_length)

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
        return openai_event(data, _read_delta)


def _read_delta(choice: dict[str, Any]) -> ChoiceRead:
    """A chat choice's `delta`: the answer, the reasoning (vLLM's and DeepSeek's
    `reasoning_content`, OpenRouter's `reasoning`), a role-only chunk, the logprobs."""
    delta = choice.get("delta")
    delta = delta if isinstance(delta, dict) else {}
    text = delta.get("content")
    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
    text = text if isinstance(text, str) else ""
    reasoning = reasoning if isinstance(reasoning, str) else ""
    lp = choice.get("logprobs")
    return ChoiceRead(text, reasoning, bool(delta.get("role")) and not text and not reasoning,
                      chat_logprobs(lp) if lp else None)
