"""Workload files written to order and the problems they raise, shared by the workload
stage's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.errors import WorkloadError
from evalkit.workload.load import load_workload
from evalkit.workload.model import Workload

#: the schema's example (docs/workloads.md), a shape of every kind
EXAMPLE = """\
name: chat-product
concurrency: [1, 4, 8]
duration_s: 30
units: 40
shapes:
  - name: chat
    kind: session
    weight: 3
    turns: {uniform: [4, 8]}
    system_prompt_tokens: 400
    user_tokens: {lognormal: {median: 60, p90: 200}}
    output_tokens: 150
    think_time_s: {uniform: [1.0, 3.0]}
  - name: lookup
    kind: single
    prompt_tokens: 500
    output_tokens: {empirical: [50, 80, 300]}
  - name: coder
    kind: agent
    steps: 5
    prompt_tokens: 800
    tool_result_tokens: {uniform: [100, 400]}
    tool_latency_s: 0.5
    output_tokens: 100
  - name: ours
    kind: conversations
    file: convos.jsonl
    output_tokens: 200
    think_time_s: 0
"""

CONVOS = (
    '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, '
    '{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "More?"}]\n'
    '{"id": "c2", "messages": [{"role": "user", "content": "Q?"}]}\n')

#: a workload's head, then a shape's fields go under `  - `
HEAD = "name: w\nunits: 10\nshapes:\n"


def write(tmp: Path, text: str | bytes, name: str = "w.yaml") -> Path:
    p = tmp / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def workload(tmp: Path, text: str, name: str = "w.yaml") -> Workload:
    """Load a workload that must be valid (its conversations file written beside it)."""
    if not (tmp / "convos.jsonl").exists():
        write(tmp, CONVOS, "convos.jsonl")
    return load_workload(write(tmp, text, name))


def problems_of(tmp: Path, text: str | bytes, name: str = "w.yaml") -> list[str]:
    """The problem lines a workload raises (fails the test if it is valid)."""
    with pytest.raises(WorkloadError) as info:
        load_workload(write(tmp, text, name))
    return relative(tmp, info.value.problems or [str(info.value)])


def relative(tmp: Path, problems: list[str]) -> list[str]:
    """Problems with the test's directory cut from the file names they start with."""
    return [p.removeprefix(f"{tmp}/") for p in problems]


def shape_problems(tmp: Path, body: str) -> list[str]:
    """The problems of a workload of one shape, written as `body` (its lines under `- `)."""
    lines = body.strip("\n").splitlines()
    shape = "  - " + lines[0] + "\n" + "".join(f"    {line}\n" for line in lines[1:])
    return problems_of(tmp, HEAD + shape)
