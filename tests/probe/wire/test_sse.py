"""The SSE parser follows the spec whatever way the bytes are split across reads."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.errors import UsageError
from evalkit.probe.apis.base import (
    ADAPTERS,
    DONE,
    AnthropicMessages,
    Delta,
    OpenAIChat,
    OpenAICompletions,
    OpenAIResponses,
    get_adapter,
)
from evalkit.probe.apis.chunkscan import chat_token
from evalkit.probe.apis.fields import NAME_MAX, as_count, as_dict, as_name, as_str
from evalkit.probe.apis.logprobs import LOGPROBS_MAX, chat_logprobs, completion_logprobs
from evalkit.probe.wire.sse import SSEParser, SSETooLarge
from evalkit.records import MAX_COUNT

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

    @given(st.lists(st.tuples(st.sampled_from([b"data: ", b"data:", b"data:  ", b"id: 4\n",
                                               b"event: e\n", b": ping\n\n", b"\xef\xbb\xbf"]),
                              st.text(max_size=12).map(str.encode),
                              st.sampled_from([b"\n\n", b"\n", b"\r\n\r\n", b"\n\n\n"])),
                    max_size=8))
    def test_whole_event_reads_match_byte_reads(
            self, events: list[tuple[bytes, bytes, bytes]]) -> None:
        """A read of one whole event (the fast path) gives what the same bytes give read one
        at a time (the general path): the same events, ids, types, counts and state."""
        reads = [head + body + end for head, body, end in events]
        fast, slow = SSEParser(), SSEParser()
        got = [(e.data, e.event, e.id) for r in reads for e in fast.feed(r)]
        data = b"".join(reads)
        want = [(e.data, e.event, e.id) for i in range(len(data))
                for e in slow.feed(data[i:i + 1])]
        assert got == want
        assert (fast.comments, fast.saw_cr, fast.pending, fast.retry_ms) == (
            slow.comments, slow.saw_cr, slow.pending, slow.retry_ms)

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


class TestParserState:
    """What a fresh parser, a closed one and each bound do: the edges of the spec."""

    def test_a_first_event_is_a_message_with_no_id(self) -> None:
        parser = SSEParser()
        (event,) = parser.feed(b"data: x\n\n")
        assert (event.data, event.event, event.id) == ("x", "message", "")
        assert parser.retry_ms is None and parser.saw_cr is False and parser.comments == 0
        assert parser.pending is False

    def test_fields_that_must_be_ignored(self) -> None:
        """An id with NUL is ignored, a non-numeric retry is ignored, an unknown field with
        a number is not a retry, and every comment is counted."""
        parser = SSEParser()
        events = parser.feed(b"id: 1\ndata: a\n\n: one\n: two\nid: 2\x003\nretry: soon\n"
                             b"foo: 42\ndata: b\n\n")
        assert [(e.data, e.id) for e in events] == [("a", "1"), ("b", "1")]
        assert parser.retry_ms is None and parser.comments == 2

    def test_invalid_utf8_is_replaced_not_raised(self) -> None:
        (event,) = SSEParser().feed(b"event: \xffx\nid: \xfe\ndata: \xff\n\n")
        assert (event.data, event.event, event.id) == ("\ufffd", "\ufffdx", "\ufffd")

    @pytest.mark.parametrize("eol", [b"\r\n", b"\r"])
    def test_cr_line_ends_are_reported(self, eol: bytes) -> None:
        parser = SSEParser()
        assert [e.data for e in parser.feed(b"data: a" + eol + eol)] == ["a"]
        assert parser.saw_cr is True

    def test_a_cr_at_a_read_boundary_is_consumed_once(self) -> None:
        """CR ends one read, its LF starts the next: one line end, and only that LF."""
        out, _ = _parse_all([b"data: a\r", b"\ndata: b\n\n"])
        assert out == ["a\nb"]
        out, _ = _parse_all([b"data: a\r", b"\n", b"\n"])
        assert out == ["a"]

    def test_a_bom_split_across_reads_and_a_bom_inside_the_data(self) -> None:
        """Only the stream's first bytes may be a BOM; U+FEFF later is data."""
        out, _ = _parse_all([b"\xef", b"\xbb\xbfdata: x\n\n"])
        assert out == ["x"]
        out, _ = _parse_all([b"data: ", "\ufeffy\n\n".encode()])
        assert out == ["\ufeffy"]
        parser = SSEParser()
        assert parser.feed(b"\n") == [] and parser.pending is False
        # after a first blank line the stream has started: a BOM now is part of a field
        # name the spec ignores, not a BOM to drop
        assert _parse_all([b"\n\xef\xbb\xbfdata: x\n\n"])[0] == []

    def test_close_discards_the_unfinished_event(self) -> None:
        """After close nothing is pending, and the parser reads a new stream from scratch."""
        parser = SSEParser(max_bytes=16)
        parser.feed(b"event: e\ndata: cut\npart")
        assert parser.pending
        assert parser.close() == [] and parser.pending is False
        parser.feed(b"x" * 16)  # a whole line's worth, nothing carried over
        assert [(e.data, e.event) for e in parser.feed(b"\ndata: y\n\n")] == [("y", "message")]
        parser.feed(b"data: cut")
        parser.close()
        assert len(parser.feed(b"data: 1234567\ndata: 1234567\n\n")) == 1  # 16 bytes of data


