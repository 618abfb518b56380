"""The buyer's conversations file (`evalkit.workload.conversations`): both line forms,
text parts, and every problem of a bad file at once with its line and field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalkit.errors import WorkloadError
from evalkit.workload.conversations import load_conversations
from evalkit.workload.jsonl import MAX_FILE_BYTES, MAX_LINE_BYTES, MAX_LINES
from evalkit.workload.model import fixed
from tests.workload.helpers import relative, write


def problems(tmp: Path, text: str | bytes) -> list[str]:
    with pytest.raises(WorkloadError) as info:
        load_conversations(write(tmp, text, "c.jsonl"))
    return relative(tmp, info.value.problems or [str(info.value)])


def user(text: str = "hi") -> dict[str, str]:
    return {"role": "user", "content": text}


def test_both_line_forms_and_text_parts(tmp_path: Path) -> None:
    lines = [
        json.dumps([{"role": "system", "content": "Be brief."}, user("a"),
                    {"role": "assistant", "content": "A"}, user("b")]),
        "",
        json.dumps({"id": "x-1", "messages": [
            {"role": "user", "name": "bob", "content": [
                {"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]}),
    ]
    p = write(tmp_path, "\n".join(lines) + "\n", "c.jsonl")
    c = load_conversations(p, "mine", output_tokens=fixed(64))
    assert c.name == "mine" and c.output_tokens == fixed(64)
    assert c.think_time_s == fixed(0.0, integer=False)
    first, second = c.conversations
    assert first.id == "line1" and first.user_turns() == 2
    assert [m["role"] for m in first.messages] == ["system", "user", "assistant", "user"]
    assert second.id == "x-1"
    assert second.messages == ({"role": "user", "name": "bob", "content": "one\ntwo"},)
    assert c.source == {"name": "c.jsonl", "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                        "conversations": 2, "user_turns": 3}


def test_a_bad_file_gets_every_problem_with_line_and_field(tmp_path: Path) -> None:
    lines = [
        json.dumps([user(), {"role": "tool", "content": "42"}]),
        "{not json",
        json.dumps([{"role": "assistant", "content": "only me"}]),
        json.dumps({"id": "a", "messages": [user(), {"role": "robot", "content": "x"},
                                            {"role": "user", "content": 5},
                                            {"role": "user"},
                                            {"role": "assistant", "content": "x",
                                             "tool_calls": []},
                                            {"role": "user", "content": [
                                                {"type": "image_url", "image_url": {}}]},
                                            {"role": "user", "content": "x", "colour": 1}]}),
        json.dumps({"id": "b", "mesages": []}),
        "[1]",
        '"text"',
        json.dumps({"id": "d", "messages": [user()]}),
        json.dumps({"id": "d", "messages": [user()]}),
        '{"messages": [{"role": "user", "content": "a", "content": "b"}]}',
        json.dumps({"messages": []}),
        json.dumps({"messages": [user("   ")]}),
        '[{"role": "user", "content": NaN}]',
    ]
    found = problems(tmp_path, "\n".join(lines) + "\n")
    assert found == [
        "c.jsonl:1: messages[1].role: tool messages are not replayed yet (a replay would have "
        "to make up the tool's result); remove the tool turns",
        "c.jsonl:2: not JSON: Expecting property name enclosed in double quotes (column 2)",
        "c.jsonl:3: messages: no user message: a replay sends one request per user turn",
        "c.jsonl:4: messages[1].role: expected one of system, user, assistant; got 'robot'",
        "c.jsonl:4: messages[2].content: expected text or a list of text parts, got 5",
        "c.jsonl:4: messages[3].content: required field missing",
        "c.jsonl:4: messages[4].tool_calls: tool calls are not replayed yet; remove the tool "
        "turns from the conversation",
        "c.jsonl:4: messages[5].content[0].type: only text parts are replayed; got 'image_url'",
        "c.jsonl:4: messages[6].colour: unknown field",
        "c.jsonl:5: mesages: unknown field (did you mean messages?)",
        "c.jsonl:5: messages: required field missing",
        "c.jsonl:6: messages[0]: expected a chat message {\"role\": ..., \"content\": ...}, "
        "got 1",
        "c.jsonl:7: (top level): expected a list of chat messages or {\"messages\": [...]}, "
        "got 'text'",
        "c.jsonl:9: id: 'd' is already the id of line 8",
        "c.jsonl:10: not JSON we read: the key 'content' appears twice in one object",
        "c.jsonl:11: messages: expected a list of 1 to 256 chat messages, got an empty list",
        "c.jsonl:12: messages[0].content: a user message must not be empty",
        "c.jsonl:13: not JSON we read: NaN is not a JSON number",
    ]


def test_at_most_256_messages(tmp_path: Path) -> None:
    ok = json.dumps([user()] * 256)
    assert len(load_conversations(write(tmp_path, ok, "c.jsonl")).conversations[0].messages) == 256
    assert problems(tmp_path, json.dumps([user()] * 257)) == [
        "c.jsonl:1: messages: 257 chat messages; at most 256"]


def test_an_empty_file_has_no_conversations(tmp_path: Path) -> None:
    assert problems(tmp_path, "\n\n") == [
        "c.jsonl:1: no conversations (expected one JSON list of chat messages, or "
        "{\"messages\": [...]}, a line)"]


def test_a_long_line_and_bad_bytes_are_problems_of_their_line(tmp_path: Path) -> None:
    long = json.dumps([user("x" * MAX_LINE_BYTES)])
    raw = (json.dumps([user()]) + "\n" + long + "\n").encode() + b'[{"role": "\xff"}]\n'
    assert problems(tmp_path, raw) == [
        f"c.jsonl:2: the line is {len(long):,} bytes (limit 1,048,576 bytes a line)",
        "c.jsonl:3: not UTF-8 text (byte 0xff at column 12)"]
    fits = json.dumps([user("x" * (MAX_LINE_BYTES - 40))])
    assert len(fits) <= MAX_LINE_BYTES
    assert load_conversations(write(tmp_path, fits, "c.jsonl")).conversations


def test_a_file_too_large_is_refused_by_its_size(tmp_path: Path) -> None:
    """A sparse file: its size says it is too large, nothing of it need be read."""
    p = tmp_path / "c.jsonl"
    with p.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(WorkloadError, match="67,108,865 bytes is too large for a "
                                            "conversations file"):
        load_conversations(p)


def test_too_many_lines_are_refused_whole(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="100,001 lines is too many"):
        load_conversations(write(tmp_path, "\n" * MAX_LINES + "x", "c.jsonl"))
    assert problems(tmp_path, "\n" * MAX_LINES)[0].startswith("c.jsonl:1: no conversations")


def test_a_hostile_file_lists_at_most_a_hundred_problems(tmp_path: Path) -> None:
    found = problems(tmp_path, "{\n" * 500)
    assert len(found) == 101 and found[-1] == "c.jsonl: ... and 400 more problems not shown"
    with pytest.raises(WorkloadError, match="500 problems"):
        load_conversations(tmp_path / "c.jsonl")


def test_a_missing_file_and_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="not a conversations file"):
        load_conversations(tmp_path / "none.jsonl")
    with pytest.raises(WorkloadError, match="not a conversations file"):
        load_conversations(tmp_path)
