"""The send side of every time: t0 is when the request's bytes were handed to the socket.

Checked over real loopback HTTP against the reference endpoint, whose truth log stamps
when its event loop first saw each request's bytes (`arrived_ns`). Bounds, never exact
durations: the machine running these may be busy; causality (the server cannot see bytes
before we sent them) and the arithmetic between fields are exact.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import socket
import time
from dataclasses import asdict, replace
from typing import Any

import pytest

from evalkit.analysis.summarize import summarize
from evalkit.probe.client.clients import Target
from evalkit.probe.client.loopmonitor import LoopMonitor
from evalkit.probe.client.selfcheck import judge_client, window_end, window_start
from evalkit.probe.client.stream import MAX_SENDS, Prober
from evalkit.probe.load.loops import closed_loop, open_loop
from evalkit.probe.plan.prompts import synthetic
from evalkit.probe.plan.settings import profile_settings
from evalkit.probe.wire.kernel_stream import KernelStampedStream
from evalkit.probe.wire.stamping import SendStamp, stamp_sends
from evalkit.records import RequestRecord
from evalkit.reference.server import ReferenceServer
from evalkit.rundir.rederive import rebuild_summary

MS = 1_000_000


def _truth(srv: ReferenceServer) -> dict[str, dict[str, Any]]:
    return {t["request_id"]: t for t in srv.truth()}


def _sent_ns(origin: int, r: RequestRecord) -> int:
    assert r.sent_s is not None
    return origin + round((r.t0_s + r.sent_s) * 1e9)


class TestClosedLoop:
    def test_t0_is_the_send_and_the_server_sees_it_after(self, reference: Any) -> None:
        """One stream: t0 is the send stamp (sent_s 0) and the server's loop sees the bytes
        after it, within milliseconds; the next request's lag runs from the last one's end."""
        srv = reference("gpu", request_overhead_ms=5, decode_base_ms=5, jitter_ms=0)
        records: list[RequestRecord] = []

        async def run() -> int:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "c") as prober:
                await prober.clients.prepare(1)
                await closed_loop(prober, lambda: synthetic(32, 4, "c"), records.append,
                                  phase="baseline", level=1, workers=1, duration_s=None,
                                  max_requests=5)
                return prober.origin_ns

        origin = asyncio.run(run())
        truth = _truth(srv)
        gaps = []
        for r in records:
            assert r.outcome == "ok", r.error
            assert r.sent_s == 0.0 and r.connect_s is None  # prepared: no connect inside
            t0 = origin + r.t0_s * 1e9
            gap = truth[r.id]["arrived_ns"] - t0
            assert gap >= 0, (r.id, gap)  # causality: exact
            gaps.append(gap / MS)
        assert sorted(gaps)[len(gaps) // 2] < 5.0, gaps
        assert max(gaps) < 50.0, gaps
        # closed loop: a request was meant to leave when the one before it ended
        for prev, nxt in itertools.pairwise(records):
            assert prev.end_s is not None and nxt.send_lag_s is not None
            assert nxt.send_lag_s >= 0
            meant = nxt.t0_s - nxt.send_lag_s
            assert meant == pytest.approx(prev.t0_s + prev.end_s, abs=2e-6)

    def test_a_record_is_kept_once_the_next_request_is_out(self, reference: Any) -> None:
        """Per-completion bookkeeping waits until the worker's next request has left: the
        server saw request n+1 before on_record(n) ran; the last record is kept too."""
        srv = reference("gpu", mode="thread", request_overhead_ms=5, decode_base_ms=2)
        seen: list[tuple[str, int]] = []

        async def run() -> None:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "k") as prober:
                await closed_loop(prober, lambda: synthetic(16, 3, "k"),
                                  lambda r: seen.append((r.id, time.perf_counter_ns())),
                                  phase="baseline", level=1, workers=1, duration_s=None,
                                  max_requests=4)

        asyncio.run(run())
        truth = srv.truth()
        assert [i for i, _ in seen] == [t["request_id"] for t in truth]  # all, in order
        for (_, kept_at), nxt in zip(seen, truth[1:], strict=False):
            assert nxt["arrived_ns"] < kept_at

    def test_failed_requests_are_kept_in_order_and_not_judged(self, reference: Any) -> None:
        """Requests that fail at once are all recorded, in order, and their back-off is not
        counted as send lag against the client (no request offered load to hold back)."""
        srv = reference("gpu", mode="thread", request_overhead_ms=1, fault_http_500=1.0)
        seen: list[RequestRecord] = []

        async def run() -> dict[str, Any]:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "f") as prober:
                await closed_loop(prober, lambda: synthetic(16, 3, "f"), seen.append,
                                  phase="ramp", level=1, workers=1, duration_s=None,
                                  max_requests=3, reject_pause_s=0.01)
                return prober.send_check()

        check = asyncio.run(run())
        assert [r.outcome for r in seen] == ["error"] * 3
        assert [r.id for r in seen] == [t["request_id"] for t in srv.truth()]
        assert check["send_lag_fraction"] is None

    def test_a_new_connection_is_not_in_t0_and_is_named(self, reference: Any) -> None:
        """Without prepared connections the first request opens one inside its send: t0
        still starts at the bytes, and the record says how long the connect took."""
        srv = reference("gpu", mode="thread", request_overhead_ms=5)

        async def run() -> tuple[int, list[RequestRecord]]:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "n") as prober:
                recs = [await prober.stream(synthetic(16, 2, f"n{i}"), "baseline", 1)
                        for i in range(2)]
                return prober.origin_ns, recs

        origin, (first, second) = asyncio.run(run())
        assert first.connect_s is not None and first.connect_s > 0
        assert first.send_lag_s is not None and first.send_lag_s >= first.connect_s
        assert second.connect_s is None  # keep-alive: the same connection
        truth = _truth(srv)
        for r in (first, second):
            assert truth[r.id]["arrived_ns"] >= origin + r.t0_s * 1e9


class TestOpenLoop:
    def test_t0_is_the_schedule_and_the_send_is_kept(self, reference: Any) -> None:
        """Open loop: t0 follows the Poisson schedule exactly (however late a send was),
        and each record keeps its send stamp, sent_s = send_lag_s >= 0."""
        srv = reference("gpu", request_overhead_ms=5, decode_base_ms=2)
        records: list[RequestRecord] = []
        rate, seed = 40.0, 7

        async def run() -> int:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "o") as prober:
                await prober.clients.prepare(4)
                await open_loop(prober, lambda: synthetic(16, 3, "o"), records.append,
                                phase="rate", rate=rate, duration_s=0.6, seed=seed)
                return prober.origin_ns

        origin = asyncio.run(run())
        assert len(records) >= 5
        rng = random.Random(seed)
        gaps = [rng.expovariate(rate) for _ in range(len(records) + 1)]
        t0s = sorted(r.t0_s for r in records)
        for i, (a, b) in enumerate(itertools.pairwise(t0s)):
            assert b - a == pytest.approx(gaps[i + 1], abs=2e-6)  # the schedule, not sends
        truth = _truth(srv)
        for r in records:
            assert r.outcome == "ok", r.error
            assert r.sent_s is not None and r.sent_s >= 0
            assert r.send_lag_s == r.sent_s
            assert truth[r.id]["arrived_ns"] >= _sent_ns(origin, r)


class TestTruthLog:
    @pytest.mark.parametrize("mode", ["subprocess", "thread"])
    def test_arrival_is_logged_before_the_handler(self, reference: Any, mode: str) -> None:
        """Every truth line has arrived_ns, after the poll that reported the bytes and
        before the handler's received_ns, and the kernel's receive stamp of those bytes
        (kernel_ns): before the server's loop read them, not before we sent them."""
        srv = reference("gpu", mode=mode, request_overhead_ms=5)

        async def run() -> tuple[int, list[RequestRecord]]:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "t") as prober:
                recs = await asyncio.gather(*(prober.stream(synthetic(16, 2, f"t{i}"), "ramp", 3)
                                              for i in range(3)))
                return prober.origin_ns, list(recs)

        origin, recs = asyncio.run(run())
        truth = _truth(srv)
        assert len(truth) == 3
        for r in recs:
            t = truth[r.id]
            assert isinstance(t["arrived_ns"], int)
            assert t["poll_began_ns"] <= t["polled_ns"] <= t["arrived_ns"]
            assert 0 <= t["received_ns"] - t["arrived_ns"] < 1_000 * MS
            assert isinstance(t["kernel_ns"], int)
            assert t["kernel_ns"] <= t["arrived_ns"]  # read from the stamp's age: exact
            # the wall and monotonic clocks are read a moment apart: a little slack
            assert t["kernel_ns"] >= _sent_ns(origin, r) - 5 * MS


