"""The workload and trace summaries run.json keeps (`evalkit.workload.describe`)."""

from __future__ import annotations

import json
from pathlib import Path

from evalkit.workload.describe import trace_summary, workload_summary
from evalkit.workload.trace import load_trace
from tests.workload.helpers import EXAMPLE, workload, write


def test_the_workload_summary_says_the_mix_and_every_distribution(tmp_path: Path) -> None:
    w = workload(tmp_path, EXAMPLE)
    s = json.loads(json.dumps(workload_summary(w)))  # plain JSON, as run.json holds it
    assert s["name"] == "chat-product" and s["concurrency"] == [1, 4, 8]
    assert (s["duration_s"], s["units"]) == (30.0, 40)
    assert s["source"]["name"] == "w.yaml" and len(s["source"]["sha256"]) == 64
    chat, lookup, coder, ours = s["shapes"]
    assert [x["share"] for x in s["shapes"]] == [0.5, 1 / 6, 1 / 6, 1 / 6]
    assert chat["kind"] == "session" and chat["system_prompt_tokens"] == 400
    assert chat["turns"] == {"kind": "uniform", "describe": "4–8", "mean": 6.0}
    assert chat["user_tokens"]["describe"] == "lognormal median 60, p90 200"
    assert abs(chat["user_tokens"]["mean"] - 93.28) < 0.01
    assert lookup["output_tokens"] == {"kind": "empirical", "describe": "one of [50, 80, 300]",
                                       "mean": 143.333333}
    assert coder["tool_latency_s"]["mean"] == 0.5
    assert ours["conversations"] == 2 and ours["user_turns"] == 3
    assert ours["source"]["name"] == "convos.jsonl"


def test_the_trace_summary(tmp_path: Path) -> None:
    lines = ['{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [1]}',
             '{"timestamp": 4000, "input_length": 300, "output_length": 30}']
    t = load_trace(write(tmp_path, "\n".join(lines), "t.jsonl"), speed=4)
    s = json.loads(json.dumps(trace_summary(t)))
    assert (s["entries"], s["speed"], s["replay_s"]) == (2, 4.0, 1.0)
    assert (s["input_tokens_mean"], s["output_tokens_mean"], s["with_hash_ids"]) == (200, 20, 1)
    assert s["source"]["span_s"] == 4.0
