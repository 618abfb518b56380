"""docs/workloads.md's examples are files the readers accept, so the guide stays true."""

from __future__ import annotations

import re
from pathlib import Path

from evalkit.workload.conversations import load_conversations
from evalkit.workload.load import load_workload
from evalkit.workload.trace import load_trace
from tests.workload.helpers import CONVOS, write

DOC = Path(__file__).resolve().parents[2] / "docs" / "workloads.md"
BLOCKS = re.findall(r"```(yaml|json|)\n(.*?)```", DOC.read_text(), re.S)


def test_every_workload_example_reads(tmp_path: Path) -> None:
    write(tmp_path, CONVOS, "convos.jsonl")
    names = [load_workload(write(tmp_path, text, f"w{i}.{lang}")).name
             for i, (lang, text) in enumerate(BLOCKS) if lang in ("yaml", "json")]
    assert names == ["chat-product", "voice-agent", "coding-agent"]


def test_the_conversations_and_trace_examples_read(tmp_path: Path) -> None:
    plain = [text for lang, text in BLOCKS if not lang and text.startswith(("[", "{"))]
    convos, trace = plain
    c = load_conversations(write(tmp_path, convos, "c.jsonl"))
    assert [x.user_turns() for x in c.conversations] == [2, 1]
    t = load_trace(write(tmp_path, trace, "t.jsonl"))
    assert [e.input_length for e in t.entries] == [6755, 6426]
    assert all(len(e.hash_ids) <= -(-e.input_length // 512) for e in t.entries)
