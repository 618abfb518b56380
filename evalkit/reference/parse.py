"""What a request asks the reference endpoint for: its body validated into a `Job`, its
prompt counted, or a `BadRequest` in the OpenAI error shape (never a stack trace).

Prompt tokens are counted with o200k_base (`bpe_openai`, offline): for chat, the sum over
messages of each content's tokens (no chat-template overhead); for completions, the
prompt's tokens; for Anthropic Messages and OpenAI Responses, the messages' (or input's)
tokens plus the system prompt's (or instructions'). The prompt's parts, in the order a
model reads them (system or instructions first), are kept on the `Job` with their roles
and counts: the truth log's message digests and the prefix cache (`evalkit.reference.
prefix`) read them, so both agree with `prompt_tokens` by construction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from evalkit.tokenizer import Encoding

MODEL = "evalkit-reference"
#: POST routes: path → API (chat and completions are OpenAI's; messages is Anthropic's)
ROUTES = {"/v1/chat/completions": "chat", "/v1/completions": "completions",
          "/v1/messages": "messages", "/v1/responses": "responses"}


@lru_cache(maxsize=1)
def encoding() -> Encoding:
    """o200k_base, built once (~0.1 s): the app builds it at startup, so that the first
    request's TTFT does not pay for it."""
    from evalkit.tokenizer import encoding as o200k

    return o200k()


def count_tokens(text: str) -> int:
    """o200k_base tokens of `text`, the server's own (documented) prompt count."""
    return len(encoding().encode_ordinary(text)) if text else 0


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class Part(NamedTuple):
    """One message of a prompt as the server read it: its role (a completions prompt's is
    "prompt"), its text, and that text's o200k_base tokens."""

    role: str
    text: str
    tokens: int


def _part(role: Any, content: Any) -> Part:
    text = _content_text(content)
    # a role is the client's to name; a long or odd one is cut, never trusted as a key
    return Part(role[:32] if isinstance(role, str) else type(role).__name__, text,
                count_tokens(text))


