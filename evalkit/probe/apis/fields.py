"""What one vendor event is read into (`Delta`), and the typed reads of its values that
every adapter shares: the shape checked, anything else is none.

Why one module: the adapters (one module per API, `evalkit.probe.apis.base` registers
them) and the logprob readers read hostile events field by field, and one reading of "a
count", "a name" or "an object", of OpenAI's usage and error shapes and of a cached-token
count keeps them judging a value alike. It is the floor every adapter stands on and
imports no other module of the probe (`tests/test_layers.py` allows probe/ 8 floors).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from evalkit.records import MAX_COUNT, MAX_SECONDS

#: the longest model name or fingerprint kept (a vendor string: bounded, then sanitised
#: where it is shown)
NAME_MAX = 120


def as_dict(value: Any) -> dict[str, Any]:
    """The object, or an empty one for anything else (so `.get` chains never raise)."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    """The string, or "" for anything else."""
    return value if isinstance(value, str) else ""


def as_count(value: Any) -> int | None:
    """A vendor's count, or None: not whole, negative, or past any a request can make (a
    record holding one would not be read back: `evalkit.records.MAX_COUNT`)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if ok else None


def as_name(value: Any) -> str | None:
    """A model name or fingerprint, cut to `NAME_MAX`; None for an empty or a non-string."""
    return value[:NAME_MAX] if isinstance(value, str) and value else None


def as_ms_in_seconds(value: Any) -> float | None:
    """A vendor's duration in milliseconds, as seconds; None: not a finite number of
    them from 0 to any a record may hold (`evalkit.records.MAX_SECONDS`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = value / 1000.0
    except OverflowError:  # an int of hundreds of digits
        return None
    return seconds if math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS else None


class EngineTimings(NamedTuple):
    """An engine's own account of one response: llama.cpp's `timings` object (sent in
    its last stream chunk), read field by field; a field it did not send, or sent as
    something else, is None."""

    #: `prompt_n`: the prompt tokens it processed (those served from its cache excluded)
    prompt_tokens: int | None = None
    #: `cache_n`: the prompt tokens its cache served
    cached_tokens: int | None = None
    #: `prompt_ms`: from when a slot took the request to the prompt's last batch
    prompt_s: float | None = None
    #: `predicted_n` and `predicted_ms`: the tokens it generated, and the time from the
    #: prompt's end to the last of them
    output_tokens: int | None = None
    decode_s: float | None = None


def engine_timings(value: Any) -> EngineTimings | None:
    """llama.cpp's `timings` object read defensively; None when it holds none of them."""
    d = as_dict(value)
    if not d:
        return None
    timings = EngineTimings(as_count(d.get("prompt_n")), as_count(d.get("cache_n")),
                            as_ms_in_seconds(d.get("prompt_ms")),
                            as_count(d.get("predicted_n")),
                            as_ms_in_seconds(d.get("predicted_ms")))
    return timings if any(v is not None for v in timings) else None


class Delta(NamedTuple):
    """What one SSE event carried, reduced to what the metrics need.

    A named tuple, not a frozen dataclass: one is made for every event, and a frozen
    dataclass sets each of its fields through `object.__setattr__` (1.5 µs an event at 12
    fields, against 0.47 here, measured with timeit): immutable either way."""

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
    #: the `error` says "not now" (Bedrock's throttlingException, Gemini's
    #: RESOURCE_EXHAUSTED inside a stream already begun): a rejection, as an HTTP 429 is,
    #: with the vendor's retry hint in seconds where it gave one
    throttled: bool = False
    retry_after_s: float | None = None

    @property
    def is_content(self) -> bool:
        """True when the event carries generated text (answer or reasoning)."""
        return bool(self.text or self.reasoning)


DONE = Delta(done=True)


DONE = Delta(done=True)


