"""The reference endpoint's wire formats beyond OpenAI chat/completions: Anthropic Messages
and OpenAI Responses, each as its vendor documents it (the adapters in `evalkit.probe.apis`
name the documents and dates; these frames follow the same ones).

A framing turns what the engine produced (a stream started, n tokens of answer or
reasoning, the end, a fault) into the bytes of that API's SSE events, `event:` line and
all. Several events may go out in one write (a block's start with its first delta, the
closing events together): a write is what the truth log stamps, as for chat.
"""

from __future__ import annotations

import json
from typing import Any

from evalkit.reference.parse import MODEL

#: the engine's finish reasons in each API's words
_ANTHROPIC_STOP = {"length": "max_tokens", "stop": "end_turn"}


def _frame(event: str, data: dict[str, Any], nl: bytes) -> bytes:
    return (b"event: " + event.encode() + nl + b"data: "
            + json.dumps(data, separators=(",", ":")).encode() + nl + nl)


class AnthropicFraming:
    """`message_start`, content blocks (thinking, then text), `message_delta`, `message_stop`."""

    def __init__(self, rid: str, prompt_tokens: int, nl: bytes, model: str = MODEL,
                 cached_tokens: int | None = None) -> None:
        self.rid, self.prompt_tokens, self.nl, self.model = rid, prompt_tokens, nl, model
        #: prompt tokens its prefix cache served (None: no cache): Anthropic's usage then
        #: splits them off `input_tokens` as `cache_read_input_tokens`
        self.cached_tokens = cached_tokens
        self.index = -1
        self.block: str | None = None  # "thinking" | "text" while a block is open

    def start(self) -> bytes:
        """`message_start`: the message with empty content; output_tokens a placeholder."""
        usage: dict[str, Any] = {"input_tokens": self.prompt_tokens, "output_tokens": 1}
        if self.cached_tokens is not None:
            usage.update(input_tokens=self.prompt_tokens - self.cached_tokens,
                         cache_creation_input_tokens=0,
                         cache_read_input_tokens=self.cached_tokens)
        return _frame("message_start", {"type": "message_start", "message": {
            "id": f"msg_{self.rid}", "type": "message", "role": "assistant", "content": [],
            "model": self.model, "stop_reason": None, "stop_sequence": None,
            "usage": usage}}, self.nl)

    def _close(self) -> bytes:
        if self.block is None:
            return b""
        out = b""
        if self.block == "thinking":  # a thinking block ends with its signature
            out += _frame("content_block_delta", {
                "type": "content_block_delta", "index": self.index,
                "delta": {"type": "signature_delta", "signature": "ZXZhbGtpdA=="}}, self.nl)
        self.block = None
        return out + _frame("content_block_stop", {"type": "content_block_stop",
                                                   "index": self.index}, self.nl)

    def token(self, kind: str, text: str) -> bytes:
        """One delta; a block's start (and the previous block's end) in the same write."""
        block = "thinking" if kind == "reasoning" else "text"
        out = b""
        if self.block != block:
            out += self._close()
            self.index += 1
            self.block = block
            out += _frame("content_block_start", {
                "type": "content_block_start", "index": self.index,
                "content_block": ({"type": "thinking", "thinking": "", "signature": ""}
                                  if block == "thinking" else {"type": "text", "text": ""})},
                self.nl)
        delta = ({"type": "thinking_delta", "thinking": text} if block == "thinking"
                 else {"type": "text_delta", "text": text})
        return out + _frame("content_block_delta", {"type": "content_block_delta",
                                                    "index": self.index, "delta": delta},
                            self.nl)

    def end(self, finish: str, output_tokens: int | None, done: bool,
            reasoning_tokens: int = 0) -> list[tuple[bytes, str]]:
        """The block's end and `message_delta` (usage unless withheld), then `message_stop`
        (unless the no_done fault withholds the end event). Anthropic's output_tokens
        include thinking; there is no separate count to give."""
        usage = {} if output_tokens is None else {"usage": {"output_tokens": output_tokens}}
        out = [(self._close() + _frame("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": _ANTHROPIC_STOP.get(finish, finish),
                      "stop_sequence": None}, **usage}, self.nl), "usage")]
        if done:
            out.append((_frame("message_stop", {"type": "message_stop"}, self.nl), "done"))
        return out

    def error(self) -> bytes:
        """An `error` event mid-stream, as the API sends when it fails after the 200."""
        return _frame("error", {"type": "error", "error": {
            "type": "api_error", "message": "injected fault: the engine failed mid-stream"}},
            self.nl)

    def malformed(self) -> bytes:
        """A delta whose JSON is cut off."""
        return (b"event: content_block_delta" + self.nl + b'data: {"type":"content_block_delta",'
                b'"index":0,"delta":{"type":"text_delta","text":" brok' + self.nl + self.nl)


