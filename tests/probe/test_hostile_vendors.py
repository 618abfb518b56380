"""Hostile vendors: every wait has a deadline, every buffer a cap, the key goes out once.

Each server below misbehaves in one way, over a real loopback socket (no mocked
transport): a stream that never ends, headers then silence, a line with no end, a
gzip body nobody asked for, 429s with Retry-After, an error that echoes the key.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import http.server
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.load.loops import closed_loop
from evalkit.probe.plan.prompts import count_tokens, synthetic
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.probe.wire.sse import SSEParser, SSETooLarge
from evalkit.records import RequestRecord
from tests.probe.helpers import http_servers

#: the bound on how long any one of these servers keeps a connection busy
SERVER_LIMIT_S = 20.0


def _chunk(text: str, finish: str | None = None) -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


class _Vendor(http.server.BaseHTTPRequestHandler):
    """One misbehaviour per subclass (`mode`); records the headers of every request."""

    mode: ClassVar[str] = "ok"
    seen: ClassVar[list[dict[str, list[str]]]]
    calls: ClassVar[list[float]]

    def do_GET(self) -> None:
        body = b'{"data": [{"id": "m"}]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers: dict[str, list[str]] = {}
        for k, v in self.headers.items():
            headers.setdefault(k.lower(), []).append(v)
        type(self).seen.append(headers)
        type(self).calls.append(time.monotonic())
        getattr(self, f"_{self.mode}")()

    def _sse_head(self, extra: dict[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()

    def _ok(self) -> None:
        self._sse_head()
        self.wfile.write(_chunk("hi") + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _cookie(self) -> None:  # a session cookie on every answer, as load balancers set
        self._sse_head({"Set-Cookie": "route=probe-7; Path=/"})
        self.wfile.write(_chunk("hi") + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _endless(self) -> None:  # a token every 50 ms, never a finish
        self._sse_head()
        end = time.monotonic() + SERVER_LIMIT_S
        while time.monotonic() < end:
            try:
                self.wfile.write(_chunk("x"))
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.05)

    def _silent(self) -> None:  # headers, then nothing
        self._sse_head()
        self.wfile.flush()
        time.sleep(3)

    def _long_line(self) -> None:  # 4 MB of one line, in 64 KB writes
        self._sse_head()
        try:
            self.wfile.write(b"data: ")
            for _ in range(64):
                self.wfile.write(b"y" * 65536)
            self.wfile.write(b"\n\n")
        except OSError:
            pass

    def _abort(self) -> None:  # vLLM/SGLang under overload: cut, but with a finish_reason
        self._sse_head()
        self.wfile.write(_chunk("hi") + _chunk(" there", "abort") + b"data: [DONE]\n\n")

    def _abort_then_stop(self) -> None:  # the abort, then a 'stop' to paper over it
        self._sse_head()
        self.wfile.write(_chunk("hi", "abort") + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _blank_first(self) -> None:  # one space at once, the first word 0.5 s later
        self._sse_head()
        self.wfile.write(_chunk(" "))
        self.wfile.flush()
        time.sleep(0.5)
        self.wfile.write(_chunk("hi") + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _invisible_first(self) -> None:  # a zero-width space at once, the word 0.5 s later
        self._sse_head()
        self.wfile.write(_chunk("\u200b\ufeff\u2060"))
        self.wfile.flush()
        time.sleep(0.5)
        self.wfile.write(_chunk("hi") + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _after_done(self) -> None:  # the answer, [DONE], then a flood no client reads
        self._sse_head()
        self.wfile.write(_chunk("hi") + _chunk(" there", "stop") + b"data: [DONE]\n\n"
                         + _chunk(" x") * 200)

    def _flood(self) -> None:  # far more chunks than max_tokens, as fast as it can
        self._sse_head()
        with contextlib.suppress(OSError):
            self.wfile.write(_chunk(" x") * 9000 + _chunk(" x", "stop") + b"data: [DONE]\n\n")

    def _nested(self) -> None:  # an event's data nested 3,000 deep (json.loads recurses)
        self._sse_head()
        self.wfile.write(_chunk("hi") + b"data: " + b"[" * 3000 + b"]" * 3000 + b"\n\n"
                         + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _nested_error(self) -> None:  # a 400 whose body is nested 3,000 deep
        body = b"[" * 3000 + b"]" * 3000
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _huge_delta(self) -> None:  # one 600 KB delta (past the tokenizer's own bounds)
        self._sse_head()
        self.wfile.write(_chunk(" a" * 300_000) + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _blank_only(self) -> None:  # whitespace, and nothing else, then a finish
        self._sse_head()
        self.wfile.write(_chunk(" ") + _chunk("\n", "stop") + b"data: [DONE]\n\n")

    def _error_event(self) -> None:  # an SSE error event whose data has no "error" key
        self._sse_head()
        self.wfile.write(_chunk("hi") + b'event: error\ndata: {"message": "overloaded"}\n\n'
                         + _chunk(" there", "stop") + b"data: [DONE]\n\n")

    def _whole(self) -> None:  # the answer buffered and sent as one chunk
        self._sse_head()
        self.wfile.write(_chunk(" word" * 8, "length") + b"data: [DONE]\n\n")

    def _all_but_one(self) -> None:  # buffered, then all but the last token at once
        self._sse_head()
        self.wfile.write(_chunk(" word" * 7))
        self.wfile.flush()
        time.sleep(0.01)
        self.wfile.write(_chunk(" word", "length") + b"data: [DONE]\n\n")

    def _streamed(self) -> None:  # the same eight tokens, one chunk each
        self._sse_head()
        for i in range(8):
            self.wfile.write(_chunk(" word", "length" if i == 7 else None))
            self.wfile.flush()
            time.sleep(0.005)
        self.wfile.write(b"data: [DONE]\n\n")

    def _gzip(self) -> None:
        self._sse_head({"Content-Encoding": "gzip"})
        self.wfile.write(gzip.compress(_chunk("hi", "stop") + b"data: [DONE]\n\n"))

    def _retry_after(self) -> None:  # the first two are turned away for 1 s
        if len(type(self).calls) <= 2:
            self.send_response(429)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._ok()

    def _echo_key(self) -> None:  # a 401 that repeats the credential back, in three forms
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        body = (f"bad key {token} / {token.upper()} / "
                f"{base64.b64encode(token.encode()).decode()}").encode()
        self.send_response(401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def vendor() -> Iterator[Callable[[str], tuple[str, type[_Vendor]]]]:
    """Factory: vendor(mode) -> (base URL, handler class with .seen and .calls)."""
    with http_servers() as serve:
        def start(mode: str) -> tuple[str, type[_Vendor]]:
            handler = type(f"V_{mode}", (_Vendor,), {"mode": mode, "seen": [], "calls": []})
            return serve(handler), handler

        yield start


def _one(target: Target, max_tokens: int = 8) -> RequestRecord:
    async def go() -> RequestRecord:
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            return await prober.stream(synthetic(16, max_tokens, "p", 0), "baseline", 1)
    return asyncio.run(go())


def _loop(target: Target, phase: str, max_requests: int,
          notes: list[str] | None = None) -> tuple[list[RequestRecord], float]:
    """One closed-loop worker, `max_requests` requests: its records and time paused."""
    records: list[RequestRecord] = []

    async def go() -> float:
        async with Prober(target, time.perf_counter_ns(), "t") as prober:
            await closed_loop(prober, lambda: synthetic(16, 4, "p", 0), records.append,
                              phase=phase, level=1, workers=1, duration_s=None,
                              max_requests=max_requests,
                              on_note=None if notes is None else notes.append)
            return prober.paused_s
    paused = asyncio.run(go())
    return records, paused


class TestBoundedInTime:
    def test_an_endless_stream_ends_at_its_deadline_with_what_it_streamed(
            self, vendor: Any) -> None:
        """A trickle that never finishes is a timeout at the deadline, chunks kept."""
        url, _ = vendor("endless")
        started = time.monotonic()
        rec = _one(Target(url, "m", timeout_s=5, deadline_s=1.5))
        took = time.monotonic() - started
        assert rec.outcome == "timeout"
        assert "deadline" in (rec.error or "")
        assert 1.4 < took < 4.0
        assert len(rec.chunks) >= 10  # a chunk every 50 ms for 1.5 s, all kept

    def test_the_default_deadline_follows_the_output_asked_for(self) -> None:
        """Read timeout plus half a second per requested token, unless set."""
        assert Target("u", "m", timeout_s=30).request_deadline(32) == 46.0
        assert Target("u", "m", timeout_s=30, deadline_s=5).request_deadline(32) == 5.0

    def test_headers_then_silence_stops_the_phase_after_the_first(
            self, vendor: Any) -> None:
        """One wait for a stream that never speaks, not one per request of the phase."""
        url, handler = vendor("silent")
        notes: list[str] = []
        records, _ = _loop(Target(url, "m", timeout_s=0.5), "baseline", 6, notes)
        assert [r.outcome for r in records] == ["timeout"]
        assert len(handler.calls) == 1
        assert notes and "without any content" in notes[0]


def test_a_vendors_cookie_never_rides_along(vendor: Any) -> None:
    """What a vendor sets is not sent back: no state of its choosing marks the probe's
    later requests (`target._NoCookies`)."""
    url, handler = vendor("cookie")
    records, _ = _loop(Target(url, "m", timeout_s=5), "baseline", 3)
    assert [r.outcome for r in records] == ["ok"] * 3
    assert len(handler.seen) == 3 and not any("cookie" in h for h in handler.seen)


class TestBoundedInMemory:
    def test_a_line_with_no_end_is_a_protocol_error(self, vendor: Any) -> None:
        """4 MB of one line stops at the 1 MiB cap: an error outcome, not a buffer."""
        url, _ = vendor("long_line")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "error"
        assert "longer than 1,048,576 bytes" in (rec.error or "")

    def test_the_parser_joins_a_long_line_once(self) -> None:
        """Reads of one line are kept apart and joined when its end arrives (linear time),
        and a line under the cap still makes its event."""
        parser = SSEParser(max_bytes=1 << 20)
        assert parser.feed(b"data: ") == []
        for _ in range(15):
            assert parser.feed(b"z" * 65536) == []
        assert parser.pending
        [event] = parser.feed(b"\n\n")
        assert event.data == "z" * (15 * 65536)
        assert not parser.pending

    def test_a_gzip_stream_says_what_it_is(self, vendor: Any) -> None:
        """'accept-encoding: identity' was asked for; a gzip body is named, not 'cut off'."""
        url, handler = vendor("gzip")
        rec = _one(Target(url, "m", timeout_s=5))
        assert handler.seen[0]["accept-encoding"] == ["identity"]
        assert rec.outcome == "error"
        assert "gzip-encoded" in (rec.error or "")


class TestEndsThatAreNotEnds:
    @pytest.mark.parametrize("mode", ["abort", "abort_then_stop"])
    def test_an_aborted_stream_is_not_ok(self, vendor: Any, mode: str) -> None:
        """A finish_reason of 'abort' is a stream the server gave up on: incomplete, with
        the reason named. Counted ok, an overloaded server that cuts its streams would show
        no failure rate and a ramp that held (a green Q4 no evidence supports)."""
        url, _ = vendor(mode)
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "incomplete"
        assert rec.error == ("the server ended the stream with finish_reason 'abort', not a "
                             f"normal end ({len(rec.chunks)} content chunks had arrived)")
        assert len(rec.chunks) == 2

    def test_an_sse_error_event_is_an_error(self, vendor: Any) -> None:
        """`event: error` mid-stream, then a 'stop': an error whatever the data says (the
        chat adapter reads data only, and {"message": ...} carries no "error" key)."""
        url, _ = vendor("error_event")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "error"
        assert rec.error == 'error payload in stream: {"message": "overloaded"}'

    def test_a_normal_end_is_ok(self, vendor: Any) -> None:
        """The same stream ending in 'stop' is ok: the rule is about the reason."""
        url, _ = vendor("ok")
        rec = _one(Target(url, "m", timeout_s=5))
        assert (rec.outcome, rec.finish_reason, rec.error) == ("ok", "stop", None)


class TestFirstWord:
    def test_a_blank_first_chunk_does_not_start_the_ttft(self, vendor: Any) -> None:
        """One space sent at once, the first word 0.5 s later: the TTFT is the word's
        (timed from the space it read 0.2 ms, and Q1 'held' for a 3 s wait). The space's
        token rides on the first word's chunk, so every token is still counted."""
        url, _ = vendor("blank_first")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "ok"
        assert rec.ttft_s is not None and 0.45 < rec.ttft_s < 2.0
        assert rec.ttft_s == rec.chunks[0][0] == rec.ttfa_s
        assert [n for _, n in rec.chunks] == [count_tokens(" ") + count_tokens("hi"),
                                              count_tokens(" there")]
        assert rec.counted_output_tokens == 3
        assert rec.chunks[1][0] - rec.chunks[0][0] < 0.1  # the wait is not in the rhythm

    def test_an_invisible_first_chunk_does_not_start_the_ttft(self, vendor: Any) -> None:
        """A zero-width space, a BOM and a word joiner sent at once (str.strip keeps all
        three), the first word 0.5 s later: the TTFT and TTFA are the word's."""
        url, _ = vendor("invisible_first")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "ok" and len(rec.chunks) == 2
        assert rec.ttft_s is not None and 0.45 < rec.ttft_s < 2.0
        assert rec.ttft_s == rec.ttfa_s

    def test_a_stream_of_whitespace_is_no_content(self, vendor: Any) -> None:
        """Blank text and a finish: nothing was generated a reader could see."""
        url, _ = vendor("blank_only")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "error" and rec.chunks == [] and rec.ttft_s is None
        assert rec.error == "stream finished (stop) with no content"
        assert rec.counted_output_tokens == 2


