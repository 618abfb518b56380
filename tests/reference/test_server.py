"""The reference endpoint over real loopback HTTP: API shape, engine timing, faults.

Timing tests use subprocess mode (no GIL shared with this client) and compare what the
client measured against the configured model and the server's own ground-truth log.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import pytest

from evalkit.reference.answers import WORDS
from evalkit.reference.server import ReferenceServer

Factory = Callable[..., ReferenceServer]
MS = 1e6


@dataclass
class Streamed:
    """What a minimal client saw: raw bytes with arrival times, and parsed SSE events."""

    status: int
    headers: dict[str, str]
    raw: bytes = b""
    arrivals: list[tuple[int, bytes]] = field(default_factory=list)
    t0_ns: int = 0
    error: str | None = None

    @property
    def events(self) -> list[str]:
        """`data:` payloads and `:` comments, split on blank lines (LF or CRLF)."""
        text = self.raw.decode().replace("\r\n", "\n")
        out = []
        for block in text.split("\n\n"):
            for line in block.split("\n"):
                if line.startswith("data: "):
                    out.append(line[6:])
                elif line.startswith(":"):
                    out.append(line)
        return out

    def chunks(self) -> list[dict[str, Any]]:
        """Parsed JSON data events (malformed ones skipped)."""
        out = []
        for ev in self.events:
            if ev.startswith(":") or ev == "[DONE]":
                continue
            try:
                out.append(json.loads(ev))
            except ValueError:
                continue
        return out

    def content(self) -> str:
        """The answer text streamed."""
        return "".join((c["choices"][0]["delta"].get("content") or "")
                       for c in self.chunks() if c.get("choices"))


def chat_body(prompt_words: int = 20, max_tokens: int = 8, **extra: Any) -> dict[str, Any]:
    prompt = " ".join(["the"] * prompt_words)
    return {"model": "evalkit-reference", "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}, **extra}


def stream(srv: ReferenceServer, body: dict[str, Any], rid: str | None = None,
           timeout: float = 30.0, path: str = "/chat/completions") -> Streamed:
    """POST and read the whole response, stamping each read on arrival."""
    headers = {"x-request-id": rid} if rid else {}
    with httpx.Client(timeout=timeout) as client:
        t0 = time.perf_counter_ns()  # after the client is built (its SSL context is slow)
        try:
            with client.stream("POST", srv.base_url + path, json=body, headers=headers) as r:
                out = Streamed(r.status_code, dict(r.headers), t0_ns=t0)
                for data in r.iter_raw():
                    out.arrivals.append((time.perf_counter_ns(), data))
                    out.raw += data
        except (httpx.RemoteProtocolError, httpx.ReadTimeout) as exc:
            out.error = type(exc).__name__
    return out


def content_arrivals(s: Streamed) -> list[int]:
    """Arrival time of each read holding a content token (one chunk per read here)."""
    return [t for t, data in s.arrivals if b'"content":" ' in data]


# ----------------------------------------------------------------------- API shape

class TestApi:
    def test_models_and_streamed_chat(self, reference: Factory) -> None:
        """Role chunk first (not content), one word per token, usage, finish_reason, [DONE]."""
        srv = reference(mode="thread")
        models = httpx.get(srv.base_url + "/models").json()
        assert models["data"][0]["id"] == srv.model == "evalkit-reference"
        s = stream(srv, chat_body(prompt_words=50, max_tokens=12), rid="req-1")
        assert s.status == 200 and s.headers["content-type"] == "text/event-stream"
        chunks = s.chunks()
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert s.events[-1] == "[DONE]"
        assert chunks[-1]["usage"] == {"prompt_tokens": 50, "completion_tokens": 12,
                                       "total_tokens": 62}
        assert chunks[-2]["choices"][0]["finish_reason"] == "length"
        words = s.content().split()
        assert len(words) == 12 and set(words) <= set(WORDS)
        [truth] = srv.truth()
        assert truth["request_id"] == "req-1" and truth["outcome"] == "ok"
        assert truth["completion_tokens"] == 12 and truth["prompt_tokens"] == 50
        kinds = [w[3] for w in truth["writes"]]
        assert kinds == ["role"] + ["content"] * 12 + ["usage", "done"]

    def test_completions_and_non_streaming(self, reference: Factory) -> None:
        """Both endpoints answer whole JSON bodies too, with usage and finish_reason."""
        srv = reference(mode="thread")
        r = httpx.post(srv.base_url + "/completions", timeout=10, json={
            "model": srv.model, "prompt": "one two three", "max_tokens": 5, "ignore_eos": True})
        body = r.json()
        assert r.status_code == 200 and body["object"] == "text_completion"
        assert len(body["choices"][0]["text"].split()) == 5
        assert body["usage"]["completion_tokens"] == 5 and body["usage"]["prompt_tokens"] == 3
        r = httpx.post(srv.base_url + "/chat/completions", timeout=10,
                       json={**chat_body(max_tokens=4), "stream": False,
                             "max_completion_tokens": 3})
        msg = r.json()["choices"][0]
        assert len(msg["message"]["content"].split()) == 3 and msg["finish_reason"] == "length"

    def test_bad_requests_get_openai_errors(self, reference: Factory) -> None:
        """400/404 with the OpenAI error shape and a message, never a stack trace."""
        srv = reference(mode="thread")
        cases = [
            (b"{not json", 400, "not valid JSON"),
            (json.dumps({"messages": []}).encode(), 400, "messages"),
            (json.dumps({**chat_body(), "max_tokens": -1}).encode(), 400, "max_tokens"),
            (json.dumps({**chat_body(), "min_tokens": 99}).encode(), 400, "min_tokens"),
            (json.dumps({**chat_body(), "model": "gpt-9"}).encode(), 404, "gpt-9"),
            (json.dumps({**chat_body(), "n": 3}).encode(), 400, "n=1"),
        ]
        for raw, status, needle in cases:
            r = httpx.post(srv.base_url + "/chat/completions", content=raw, timeout=10)
            err = r.json()["error"]
            assert (r.status_code, err["code"]) == (status, status)
            assert needle in err["message"] and "Traceback" not in r.text
        assert httpx.get(srv.base_url + "/nope").status_code == 404

    def test_min_tokens_and_natural_eos(self, reference: Factory) -> None:
        """Without ignore_eos, outputs stop early but never below min_tokens."""
        srv = reference(mode="thread", natural_eos_prob=1.0, request_overhead_ms=0,
                        decode_base_ms=1, decode_per_stream_ms=0)
        lengths = []
        for _ in range(8):
            s = stream(srv, chat_body(max_tokens=30, ignore_eos=False, min_tokens=20))
            lengths.append(s.chunks()[-1]["usage"]["completion_tokens"])
        assert min(lengths) >= 20 and min(lengths) < 30

    def test_same_seed_same_lengths(self, reference: Factory) -> None:
        """Two servers with one seed give the same output lengths for the same requests."""
        runs = []
        for _ in range(2):
            srv = reference(mode="thread", seed=5, natural_eos_prob=0.7, request_overhead_ms=0,
                            decode_base_ms=1, decode_per_stream_ms=0)
            runs.append([stream(srv, chat_body(max_tokens=40, ignore_eos=False))
                         .chunks()[-1]["usage"]["completion_tokens"] for _ in range(6)])
        assert runs[0] == runs[1] and len(set(runs[0])) > 1

    def test_tokens_per_chunk(self, reference: Factory) -> None:
        """With tokens_per_chunk=4, chunks carry 4 words (the last one the remainder)."""
        srv = reference(mode="thread", tokens_per_chunk=4, request_overhead_ms=0)
        s = stream(srv, chat_body(max_tokens=10))
        sizes = [len(c["choices"][0]["delta"]["content"].split()) for c in s.chunks()
                 if c.get("choices") and c["choices"][0]["delta"].get("content")]
        assert sizes == [4, 4, 2]
        assert [w[2] for w in srv.truth()[0]["writes"] if w[3] == "content"] == [4, 4, 2]


    def test_client_that_leaves_is_logged_and_its_stream_stops(
            self, reference: Factory) -> None:
        """A client closing mid-stream: outcome `disconnected`, generation stops there."""
        srv = reference(mode="thread", request_overhead_ms=0, decode_base_ms=10,
                        decode_per_stream_ms=0)
        with httpx.Client(timeout=10) as client, client.stream(
                "POST", srv.base_url + "/chat/completions",
                json=chat_body(max_tokens=500)) as r:
            seen = 0
            for data in r.iter_raw():
                seen += data.count(b'"content":" ')
                if seen >= 3:
                    break
        [truth] = srv.truth()
        assert truth["outcome"] == "disconnected" and truth["client_disconnected"]
        assert 3 <= truth["completion_tokens"] < 50
        assert srv.state()["in_flight"] == 0


# ----------------------------------------------------------------------- engine model

class TestTiming:
    def test_ttft_grows_with_prompt_length_at_the_configured_rate(
            self, reference: Factory) -> None:
        """TTFT(prompt) fitted over real HTTP gives the configured prefill rate (±5%)."""
        srv = reference(prefill_tokens_per_s=20_000, prefill_overhead_ms=5, jitter_ms=0,
                        request_overhead_ms=10, decode_base_ms=5, decode_per_stream_ms=0)
        lengths = (100, 1000, 2000, 4000)
        ttfts: dict[int, list[float]] = {n: [] for n in lengths}
        for _ in range(3):
            for words in lengths:
                s = stream(srv, chat_body(prompt_words=words, max_tokens=2))
                ttfts[words].append((content_arrivals(s)[0] - s.t0_ns) / 1e9)
        medians = [float(np.median(ttfts[n])) for n in lengths]
        slope, intercept = np.polyfit(lengths, medians, 1)
        assert 1 / slope == pytest.approx(20_000, rel=0.05)
        # server schedule: request overhead 10 + prefill overhead 5 + one decode step 5 = 20 ms
        # plus prompt / 20k per s, exactly (jitter off); the actual write follows closely
        scheduled, actual = [], []
        for t in srv.truth():
            first = next(w for w in t["writes"] if w[3] == "content")
            expected = 0.020 + t["prompt_tokens"] / 20_000
            scheduled.append((first[1] - t["received_ns"]) / 1e9 - expected)
            actual.append((first[0] - t["received_ns"]) / 1e9 - expected)
        assert np.abs(scheduled).max() < 0.0002
        assert np.median(actual) < 0.002
        # the client adds its own send/connect time on top, never less
        assert 0.019 < intercept < 0.020 + float(np.median(actual)) + 0.010

    def test_per_token_latency_grows_with_active_streams(self, reference: Factory) -> None:
        """Token gaps follow base + per_stream x batch: 1 stream vs 8 streams."""
        srv = reference(decode_base_ms=5, decode_per_stream_ms=4, jitter_ms=0,
                        request_overhead_ms=0, prefill_overhead_ms=0)

        async def many(n: int) -> list[float]:
            async with httpx.AsyncClient(timeout=30) as client:
                async def one() -> list[int]:
                    stamps = []
                    async with client.stream("POST", srv.base_url + "/chat/completions",
                                             json=chat_body(max_tokens=30)) as r:
                        async for data in r.aiter_raw():
                            if b'"content":" ' in data:
                                stamps.append(time.perf_counter_ns())
                    return stamps
                results = await asyncio.gather(*(one() for _ in range(n)))
            # steady part of each stream, past the admission steps
            return [float(np.median(np.diff(st[5:]))) / MS for st in results]

        single = asyncio.run(many(1))[0]
        eight = float(np.median(asyncio.run(many(8))))
        assert single == pytest.approx(5 + 4 * 1, abs=1.0)
        assert eight == pytest.approx(5 + 4 * 8, abs=2.0)

    def test_429_with_retry_after_beyond_the_admission_limit(self, reference: Factory) -> None:
        """With admission_limit=3, of 6 concurrent requests 3 stream and 3 get 429."""
        srv = reference(mode="thread", admission_limit=3, retry_after_s=7, request_overhead_ms=0)

        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=30) as client:
                return list(await asyncio.gather(*(client.post(
                    srv.base_url + "/chat/completions", json=chat_body(max_tokens=20))
                    for _ in range(6))))

        responses = asyncio.run(burst())
        assert sorted(r.status_code for r in responses) == [200] * 3 + [429] * 3
        rejected = [r for r in responses if r.status_code == 429]
        assert all(r.headers["retry-after"] == "7" for r in rejected)
        assert all(r.json()["error"]["code"] == 429 for r in rejected)
        outcomes = sorted(t["outcome"] for t in srv.truth())
        assert outcomes == ["ok"] * 3 + ["rejected"] * 3

    def test_full_batch_queues_and_ttft_waits(self, reference: Factory) -> None:
        """max_batch=1: the second stream is queued until the first ends."""
        srv = reference(mode="thread", max_batch=1, request_overhead_ms=0, jitter_ms=0,
                        decode_base_ms=10, decode_per_stream_ms=0)

        async def two() -> None:
            async with httpx.AsyncClient(timeout=30) as client:
                first = client.post(srv.base_url + "/chat/completions",
                                    json=chat_body(max_tokens=20), headers={"x-request-id": "a"})
                task = asyncio.ensure_future(first)
                await asyncio.sleep(0.05)
                await client.post(srv.base_url + "/chat/completions",
                                  json=chat_body(max_tokens=5), headers={"x-request-id": "b"})
                await task

        asyncio.run(two())
        truth = {t["request_id"]: t for t in srv.truth()}
        assert (truth["a"]["queued"], truth["b"]["queued"]) == (False, True)
        # b is admitted only once a's last token is out
        assert truth["b"]["admitted_ns"] >= truth["a"]["writes"][-3][1]
        assert (truth["b"]["first_write_ns"] - truth["b"]["received_ns"]) / MS > 100

    def test_truth_log_matches_client_arrivals(self, reference: Factory) -> None:
        """Each content write lands at the client within a few ms of its server stamp, and
        the server's stamps are within a few ms of the engine schedule."""
        srv = reference(request_overhead_ms=0)
        s = stream(srv, chat_body(max_tokens=20), rid="t")
        [truth] = srv.truth()
        writes = [w for w in truth["writes"] if w[3] == "content"]
        arrivals = content_arrivals(s)
        assert len(writes) == len(arrivals) == 20
        lag = np.array(arrivals) - np.array([w[0] for w in writes])
        # the stamp follows the write syscall, so a server preempted in between can stamp
        # after the client already has the bytes: small negatives happen under load
        assert abs(np.median(lag)) < 1 * MS and lag.min() > -10 * MS
        sched = np.array([w[0] - w[1] for w in writes])
        assert sched.min() >= 0 and np.median(sched) < 2 * MS
        assert truth["first_write_ns"] == writes[0][0]


