"""`RealtimeReference`: the realtime reference endpoint in a subprocess for a `with` block
(its own process, so the prober's timing is not judged against a server sharing its
event loop or its GIL)."""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from evalkit.errors import EvalkitError
from evalkit.reference.child import first_line, stop_child
from evalkit.reference.realtime.params import RealtimeParams

STARTUP_TIMEOUT_S = 20.0


class RealtimeReference:
    """The realtime reference endpoint on a free loopback port."""

    def __init__(self, overrides: Mapping[str, Any] | None = None,
                 truth_log: Path | None = None, seed: int = 0,
                 tls: tuple[Path, Path] | None = None) -> None:
        RealtimeParams.of(overrides)  # a bad name or value fails here, in the caller
        self.overrides = dict(overrides or {})
        self.truth_log = truth_log
        self.seed = seed
        #: a certificate and its key: serve wss:// (google-genai's client speaks no ws://)
        self.tls = tls
        self.base_url = ""
        self.model = "evalkit-realtime"
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> RealtimeReference:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs (tests stop it to prove the truth log's
        stamps are the kernel's)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the process; return once it listens."""
        atexit.register(self.stop)
        cmd = [sys.executable, "-m", "evalkit.reference.realtime", "--seed", str(self.seed)]
        for name, value in self.overrides.items():
            cmd += ["--set", f"{name}={value}"]
        if self.truth_log is not None:
            cmd += ["--truth-log", str(self.truth_log)]
        if self.tls is not None:
            cmd += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        proc = self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        url = first_line(proc, STARTUP_TIMEOUT_S)
        if not url.startswith("http"):
            self.stop()
            raise EvalkitError(f"the realtime reference endpoint did not start (said {url!r})")
        self.base_url = url

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 5 s)."""
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_child(proc, 5)

    def truth(self, sessions: int = 0, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The truth log's lines (responses, refusals, sessions), once `sessions` session
        lines are in it (a session's line is written when the server has seen its close,
        a moment after the client's call ended) or `timeout` s passed."""
        deadline = time.monotonic() + timeout
        while True:
            lines: list[dict[str, Any]] = []
            if self.truth_log is not None and self.truth_log.exists():
                lines = [json.loads(line) for line in self.truth_log.read_text().splitlines()
                         if line.endswith("}")]
            if sum("appends_ns" in t for t in lines) >= sessions \
                    or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)
