"""A connection the server closed is not the vendor's failure when our client lost the
race, and is when the server dropped a request it had taken (`evalkit.probe.wire.reconnect`).

Small servers over real loopback sockets, each misbehaving one way. The race llama.cpp's
server runs against us (it closes after every stream while advertising keep-alive, and a
request written as the close arrives dies unanswered) is made deterministic here: the
server answers a stream, keeps the connection, reads the *next* request on it and only
then closes without a word. The request must go out once more on a fresh connection,
timed from its first send, counted in `reconnects`, never as an error, and the run must
give every request a fresh connection from then on, saying so in run.json. A fresh
connection closed unanswered, or a close after part of an answer, stays the server's
failure, and nothing is sent a third time or past the request's deadline.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalkit.analysis.thresholds import ClientLimits
from evalkit.probe.client.clients import Target
from evalkit.probe.client.stream import Prober
from evalkit.probe.load.shard import ShardTask, run_shard
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.plan.settings import ProbeConfig
from evalkit.probe.suite import run_probe
from evalkit.probe.wire import http11
from evalkit.probe.wire.reconnect import FreshConnections
from evalkit.records import RequestRecord
from evalkit.rundir.store import read_run_files
from tests.probe.helpers import RawServer

MODEL = "m"
#: the pause before a dropped request's close: a re-sent request's TTFT includes it,
#: because its times run from the first send
HOLD_S = 0.15

#: what the server does with a request: answer it, or drop it (read, wait, then close
#: with an end of stream or a reset), or answer part and close, or sit on it
Action = str
#: (the connection's number from 1, whether a stream was answered on it already, the
#: request's method) -> the action
Script = Callable[[int, bool, str], Action]


def _sse(text: str, finish: str | None = None) -> bytes:
    event = json.dumps({"choices": [{"index": 0, "delta": {"content": text},
                                     "finish_reason": finish}]})
    return b"data: %s\n\n" % event.encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


#: a stream, kept alive as llama.cpp's server says it (and then does not)
STREAM_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
               b"transfer-encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n")
MODELS = b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'


class ClosingServer(RawServer):
    """A raw HTTP/1.1 server on loopback that does with each request what `script` says,
    and keeps the requests it read (method, connection number: `calls`)."""

    def __init__(self, script: Script, head: bytes = STREAM_HEAD) -> None:
        self.script = script
        self.head = head  # a stream's head
        self.calls: list[tuple[str, int]] = []
        super().__init__([])

    @property
    def posts(self) -> int:
        return sum(m == "POST" for m, _ in self.calls)

    def _serve(self, conn: socket.socket) -> None:
        self._serve_one(conn, self.connections)  # (tests open connections one by one)

    def _serve_one(self, conn: socket.socket, number: int) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(10)
        buf, streamed = b"", False
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    if not (more := conn.recv(65536)):
                        return
                    buf += more
                head, _, rest = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                size = next((int(v) for k, _, v in (h.partition(b":") for h in lines[1:])
                             if k.strip().lower() == b"content-length"), 0)
                while len(rest) < size:
                    rest += conn.recv(65536)
                buf = rest[size:]
                method = lines[0].split(b" ")[0].decode()
                self.calls.append((method, number))
                action = self.script(number, streamed, method)
                if action == "answer":
                    self._answer(conn, method)
                    streamed = streamed or method == "POST"
                    continue
                if action == "hang":
                    time.sleep(5)
                    return
                time.sleep(HOLD_S)
                if action == "reset":  # SO_LINGER 0: the close is a reset, not an end
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                elif action == "part-head":
                    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-")
                elif action == "part-body":
                    conn.sendall(STREAM_HEAD + _chunk(_sse("hi")))
                return  # "drop" and the rest: closed
        except OSError:
            return
        finally:
            conn.close()

    def _answer(self, conn: socket.socket, method: str) -> None:
        if method == "GET":
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(MODELS), MODELS))
            return
        conn.sendall(self.head)
        for word, finish in (("hi", None), (" there", None), (" again", "stop")):
            conn.sendall(_chunk(_sse(word, finish)))
            time.sleep(0.002)
        conn.sendall(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")


def llama_like(drop: Action = "drop") -> Script:
    """llama.cpp's server, with its close made to race the next request every time:
    a stream is answered, and the next request on that connection is read and dropped."""
    return lambda number, streamed, method: drop if streamed else "answer"


def _streams(url: str, n: int, target: dict[str, float] | None = None
             ) -> tuple[list[RequestRecord], dict[str, object]]:
    """n requests one after another from one prober (one stream client, as a worker's),
    and what its run-wide connection knowledge says after them."""
    async def go() -> tuple[list[RequestRecord], dict[str, object]]:
        async with Prober(Target(url, MODEL, **(target or {"timeout_s": 5})),
                          time.perf_counter_ns(), "t") as p:
            recs = [await p.stream(synthetic(16, 4, f"p{i}", 0), "baseline", 1)
                    for i in range(n)]
            return recs, p.clients.reuse.describe()
    return asyncio.run(go())


@pytest.fixture(params=["lean", "httpcore"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test over the lean transport and over httpcore's pool (`http11.LEAN` off)."""
    http11.LEAN = request.param == "lean"
    try:
        yield request.param
    finally:
        http11.LEAN = True


class TestTheRaceIsOurs:
    @pytest.mark.parametrize("close", ["drop", "reset"])
    def test_a_request_the_servers_close_raced_goes_once_more(self, transport: str,
                                                              close: Action) -> None:
        """The second request is read and dropped on the reused connection (an end of
        stream, or a reset): it goes again on a fresh connection, is ok, counted as one
        reconnect, timed from its first send (its TTFT holds the server's wait before
        the close). The close came right after a stream: from then on every request
        gets a fresh connection, so the third is never raced."""
        with ClosingServer(llama_like(close)) as srv:
            recs, connections = _streams(srv.base_url, 3)
        assert [(r.outcome, r.reconnects) for r in recs] == [("ok", 0), ("ok", 1), ("ok", 0)]
        assert srv.posts == 4 and srv.connections == 3  # one resend; the third: fresh
        second = recs[1]
        assert second.sent_s == 0.0 and second.ttft_s is not None and second.ttft_s > HOLD_S
        # it left on an open connection: the one opened to send it again, after its first
        # send, is part of its wait, not of its send lag
        assert second.connect_s is None and recs[2].connect_s is not None
        assert recs[2].ttft_s is not None and recs[2].ttft_s < HOLD_S
        assert connections["fresh_per_request"] is True
        assert connections["phase"] == "baseline" and connections["level"] == 1
        assert "as the next request reached it, unanswered while advertising Keep-Alive: " \
               "timeout=5, max=100" in str(connections["why"])

    def test_what_the_server_said_is_cleaned_before_run_json(self, transport: str) -> None:
        """A long Keep-Alive header of UTF-8 (not latin-1, as a header is read), on either
        transport: the switch's reason quotes it printable and bounded, and nothing
        raises (a C1 byte of it, 0x82, is no character a terminal may see)."""
        head = STREAM_HEAD.replace(b"timeout=5, max=100",
                                   "timeout=5 \u20ac".encode() + b"x" * 300)
        with ClosingServer(llama_like(), head) as srv:
            recs, connections = _streams(srv.base_url, 2)
        assert [(r.outcome, r.reconnects) for r in recs] == [("ok", 0), ("ok", 1)]
        why = str(connections["why"])
        assert "\x82" not in why and "Keep-Alive: timeout=5" in why and "[cut]" in why
        assert len(why) < 400

    def test_a_run_against_such_a_server_has_no_error_and_says_why(self, tmp_path: Path
                                                                   ) -> None:
        """Through the whole probe (the connect gate's own client, a level's warmed
        connections, a ramp): no error anywhere, the reconnect counted in its level and
        the run, shown beside the level's outcomes, and run.json saying when and why
        every request got a fresh connection."""
        with ClosingServer(llama_like()) as srv:
            run_probe(ProbeConfig(srv.base_url, MODEL, phases=("connect", "baseline", "ramp"),
                                  levels=(1, 2, 4), overrides={
                                      "timeout_s": 5, "baseline": {"requests": 3},
                                      "canaries": {"count": 0}, "connect": {"rtt_samples": 2},
                                      "ramp": {"level_duration_s": 0.3,
                                               "level_min_requests": 6},
                                      # the subject is the connections, not the client:
                                      # this server's threads share our GIL (a limit of 1
                                      # never binds)
                                      "client_check": {"loop_lag_p99_s": 1,
                                                       "cpu_fraction": 1,
                                                       "coalesced_fraction": 1,
                                                       "send_lag_fraction": 1}}),
                      tmp_path / "run")
        meta, records = read_run_files(tmp_path / "run")
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())
        assert {r.outcome for r in records} == {"ok"}, [r.error for r in records]
        assert summary["outcomes"]["error"] == 0 and summary["reconnects"] == 1
        assert summary["baseline"]["reconnects"] == 1  # the connect stream's connection
        assert [lv["reconnects"] for lv in summary["ramp"]["levels"]] == [0, 0, 0]
        assert summary["ramp"]["first_degraded"] != "error"
        assert meta["connections"]["fresh_per_request"] is True
        assert meta["connections"]["phase"] == "baseline"
        # every request after the switch opened its own connection: no warm-up either
        gets = sum(m == "GET" for m, _ in srv.calls)
        # the gate's connection, then one a POST (the raced one went on the connect
        # stream's and again on its own): no level warmed connections nobody would use
        assert srv.connections == 1 + srv.posts - 1
        assert gets == 1 + 2  # the gate's model list and round trips, nothing more

    def test_a_ray_shard_takes_the_runs_switch_and_gives_back_its_own(self) -> None:
        """One worker's slice of a level (what a Ray actor runs): a shard that sees the
        race itself hands the switch back for the driver to adopt; one given the run's
        switch opens a fresh connection for every request, so nothing is raced."""
        limits = ClientLimits(loop_lag_p99_s=1, cpu_fraction=1, coalesced_fraction=1)

        def task(fresh: FreshConnections | None) -> ShardTask:
            return ShardTask(target=Target(srv.base_url, MODEL, timeout_s=5),
                             origin_ns=time.perf_counter_ns(), run_tag="t", shard=0, shards=1,
                             phase="ramp", level=2, duration_s=0.3,
                             start_at_ns=time.perf_counter_ns(), prompt_tokens=16,
                             output_tokens=4, client_limits=limits, min_requests=6,
                             fresh=fresh)

        with ClosingServer(llama_like()) as srv:
            seen = run_shard(task(None))
            given = run_shard(task(seen.fresh))
        assert seen.fresh is not None and seen.fresh.phase == "ramp"
        assert sum(r.reconnects for r in seen.records) >= 1
        assert {r.outcome for r in (*seen.records, *given.records)} == {"ok"}
        assert sum(r.reconnects for r in given.records) == 0 and given.fresh == seen.fresh


