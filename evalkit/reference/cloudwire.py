"""The clouds' wire formats on the reference endpoint: Bedrock's event-stream messages
(Converse's events) and Gemini's SSE `GenerateContentResponse`s, each as its vendor
documents it (the adapters `evalkit.probe.apis.bedrock` and `evalkit.probe.apis.gemini`
name the documents and dates).

A framing has the face of `evalkit.reference.wire`'s (start, token, end, error,
malformed) and the content type its stream is served as; every write is stamped for the
truth log by the writer, as for the other APIs. A binary framing has no keep-alive
comment (`ping` None): a ping fault writes nothing there.
"""

from __future__ import annotations

import json
from typing import Any

from evalkit.reference.eventstream import event, exception
from evalkit.reference.parse import MODEL

_AWS_STOP = {"length": "max_tokens", "stop": "end_turn"}
_GOOGLE_STOP = {"length": "MAX_TOKENS", "stop": "STOP"}
_FAULT = "injected fault: the engine failed mid-stream"
EVENTSTREAM = b"application/vnd.amazon.eventstream"


def _json(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


class ConverseFraming:
    """`messageStart`, `contentBlockDelta`s (reasoning, then text; a block's end a
    `contentBlockStop`), `messageStop`, then `metadata` with usage and metrics."""

    content_type = EVENTSTREAM
    ping: bytes | None = None

    def __init__(self, prompt_tokens: int, cached_tokens: int | None = None) -> None:
        self.prompt_tokens, self.cached_tokens = prompt_tokens, cached_tokens
        self.index = -1
        self.block: str | None = None

    def start(self) -> bytes:
        """`messageStart`."""
        return event("messageStart", _json({"role": "assistant", "p": "abcdef"}))

    def _close(self) -> bytes:
        if self.block is None:
            return b""
        out = b""
        if self.block == "reasoning":  # a reasoning block ends with its signature
            out = event("contentBlockDelta", _json({"contentBlockIndex": self.index, "delta": {
                "reasoningContent": {"signature": "ZXZhbGtpdA=="}}}))
        self.block = None
        return out + event("contentBlockStop", _json({"contentBlockIndex": self.index}))

    def token(self, kind: str, text: str) -> bytes:
        """One delta (a new block's index, the last one's stop, in the same write)."""
        out = b""
        if self.block != kind:
            out, self.block = self._close(), kind
            self.index += 1
        delta = {"reasoningContent": {"text": text}} if kind == "reasoning" else {"text": text}
        return out + event("contentBlockDelta", _json({"contentBlockIndex": self.index,
                                                       "delta": delta, "p": "abcd"}))

    def end(self, finish: str, output_tokens: int | None, done: bool,
            reasoning_tokens: int = 0) -> list[tuple[bytes, str]]:
        """`messageStop`, then (unless the no_done fault withholds it) `metadata`: usage
        unless withheld, as Anthropic splits a cache's reads off the input."""
        out = [(self._close() + event("messageStop", _json(
            {"stopReason": _AWS_STOP.get(finish, finish)})), "usage")]
        if not done:
            return out
        data: dict[str, Any] = {"metrics": {"latencyMs": 1}}
        if output_tokens is not None:
            cached = self.cached_tokens or 0
            data["usage"] = {"inputTokens": self.prompt_tokens - cached,
                             "outputTokens": output_tokens,
                             "totalTokens": self.prompt_tokens + output_tokens}
            if self.cached_tokens is not None:
                data["usage"].update(cacheReadInputTokens=cached, cacheWriteInputTokens=0)
        out.append((event("metadata", _json(data)), "done"))
        return out

    def error(self) -> bytes:
        """`modelStreamErrorException` mid-stream."""
        return exception("modelStreamErrorException", _json({"message": _FAULT}))

    def malformed(self) -> bytes:
        """A whole message whose JSON payload is cut off."""
        return event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":" brok')


class GeminiFraming:
    """One `GenerateContentResponse` per write; the last carries `finishReason` and the
    whole `usageMetadata` (answer and thoughts apart)."""

    content_type = b"text/event-stream"

    def __init__(self, rid: str, prompt_tokens: int, nl: bytes, model: str = MODEL,
                 cached_tokens: int | None = None) -> None:
        self.rid, self.prompt_tokens, self.nl, self.model = rid, prompt_tokens, nl, model
        self.cached_tokens = cached_tokens
        self.ping = b": ping" + nl + nl

    def _event(self, data: dict[str, Any]) -> bytes:
        return b"data: " + _json(data) + self.nl + self.nl

    def _response(self, part: dict[str, Any], **candidate: Any) -> dict[str, Any]:
        return {"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0,
                                **candidate}],
                "usageMetadata": {"promptTokenCount": self.prompt_tokens,
                                  "totalTokenCount": self.prompt_tokens},
                "modelVersion": self.model, "responseId": self.rid}

    def start(self) -> bytes:
        """Nothing: the first event is the first part."""
        return b""

    def token(self, kind: str, text: str) -> bytes:
        """One part (a thought summary is marked `thought`)."""
        part: dict[str, Any] = {"text": text}
        if kind == "reasoning":
            part["thought"] = True
        return self._event(self._response(part))

    def end(self, finish: str, output_tokens: int | None, done: bool,
            reasoning_tokens: int = 0) -> list[tuple[bytes, str]]:
        """The last event: `finishReason` and usage (unless no_done withholds the end:
        Gemini has no other)."""
        if not done:
            return []
        last = self._response({"text": ""}, finishReason=_GOOGLE_STOP.get(finish, finish))
        if output_tokens is not None:
            usage = last["usageMetadata"]
            usage.update(candidatesTokenCount=output_tokens - reasoning_tokens,
                         totalTokenCount=self.prompt_tokens + output_tokens)
            if reasoning_tokens:
                usage["thoughtsTokenCount"] = reasoning_tokens
            if self.cached_tokens is not None:
                usage["cachedContentTokenCount"] = self.cached_tokens
        return [(self._event(last), "done")]

    def error(self) -> bytes:
        """An error object mid-stream."""
        return self._event({"error": {"code": 500, "message": _FAULT, "status": "INTERNAL"}})

    def malformed(self) -> bytes:
        """A response whose JSON is cut off."""
        return b'data: {"candidates":[{"content":{"parts":[{"text":" brok' + self.nl + self.nl


CloudFraming = ConverseFraming | GeminiFraming


def cloud_framing(api: str, rid: str, prompt_tokens: int, nl: bytes, model: str,
                  cached_tokens: int | None) -> CloudFraming | None:
    """The framing of a cloud API (`evalkit.reference.clouds.CLOUD_APIS`), else None."""
    if api == "converse":
        return ConverseFraming(prompt_tokens, cached_tokens)
    if api in ("gemini", "vertex"):
        return GeminiFraming(rid, prompt_tokens, nl, model, cached_tokens)
    return None