class TestBounds:
    """A line or an event past `max_bytes` raises SSETooLarge; exactly at it does not."""

    def test_a_line_split_over_reads(self) -> None:
        parser = SSEParser(max_bytes=16)
        parser.feed(b"data: 0123")
        parser.feed(b"456789")  # 16 bytes of one line so far
        with pytest.raises(SSETooLarge, match="longer than 16 bytes"):
            parser.feed(b"A")

    def test_a_line_begun_after_a_line_end(self) -> None:
        parser = SSEParser(max_bytes=16)
        parser.feed(b"\ndata: 0123456")  # 13 bytes wait for their line end
        parser.feed(b"789")              # 16
        with pytest.raises(SSETooLarge):
            parser.feed(b"A")

    def test_the_rest_of_a_read(self) -> None:
        SSEParser(max_bytes=16).feed(b"\n" + b"x" * 16)
        with pytest.raises(SSETooLarge, match="longer than 16 bytes"):
            SSEParser(max_bytes=16).feed(b"\n" + b"x" * 17)

    def test_after_a_joined_line_the_count_starts_again(self) -> None:
        parser = SSEParser(max_bytes=16)
        parser.feed(b"data: ab")
        parser.feed(b"c\n\n")
        parser.feed(b"x" * 16)
        with pytest.raises(SSETooLarge):
            parser.feed(b"y")

    def test_the_data_of_one_event(self) -> None:
        """Each data line counts its bytes and its line end; each event starts at 0."""
        parser = SSEParser(max_bytes=16)
        assert [e.data for e in parser.feed(b"data: 1234567\ndata: 1234567\n\n")] == [
            "1234567\n1234567"]
        assert len(parser.feed(b"data: 1234567\ndata: 1234567\n\n")) == 1
        with pytest.raises(SSETooLarge, match="over 16 bytes of data"):
            parser.feed(b"data: 1234567\ndata: 12345678\n")


