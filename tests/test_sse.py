"""The SSE parser follows the spec whatever way the bytes are split across reads."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.api import OpenAIChat, OpenAICompletions
from evalkit.sse import SSEParser

STREAM = (
    b": ping\n\n"
    b"data: {\"a\": 1}\n\n"
    b"event: update\nid: 7\ndata: line one\ndata: line two\n\n"
    b"data:no-space\n\n"
    b"retry: 1500\n"
    b"data: [DONE]\n\n"
)
EXPECTED = ['{"a": 1}', "line one\nline two", "no-space", "[DONE]"]


def _parse_all(parts: list[bytes]) -> tuple[list[str], SSEParser]:
    parser = SSEParser()
    out: list[str] = []
    for part in parts:
        out += [e.data for e in parser.feed(part)]
    out += [e.data for e in parser.close()]
    return out, parser


class TestSSEParser:
    def test_whole_stream(self) -> None:
        """Events, multi-line data, comments and fields come out as the spec says."""
        parser = SSEParser()
        events = parser.feed(STREAM)
        assert [e.data for e in events] == EXPECTED
        assert events[1].event == "update"
        assert events[1].id == "7"
        assert events[0].event == "message"
        assert parser.comments == 1
        assert parser.retry_ms == 1500

    @pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
    def test_line_ends(self, eol: bytes) -> None:
        """LF, CRLF and CR line ends all parse to the same events."""
        out, _ = _parse_all([STREAM.replace(b"\n", eol)])
        assert out == EXPECTED

    @given(st.lists(st.integers(min_value=1, max_value=len(STREAM) * 2 - 1), max_size=12),
           st.sampled_from([b"\n", b"\r\n", b"\r"]))
    def test_any_split_gives_same_events(self, cuts: list[int], eol: bytes) -> None:
        """However the bytes are cut into reads (even inside a CRLF), the events are the same."""
        data = STREAM.replace(b"\n", eol)
        points = sorted({c % len(data) for c in cuts} | {0, len(data)})
        parts = [data[a:b] for a, b in itertools.pairwise(points)]
        out, parser = _parse_all(parts)
        assert out == EXPECTED
        assert parser.comments == 1

    def test_byte_by_byte_crlf(self) -> None:
        """One byte per read, CRLF: a CR at the end of a read followed by LF is one line end."""
        data = STREAM.replace(b"\n", b"\r\n")
        out, _ = _parse_all([data[i:i + 1] for i in range(len(data))])
        assert out == EXPECTED

    def test_cut_off_final_event_is_discarded(self) -> None:
        """A final event without its blank line never dispatches; `pending` says so."""
        parser = SSEParser()
        assert [e.data for e in parser.feed(b"data: one\n\ndata: cut")] == ["one"]
        assert parser.pending
        assert parser.feed(b" off\n") == []
        assert parser.pending
        assert parser.close() == []

    def test_bom_and_empty_data(self) -> None:
        """A leading BOM is dropped; an event with no data field is not dispatched."""
        parser = SSEParser()
        events = parser.feed(b"\xef\xbb\xbfdata: x\n\nevent: empty\n\n: c\n\ndata\n\n")
        assert [e.data for e in events] == ["x", ""]

    def test_utf8_split_across_reads(self) -> None:
        """A multi-byte character split between two reads decodes whole."""
        data = "data: héllo ✓\n\n".encode()
        out, _ = _parse_all([data[:8], data[8:14], data[14:]])
        assert out == ["héllo ✓"]


class TestAdapters:
    def test_chat_role_only_chunk_is_not_content(self) -> None:
        """The role chunk vLLM counts as first token carries no text: not content."""
        d = OpenAIChat().parse('{"choices":[{"index":0,"delta":{"role":"assistant"}}]}')
        assert d.role_only and not d.is_content

    def test_chat_reasoning_then_answer(self) -> None:
        """Reasoning fields (both spellings) are content; usage-only chunks are not."""
        a = OpenAIChat()
        assert a.parse('{"choices":[{"delta":{"reasoning_content":"hm"}}]}').reasoning == "hm"
        assert a.parse('{"choices":[{"delta":{"reasoning":"so"}}]}').reasoning == "so"
        d = a.parse('{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}')
        assert (d.is_content, d.usage_completion_tokens, d.usage_prompt_tokens) == (False, 9, 5)
        d = a.parse('{"choices":[{"delta":{"content":" x"},"finish_reason":"length"}]}')
        assert (d.text, d.finish_reason) == (" x", "length")

    def test_error_payload_and_malformed(self) -> None:
        """An error object inside a 200 stream is an error, malformed JSON raises ValueError."""
        a = OpenAIChat()
        assert a.parse('{"error":{"message":"overloaded","code":500}}').error == "overloaded"
        assert a.parse("[DONE]").done
        with pytest.raises(ValueError):
            a.parse('{"choices": [')
        with pytest.raises(ValueError):
            a.parse("[1, 2]")

    def test_completions(self) -> None:
        """The completions adapter reads `choices[0].text`."""
        a = OpenAICompletions()
        d = a.parse('{"choices":[{"text":" hi","finish_reason":null}]}')
        assert (d.text, d.finish_reason, d.is_content) == (" hi", None, True)
        body = a.build_body("m", [{"role": "user", "content": "q"}], 7, force_length=False)
        assert body["prompt"] == "q" and body["max_tokens"] == 7 and "ignore_eos" not in body
