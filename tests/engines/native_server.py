"""llama.cpp's own C++ server (`llama-server`) as a test subprocess: N parallel slots,
continuous batching, a Prometheus page. (`llama_server.py` is the other llama.cpp
server the tests run: llama-cpp-python's, serial.)

    with NativeServer(gguf_path, log_path, slots=8) as srv:   # waits for GET /health
        srv.base_url, srv.model, srv.metrics_url              # …/v1, "evalkit-tiny", …/metrics

The binary is the one `make install` builds from the llama.cpp of the llama-cpp-python
sdist pyproject.toml pins, found by the same rule (`tools/llama_server.py`,
`binary_path`); a missing one fails the test, naming `make install` (CI must run these
tests, so they never skip). The server listens on loopback only, on a free port, with
`--parallel N` slots, continuous batching and `--metrics`. Requests above N wait for a
free slot in its queue (`llamacpp:requests_deferred`). It dies with the test process
(PR_SET_PDEATHSIG) and is stopped on exit, whatever happened.

Two settings were chosen by measurement on the project's 2 shared cores:

- one thread (`threads`): with two, every ggml operation ends at a barrier both threads
  spin at, and a thread the kernel has descheduled (the client, the other tests, other
  builds) stalls the step: decode steps of 4 ms took 100-600 ms under load;
- one KV cache for all slots (`kv_unified`, what llama-server picks itself when the slot
  count is left to it), `ctx_per_slot` x N tokens in all. With one cache per slot (its
  default when `--parallel` is given) each batch is split into equal parts per
  sequence, so a prompt that arrives while others decode is prefilled one token per
  decode step: the engine's own prompt time went from 60 ms alone to 580 ms at 8
  streams, with nothing waiting for a slot.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.engines.process import ServerProcess, free_port, wait_answering
from tools.llama_server import answers, binary_path

MODEL = "evalkit-tiny"
#: what a missing binary's failure says
BUILD_HINT = ("llama.cpp's llama-server is not built: run `make install` (it builds it once "
              "per machine from the sdist the `engines` extra pins, ~10 min on 2 idle cores, "
              "cached under ${XDG_CACHE_HOME:-~/.cache}/evalkit/); expected at ")


def server_binary() -> Path:
    """The built llama-server; the test FAILS (never skips) when it is not there."""
    path = binary_path()
    if answers(path) is None:
        pytest.fail(f"{BUILD_HINT}{path}", pytrace=False)
    return path


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child receive SIGKILL when the test process dies (a
    killed pytest leaves no engine behind); None where prctl is not there."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return preexec


class NativeServer(ServerProcess):
    """One llama-server process serving one GGUF under the alias `MODEL`."""

    def __init__(self, gguf: Path, log_path: Path, *, slots: int = 8, ctx_per_slot: int = 1024,
                 threads: int = 1, kv_unified: bool = True, start_deadline_s: float = 60.0,
                 extra: tuple[str, ...] = ()) -> None:
        self.gguf = Path(gguf)
        self.log_path = Path(log_path)
        self.slots = slots
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads
        self.kv_unified = kv_unified
        self.start_deadline_s = start_deadline_s
        self.extra = extra
        self.port = 0
        self.model = MODEL

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    @property
    def metrics_url(self) -> str:
        return f"{self.origin}/metrics"

    def command(self, binary: Path) -> list[str]:
        threads = str(self.threads)
        return [str(binary), "--model", str(self.gguf), "--alias", MODEL,
                "--host", "127.0.0.1", "--port", str(self.port),
                "--parallel", str(self.slots), "--cont-batching", "--metrics",
                "--ctx-size", str(self.ctx_per_slot * self.slots),
                "--threads", threads, "--threads-batch", threads,
                "--kv-unified" if self.kv_unified else "--no-kv-unified",
                "--no-webui", "--seed", "0", *self.extra]

    def start(self) -> NativeServer:
        binary = server_binary()
        self.port = free_port()
        env = {**os.environ, "NO_PROXY": "127.0.0.1"}
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(self.command(binary), stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=env, preexec_fn=_die_with_parent())
        try:
            wait_answering(f"{self.origin}/health", self._proc, self.start_deadline_s,
                           ready=lambda r: r.status_code == 200, name="llama-server",
                           log=self.log_tail, interval_s=0.1)
        except BaseException:
            self.stop()
            raise
        return self