# ----------------------------------------------------------------------- faults

def fault_stream(reference: Factory, timeout: float = 30.0, **fault: Any) -> tuple[
        Streamed, dict[str, Any]]:
    params = {"request_overhead_ms": 0, "decode_base_ms": 2, "decode_per_stream_ms": 0,
              "fault_role_first_chunk": 0, **fault}
    srv = reference(mode="thread", **params)
    s = stream(srv, chat_body(max_tokens=10), timeout=timeout)
    [truth] = srv.truth()
    return s, truth


class TestFaults:
    def test_disconnect_mid_stream(self, reference: Factory) -> None:
        """The connection is cut after half the tokens: no finish_reason, no [DONE]."""
        s, truth = fault_stream(reference, fault_disconnect=1.0)
        assert s.error == "RemoteProtocolError"
        assert len(s.content().split()) == 5 and b"[DONE]" not in s.raw
        assert truth["outcome"] == "fault:disconnect" and truth["completion_tokens"] == 5

    def test_malformed_line(self, reference: Factory) -> None:
        """One data line of cut-off JSON mid-stream; the rest of the stream is intact."""
        s, truth = fault_stream(reference, fault_malformed_line=1.0)
        bad = [e for e in s.events if e.startswith("{") and not e.endswith("}")]
        assert len(bad) == 1 and len(s.content().split()) == 10
        assert truth["outcome"] == "fault:malformed_line"

    def test_no_done(self, reference: Factory) -> None:
        """The stream ends cleanly with usage but without `data: [DONE]`."""
        s, truth = fault_stream(reference, fault_no_done=1.0)
        assert s.error is None and "[DONE]" not in s.events and "usage" in s.chunks()[-1]
        assert truth["outcome"] == "fault:no_done"

    def test_error_payload_inside_200(self, reference: Factory) -> None:
        """An {"error": ...} event mid-stream in a 200 response, then the stream ends."""
        s, truth = fault_stream(reference, fault_error_payload=1.0)
        assert s.status == 200
        errors = [c for c in s.chunks() if "error" in c]
        assert len(errors) == 1 and errors[0]["error"]["code"] == 500
        assert len(s.content().split()) == 5
        assert truth["outcome"] == "fault:error_payload"

    def test_http_500(self, reference: Factory) -> None:
        """A 500 with an OpenAI-shaped error body instead of a stream."""
        s, truth = fault_stream(reference, fault_http_500=1.0)
        assert s.status == 500 and json.loads(s.raw)["error"]["code"] == 500
        assert (truth["status"], truth["outcome"]) == (500, "fault:http_500")

    def test_stall_longer_than_the_client_timeout(self, reference: Factory) -> None:
        """A per-stream stall of 3 s trips a 0.5 s client read timeout mid-stream."""
        s, truth = fault_stream(reference, timeout=0.5, fault_stall_prob=1.0, fault_stall_s=3)
        assert s.error == "ReadTimeout" and len(s.content().split()) == 5
        assert truth["outcome"] == "fault:stall" and truth["client_disconnected"]

    def test_role_first_chunk_and_pings_are_not_content(self, reference: Factory) -> None:
        """Role-only chunk at admission and ': ping' comments while waiting."""
        s, truth = fault_stream(reference, fault_role_first_chunk=1.0,
                                fault_ping_interval_s=0.05, prefill_overhead_ms=200)
        assert s.chunks()[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert s.events.count(": ping") >= 2
        kinds = [w[3] for w in truth["writes"]]
        assert kinds[0] == "role" and "ping" in kinds[:kinds.index("content")]
        assert truth["first_write_ns"] == truth["writes"][kinds.index("content")][0]

    def test_crlf(self, reference: Factory) -> None:
        """Every SSE line ends with CRLF; no bare LF is left."""
        s, _ = fault_stream(reference, fault_crlf=1.0)
        assert s.raw.count(b"\r\n\r\n") == len(s.events)
        assert b"\n" not in s.raw.replace(b"\r\n", b"")

    def test_reasoning_before_the_answer(self, reference: Factory) -> None:
        """reasoning_content tokens come first and are inside completion_tokens."""
        s, truth = fault_stream(reference, fault_reasoning_tokens=4)
        deltas = [c["choices"][0]["delta"] for c in s.chunks() if c.get("choices")]
        kinds = ["reasoning" if "reasoning_content" in d else "content" for d in deltas]
        assert kinds == ["reasoning"] * 4 + ["content"] * 6
        assert s.chunks()[-1]["usage"]["completion_tokens"] == 10
        assert truth["first_answer_ns"] > truth["first_write_ns"]

    def test_no_usage_even_when_asked(self, reference: Factory) -> None:
        """include_usage is ignored: no usage chunk, the stream is otherwise whole."""
        s, truth = fault_stream(reference, fault_no_usage=1.0)
        assert not any("usage" in c for c in s.chunks()) and s.events[-1] == "[DONE]"
        assert truth["outcome"] == "ok" and "no_usage" in truth["faults"]

    def test_prompt_usage_factor_bills_prompt_tokens_nobody_sent(self, reference: Factory
                                                                 ) -> None:
        """Issue 24: usage reports 3x the prompt in every API's usage (prefill runs on the
        true count); the truth log keeps both."""
        srv = reference(mode="thread", prompt_usage_factor=3.0)
        s = stream(srv, chat_body(prompt_words=20, max_tokens=4))
        assert s.chunks()[-1]["usage"] == {"prompt_tokens": 60, "completion_tokens": 4,
                                           "total_tokens": 64}
        whole = httpx.post(srv.base_url + "/completions", timeout=10, json={
            "model": srv.model, "prompt": "one two three", "max_tokens": 2}).json()
        assert whole["usage"]["prompt_tokens"] == 9
        answers = stream(srv, {"model": srv.model, "input": "one two three four",
                               "max_output_tokens": 2, "stream": True}, path="/responses")
        done = [c for c in answers.chunks() if c.get("type") == "response.incomplete"]
        assert done[0]["response"]["usage"]["input_tokens"] == 12
        truth = srv.truth()
        assert [(t["prompt_tokens"], t["billed_prompt_tokens"]) for t in truth] == [
            (20, 60), (3, 9), (4, 12)]


class TestWriter:
    def test_a_fast_write_held_by_flow_control_keeps_the_order(self) -> None:
        """If send() suspends (client not reading), later tokens queue behind it: the
        words still arrive in order and every write is stamped once, in order."""
        from evalkit.reference import get_profile
        from evalkit.reference.answers import answer_text
        from evalkit.reference.engine import Seq
        from evalkit.reference.faults import plan_request
        from evalkit.reference.loop import Stream
        from evalkit.reference.parse import Job
        from evalkit.reference.writer import Writer

        async def scenario() -> tuple[list[bytes], dict[str, Any]]:
            gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            bodies: list[bytes] = []

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.body" and len(bodies) == 1:
                    await gate  # the second chunk meets a paused transport
                bodies.append(message.get("body", b""))

            prof = get_profile("gpu", {"fault_role_first_chunk": 0})
            plan = plan_request(prof, 0, 0, 5, ignore_eos=True)
            stream_ = Stream(plan, 1)
            truth: dict[str, Any] = {"writes": [], "first_write_ns": None,
                                     "first_answer_ns": None, "request_id": "w"}
            writer = Writer(send, stream_, Job(True, True, 1, 5, 0, True, False), "w", 0,
                             truth)
            task = asyncio.ensure_future(writer.stream())
            seq = Seq(1, 5, sink=stream_)
            for i in range(5):
                for _ in range(3):
                    await asyncio.sleep(0)  # let the writer reach its idle wait
                seq.generated += 1
                stream_.on_token(1000 + i, seq)
                if i == 3:
                    gate.set_result(None)
            await asyncio.wait_for(task, 5)
            return bodies, truth

        bodies, truth = asyncio.run(scenario())
        words = [w.decode() for b in bodies for w in re.findall(
            rb'"content":"([^"]*)"', b)]
        # the primary model's answer to no prompt (the Stream's default), word by word
        expected = answer_text("", tokens=5)
        assert "".join(words) == expected and len(words) == 5 and len(set(words)) > 1
        content = [w for w in truth["writes"] if w[3] == "content"]
        assert [w[1] for w in content] == [1000, 1001, 1002, 1003, 1004]
        stamps = [w[0] for w in content]
        assert stamps == sorted(stamps)
        # the last step's token and [DONE] in the one write that ends the body
        assert b'"finish_reason":"length"' in bodies[-1] and bodies[-1].endswith(b"[DONE]\n\n")
        assert [w[3] for w in truth["writes"]][-2:] == ["content", "done"]
        assert truth["writes"][-1][0] == truth["writes"][-2][0]  # stamped as one write