class BadRequest(Exception):
    """A request we answer with an OpenAI-shaped error (never a stack trace)."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.param = status, kind, param

    def body(self) -> bytes:
        """The OpenAI error shape."""
        return json.dumps({"error": {"message": str(self), "type": self.kind,
                                     "param": self.param, "code": self.status}}).encode()


@dataclass(frozen=True)
class Job:
    """A validated generation request."""

    chat: bool
    stream: bool
    prompt_tokens: int
    max_tokens: int
    min_tokens: int
    ignore_eos: bool
    include_usage: bool
    #: chat | completions | messages | responses (`ROUTES`)
    api: str = "chat"
    #: the chunks carry each token's logprob (chat `logprobs: true`, completions
    #: `logprobs: N`); sampling fields are accepted and, at the reference's temperature
    #: 0, change nothing else
    logprobs: bool = False
    #: the prompt's messages in reading order; their tokens sum to `prompt_tokens`
    parts: tuple[Part, ...] = ()


def _number(body: dict[str, Any], name: str, high: float) -> None:
    value = body.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not 0 <= value <= high):
        raise BadRequest(400, f"'{name}' must be a number from 0 to {high:g}, got {value!r}",
                         param=name)


def _sampling(body: dict[str, Any], api: str) -> bool:
    """Check `temperature`, `top_p`, `seed`, `logprobs` and `top_logprobs` as the APIs type
    them; True when the request asks for logprobs."""
    _number(body, "temperature", 2.0)
    _number(body, "top_p", 1.0)
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest(400, f"'seed' must be an integer, got {seed!r}", param="seed")
    if api != "chat":  # completions: logprobs is how many alternatives (0 asks for none)
        return api == "completions" and _int_field(body, "logprobs", None) is not None
    asked = body.get("logprobs")
    if asked is not None and not isinstance(asked, bool):
        raise BadRequest(400, f"'logprobs' must be a boolean, got {asked!r}", param="logprobs")
    top = _int_field(body, "top_logprobs", None)
    if top is not None and top > 20:
        raise BadRequest(400, f"'top_logprobs' must be at most 20, got {top}",
                         param="top_logprobs")
    return bool(asked)


def _int_field(body: dict[str, Any], name: str, default: int | None) -> int | None:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(400, f"'{name}' must be a non-negative integer, got {value!r}",
                         param=name)
    return value


def parse_job(body: Any, api: str, default_max_tokens: int) -> Job:
    """Validate a request body of `api`; a BadRequest says what is wrong with it."""
    if not isinstance(body, dict):
        raise BadRequest(400, "the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != MODEL:
        raise BadRequest(404, f"The model `{model}` does not exist; this server has `{MODEL}`",
                         kind="NotFoundError", param="model")
    if api in ("messages", "responses"):
        return _parse_new_api(body, api, default_max_tokens)
    chat = api == "chat"
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and "role" in m for m in messages):
            raise BadRequest(400, "'messages' must be a non-empty list of {role, content}",
                             param="messages")
        parts = [_part(m["role"], m.get("content")) for m in messages]
    else:
        raw = body.get("prompt")
        if isinstance(raw, str):
            parts = [_part("prompt", raw)]
        elif isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
            parts = [_part("prompt", p) for p in raw]
        else:
            raise BadRequest(400, "'prompt' must be a string or a list of strings",
                             param="prompt")
    max_tokens = _int_field(body, "max_completion_tokens", None)
    if max_tokens is None:
        max_tokens = _int_field(body, "max_tokens", default_max_tokens)
    assert max_tokens is not None
    if max_tokens < 1:
        raise BadRequest(400, "'max_tokens' must be at least 1", param="max_tokens")
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    if min_tokens > max_tokens:
        raise BadRequest(400, f"'min_tokens' ({min_tokens}) exceeds 'max_tokens' ({max_tokens})",
                         param="min_tokens")
    if body.get("n", 1) != 1:
        raise BadRequest(400, "only n=1 is supported by the reference endpoint", param="n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(400, "'stream' must be a boolean", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise BadRequest(400, "'stream_options' must be an object", param="stream_options")
    return Job(chat, stream, sum(p.tokens for p in parts), max_tokens, min_tokens,
               bool(body.get("ignore_eos")), bool(options.get("include_usage")), api,
               _sampling(body, api), tuple(parts))


def _parse_new_api(body: dict[str, Any], api: str, default_max_tokens: int) -> Job:
    """Anthropic Messages (`messages`, `system`, `max_tokens` required) or OpenAI Responses
    (`input`: text or messages, `max_output_tokens`); both stream only here, always with
    usage (their APIs always report it)."""
    if api == "messages":
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and m.get("role") in ("user", "assistant")
                for m in messages):
            raise BadRequest(400, "'messages' must be a non-empty list of {role: user|assistant,"
                             " content}", param="messages")
        system = body.get("system")
        parts = [_part("system", system)] if system is not None else []
        parts += [_part(m["role"], m.get("content")) for m in messages]
        if body.get("max_tokens") is None:
            raise BadRequest(400, "max_tokens: Field required", param="max_tokens")
        max_tokens = _int_field(body, "max_tokens", None)
    else:
        raw = body.get("input")
        instructions = body.get("instructions")
        parts = [_part("instructions", instructions)] if instructions is not None else []
        if isinstance(raw, str):
            parts.append(_part("user", raw))
        elif isinstance(raw, list) and raw and all(isinstance(m, dict) for m in raw):
            parts += [_part(m.get("role", "user"), m.get("content")) for m in raw]
        else:
            raise BadRequest(400, "'input' must be a string or a list of messages",
                             param="input")
        max_tokens = _int_field(body, "max_output_tokens", default_max_tokens)
    assert max_tokens is not None
    if max_tokens < 1:
        raise BadRequest(400, "the output token limit must be at least 1")
    min_tokens = _int_field(body, "min_tokens", 0) or 0
    if min_tokens > max_tokens:
        raise BadRequest(400, f"'min_tokens' ({min_tokens}) exceeds the output limit "
                         f"({max_tokens})", param="min_tokens")
    if body.get("stream") is not True:
        raise BadRequest(400, f"the reference endpoint serves /v1/{api} streaming only: "
                         "send stream: true", param="stream")
    _sampling(body, api)
    return Job(True, True, sum(p.tokens for p in parts), max_tokens, min_tokens,
               bool(body.get("ignore_eos")), True, api, parts=tuple(parts))

