"""The buyer's workload end to end, over real loopback HTTP: a Mooncake trace replayed at
its offsets (judged by when the reference endpoint's kernel received each request, in its
truth log), and the buyer's conversations replayed against a held-out server that records
every body it was sent (so what a turn carried is the server's word, not ours)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe

QUICK: dict[str, Any] = {"connect": {"rtt_samples": 2}, "baseline": {"requests": 2},
                         "output_tokens": 8}


def _records(run: Path, phase: str) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (run / "requests.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("phase") == phase]


def _write_trace(path: Path, n: int = 40, seed: int = 7) -> list[dict[str, Any]]:
    """A 40-line Mooncake trace: bursty arrivals (~25/s), mixed lengths, shared prefixes."""
    rng = random.Random(seed)
    t, rows = 0.0, []
    for i in range(n):
        t += rng.expovariate(25.0) * 1000 * (0.2 if i % 7 < 2 else 1.0)  # bursts
        length = rng.randint(200, 1400)
        shared = [0, 1][: -(-length // 512) - 1]  # Mooncake: a hash id per 512 tokens
        rows.append({"timestamp": round(t, 3), "input_length": length,
                     "output_length": rng.randint(4, 24),
                     "hash_ids": [*shared, 100 + i] if i % 3 else []})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_a_trace_is_sent_at_its_offsets_with_its_lengths(reference: Any, tmp_path: Path
                                                         ) -> None:
    srv = reference("gpu", request_overhead_ms=15, decode_base_ms=3)
    rows = _write_trace(tmp_path / "trace.jsonl")
    run = tmp_path / "run"
    res = run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect", "trace"),
                                trace_file=tmp_path / "trace.jsonl", tag_requests=True,
                                overrides=QUICK), run)
    recs = _records(run, "trace")
    assert len(recs) == 40 and all(r["outcome"] == "ok" for r in recs)
    origin = json.loads((run / "run.json").read_text())["clock"]["origin_ns"]
    truth = {t["request_id"]: t for t in srv.truth()}
    # the schedule, from the records' t0 (the scheduled time), against the trace's offsets
    t0 = sorted(r["t0_s"] for r in recs)
    offsets = sorted((r["timestamp"] - rows[0]["timestamp"]) / 1000 for r in rows)
    assert max(abs((a - t0[0]) - b) for a, b in zip(t0, offsets, strict=True)) < 1e-6
    # when the server's kernel took each request, minus when it was scheduled: same clock
    late = sorted((truth[r["id"]]["kernel_ns"] or truth[r["id"]]["arrived_ns"])
                  - (origin + round(r["t0_s"] * 1e9)) for r in recs)
    assert late[0] > -200_000, "a request left before its time"
    assert late[int(0.99 * len(late)) - 1] <= 5_000_000, late[-5:]
    # lengths as traced: prompt tokens within the tokenizer's drift, outputs exact
    asked = sorted((r["input_length"], r["output_length"]) for r in rows)
    sent = sorted((truth[r["id"]]["prompt_tokens"], r["requested_output_tokens"])
                  for r in recs)
    for (want_in, want_out), (got_in, got_out) in zip(asked, sent, strict=True):
        assert abs(got_in - want_in) <= max(3, 0.01 * want_in) and got_out == want_out
    assert sorted(t["completion_tokens"] for t in truth.values() if t["request_id"] in
                  {r["id"] for r in recs}) == sorted(r["output_length"] for r in rows)
    tr = res.summary["trace"]
    assert tr["requests"] == 40 and tr["send_lag_s"]["p99"] < 0.005
    assert tr["planned"] == 40 and tr["complete"] is True
    assert tr["output_tokens_asked"] == sum(r["output_length"] for r in rows)


class _Recorder:
    """A held-out chat endpoint: records every request body and streams an answer made
    from the body's digest (so each answer is unique to what the turn carried)."""

    model = "held-out"

    def __init__(self) -> None:
        import uvicorn

        self.bodies: list[dict[str, Any]] = []
        self.answers: list[str] = []

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            raw = b""
            while True:
                msg = await receive()
                raw += msg.get("body", b"")
                if not msg.get("more_body"):
                    break
            if scope["path"].endswith("/models"):
                await self._json(send, {"data": [{"id": self.model}]})
                return
            body = json.loads(raw)
            digest = hashlib.sha256(raw).hexdigest()[:12]
            answer = f"Answer {digest} to {len(body['messages'])} messages."
            self.bodies.append(body)
            self.answers.append(answer)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            for i, word in enumerate(answer.split(" ")):
                chunk = {"id": "x", "object": "chat.completion.chunk", "model": self.model,
                         "choices": [{"index": 0, "delta": {"content": (" " if i else "")
                                                            + word}, "finish_reason": None}]}
                await send({"type": "http.response.body", "more_body": True,
                            "body": f"data: {json.dumps(chunk)}\n\n".encode()})
                await asyncio.sleep(0.002)
            end = {"id": "x", "object": "chat.completion.chunk", "model": self.model,
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode()})
            await send({"type": "http.response.body", "body": b""})

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)

    @staticmethod
    async def _json(send: Any, obj: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps(obj).encode()})

    def __enter__(self) -> _Recorder:
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(5)


