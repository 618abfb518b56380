"""Hostile vendors against the buyer's workload, over real loopback sockets: one that
reports usage no request can have, one that streams megabytes into a session turn, one
that answers the first turn and refuses every longer history. And the replays no run
should start: a trace spanning days, more users than a level may hold."""

from __future__ import annotations

import asyncio
import gc
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalkit.errors import UsageError
from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import HISTORY_MAX, Prober
from evalkit.probe.client.streamstate import ANSWER_MAX
from evalkit.probe.load.replay import replay
from evalkit.probe.plan.prompts import Prompt
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.plan.workloads import MAX_TRACE_SPAN_S, with_workload
from evalkit.probe.suite import run_probe
from evalkit.records import MAX_COUNT
from evalkit.workload.model import Trace, TraceEntry
from tests.probe.helpers import http_servers

QUICK: dict[str, Any] = {"connect": {"rtt_samples": 2}, "output_tokens": 8}


def _event(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


class _Vendor(http.server.BaseHTTPRequestHandler):
    """Streams `piece` `pieces` times, then the `usage` it was given; answers 400 to a
    history of more than `refuse_over` messages. Keeps every body it was sent."""

    usage: ClassVar[dict[str, Any]] = {}
    piece: ClassVar[str] = "hello"
    pieces: ClassVar[int] = 3
    refuse_over: ClassVar[int] = 1_000
    #: when set, every answer waits for it (a vendor that stalls)
    release: ClassVar[threading.Event | None] = None
    bodies: ClassVar[list[dict[str, Any]]]

    def do_GET(self) -> None:
        self._reply(200, b'{"data": [{"id": "m"}]}', "application/json")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        type(self).bodies.append(body)
        if len(body.get("messages") or []) > self.refuse_over:
            self._reply(400, b'{"error": {"message": "context too long"}}', "application/json")
            return
        if self.release is not None:
            self.release.wait(20)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for _ in range(self.pieces):
                self.wfile.write(_event({"choices": [{"index": 0, "delta": {
                    "content": self.piece}, "finish_reason": None}]}))
            self.wfile.write(_event({"choices": [{"index": 0, "delta": {},
                                                  "finish_reason": "stop"}]})
                             + _event({"choices": [], "usage": self.usage})
                             + b"data: [DONE]\n\n")
        except OSError:
            pass

    def _reply(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def vendor() -> Iterator[Callable[..., tuple[str, type[_Vendor]]]]:
    """Factory: vendor(**class attributes) -> (base URL, handler class with .bodies)."""
    with http_servers() as serve:
        def start(**attrs: Any) -> tuple[str, type[_Vendor]]:
            handler = type("V", (_Vendor,), {**attrs, "bodies": []})
            return serve(handler), handler

        yield start


def _conversations(path: Path, n: int = 2, turns: int = 3) -> Path:
    with path.open("w") as fh:
        for c in range(n):
            msgs = [{"role": "system", "content": f"You help with order {c}."}]
            for k in range(turns):
                msgs += [{"role": "user", "content": f"Order {c}, question {k}?"},
                         {"role": "assistant", "content": "FILE ANSWER"}]
            fh.write(json.dumps({"id": f"c{c}", "messages": msgs}) + "\n")
    return path


def _run(base: str, tmp_path: Path) -> tuple[Any, list[dict[str, Any]], list[int]]:
    run = tmp_path / "run"
    res = run_probe(ProbeConfig(base, "m", phases=("connect", "workload"), overrides=QUICK,
                                conversations_file=_conversations(tmp_path / "c.jsonl")), run)
    lines = (run / "requests.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    return res, [r for r in rows if r["phase"] == "workload"], [len(x) for x in lines]


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 40, "completion_tokens": 3,
     "prompt_tokens_details": {"cached_tokens": 10**23}},
    {"prompt_tokens": 40, "completion_tokens": 3,
     "prompt_tokens_details": {"cached_tokens": 41}},
    {"prompt_tokens": 40, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": -5}},
    {"prompt_tokens": 40, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": True}},
    {"prompt_tokens": MAX_COUNT + 1, "completion_tokens": -3,
     "prompt_tokens_details": {"cached_tokens": 7}},
])
def test_usage_no_request_can_have_is_dropped_and_the_requests_are_kept(
        vendor: Any, tmp_path: Path, usage: dict[str, Any]) -> None:
    """A count past the run directory's bounds once made every record unreadable, and the
    run 'invalid: no request succeeded'; a cached count above the vendor's own prompt
    tokens once stood in the summary as what its cache served."""
    base, _ = vendor(usage=usage)
    res, recs, _ = _run(base, tmp_path)
    assert len(recs) == 6 and all(r["outcome"] == "ok" for r in recs)
    assert all(r.get("cached_prompt_tokens") is None for r in recs)
    assert res.summary["validity"]["phases"]["workload"]["ok"] == 6
    shape = res.summary["workload"]["levels"][0]["shapes"]["conversations"]
    assert shape["units_complete"] == 2
    assert all(t["cached_prompt_tokens_p50"] is None for t in shape["turns"])


def test_a_truthful_cached_count_is_kept(vendor: Any, tmp_path: Path) -> None:
    base, _ = vendor(usage={"prompt_tokens": 40, "completion_tokens": 3,
                            "prompt_tokens_details": {"cached_tokens": 32}})
    res, recs, _ = _run(base, tmp_path)
    assert [r["cached_prompt_tokens"] for r in recs] == [32] * 6
    turns = res.summary["workload"]["levels"][0]["shapes"]["conversations"]["turns"]
    assert [t["cached_prompt_tokens_p50"] for t in turns] == [32, 32, 32]


def test_megabytes_of_answer_go_back_cut_and_the_records_stay_bounded(
        vendor: Any, tmp_path: Path) -> None:
    """6 MB streamed into every turn: each later turn carries the answer cut at
    HISTORY_MAX characters, every turn completes, and no record line holds more than
    ANSWER_MAX of it (once each held HISTORY_MAX: 131 KB a line, in every turn)."""
    base, srv = vendor(piece="x" * 60_000, pieces=100)
    res, recs, sizes = _run(base, tmp_path)
    assert len(recs) == 6 and all(r["outcome"] == "ok" for r in recs)
    later = [b for b in srv.bodies if len(b.get("messages") or []) > 2]
    assert len(later) == 4  # turns 2 and 3 of both conversations
    for body in later:
        answers = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
        assert answers and all(a == "x" * HISTORY_MAX for a in answers)
    # each record keeps the answer's first ANSWER_MAX characters (the digest covers all)
    assert all(len(r["answer_text"]) == ANSWER_MAX for r in recs)
    assert max(sizes) < ANSWER_MAX + 16_384
    assert res.summary["workload"]["levels"][0]["shapes"]["conversations"][
        "units_complete"] == 2


def test_a_vendor_that_refuses_long_histories_cuts_its_units_short(
        vendor: Any, tmp_path: Path) -> None:
    """Turn 1 answered, turn 2 (four messages) refused: each conversation's second turn
    is recorded as the error it was, its third is never sent, no unit reads complete,
    and the workload phase is not valid."""
    base, srv = vendor(refuse_over=3)
    res, recs, _ = _run(base, tmp_path)
    assert sorted((r["turn"], r["outcome"], r["http_status"]) for r in recs) == [
        (1, "ok", 200), (1, "ok", 200), (2, "error", 400), (2, "error", 400)]
    assert not any(len(b.get("messages") or []) > 4 for b in srv.bodies)
    shape = res.summary["workload"]["levels"][0]["shapes"]["conversations"]
    assert shape["units"] == 2 and shape["units_complete"] == 0
    chat = shape["goodput"]["interactive_chat"]
    assert chat["requests"] == 4 and chat["met"] <= 2  # the refused turns count as misses
    assert res.summary["validity"]["phases"]["workload"]["status"] != "valid"


def _trace(path: Path, last_ms: float) -> Path:
    path.write_text(json.dumps({"timestamp": 0, "input_length": 8, "output_length": 4})
                    + "\n" + json.dumps({"timestamp": last_ms, "input_length": 8,
                                         "output_length": 4}) + "\n")
    return path


def test_a_trace_spanning_days_is_refused_with_the_speed_that_fits(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.jsonl", 10 * 86400 * 1000)
    with pytest.raises(UsageError, match=r"10\.0 days.*--trace-speed 40 or more"):
        with_workload(ProbeConfig("http://x/v1", "m", trace_file=trace))
    with pytest.raises(UsageError, match=r"limit 6\.0 h"):  # a tiny speed is no way round it
        with_workload(ProbeConfig("http://x/v1", "m", trace_speed=1e-9,
                                  trace_file=_trace(tmp_path / "u.jsonl", 1000)))
    span = MAX_TRACE_SPAN_S * 1000
    fits = with_workload(ProbeConfig("http://x/v1", "m", trace_speed=40,
                                     trace_file=_trace(tmp_path / "v.jsonl", 40 * span)))
    assert fits.trace is not None and fits.trace.offsets_s()[-1] == MAX_TRACE_SPAN_S


def test_more_users_than_a_level_may_hold_are_refused(tmp_path: Path) -> None:
    convs = _conversations(tmp_path / "c.jsonl")
    with pytest.raises(UsageError, match="at most 4,096"):
        with_workload(ProbeConfig("http://x/v1", "m", conversations_file=convs,
                                  users=(1, 100_000)))


def test_workload_flags_without_what_they_act_on_are_refused() -> None:
    """A new user's --users or --trace-speed with nothing for it to act on once ran the
    default phases without a word: the flag was silently ignored."""
    with pytest.raises(UsageError, match=r"--users sets the workload phase's levels.*--levels"):
        with_workload(ProbeConfig("http://x/v1", "m", users=(2,)))
    with pytest.raises(UsageError, match="--trace-speed scales a trace's times"):
        with_workload(ProbeConfig("http://x/v1", "m", trace_speed=3.0))


def test_a_dense_trace_against_a_stalled_vendor_holds_no_waiting_prompt(vendor: Any) -> None:
    """400 requests due at once, 2 slots, a vendor that answers nothing until released:
    the 398 waiting hold their trace entries, not their texts (each 8k tokens; a trace of
    100,000 such lines held whole is gigabytes), and every one is still sent once the
    vendor answers."""
    release = threading.Event()
    base, srv = vendor(release=release)
    trace = Trace(tuple(TraceEntry(0.0, 8000, 2, line=i + 1) for i in range(400)))
    records: list[Any] = []

    def held() -> int:
        return sum(1 for o in gc.get_objects() if isinstance(o, Prompt) and o.shape == "trace")

    async def go() -> int:
        async with Prober(Target(base, "m", timeout_s=30), time.perf_counter_ns(), "t") as p:
            run = asyncio.create_task(replay(p, trace, records.append, run_tag="t",
                                             max_in_flight=2))
            while len(srv.bodies) < 2 or len(asyncio.all_tasks()) < 400:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)  # the send loop has handed out every entry
            n = held()
            release.set()
            await run
            return n

    waiting = asyncio.run(go())
    assert waiting <= 4, waiting  # the two in flight (and their records' making)
    assert len(records) == 400 and all(r.outcome == "ok" for r in records)
    # each sent its own prompt (a lazily made one is the same text it would have had)
    assert len({json.dumps(b["messages"]) for b in srv.bodies}) == 400


def test_a_trace_cut_short_says_so_on_the_terminal() -> None:
    from evalkit.analysis.summary import Summary
    from evalkit.probe.run.progress import workload_lines

    def line(**tr: Any) -> str:
        doc = {"trace": {"requests": 1, "outcomes": {"ok": 1}, **tr}}
        return workload_lines(Summary.from_json(doc).sections)[0]

    assert line(planned=2, complete=False).startswith("trace: 1 of 2 (cut short) requests")
    assert line(planned=1, complete=True).startswith("trace: 1 requests")