class TestAdapterFields:
    """Every field an adapter reads, and what a wrong type in it becomes."""

    def test_error_objects(self) -> None:
        a = OpenAIChat()
        assert a.parse('{"error": {"type": "overloaded_error"}}').error == "overloaded_error"
        assert a.parse('{"error": {"code": 7}}').error == '{"code": 7}'
        assert a.parse('{"error": "plain"}').error == "plain"
        assert a.parse('{"error": {"code": "' + "x" * 300 + '"}}').error == (
            '{"code": "' + "x" * 190)
        assert a.parse('{"error": {"message": "' + "m" * 600 + '"}}').error == "m" * 500
        assert a.parse('{"error": "' + "p" * 600 + '"}').error == "p" * 500
        assert OpenAICompletions().parse('{"error": {"message": "gone"}}').error == "gone"

    def test_wrong_types_are_left_out(self) -> None:
        a = OpenAIChat()
        d = a.parse('{"choices": [{"delta": {"content": null, "reasoning_content": 5},'
                    ' "finish_reason": 3}], "usage": {"completion_tokens": "9",'
                    ' "prompt_tokens": 2.5}}')
        assert (d.text, d.reasoning, d.finish_reason) == ("", "", None)
        assert (d.usage_completion_tokens, d.usage_prompt_tokens) == (None, None)
        c = OpenAICompletions().parse('{"choices": [{"text": 5, "finish_reason": 1}]}')
        assert (c.text, c.finish_reason) == ("", None)
        with pytest.raises(ValueError, match="JSON list"):
            a.parse("[1]")

    def test_role_only_means_a_role_and_nothing_else(self) -> None:
        a = OpenAIChat()
        assert not a.parse('{"choices": [{"delta": {"role": "assistant", "content": "x"}}]}'
                           ).role_only
        assert not a.parse('{"choices": [{"delta": {"role": "assistant", "reasoning": "r"}}]}'
                           ).role_only
        assert not a.parse('{"choices": [{"delta": {}}]}').role_only

    def test_completions_finish_usage_and_done(self) -> None:
        a = OpenAICompletions()
        d = a.parse('{"choices": [{"text": "", "finish_reason": "stop"}], '
                    '"usage": {"completion_tokens": 4, "prompt_tokens": 3}}')
        assert (d.finish_reason, d.usage_completion_tokens, d.usage_prompt_tokens) == (
            "stop", 4, 3)
        assert a.parse(" [DONE] ").done

    def test_request_bodies(self) -> None:
        """What each adapter sends: the model, the prompt, streaming with usage, and the
        exact-length extensions only when asked."""
        chat = OpenAIChat().build_body("m", "hi", 7, force_length=True)
        assert chat == {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": 7, "stream": True,
                        "stream_options": {"include_usage": True}, "temperature": 0.0,
                        "ignore_eos": True, "min_tokens": 7}
        own = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        assert OpenAIChat().build_body("m", own, 3, force_length=False)["messages"] == own
        comp = OpenAICompletions().build_body("m", [*own, {"role": "user"}], 5, True)
        assert comp == {"model": "m", "prompt": "s\nu\n", "max_tokens": 5, "stream": True,
                        "stream_options": {"include_usage": True}, "temperature": 0.0,
                        "ignore_eos": True, "min_tokens": 5}

    def test_adapters_by_name(self) -> None:
        assert isinstance(get_adapter("openai-chat"), OpenAIChat)
        assert isinstance(get_adapter("openai-completions"), OpenAICompletions)
        with pytest.raises(UsageError, match=r"'nope'.*openai-chat, openai-completions"):
            get_adapter("nope")