def _conversations(path: Path) -> list[list[dict[str, str]]]:
    convs = []
    for c in range(3):
        msgs = [{"role": "system", "content": f"You help with order {c}."}]
        for k in range(3):
            msgs += [{"role": "user", "content": f"Conversation {c}, question {k}: why?"},
                     {"role": "assistant", "content": f"FILE ANSWER {c}.{k}"}]
        convs.append(msgs)
    path.write_text("".join(json.dumps({"id": f"c{i}", "messages": m}) + "\n"
                            for i, m in enumerate(convs)))
    return convs


@pytest.mark.parametrize("users", [1, 3])
def test_conversations_carry_the_vendors_own_answers_in_order(tmp_path: Path, users: int
                                                              ) -> None:
    convs = _conversations(tmp_path / "convos.jsonl")
    run = tmp_path / "run"
    with _Recorder() as srv:
        res = run_probe(ProbeConfig(srv.base_url, srv.model, phases=("connect", "workload"),
                                    conversations_file=tmp_path / "convos.jsonl",
                                    users=(users,), overrides=QUICK), run)
        bodies, answers = list(srv.bodies), list(srv.answers)
    recs = _records(run, "workload")
    assert len(recs) == 9 and all(r["outcome"] == "ok" for r in recs)
    # the server's own log, turn by turn: find each conversation's requests by system text
    turns: dict[int, list[tuple[list[dict[str, Any]], str]]] = {}
    for body, answer in zip(bodies, answers, strict=True):
        system = body["messages"][0]["content"]
        if system.startswith("You help with order"):
            turns.setdefault(int(system.split()[-1].rstrip(".")), []).append(
                (body["messages"], answer))
    assert sorted(turns) == [0, 1, 2]
    for c, sent in turns.items():
        assert len(sent) == 3
        for k, (messages, _) in enumerate(sent):
            want = [{"role": "system", "content": f"You help with order {c}."}]
            for j in range(k):  # the earlier turns: the file's question, the vendor's answer
                want += [{"role": "user", "content": f"Conversation {c}, question {j}: why?"},
                         {"role": "assistant", "content": sent[j][1]}]
            want.append({"role": "user", "content": f"Conversation {c}, question {k}: why?"})
            assert messages == want
            assert not any("FILE ANSWER" in m["content"] for m in messages)
    # the records name the session and the turn, three turns each
    by_session: dict[str, list[int]] = {}
    for r in recs:
        by_session.setdefault(r["session"], []).append(r["turn"])
        assert r["shape"] == "conversations" and r["planned_turns"] == 3
    assert sorted(sorted(v) for v in by_session.values()) == [[1, 2, 3]] * 3
    shape = res.summary["workload"]["levels"][0]["shapes"]["conversations"]
    assert shape["units"] == 3 and shape["units_complete"] == 3
    assert [t["turn"] for t in shape["turns"]] == [1, 2, 3]
    assert convs  # the file the run read