class TestWritePath:
    def test_head_and_body_leave_in_one_send_stamped_once(self) -> None:
        """With join, the head is held and goes out with the body: the peer reads one
        buffer; the stamp is that send. h11's empty end-of-message write sends nothing."""
        a, b = socket.socketpair()

        async def run() -> tuple[SendStamp, bytes]:
            a.setblocking(False)
            stream = KernelStampedStream(a, asyncio.get_running_loop())
            stamp = SendStamp(join=True)
            with stamp_sends(stamp):
                await stream.write(b"POST / HTTP/1.1\r\ncontent-length: 2\r\n\r\n")
                assert stamp.first_ns is None  # held, nothing sent yet
                await stream.write(b"{}")
                await stream.write(b"")
            first = b.recv(4096)
            await stream.write(b"after")  # outside the block: not this request's
            await stream.aclose()
            return stamp, first

        try:
            b.settimeout(2)
            stamp, first = asyncio.run(run())
        finally:
            b.close()
        assert first.endswith(b"\r\n\r\n{}")  # head and body in one read
        assert (stamp.writes, stamp.bytes) == (1, len(first))
        assert stamp.first_ns is not None and stamp.first_ns == stamp.last_ns

    def test_a_held_head_goes_out_on_the_empty_end_write(self) -> None:
        """A request whose body is empty still leaves: the end-of-message write flushes."""
        a, b = socket.socketpair()

        async def run() -> SendStamp:
            a.setblocking(False)
            stream = KernelStampedStream(a, asyncio.get_running_loop())
            with stamp_sends(SendStamp(join=True)) as stamp:
                await stream.write(b"GET / HTTP/1.1\r\n\r\n")
                await stream.write(b"")
            await stream.aclose()
            return stamp

        try:
            stamp = asyncio.run(run())
            b.settimeout(2)
            assert b.recv(4096) == b"GET / HTTP/1.1\r\n\r\n"
        finally:
            b.close()
        assert stamp.writes == 1

    def test_concurrent_sends_never_share_a_stamp(self) -> None:
        """Each task's stamp sees only its own writes (a context variable per task)."""
        pairs = [socket.socketpair() for _ in range(2)]

        async def one(sock: socket.socket, data: bytes) -> SendStamp:
            sock.setblocking(False)
            stream = KernelStampedStream(sock, asyncio.get_running_loop())
            with stamp_sends() as stamp:
                await asyncio.sleep(0)
                await stream.write(data)
                await asyncio.sleep(0)
            await stream.aclose()
            return stamp

        async def run() -> list[SendStamp]:
            return list(await asyncio.gather(one(pairs[0][0], b"x" * 3),
                                             one(pairs[1][0], b"y" * 5)))

        try:
            stamps = asyncio.run(run())
        finally:
            for _, b in pairs:
                b.close()
        assert [(s.writes, s.bytes) for s in stamps] == [(1, 3), (1, 5)]