def usage_counts(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    """(completion_tokens, prompt_tokens) of OpenAI's `usage`."""
    usage = as_dict(obj.get("usage"))
    return as_count(usage.get("completion_tokens")), as_count(usage.get("prompt_tokens"))


def cached_tokens(obj: dict[str, Any], prompt_tokens: int | None,
                  details_key: str = "prompt_tokens_details") -> int | None:
    """OpenAI's usage `prompt_tokens_details.cached_tokens` (the Responses API's
    `input_tokens_details`), where a vendor reports it."""
    details = as_dict(as_dict(obj.get("usage")).get(details_key))
    return served(as_count(details.get("cached_tokens")), prompt_tokens)


def served(n: int | None, prompt_tokens: int | None) -> int | None:
    """A cached-token count, if it can be one: a count above the vendor's own prompt
    tokens is no count of them (None, never shown as served)."""
    return n if n is not None and prompt_tokens is not None and n <= prompt_tokens else None


def error_text(obj: dict[str, Any]) -> str | None:
    """The text of an `error` member (an object's message or type, or the value), bounded."""
    err = obj.get("error")
    if err is None:
        return None
    if isinstance(err, dict):
        msg = err.get("message") or err.get("type") or json.dumps(err)[:200]
        return str(msg)[:500]
    return str(err)[:500]


def load_event(data: str) -> dict[str, Any] | None:
    """An event's JSON object; None for `[DONE]`; ValueError for anything but an object."""
    if data.strip() == "[DONE]":
        return None
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError(f"event data is a JSON {type(obj).__name__}, not an object")
    return obj


def first_choice(obj: dict[str, Any]) -> dict[str, Any]:
    """`choices[0]` where it is an object, else an empty one."""
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return {}


def forced_length(body: dict[str, Any], max_tokens: int, force: bool) -> dict[str, Any]:
    """`body` with the fields that ask for exactly `max_tokens` when `force`."""
    if force:
        # vendor extensions (vLLM, SGLang, TGI...) to make the output length exact;
        # the output-length check tells whether they were honoured.
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


class ChoiceRead(NamedTuple):
    """What an OpenAI-style API's own reader takes from `choices[0]`."""

    text: str = ""
    reasoning: str = ""
    role_only: bool = False
    logprobs: tuple[tuple[str, float], ...] | None = None


def openai_event(data: str, read_choice: Callable[[dict[str, Any]], ChoiceRead]) -> Delta:
    """One event of OpenAI chat or completions: `[DONE]`, an error, or a chunk whose
    usage, finish reason, model, fingerprint and engine timings are read here and whose
    choice `read_choice` reads."""
    obj = load_event(data)
    if obj is None:
        return DONE
    err = error_text(obj)
    if err is not None:
        return Delta(error=err)
    ct, pt = usage_counts(obj)
    choice = first_choice(obj)
    read = read_choice(choice)
    finish = choice.get("finish_reason")
    return Delta(text=read.text, reasoning=read.reasoning,
                 finish_reason=finish if isinstance(finish, str) else None,
                 usage_completion_tokens=ct, usage_prompt_tokens=pt,
                 usage_cached_tokens=cached_tokens(obj, pt), role_only=read.role_only,
                 model=as_name(obj.get("model")),
                 fingerprint=as_name(obj.get("system_fingerprint")),
                 logprobs=read.logprobs, timings=engine_timings(obj.get("timings")))


class OpenAIStyle:
    """What the OpenAI-style APIs share: Bearer auth, no required end event."""

    auth = "bearer"
    headers: tuple[tuple[str, str], ...] = ()
    end_event: str | None = None
    lists_all_models = True


def content_text(content: Any) -> str:
    """A chat message's content as text: a string, or OpenAI's content parts joined (the
    clouds' APIs take text blocks of their own shape)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content if content is not None else "")


def system_and_turns(prompt: str | list[dict[str, Any]]) -> tuple[str, list[tuple[str, str]]]:
    """A prompt as the clouds' APIs take it: the system messages' text joined (they have
    no system role), and each other turn as (role, text)."""
    messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
    system = "\n".join(content_text(m.get("content")) for m in messages
                       if m.get("role") == "system")
    return system, [(str(m.get("role")), content_text(m.get("content"))) for m in messages
                    if m.get("role") != "system"]
