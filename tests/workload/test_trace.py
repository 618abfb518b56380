"""A Mooncake trace (`evalkit.workload.trace`): entries sorted by time with their lines,
offsets scaled by the speed, and every problem of a bad file at once."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalkit.errors import UsageError, WorkloadError
from evalkit.workload.jsonl import MAX_FILE_BYTES
from evalkit.workload.trace import load_trace
from tests.workload.helpers import relative, write


def entry(ts: float, n_in: int = 600, n_out: int = 20, **more: object) -> str:
    return json.dumps({"timestamp": ts, "input_length": n_in, "output_length": n_out, **more})


def problems(tmp: Path, text: str) -> list[str]:
    with pytest.raises(WorkloadError) as info:
        load_trace(write(tmp, text, "t.jsonl"))
    return relative(tmp, info.value.problems or [str(info.value)])


def test_entries_are_sorted_stably_and_keep_their_lines(tmp_path: Path) -> None:
    big = 2**62 + 1  # past a float's 53 bits: kept exactly
    text = "\n".join([entry(3000, 1200, 10, hash_ids=[1, 2, 3]), entry(0, 512, 5, hash_ids=[1]),
                      "", entry(3000, 7, 8, extra="ignored", chat_id=9),
                      entry(1500.5, 1, 1, hash_ids=[big])]) + "\n"
    p = write(tmp_path, text, "t.jsonl")
    t = load_trace(p, speed=2.0)
    assert [(e.timestamp_ms, e.line) for e in t.entries] == [(0, 2), (1500.5, 5), (3000, 1),
                                                             (3000, 4)]
    assert t.entries[2].hash_ids == (1, 2, 3) and t.entries[2].input_length == 1200
    assert t.entries[1].hash_ids == (big,)
    assert (t.entries[3].input_length, t.entries[3].output_length) == (7, 8)
    assert t.speed == 2.0 and t.block_tokens == 512
    assert t.offsets_s() == [0.0, 0.750250, 1.5, 1.5] or t.offsets_s() == pytest.approx(
        [0.0, 0.75025, 1.5, 1.5])
    assert t.source == {"name": "t.jsonl", "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                        "entries": 4, "span_s": 3.0}


def test_a_bad_trace_gets_every_problem_with_its_line(tmp_path: Path) -> None:
    lines = [
        entry(0),
        json.dumps({"timestamp": 5, "input_length": 10}),
        entry(-1),
        entry(True),
        json.dumps({"timestamp": 1, "input_length": 0, "output_length": 2.5}),
        entry(1, 1024, 1, hash_ids=[1, 2, 3]),
        entry(1, 1025, 1, hash_ids=[1, -2, "x"]),
        entry(1, 1, 131_073),
        entry(1, 1_048_577, 1),
        "[1, 2]",
        "{bad",
        json.dumps({f"k{i}": i for i in range(62)} | json.loads(entry(1))),
        entry(1, hash_ids=5),
    ]
    assert problems(tmp_path, "\n".join(lines)) == [
        "t.jsonl:2: output_length: required field missing",
        "t.jsonl:3: timestamp: must be at least 0, got -1",
        "t.jsonl:4: timestamp: expected a number, got true (true and false are not numbers)",
        "t.jsonl:5: input_length: must be at least 1, got 0",
        "t.jsonl:5: output_length: expected a whole number, got 2.5 (a count is written "
        "without a decimal point or exponent)",
        "t.jsonl:6: hash_ids: 3 blocks of 512 tokens is more than input_length 1,024 holds "
        "(at most 2)",
        "t.jsonl:7: hash_ids[1]: must be at least 0, got -2",
        "t.jsonl:7: hash_ids[2]: expected a whole number, got 'x'",
        "t.jsonl:8: output_length: must be at most 131,072 tokens, got 131073",
        "t.jsonl:9: input_length: must be at most 1,048,576 tokens, got 1048577",
        "t.jsonl:10: (top level): expected a JSON object (timestamp, input_length, "
        "output_length), got a list",
        "t.jsonl:11: not JSON: Expecting property name enclosed in double quotes (column 2)",
        "t.jsonl:12: (top level): 65 keys; at most 64 a line",
        "t.jsonl:13: hash_ids: expected a list of whole numbers, got 5",
    ]


def test_sixty_four_keys_are_still_a_line(tmp_path: Path) -> None:
    line = json.dumps({f"k{i}": i for i in range(61)} | json.loads(entry(1)))
    assert len(load_trace(write(tmp_path, line, "t.jsonl")).entries) == 1


@pytest.mark.parametrize("speed", [0, -1, float("nan"), float("inf"), True, "2"])
def test_the_speed_must_be_a_positive_number(tmp_path: Path, speed: object) -> None:
    p = write(tmp_path, entry(0), "t.jsonl")
    with pytest.raises(UsageError, match="--trace-speed"):
        load_trace(p, speed=speed)  # type: ignore[arg-type]


def test_an_empty_trace_and_a_huge_one(tmp_path: Path) -> None:
    assert problems(tmp_path, "\n")[0].startswith("t.jsonl:1: no entries")
    p = tmp_path / "t.jsonl"
    with p.open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(WorkloadError, match="too large for a trace file"):
        load_trace(p)
