"""The realtime reference's truth log is stamped where the bytes reached the machine.

The prober is judged by this log, so the log must not carry the server's own lateness:
here the server's process is stopped (SIGSTOP) while the caller's last voiced frame goes
out, and the truth still says when it arrived, not when the server got a CPU again."""

from __future__ import annotations

import json
import os
import signal
import struct
import time
from pathlib import Path

from websockets.sync.client import connect

from evalkit.probe.realtime import openai
from evalkit.reference.realtime.process import RealtimeReference
from evalkit.voice.audio import frame_bytes

#: a loud 20 ms frame (a square wave): voiced by the reference's VAD
LOUD = struct.pack("<h", 12_000) * (frame_bytes(20) // 4) + struct.pack(
    "<h", -12_000) * (frame_bytes(20) // 4)


def test_an_arrival_while_the_server_is_stopped_is_stamped_when_it_arrived(
        tmp_path: Path) -> None:
    with RealtimeReference({"ttfa_s": 0.05, "answer_s": 0.1}, truth_log=tmp_path / "t") as ref:
        url = ref.base_url.replace("http://", "ws://") + "/realtime?model=" + ref.model
        pid = ref.pid
        assert pid is not None
        with connect(url, open_timeout=10, close_timeout=5) as ws:
            json.loads(ws.recv(timeout=10))  # session.created
            ws.send(json.dumps(openai.session_update(False, 500)))  # the client commits
            json.loads(ws.recv(timeout=10))  # session.updated
            ws.send(openai.append(LOUD))
            time.sleep(0.05)
            os.kill(pid, signal.SIGSTOP)
            try:
                sent = time.perf_counter_ns()
                ws.send(openai.append(LOUD))
                ws.send(openai.COMMIT)
                ws.send(openai.CREATE)
                time.sleep(0.2)
            finally:
                os.kill(pid, signal.SIGCONT)
            while json.loads(ws.recv(timeout=10))["type"] != "response.done":
                pass
        (answer,) = [t for t in ref.truth() if "response" in t]
    # the frame arrived within microseconds of its send; the server read it 200 ms later
    assert 0 <= answer["voiced_end_ns"] - sent < 2_000_000, answer["voiced_end_ns"] - sent
    assert 0 <= answer["commit_ns"] - sent < 2_000_000