class TestNothingPastTheEnd:
    def test_content_after_done_is_not_counted(self, vendor: Any) -> None:
        """200 tokens after [DONE] (an OpenAI client has stopped reading): counted, they
        read as 10x the speed; the record is a protocol error, its figures never used."""
        url, _ = vendor("after_done")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "error" and "after the stream's end" in (rec.error or "")
        assert len(rec.chunks) == 2 and rec.counted_output_tokens == 2

    def test_a_flood_of_chunks_is_stopped_not_kept(self, vendor: Any) -> None:
        """9,000 chunks for max_tokens 8: stopped at the cap (4 x 8 + 8,192), an error."""
        from evalkit.probe.client.streamstate import max_content_chunks

        url, _ = vendor("flood")
        rec = _one(Target(url, "m", timeout_s=10))
        assert rec.outcome == "error" and "content chunks" in (rec.error or "")
        assert len(rec.chunks) == max_content_chunks(8) == 8224


class TestHostileData:
    """Data that made a stream raise out of `Prober.stream` (which must never raise):
    each is now one record's outcome."""

    def test_json_nested_thousands_deep_is_a_malformed_event(self, vendor: Any) -> None:
        url, _ = vendor("nested")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "error" and "malformed event data" in (rec.error or "")

    def test_an_error_body_nested_thousands_deep_is_an_error(self, vendor: Any) -> None:
        url, _ = vendor("nested_error")
        rec = _one(Target(url, "m", timeout_s=5))
        assert rec.outcome == "error" and rec.http_status == 400

    def test_a_delta_past_the_tokenizers_bounds_is_counted(self, vendor: Any) -> None:
        url, _ = vendor("huge_delta")
        rec = _one(Target(url, "m", timeout_s=10))
        assert rec.outcome == "ok", rec.error
        assert rec.counted_output_tokens is not None
        assert abs(rec.counted_output_tokens - 300_002) <= 20  # a token or so a slice