class ResponsesFraming:
    """`response.created`, output items (reasoning, then a message), `response.completed`
    or `response.incomplete`; every event numbered (`sequence_number`)."""

    def __init__(self, rid: str, prompt_tokens: int, created: int, nl: bytes,
                 model: str = MODEL, cached_tokens: int | None = None) -> None:
        self.rid, self.prompt_tokens, self.created, self.nl = rid, prompt_tokens, created, nl
        self.model = model
        #: prompt tokens its prefix cache served (None: no cache, no such field)
        self.cached_tokens = cached_tokens
        self.seq = 0
        self.output = -1
        self.item: str | None = None  # "reasoning" | "message" while an item is open
        self.reasoning_tokens = 0

    def _ev(self, event: str, **data: Any) -> bytes:
        frame = _frame(event, {"type": event, "sequence_number": self.seq, **data}, self.nl)
        self.seq += 1
        return frame

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return {"id": f"resp_{self.rid}", "object": "response", "created_at": self.created,
                "status": status, "model": self.model, "output": [], "error": None,
                "incomplete_details": None, "usage": None, **extra}

    def _item_id(self) -> str:
        return f"{'rs' if self.item == 'reasoning' else 'msg'}_{self.rid}_{self.output}"

    def start(self) -> bytes:
        """`response.created` and `response.in_progress`."""
        return (self._ev("response.created", response=self._response("in_progress"))
                + self._ev("response.in_progress", response=self._response("in_progress")))

    def _close(self) -> bytes:
        if self.item is None:
            return b""
        out = self._ev("response.output_item.done", output_index=self.output,
                       item={"id": self._item_id(), "type": self.item, "status": "completed"})
        self.item = None
        return out

    def token(self, kind: str, text: str) -> bytes:
        """One delta; an output item's start (and the previous one's end) in the same write."""
        item = "reasoning" if kind == "reasoning" else "message"
        out = b""
        if self.item != item:
            out += self._close()
            self.output += 1
            self.item = item
            out += self._ev("response.output_item.added", output_index=self.output,
                            item={"id": self._item_id(), "type": item,
                                  "status": "in_progress", "content": []})
            part = "reasoning_text" if item == "reasoning" else "output_text"
            out += self._ev("response.content_part.added", item_id=self._item_id(),
                            output_index=self.output, content_index=0,
                            part={"type": part, "text": ""})
        event = ("response.reasoning_text.delta" if item == "reasoning"
                 else "response.output_text.delta")
        return out + self._ev(event, item_id=self._item_id(), output_index=self.output,
                              content_index=0, delta=text)

    def end(self, finish: str, output_tokens: int | None, done: bool,
            reasoning_tokens: int = 0) -> list[tuple[bytes, str]]:
        """The item's end, then `response.completed` (or `response.incomplete` when the
        output budget ran out), with usage unless withheld; nothing more under no_done."""
        closing = self._close()
        if not done:
            return [(closing, "usage")] if closing else []
        usage = None if output_tokens is None else {
            "input_tokens": self.prompt_tokens, "output_tokens": output_tokens,
            "total_tokens": self.prompt_tokens + output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens}}
        if usage is not None and self.cached_tokens is not None:
            usage["input_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if finish == "length":
            last = self._ev("response.incomplete", response=self._response(
                "incomplete", incomplete_details={"reason": "max_output_tokens"},
                usage=usage))
        else:
            last = self._ev("response.completed", response=self._response("completed",
                                                                          usage=usage))
        return [(closing + last, "done")]

    def error(self) -> bytes:
        """An `error` event mid-stream (top-level code and message, as documented)."""
        return self._ev("error", code="server_error", param=None,
                        message="injected fault: the engine failed mid-stream")

    def malformed(self) -> bytes:
        """A delta whose JSON is cut off."""
        return (b"event: response.output_text.delta" + self.nl
                + b'data: {"type":"response.output_text.delta","delta":" brok'
                + self.nl + self.nl)


Framing = AnthropicFraming | ResponsesFraming
