"""The buyer's own conversations (JSONL, one a line) read into `Conversations`.

A line is an OpenAI chat message list, or `{"id": ..., "messages": [...]}`. What is kept
is what a replay sends: each message's role and its text (a list of text parts joined
with newlines, as vLLM's chat template joins them). Tool messages and tool calls are
refused for now, with a message that says so: replaying them would mean making up the
tools' results. Every problem in the file is reported at once, `file:line: messages[3].role:
message`; the file is bounded (`evalkit.workload.jsonl`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.questionnaire.reader import FieldPath
from evalkit.workload.fields import Checker
from evalkit.workload.jsonl import checked_rows, read_jsonl
from evalkit.workload.model import Conversation, Conversations, Dist, fixed

MAX_MESSAGES = 256
ROLES = ("system", "user", "assistant")
LINE_FIELDS = ("id", "messages")
MESSAGE_FIELDS = ("role", "content", "name")
#: what a chat message may carry that a replay cannot send back honestly yet
_TOOLS = {"tool_calls": "tool calls", "function_call": "function calls",
          "tool_call_id": "tool results"}


def load_conversations(path: Path, name: str = "conversations",
                       output_tokens: Dist | None = None,
                       think_time_s: Dist | None = None) -> Conversations:
    """Read a conversations file; any problem is one WorkloadError listing every one.

    `output_tokens` is each turn's max_tokens (default 256), `think_time_s` the pause
    before each user turn after the first (default none)."""
    lines = read_jsonl(path, "conversations")
    ids: dict[str, int] = {}

    def row(check: Checker, value: Any, number: int) -> Conversation | None:
        convo = _conversation(check, value, number)
        if convo is not None and convo.id in ids:
            check.problem(("id",), f"{convo.id!r} is already the id of line {ids[convo.id]}")
            return None
        if convo is not None:
            ids[convo.id] = number
        return convo

    kept = checked_rows(path, lines, row, "no conversations (expected one JSON list of chat "
                        "messages, or {\"messages\": [...]}, a line)", "conversations file")
    return Conversations(
        name=name, conversations=tuple(kept),
        output_tokens=output_tokens or fixed(256),
        think_time_s=think_time_s or fixed(0.0, integer=False),
        source={"name": lines.name, "sha256": lines.sha256, "conversations": len(kept),
                "user_turns": sum(c.user_turns() for c in kept)})


def _conversation(check: Checker, value: Any, number: int) -> Conversation | None:
    before = len(check.found)
    cid = f"line{number}"
    if isinstance(value, dict):
        check.keys(value, (), LINE_FIELDS)
        if not check.required(value, (), ("messages",)):
            return None
        if "id" in value:
            cid = check.text(value["id"], ("id",), limit=200) or cid
        messages = value["messages"]
    elif isinstance(value, list):
        messages = value
    else:
        check.problem((), f"expected a list of chat messages or {{\"messages\": [...]}}, got "
                      f"{check.shown(value, ())}")
        return None
    path: FieldPath = ("messages",)
    if not check.sized_list(messages, path, MAX_MESSAGES, "chat messages"):
        return None
    kept = [_message(check, m, (*path, i)) for i, m in enumerate(messages)]
    if len(check.found) > before:
        return None
    if not any(m["role"] == "user" for m in kept if m is not None):
        check.problem(path, "no user message: a replay sends one request per user turn")
        return None
    return Conversation(cid, tuple(m for m in kept if m is not None))


def _message(check: Checker, m: Any, path: FieldPath) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        check.problem(path, f"expected a chat message {{\"role\": ..., \"content\": ...}}, "
                      f"got {check.shown(m, path)}")
        return None
    for key, what in _TOOLS.items():
        if key in m:
            check.problem((*path, key), f"{what} are not replayed yet; remove the tool "
                          "turns from the conversation")
    check.keys(m, path, (*MESSAGE_FIELDS, *_TOOLS))
    if not check.required(m, path, ("role", "content")):
        return None
    role = m["role"]
    if role in ("tool", "function"):
        check.problem((*path, "role"), f"{role} messages are not replayed yet (a replay would "
                      "have to make up the tool's result); remove the tool turns")
        return None
    if role not in ROLES:
        check.problem((*path, "role"), f"expected one of {', '.join(ROLES)}; got "
                      f"{check.shown(role, (*path, 'role'))}")
        return None
    text = _content(check, m["content"], (*path, "content"))
    if text is None:
        return None
    if role == "user" and not text.strip():
        check.problem((*path, "content"), "a user message must not be empty")
        return None
    out: dict[str, Any] = {"role": role, "content": text}
    if "name" in m:
        shown = check.text(m["name"], (*path, "name"))
        if shown is None:
            return None
        out["name"] = shown
    return out


def _content(check: Checker, content: Any, path: FieldPath) -> str | None:
    """A message's text: a string, or text parts joined with newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        check.problem(path, f"expected text or a list of text parts, got "
                      f"{check.shown(content, path)}")
        return None
    texts: list[str] = []
    for i, part in enumerate(content):
        where = (*path, i)
        if not isinstance(part, dict):
            check.problem(where, f"expected a part {{\"type\": \"text\", \"text\": ...}}, got "
                          f"{check.shown(part, where)}")
        elif part.get("type") != "text":
            check.problem((*where, "type"), f"only text parts are replayed; got "
                          f"{check.shown(part.get('type'), (*where, 'type'))}")
        elif set(part) - {"type", "text"}:
            check.keys(part, where, ("type", "text"))
        elif not isinstance(part.get("text"), str):
            check.problem((*where, "text"), f"expected text, got "
                          f"{check.shown(part.get('text'), (*where, 'text'))}")
        else:
            texts.append(part["text"])
    return "\n".join(texts) if len(texts) == len(content) else None