class TestDidItStream:
    @pytest.mark.parametrize("mode", ["whole", "all_but_one", "streamed"])
    def test_an_endpoint_that_sends_answers_whole_earns_no_valid_run(
            self, vendor: Any, tmp_path: Path, mode: str) -> None:
        """Answers sent whole (or all but the last token at once) have a TTFT and an
        aggregate throughput but no stream: with a 429 past 4 streams such a vendor was
        STREAMING-READY (Q2 on aggregate, Q4 on admission). The run is degraded, saying
        so; the same tokens sent one a chunk are a stream and the run stays valid."""
        url, _ = vendor(mode)
        run_probe(ProbeConfig(base_url=url, model="m", phases=("connect", "baseline"),
                              overrides={"baseline": {"requests": 3},
                                         "canaries": {"count": 0},
                                         # the subject is the stream, not the client: a
                                         # busy host must not make the streamed case a
                                         # client-bound one (a limit of 1 never binds)
                                         "client_check": {"loop_lag_p99_s": 1,
                                                          "cpu_fraction": 1,
                                                          "coalesced_fraction": 1,
                                                          "send_lag_fraction": 1}}),
                    tmp_path / "r")
        summary = json.loads((tmp_path / "r" / "summary.json").read_text())
        check = summary["checks"]["streaming"]
        whole = mode != "streamed"
        assert (check["checked"], check["one_chunk"], check["flagged"]) == (
            3, 3 if whole else 0, whole)
        reason = ("the endpoint did not stream: 3 of 3 requests came with most of their "
                  "output in one chunk, so TPOT and stream rates describe no stream")
        assert summary["validity"]["status"] == ("degraded" if whole else "valid"), \
            summary["validity"]["reasons"]
        assert (reason in summary["validity"]["reasons"]) is whole


