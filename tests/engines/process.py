"""A test server in its own process: a free port, start-and-poll until it answers, stop.

Shared by every server the tests start as a subprocess (llama.cpp's, Python's own file
server): each must fail fast and say why when the process dies at start, and must never
outlive its test.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_answering(url: str, proc: subprocess.Popen[Any], deadline_s: float, *,
                   ready: Callable[[httpx.Response], bool] = lambda _r: True,
                   name: str = "the server", log: Callable[[], str] = lambda: "",
                   interval_s: float = 0.05) -> None:
    """Poll GET `url` until `ready` accepts an answer; AssertionError (with the `log`
    tail) if the process exits first or nothing ready comes within `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{name} exited with {proc.returncode} at start"
                                 + (f":\n{log()}" if log() else ""))
        try:
            r = httpx.get(url, timeout=2.0)
            if ready(r):
                return
            last = f"HTTP {r.status_code}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        time.sleep(interval_s)
    raise AssertionError(f"{name} did not answer GET {url} within {deadline_s:g} s ({last})"
                         + (f":\n{log()}" if log() else ""))


def stop_process(proc: subprocess.Popen[Any] | None) -> None:
    """Terminate, then kill if it has not ended within 10 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class ServerProcess:
    """What every test server run as a subprocess shares: its log's tail (for a failure's
    message), `stop`, and `with srv:` that starts it and stops it whatever happened.
    A subclass sets `log_path` and writes `start`, which sets `_proc`."""

    log_path: Path
    _proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def log_tail(self, n: int = 30) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_process(proc)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