class TestSendLagCheck:
    def test_a_held_back_load_binds_the_client(self) -> None:
        """Send lag over its share of the load binds the client, named send_lag; limits
        that do not name it (an older profile file) do not judge it."""
        limits = profile_settings("quick").client_check
        quiet = {"loop_lag_p99_s": 0.002, "cpu_fraction": 0.1}
        held = judge_client({**quiet, "send_lag_fraction": 0.2}, limits)
        assert held["client_bound"] is True and held["client_bound_reasons"] == ["send_lag"]
        assert judge_client({**quiet, "send_lag_fraction": 0.001}, limits)[
            "client_bound"] is False
        older = replace(limits, send_lag_fraction=None)
        assert judge_client({**quiet, "send_lag_fraction": 0.2}, older)["client_bound"] is False

    def test_a_run_whose_send_lag_grows_says_so_in_summary_json(self, reference: Any) -> None:
        """A client that stalls its loop after every send (each record's bookkeeping
        blocks 30 ms) holds a herd of 8 back: the level's self-check is send-lag bound,
        and summary.json carries it, as the probe writes it and as a rebuild from run.json
        does."""
        srv = reference("gpu", request_overhead_ms=5, decode_base_ms=5, jitter_ms=0)
        records: list[RequestRecord] = []

        def slow_bookkeeping(rec: RequestRecord) -> None:
            time.sleep(0.03)  # blocks the event loop: every other worker's send waits
            records.append(rec)

        async def run() -> dict[str, Any]:
            target = Target(srv.base_url, srv.model, tag_requests=True)
            async with Prober(target, time.perf_counter_ns(), "g") as prober, \
                    LoopMonitor() as mon:
                await prober.clients.prepare(8)
                mark = window_start(mon, prober)
                await closed_loop(prober, lambda: synthetic(16, 4, "g"), slow_bookkeeping,
                                  phase="ramp", level=8, workers=8, duration_s=None,
                                  max_requests=48)
                return judge_client(window_end(mon, prober, mark),
                                    profile_settings("quick").client_check)

        check = json.loads(json.dumps(asyncio.run(run())))  # as run.json keeps it
        assert len(records) == 48 and all(r.outcome == "ok" for r in records)
        assert "send_lag" in check["client_bound_reasons"]
        assert check["send_lag_fraction"] > 0.05  # the quick profile's limit
        written = summarize(records, {"levels": {"8": check}})["client"]
        rebuilt = rebuild_summary(records, {"status": "complete", "client_checks": {
            "levels": {"8": {**check, "client_bound_reasons": [*check[
                "client_bound_reasons"], "lost_worker", "forged", {"x": 1}]}}}}, "test",
            None)["client"]
        assert "lost_worker" in rebuilt["client_bound_reasons"]  # a reason the suite gives
        for client in (written, rebuilt):
            assert client["client_bound"] is True and client["client_bound_levels"] == [8]
            assert client["capacity_judgement_affected"] is True
            assert "send_lag" in client["client_bound_reasons"]
            assert "forged" not in client["client_bound_reasons"]
            assert client["send_lag_fraction_max"] == check["send_lag_fraction"]
            assert client["send_lag_p99_s"] == check["send_lag_p99_s"] > 0.03
            level = client["levels"]["8"]
            assert level["send_lag_fraction"] == check["send_lag_fraction"]
        assert written["levels"]["8"]["client_bound_reasons"] == check["client_bound_reasons"]
        assert rebuilt["levels"]["8"]["client_bound_reasons"] == [
            *check["client_bound_reasons"], "lost_worker"]

    def test_send_check_counts_the_share_held_back(self) -> None:
        """send_lag_fraction = summed lag / summed span (meant-to-leave to end)."""
        prober = Prober(Target("http://127.0.0.1:9/v1", "m"), 0, "x")
        prober.sent.append(0.01, 0.5)
        prober.sent.append(0.03, 0.5)
        check = prober.send_check()
        assert check["send_lag_fraction"] == pytest.approx(0.04)
        assert check["send_lag_max_s"] == 0.03
        assert prober.send_check(since=2)["send_lag_fraction"] is None
        for _ in range(MAX_SENDS):  # a long soak: the oldest samples go, marks stay valid
            prober.sent.append(1.0, 2.0)
        assert len(prober.sent) == MAX_SENDS and prober.sends == MAX_SENDS + 2
        assert prober.send_check(since=2)["send_lag_fraction"] == pytest.approx(0.5)
        assert prober.send_check(since=MAX_SENDS - 1)["send_lag_p50_s"] == 1.0


