"""OpenAI's legacy completions (`POST /v1/completions`, `stream: true`): a plain prompt
in, `choices[0].text` out; what it shares with chat is read by `openai_event`."""

from __future__ import annotations

from typing import Any

from evalkit.probe.apis.fields import ChoiceRead, Delta, OpenAIStyle, forced_length, openai_event
from evalkit.probe.apis.logprobs import completion_logprobs
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling


class OpenAICompletions(OpenAIStyle):
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
        return forced_length(sampling.apply(body, "logprobs", 1), max_tokens, force_length)

    def parse(self, data: str) -> Delta:
        """Read text, finish reason, usage or an in-stream error."""
        return openai_event(data, _read_choice)


def _read_choice(choice: dict[str, Any]) -> ChoiceRead:
    """A completions choice: its `text` and logprobs."""
    text = choice.get("text")
    lp = choice.get("logprobs")
    return ChoiceRead(text=text if isinstance(text, str) else "",
                      logprobs=completion_logprobs(lp) if lp else None)