class TestPolite:
    def test_retry_after_is_honoured_and_counted(self, vendor: Any) -> None:
        """Turned away with Retry-After: 1, a worker waits 1 s before its next try."""
        url, handler = vendor("retry_after")
        records, paused = _loop(Target(url, "m", timeout_s=5), "ramp", 3)
        assert [r.outcome for r in records] == ["rejected", "rejected", "ok"]
        assert [r.retry_after_s for r in records[:2]] == [1.0, 1.0]
        gaps = [b - a for a, b in zip(handler.calls, handler.calls[1:], strict=False)]
        assert all(g >= 0.95 for g in gaps), gaps
        assert paused == pytest.approx(2.0)


class TestYourKey:
    def test_an_explicit_credential_header_goes_out_alone(
            self, vendor: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With $OPENAI_API_KEY set and --header Authorization, one Authorization header:
        the user's; run.json says where the credential came from, never its value."""
        url, handler = vendor("ok")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789")
        run_probe(ProbeConfig(base_url=url, model="m", phases=("connect", "baseline"),
                              headers=(("Authorization", "Bearer sk-user-9876543210"),),
                              overrides={"baseline": {"requests": 2}}), tmp_path / "r")
        for headers in handler.seen:
            assert headers["authorization"] == ["Bearer sk-user-9876543210"]
        run = (tmp_path / "r" / "run.json").read_text()
        assert json.loads(run)["target"]["credential"] == "header Authorization"
        assert "sk-user" not in run and "sk-env" not in run

    def test_an_echoed_key_is_redacted_in_every_form(self, vendor: Any) -> None:
        """Plain, upper case and base64: none of them reaches the record."""
        url, _ = vendor("echo_key")
        key = "sk-secret-abcdef123456"
        rec = _one(Target(url, "m", timeout_s=5, secret=key))
        text = json.dumps([rec.error, rec.error_body])
        assert rec.http_status == 401
        for form in (key, key.upper(), base64.b64encode(key.encode()).decode().rstrip("=")):
            assert form not in text, form
        assert text.count("***") >= 3


def test_sse_line_cap_raises() -> None:
    """Past the cap the parser refuses, whether the line comes in one read or many."""
    with pytest.raises(SSETooLarge):
        SSEParser(max_bytes=1000).feed(b"data: " + b"a" * 2000)
    parser = SSEParser(max_bytes=1000)
    with pytest.raises(SSETooLarge):
        for _ in range(10):
            parser.feed(b"b" * 200)
    with pytest.raises(SSETooLarge):  # many short data lines: the event's data is capped
        SSEParser(max_bytes=1000).feed(b"data: aaaa\n" * 300)