def test_record_json_is_unchanged_by_the_faster_encoding() -> None:
    """to_json reads fields one by one and writes chunk times with %.7f; the line reads
    back as what dataclasses.asdict and round(t, 7) gave, key for key, in order."""
    times = [0.123456789, 0.2, 0.00000005, 0.00000015, 1.99999995, 12.3456785, 7e-8,
             3600.0000001, 0.0, 1e-12]
    rng = random.Random(7)
    times += [rng.uniform(0, 600) for _ in range(5000)]
    rec = RequestRecord(id="a", phase="ramp", level=4, outcome="ok", t0_s=1.5,
                        chunks=[(t, i % 3 + 1) for i, t in enumerate(times)], sent_s=0.0,
                        send_lag_s=0.001, connect_s=None, label="l", error='a "quoted" one')
    d = asdict(rec)
    d["chunks"] = [[round(t, 7), n] for t, n in rec.chunks]
    del d["rate_limit_headers"]  # left out when the response sent none
    for key in ("shape", "session", "turn", "step", "planned_turns", "cached_prompt_tokens",
                "engine_prompt_tokens", "engine_cached_tokens", "engine_prompt_s",
                "engine_output_tokens", "engine_decode_s", "prompt_source"):
        del d[key]  # left out of a request of no workload shape, with no engine account
    del d["reconnects"]  # left out of a request sent once
    del d["tls_s"]  # and of one that opened no TLS connection of its own
    line = rec.to_json()
    assert "\n" not in line and " " not in line.replace('a \\"quoted\\" one', "")
    back = json.loads(line)
    assert back == json.loads(json.dumps(d)) and list(back) == list(d)
    assert [t for t, _ in back["chunks"]] == [round(t, 7) for t in times]  # bit for bit
    empty = RequestRecord(id="e", phase="ramp", level=1, outcome="error", t0_s=0.0)
    assert json.loads(empty.to_json())["chunks"] == []
    # a workload turn keeps them, in the dataclass's order
    turn = RequestRecord(id="t", phase="workload", level=1, outcome="ok", t0_s=0.0,
                         shape="chat", session="s1", turn=2, planned_turns=3,
                         cached_prompt_tokens=64)
    line = json.loads(turn.to_json())
    assert (line["shape"], line["session"], line["turn"], line["planned_turns"],
            line["cached_prompt_tokens"]) == ("chat", "s1", 2, 3, 64)
    assert "step" not in line and RequestRecord.from_dict(line) == turn
    # an engine's account (llama.cpp's timings) is kept where it sent one
    timed = RequestRecord(id="x", phase="ramp", level=8, outcome="ok", t0_s=0.0,
                          engine_prompt_tokens=40, engine_cached_tokens=0,
                          engine_prompt_s=0.0125, engine_output_tokens=16, engine_decode_s=0.3)
    line = json.loads(timed.to_json())
    assert (line["engine_prompt_s"], line["engine_output_tokens"]) == (0.0125, 16)
    assert RequestRecord.from_dict(line) == timed
    assert RequestRecord.from_dict(back) == rec.__class__(
        **{**asdict(rec), "chunks": [(round(t, 7), n) for t, n in rec.chunks]})
    assert back["chunks"][:2] == [[0.1234568, 1], [0.2, 2]]
    resent = RequestRecord(id="r", phase="ramp", level=2, outcome="ok", t0_s=0.0, reconnects=1)
    assert json.loads(resent.to_json())["reconnects"] == 1
    assert RequestRecord.from_dict(json.loads(resent.to_json())) == resent