class TestAnthropicAndResponsesParsing:
    """The Anthropic Messages and OpenAI Responses adapters on the documented event shapes,
    one by one (the documents are named in evalkit.probe.apis); over HTTP in
    tests/probe/apis/test_api.py."""

    def test_registry_offers_every_adapter(self) -> None:
        assert {"anthropic-messages", "openai-responses"} <= set(ADAPTERS)
        assert get_adapter("anthropic-messages").end_event == "message_stop"

    def test_anthropic_events(self) -> None:
        a = AnthropicMessages()
        start = a.parse('{"type":"message_start","message":{"usage":{"input_tokens":25,'
                        '"cache_read_input_tokens":5,"output_tokens":1}}}')
        assert start.role_only and start.usage_prompt_tokens == 30
        assert start.usage_completion_tokens is None  # the placeholder is not usage
        assert a.parse('{"type":"ping"}') == a.parse('{"type":"content_block_stop","index":0}')
        assert not a.parse('{"type":"ping"}').is_content
        text = a.parse('{"type":"content_block_delta","index":0,'
                       '"delta":{"type":"text_delta","text":"Hello"}}')
        assert text.text == "Hello"
        think = a.parse('{"type":"content_block_delta","index":0,'
                        '"delta":{"type":"thinking_delta","thinking":"Let me"}}')
        assert think.reasoning == "Let me" and not think.text
        for other in ('{"type":"signature_delta","signature":"x"}',
                      '{"type":"input_json_delta","partial_json":"{\\"a"}'):
            assert not a.parse('{"type":"content_block_delta","index":0,"delta":'
                               + other + "}").is_content
        end = a.parse('{"type":"message_delta","delta":{"stop_reason":"end_turn",'
                      '"stop_sequence":null},"usage":{"output_tokens":15}}')
        assert end.finish_reason == "end_turn" and end.usage_completion_tokens == 15
        assert a.parse('{"type":"message_stop"}').done
        err = a.parse('{"type":"error","error":{"type":"overloaded_error",'
                      '"message":"Overloaded"}}')
        assert err.error == "Overloaded"

    def test_responses_events(self) -> None:
        r = OpenAIResponses()
        assert r.parse('{"type":"response.output_text.delta","delta":"Hi",'
                       '"sequence_number":3}').text == "Hi"
        assert r.parse('{"type":"response.reasoning_text.delta","delta":"so"}').reasoning == "so"
        assert not r.parse('{"type":"response.output_text.done","text":"Hi"}').is_content
        done = r.parse('{"type":"response.completed","response":{"status":"completed",'
                       '"usage":{"input_tokens":10,"output_tokens":25}}}')
        assert done.done and done.finish_reason == "completed"
        assert (done.usage_completion_tokens, done.usage_prompt_tokens) == (25, 10)
        assert done.usage_cached_tokens is None  # no details: no cache reported
        for cached, kept in (("4", 4), ("10", 10), ("11", None), ("-1", None), ("true", None)):
            got = r.parse('{"type":"response.completed","response":{"status":"completed",'
                          '"usage":{"input_tokens":10,"output_tokens":25,'
                          '"input_tokens_details":{"cached_tokens":' + cached + "}}}}")
            assert got.usage_cached_tokens == kept, cached
        # chat's own field name is not the Responses API's
        assert r.parse('{"type":"response.completed","response":{"status":"completed",'
                       '"usage":{"input_tokens":10,"output_tokens":25,'
                       '"prompt_tokens_details":{"cached_tokens":4}}}}').usage_cached_tokens is None
        cut = r.parse('{"type":"response.incomplete","response":{"status":"incomplete",'
                      '"incomplete_details":{"reason":"max_output_tokens"}}}')
        assert cut.done and cut.finish_reason == "max_output_tokens"
        assert r.parse('{"type":"error","code":"server_error","message":"boom",'
                       '"param":null}').error == "boom"
        failed = r.parse('{"type":"response.failed","response":{"status":"failed",'
                         '"error":{"code":"rate_limit_exceeded","message":"slow down"}}}')
        assert failed.error == "slow down"

    def test_bodies(self) -> None:
        body = AnthropicMessages().build_body(
            "m", [{"role": "system", "content": "be brief"},
                  {"role": "user", "content": "hi"}], 16, False)
        assert body["system"] == "be brief" and body["messages"] == [
            {"role": "user", "content": "hi"}] and body["max_tokens"] == 16
        body = OpenAIResponses().build_body("m", "hi", 16, True)
        assert body["input"] == "hi" and body["max_output_tokens"] == 16
        assert body["stream"] is True and body["store"] is False and body["ignore_eos"]

    def test_anthropic_every_field_and_what_a_wrong_type_becomes(self) -> None:
        """Blocks that open with text count, cache tokens add to the prompt, a stop
        reason or count of the wrong type is left out, and an error says what it can."""
        a = AnthropicMessages()
        assert a.parse('{"type":"content_block_start","index":0,'
                       '"content_block":{"type":"text","text":"Hi"}}') == Delta(text="Hi")
        assert a.parse('{"type":"content_block_start","index":0,"content_block":'
                       '{"type":"thinking","thinking":"hm"}}') == Delta(reasoning="hm")
        assert a.parse('{"type":"content_block_start","index":1,"content_block":'
                       '{"type":"tool_use","id":"t","name":"f","input":{}}}') == Delta()
        assert a.parse('{"type":"content_block_delta","index":0,'
                       '"delta":{"type":"text_delta","text":5}}') == Delta()
        start = a.parse('{"type":"message_start","message":{"usage":{"input_tokens":20,'
                        '"cache_creation_input_tokens":7,"cache_read_input_tokens":3}}}')
        assert start == Delta(role_only=True, usage_prompt_tokens=30, usage_cached_tokens=3)
        for read in ("true", '"3"', "-1", "3.5"):  # no count: none served
            assert a.parse('{"type":"message_start","message":{"usage":{"input_tokens":20,'
                           '"cache_read_input_tokens":' + read + "}}}").usage_cached_tokens is None
        # a read with no input_tokens is no prompt count to hold it against
        assert a.parse('{"type":"message_start","message":{"usage":'
                       '{"cache_read_input_tokens":3}}}').usage_cached_tokens is None
        late = a.parse('{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":'
                       '{"output_tokens":2,"input_tokens":4,"cache_read_input_tokens":8}}')
        assert (late.usage_prompt_tokens, late.usage_cached_tokens) == (12, 8)
        for usage in ('{"cache_read_input_tokens":3}', '{"input_tokens":true}',
                      '{"input_tokens":"20"}'):
            assert a.parse('{"type":"message_start","message":{"usage":' + usage
                           + '}}').usage_prompt_tokens is None
        end = a.parse('{"type":"message_delta","delta":{"stop_reason":7},'
                      '"usage":{"output_tokens":15,"input_tokens":4}}')
        assert end == Delta(usage_completion_tokens=15, usage_prompt_tokens=4)
        assert a.parse('{"type":"message_stop"}') == DONE
        assert a.parse("[DONE]") == Delta()  # not this API's end: message_stop is
        assert a.parse('{"type":"error","error":{"type":"overloaded_error"}}').error == (
            "overloaded_error")
        assert a.parse('{"type":"error"}').error == "error event"
        assert a.parse('{"type":"weird","error":"went wrong"}').error == "went wrong"
        assert a.parse('{"type":"ping"}') == Delta()

    def test_responses_every_field_and_what_a_wrong_type_becomes(self) -> None:
        """Refusals are answer text and summaries reasoning; the end's reason falls back
        from the incomplete reason to the status to the event's own name; an error says
        the message it carries, else its code, clipped."""
        r = OpenAIResponses()
        assert r.parse('{"type":"response.refusal.delta","delta":"No"}') == Delta(text="No")
        assert r.parse('{"type":"response.reasoning_summary_text.delta","delta":"s"}') == (
            Delta(reasoning="s"))
        assert r.parse('{"type":"response.output_text.delta","delta":3}') == Delta()
        assert r.parse('[DONE]') == Delta()
        assert r.parse('{"type":"response.created"}') == Delta()
        done = r.parse('{"type":"response.completed","response":{"status":"completed",'
                       '"usage":{"input_tokens":true,"output_tokens":"25"}}}')
        assert done == Delta(done=True, finish_reason="completed")
        assert r.parse('{"type":"response.incomplete"}') == Delta(
            done=True, finish_reason="incomplete")
        assert r.parse('{"type":"response.completed","response":{}}').finish_reason == (
            "completed")
        # the response's own status comes before the event's name
        assert r.parse('{"type":"response.completed","response":{"status":"cancelled"}}'
                       ).finish_reason == "cancelled"
        assert r.parse('{"type":"response.failed","response":{"status":"failed"}}').error == (
            "response.failed")
        assert r.parse('{"type":"response.failed","response":{"error":{"code":"c"}}}'
                       ).error == '{"code": "c"}'
        assert r.parse('{"type":"error","error":{"message":"nested"}}').error == "nested"
        assert r.parse('{"type":"error","code":"rate_limited"}').error == "rate_limited"
        assert r.parse('{"type":"error"}').error == "error event"
        assert r.parse('{"type":"error","message":"' + "m" * 600 + '"}').error == "m" * 500

    def test_bodies_exactly(self) -> None:
        """Each body whole: the model, streaming, the system messages joined into
        `system`, and the exact-length extensions only when asked."""
        own = [{"role": "system", "content": "a"}, {"role": "system", "content": "b"},
               {"role": "user", "content": "hi"}]
        assert AnthropicMessages().build_body("m", own, 16, True) == {
            "model": "m", "max_tokens": 16, "stream": True, "system": "a\nb",
            "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0,
            "ignore_eos": True, "min_tokens": 16}
        assert AnthropicMessages().build_body("m", "hi", 8, False) == {
            "model": "m", "max_tokens": 8, "stream": True,
            "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0}
        assert OpenAIResponses().build_body("m", "hi", 8, False) == {
            "model": "m", "input": "hi", "max_output_tokens": 8, "stream": True,
            "store": False, "temperature": 0.0}
        assert OpenAIResponses().build_body("m", "hi", 8, True) == {
            "model": "m", "input": "hi", "max_output_tokens": 8, "stream": True,
            "store": False, "temperature": 0.0, "ignore_eos": True, "min_tokens": 8}
        # a system message without content adds no empty `system`
        assert "system" not in AnthropicMessages().build_body(
            "m", [{"role": "system"}, {"role": "user", "content": "hi"}], 8, False)
        assert isinstance(get_adapter("openai-responses"), OpenAIResponses)
        assert ADAPTERS["anthropic-messages"] is AnthropicMessages


_TOKEN = ('{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1764633600,'
          '"model":"m-1",%s"choices":[{"index":0,"delta":{"%s":%s},"logprobs":null,'
          '"finish_reason":null}]}')


def _token(text: str, key: str = "content", fp: str = "", ascii_only: bool = True) -> str:
    return _TOKEN % (fp, key, json.dumps(text, ensure_ascii=ascii_only))


def _both(data: str) -> tuple[object, object]:
    """What parse gives (fast path or not) and what the full parse gives, errors as types."""
    chat = OpenAIChat()
    out = []
    for parse in (chat.parse, chat._parse_full):
        try:
            out.append(parse(data))
        except ValueError as exc:
            out.append(type(exc))
    return out[0], out[1]


class TestChatFastPath:
    """A token chunk in the common shape is read with one match, not json.loads: the same
    Delta, field by field, as the full parse, and the same error where the JSON is bad."""

    @given(st.text(min_size=1), st.sampled_from(["content", "reasoning_content"]),
           st.sampled_from(["", '"system_fingerprint":"fp_1",', '"system_fingerprint":null,']),
           st.booleans())
    def test_the_same_delta_as_the_full_parse(self, text: str, key: str, fp: str,
                                              ascii_only: bool) -> None:
        fast, full = _both(_token(text, key, fp, ascii_only))
        assert fast == full

    def test_it_is_taken_for_the_reference_endpoints_chunks(self) -> None:
        assert chat_token(_token(" word")) == ("m-1", None, "content", " word")
        assert chat_token(_token(" w", fp='"system_fingerprint":"f",')) == (
            "m-1", "f", "content", " w")
        assert OpenAIChat().parse(_token(" w", "reasoning_content")) == Delta(
            reasoning=" w", model="m-1")

    @given(st.integers(min_value=0, max_value=len(_token(' a "b" \\ c')) - 1),
           st.sampled_from(['"', "\\", "0", "01", "\x01", " ", "}", "", "\\u12", "é"]),
           st.integers(min_value=0, max_value=3))
    def test_a_damaged_chunk_reads_as_the_full_parse_reads_it(
            self, at: int, insert: str, drop: int) -> None:
        good = _token(' a "b" \\ c')
        fast, full = _both(good[:at] + insert + good[at + drop:])
        assert fast == full

    @pytest.mark.parametrize("data", [
        _token("x").replace('"created":1764633600', '"created":01764633600'),
        _token("x").replace('"m-1"', '""'),
        _token("x").replace('"m-1"', '"m\\u002d1"'),
        _token(""), _token("x") + " ", _token("\ud800x"),
        _token("x").replace('"finish_reason":null', '"finish_reason":"stop"'),
    ])
    def test_edge_shapes(self, data: str) -> None:
        fast, full = _both(data)
        assert fast == full


class TestLogprobReaders:
    """The logprobs an event carries (`evalkit.probe.apis.logprobs`), from hostile shapes:
    every entry checked, tokens and counts bounded, anything else dropped."""

    def test_chat_pairs_in_order(self) -> None:
        lp = {"content": [{"token": "a", "logprob": -0.5, "bytes": [97]},
                          {"token": "b", "logprob": 0}]}
        assert chat_logprobs(lp) == (("a", -0.5), ("b", 0.0))

    @pytest.mark.parametrize("lp", [None, [], "x", {"content": None}, {"content": {}},
                                    {"content": "abc"}])
    def test_chat_without_a_list_is_none(self, lp: object) -> None:
        assert chat_logprobs(lp) is None

    def test_chat_bad_entries_are_dropped_one_by_one(self) -> None:
        lp = {"content": [{"token": "ok", "logprob": -1.0}, {"token": 3, "logprob": -1},
                          {"token": "b", "logprob": True}, {"token": "n",
                                                            "logprob": float("nan")},
                          {"token": "i", "logprob": float("-inf")}, "junk",
                          {"logprob": -2.0}, {"token": "s", "logprob": "-1"},
                          {"token": "z", "logprob": -3}]}
        assert chat_logprobs(lp) == (("ok", -1.0), ("z", -3.0))

    def test_bounded_in_count_and_token_length(self) -> None:
        lp = {"content": [{"token": "t" * 100, "logprob": -0.1}] * (LOGPROBS_MAX + 50)}
        got = chat_logprobs(lp)
        assert got is not None and len(got) == LOGPROBS_MAX
        assert got[0] == ("t" * 64, -0.1)
        tokens = ["u" * 70] * (LOGPROBS_MAX + 9)
        got = completion_logprobs({"tokens": tokens, "token_logprobs": [-1.5] * len(tokens)})
        assert got is not None and len(got) == LOGPROBS_MAX and got[-1] == ("u" * 64, -1.5)

    def test_completions_parallel_lists(self) -> None:
        lp = {"tokens": ["a", "b", "c", 7], "token_logprobs": [-0.25, None, -1, -2.0],
              "top_logprobs": None}
        assert completion_logprobs(lp) == (("a", -0.25), ("c", -1.0))
        # one list shorter than the other: the pairs there are
        assert completion_logprobs({"tokens": ["a", "b"], "token_logprobs": [-1.0]}) == \
            (("a", -1.0),)

    @pytest.mark.parametrize("lp", [None, {}, {"tokens": ["a"]},
                                    {"tokens": "ab", "token_logprobs": [-1.0, -1.0]},
                                    {"tokens": ["a"], "token_logprobs": -1.0}])
    def test_completions_without_both_lists_is_none(self, lp: object) -> None:
        assert completion_logprobs(lp) is None


class TestFieldReaders:
    """`evalkit.probe.apis.fields`: a vendor's value read as what it claims to be, or nothing."""

    @pytest.mark.parametrize(("value", "got"), [
        (0, 0), (1, 1), (MAX_COUNT, MAX_COUNT), (MAX_COUNT + 1, None), (-1, None),
        (True, None), (False, None), (2.0, None), ("3", None), (None, None)])
    def test_a_count_is_a_whole_number_a_request_could_make(self, value: object,
                                                            got: int | None) -> None:
        assert as_count(value) == got
        assert as_count(value) is None or type(as_count(value)) is int

    @pytest.mark.parametrize(("value", "got"), [
        ("m-1", "m-1"), ("x" * (NAME_MAX + 5), "x" * NAME_MAX), ("", None), (5, None),
        (["m"], None), ({"m": 1}, None), (None, None)])
    def test_a_name_is_a_non_empty_string_cut_to_its_bound(self, value: object,
                                                           got: str | None) -> None:
        assert as_name(value) == got

    def test_an_object_or_a_string_or_nothing(self) -> None:
        assert as_dict({"a": 1}) == {"a": 1} and as_dict([("a", 1)]) == {}
        assert as_dict(None) == {} and as_str("s") == "s" and as_str(3) == ""