class TestTheServersFailureStaysItsOwn:
    def test_a_fresh_connection_closed_unanswered_is_an_error(self, transport: str) -> None:
        """No earlier answer for a close to race: the server took the connection and the
        request and dropped them. An error, the vendor's, and not sent again."""
        with ClosingServer(lambda *_: "drop") as srv:
            recs, connections = _streams(srv.base_url, 1)
        assert (recs[0].outcome, recs[0].reconnects) == ("error", 0)
        assert "Server disconnected without sending a response" in str(recs[0].error)
        assert srv.posts == 1 and connections == {"fresh_per_request": False}

    def test_the_fresh_connection_of_a_resend_dropped_too_is_an_error(
            self, transport: str) -> None:
        """The race is repaired once: the resend goes on a fresh connection, and a fresh
        connection closed unanswered is the server's. Sent twice, never three times."""
        with ClosingServer(lambda n, streamed, m: "answer" if n == 1 and not streamed
                           else "drop") as srv:
            recs, _ = _streams(srv.base_url, 2)
        assert [(r.outcome, r.reconnects) for r in recs] == [("ok", 0), ("error", 1)]
        assert srv.posts == 3 and srv.connections == 2

    @pytest.mark.parametrize(("cut", "outcome", "words"), [
        ("part-head", "error", "in the middle of the response head"),
        ("part-body", "incomplete", "incomplete chunked read")])
    def test_an_answer_begun_then_cut_on_a_reused_connection_is_not_sent_again(
            self, transport: str, cut: Action, outcome: str, words: str) -> None:
        """Any byte of an answer means the server took the request: the cut is its
        failure, as before this rule, and nothing goes out again."""
        with ClosingServer(llama_like(cut)) as srv:
            recs, connections = _streams(srv.base_url, 2)
        assert [(r.outcome, r.reconnects) for r in recs] == [("ok", 0), (outcome, 0)]
        if transport == "lean":  # (h11 says a cut head was no response at all)
            assert words in str(recs[1].error), recs[1].error
        assert srv.posts == 2 and connections == {"fresh_per_request": False}

    def test_a_resend_keeps_the_requests_deadline(self, transport: str) -> None:
        """The resend's fresh connection is read and never answered: the request ends at
        its own deadline (1 s from the first send), not a deadline more."""
        with ClosingServer(lambda n, streamed, m: "answer" if n == 1 and not streamed
                           else "drop" if n == 1 else "hang") as srv:
            recs, _ = _streams(srv.base_url, 2, {"timeout_s": 5, "deadline_s": 1.0})
        second = recs[1]
        assert (second.outcome, second.reconnects) == ("timeout", 1)
        assert second.end_s is not None and 1.0 <= second.end_s < 1.5
        assert srv.posts == 3