class TestWallClockSteps:
    """The kernel's stamp is on the wall clock: a step of that clock (NTP, a VM's clock
    sync after boot) between the bytes' arrival and our read would move their time by
    the step. Over a real socket with kernel stamps, the wall clock stepped by hand."""

    @pytest.mark.parametrize("step_ms", [5, -5])
    def test_a_read_across_a_step_is_stamped_by_us_and_the_next_by_the_kernel(
            self, step_ms: int, monkeypatch: pytest.MonkeyPatch) -> None:
        from evalkit import kernelclock

        with socket.create_server(("127.0.0.1", 0)) as listener:  # TCP: the kernel stamps
            a = socket.create_connection(listener.getsockname())
            b, _ = listener.accept()
        a.setsockopt(socket.SOL_SOCKET, kernelclock.SO_TIMESTAMPNS, 1)
        b.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        step = [0]
        monkeypatch.setattr(kernelclock, "_wall_ns", lambda: time.time_ns() + step[0])

        async def read_after(stream: KernelStampedStream, data: bytes, wait_s: float,
                             step_ns: int = 0) -> tuple[int, int, int]:
            sent = time.perf_counter_ns()
            b.send(data)
            time.sleep(wait_s)  # the loop held: the bytes wait in the kernel, stamped
            step[0] += step_ns
            before_read = time.perf_counter_ns()
            assert await stream.read(100) == data
            assert stream.last_arrival_ns is not None
            return sent, before_read, stream.last_arrival_ns

        async def run() -> list[tuple[int, int, int]]:
            a.setblocking(False)
            stream = KernelStampedStream(a, asyncio.get_running_loop())
            # the kernel turns receive stamps on lazily (a deferred switch): a packet that
            # comes before it is stamped when it is read; reads first, not judged, until
            # one is stamped when it came
            for _ in range(20):
                _sent, read, at = await read_after(stream, b"warm", 0.02)
                if read - at > 15 * MS:
                    break
            steps = stream.clock_steps
            got = [await read_after(stream, b"one", 0.02)]
            # our wall clock steps while the bytes wait (the kernel stamped them before)
            got.append(await read_after(stream, b"two", 0.02, step_ms * 1_000_000))
            # and steps back (here only ours moves, so to our reading the clocks agree
            # again: one more step seen), then holds still
            got.append(await read_after(stream, b"three", 0.02, -step_ms * 1_000_000))
            got.append(await read_after(stream, b"four", 0.02))
            assert stream.clock_steps - steps == 2, (stream.kernel_stamped, stream.user_stamped)
            await stream.aclose()
            return got

        try:
            got = asyncio.run(run())
        finally:
            b.close()
        (s1, r1, at1), (s2, r2, at2), (s3, r3, at3), (s4, r4, at4) = got
        # kernel-stamped: when it was sent (the two clocks' readings a few µs apart), not
        # when it was read 20 ms later
        for sent, read, at in ((s1, r1, at1), (s4, r4, at4)):
            assert sent - MS < at < sent + 5 * MS and read - at > 15 * MS
        # across a step: ours, when it was read, never a time shifted by the step
        for sent, read, at in ((s2, r2, at2), (s3, r3, at3)):
            assert at >= read > sent + 15 * MS