def test_later_turns_are_faster_by_what_the_prefix_cache_saved(reference: Any,
                                                               tmp_path: Path) -> None:
    """A chat session against a reference with a prefix cache and a slow prefill (so the
    cache matters): each turn's measured TTFT, less the prefill the truth log says the
    engine spent on it, is the same fixed cost for cached and uncached turns alike, and the
    summary's later turns stand below their cold prompts by what was saved."""
    from evalkit.workload.model import Session, Workload, fixed

    srv = reference("cached", prefill_tokens_per_s=4000, prefill_overhead_ms=2,
                    request_overhead_ms=10, jitter_ms=0, decode_base_ms=3)
    w = Workload(name="chat", shapes=(Session(
        "chat", turns=fixed(4), system_prompt_tokens=300, user_tokens=fixed(60),
        output_tokens=fixed(12)),), concurrency=(1,), duration_s=None, units=2)
    run = tmp_path / "run"
    res = run_probe(ProbeConfig(srv.base_url, srv.model, tag_requests=True, workload=w,
                                phases=("connect", "baseline", "prefill", "workload"),
                                overrides={**QUICK, "prefill": {
                                    "prompt_tokens": [64, 256, 512, 1024], "repeats": 2}}),
                    run)
    truth = {t["request_id"]: t for t in srv.truth()}
    recs = sorted(_records(run, "workload"), key=lambda r: r["t0_s"])
    assert len(recs) == 8 and all(r["outcome"] == "ok" for r in recs)
    fixed_part = []
    last: dict[str, int] = {}
    for r in recs:
        t = truth[r["id"]]
        # the vendor's usage said what its cache served, and it is the truth
        assert r["cached_prompt_tokens"] == t["cached_prompt_tokens"]
        if r["turn"] > 1:  # the last turn's prompt was seen: its whole blocks are cached
            assert last[r["session"]] - 16 < t["cached_prompt_tokens"] <= last[r["session"]]
        last[r["session"]] = t["prompt_tokens"]
        fixed_part.append(r["ttft_s"] - t["prefill_s"])
    # what is left of TTFT once the engine's prefill is taken out does not depend on what
    # the cache served: first turns (the least cached) and later ones leave the same
    first = sorted(f for f, r in zip(fixed_part, recs, strict=True) if r["turn"] == 1)
    later = sorted(f for f, r in zip(fixed_part, recs, strict=True) if r["turn"] > 1)
    assert abs(first[0] - later[len(later) // 2]) < 0.008, fixed_part
    turns = res.summary["workload"]["levels"][0]["shapes"]["chat"]["turns"]
    for row in turns[1:]:
        tokens = row["prompt_tokens_p50"]
        spent = sorted(truth[r["id"]]["prefill_s"] for r in recs if r["turn"] == row["turn"])
        # measured below cold by the prefill the cache saved (cold prefill minus spent)
        want = tokens / 4000 - spent[len(spent) // 2]
        got = row["cold_ttft_s"] - row["ttft_s"]["p50"]
        assert abs(got - want) < 0.008, (row["turn"], got, want)
        assert row["ttft_vs_cold"] < 0.8
    # a session costs what the truth log's tokens at Q3's prices make, session by session
    from evalkit.questionnaire.load import parse_questionnaire
    from evalkit.review.reconcile import reconcile
    from evalkit.review.rules import RunTarget

    q = parse_questionnaire((f"schema: evalkit.questionnaire/1\nmodel: {srv.model}\n"
                             f"endpoint: {srv.base_url}\nQ3: {{input_price_per_mtok: 0.05, "
                             "output_price_per_mtok: 0.20, currency: USD}\n").encode(), "q.yaml")
    cost = reconcile(q, res.summary, None, RunTarget(model=srv.model,
                                                     endpoint=srv.base_url)).cost
    (row,) = cost.workload
    per = {}
    for r in recs:
        t = truth[r["id"]]
        per[r["session"]] = per.get(r["session"], 0.0) + (
            t["prompt_tokens"] * 0.05 + t["completion_tokens"] * 0.20) / 1e6
    assert row.shape == "chat" and row.units == 2
    assert row.per_unit == pytest.approx(sum(per.values()) / 2, rel=1e-9)
    assert row.per_unit_ci is not None
    lo, hi = row.per_unit_ci
    assert lo is not None and hi is not None and lo <= row.per_unit <= hi
