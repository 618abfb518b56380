"""API adapters: the one seam between the prober and a vendor's wire format.

An adapter knows which path to POST to, how to build the request body for a prompt, what
one SSE event's data means (`Delta`), how the API authenticates (`auth`, one of
`AUTH_STYLES`, and any fixed `headers` it requires) and which event ends its stream
(`end_event`: None when a `finish_reason` is enough, as in OpenAI chat where `[DONE]` is
optional). The prober does everything else (timing, outcomes, records), so another API
is one adapter more: a module of its own in this folder with a class of the same members,
and one line in `ADAPTERS` below (`evalkit probe --api` offers exactly
its keys).

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

from typing import Any, Protocol, cast

from evalkit.errors import UsageError
from evalkit.probe.apis.anthropic import AnthropicMessages
from evalkit.probe.apis.bedrock import BedrockConverse
from evalkit.probe.apis.chat import OpenAIChat
from evalkit.probe.apis.completions import OpenAICompletions
from evalkit.probe.apis.fields import DONE, Delta
from evalkit.probe.apis.gemini import Gemini
from evalkit.probe.apis.responses import OpenAIResponses
from evalkit.probe.apis.sampling import DEFAULT_SAMPLING, Sampling

__all__ = ["ADAPTERS", "AUTH_STYLES", "DONE", "NORMAL_FINISHES", "Adapter", "AnthropicMessages",
           "Delta", "OpenAIChat", "OpenAICompletions", "OpenAIResponses", "get_adapter"]

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
    "STOP", "MAX_TOKENS",                                                 # Gemini
})


#: how a credential is sent: the header and the form of its value (`make_client`)
AUTH_STYLES: dict[str, tuple[str, str]] = {
    "bearer": ("authorization", "Bearer {key}"),  # OpenAI and most compatible servers
    "api-key": ("api-key", "{key}"),              # Azure OpenAI (with an api-version query)
    "x-api-key": ("x-api-key", "{key}"),          # Anthropic
    "x-goog-api-key": ("x-goog-api-key", "{key}"),  # the Gemini API
}


class Adapter(Protocol):
    """The interface an API adapter provides to the prober.

    An API unlike OpenAI's may add, and the prober asks for them by name: `bind(model)`
    (the adapter for one model, whose path names it), `auth_for(base_url)` (its auth
    style for an endpoint), `framing` ("eventstream": AWS's binary messages, not SSE)
    with `parse_event(kind, data)` (an event read with its type), `error_reply(status,
    header, body)` (an error answer's text, whether it is a throttle, its retry hint),
    `advice(status, body)` (what to fix when connect fails), `lists_models` (False: no
    model list to read) and `check_region(region)`: Bedrock's and Gemini's adapters
    (`evalkit.probe.apis.bedrock`, `evalkit.probe.apis.gemini`) have them."""

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


#: the registry: every API by its `--api` name (a new API is one module and one line here)
ADAPTERS: dict[str, type[Adapter]] = {
    OpenAIChat.name: OpenAIChat,
    OpenAICompletions.name: OpenAICompletions,
    AnthropicMessages.name: AnthropicMessages,
    OpenAIResponses.name: OpenAIResponses,
    BedrockConverse.name: BedrockConverse,
    Gemini.name: Gemini,
}


def get_adapter(name: str) -> Adapter:
    """The adapter for an `--api` name; an unknown name is a usage error. Resolved once
    a run, into its `Target` (`evalkit.probe.client.clients.Target.adapter`)."""
    try:
        return ADAPTERS[name]()
    except KeyError:
        raise UsageError(f"unknown --api {name!r}; choose one of {', '.join(ADAPTERS)}") from None


#: the key variable of Azure OpenAI (an OpenAI wire format with --api-version; a voice
#: run's is `evalkit.probe.plan.voice.voice_key_env`)
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"


def key_env(name: str, api_version: str | None = None) -> str:
    """The environment variable an API's key is read from when --api-key-env names none:
    the API's own (`key_env`, Gemini's GEMINI_API_KEY), Azure OpenAI's for an OpenAI
    format with an `api_version` (Azure's marker), else OPENAI_API_KEY. Per API and
    vendor, so that one vendor's key is never sent to another by default (an OpenAI key
    to a Microsoft endpoint)."""
    own = getattr(ADAPTERS.get(name), "key_env", None)
    if isinstance(own, str):
        return own
    return AZURE_KEY_ENV if api_version else "OPENAI_API_KEY"


def default_auth(name: str, api_version: str | None = None) -> str | None:
    """How the key is sent when --auth says nothing: Azure OpenAI's `api-key` header for
    an OpenAI format with an `api_version` (Azure's marker, as `key_env` reads it: Azure
    refuses a bearer key, so a run would stop at its gate on a 401 the buyer did not
    cause), else None: the adapter's own."""
    own = getattr(ADAPTERS.get(name), "key_env", None)
    return "api-key" if api_version and not isinstance(own, str) else None


def bound_adapter(name: str, model: str) -> Adapter:
    """The adapter for an `--api` name and one model: an API whose path names the model
    (Bedrock's, Gemini's) binds it, a model id it cannot take a usage error; the others
    serve every model alike."""
    adapter = get_adapter(name)
    bind = getattr(adapter, "bind", None)
    return adapter if bind is None else cast(Adapter, bind(model))
