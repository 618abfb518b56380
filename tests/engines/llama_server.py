"""llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`) as a test subprocess.

    with LlamaServer(gguf_path, log_path) as srv:   # waits until GET /v1/models answers
        srv.base_url, srv.model                       # http://127.0.0.1:PORT/v1, "evalkit-tiny"

The server is `python -m llama_cpp.server` from this interpreter's environment, on
loopback only, one thread, and serial: llama-cpp-python runs one request at a time
behind a lock (it has no parallel slots), and `--interrupt_requests False` makes a
waiting request queue instead of cutting the running stream short (the default ends
the running stream with `[DONE]` and no finish_reason as soon as another request
waits). It is killed on exit, whatever happened.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from tests.engines.process import ServerProcess, free_port, wait_answering

#: how a fresh environment gets llama-cpp-python (what `make install` runs)
INSTALL_HINT = (
    "llama-cpp-python[server] is a declared test dependency (extra 'engines'); install it "
    "with `make install`, or: CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF "
    "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF\" .venv/bin/python -m pip install "
    "-e '.[test,engines]'"
)
MODEL = "evalkit-tiny"


def missing_packages() -> list[str]:
    """The engine's packages this interpreter cannot import (empty when all are there)."""
    needed = {"llama_cpp": "llama-cpp-python", "gguf": "gguf", "fastapi": "fastapi",
              "sse_starlette": "sse-starlette", "starlette_context": "starlette-context"}
    return [pkg for mod, pkg in needed.items() if importlib.util.find_spec(mod) is None]


class LlamaServer(ServerProcess):
    """One llama_cpp.server process serving one GGUF under the alias `MODEL`."""

    def __init__(self, gguf: Path, log_path: Path, *, n_ctx: int = 2048,
                 start_deadline_s: float = 60.0) -> None:
        self.gguf = Path(gguf)
        self.log_path = Path(log_path)
        self.n_ctx = n_ctx
        self.start_deadline_s = start_deadline_s
        self.port = 0
        self.model = MODEL

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf),
                "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", str(self.n_ctx), "--n_threads", "1", "--n_threads_batch", "1",
                "--seed", "0", "--interrupt_requests", "False", "--verbose", "False"]

    def start(self) -> LlamaServer:
        self.port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1"}
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._proc is not None
        wait_answering(f"{self.base_url}/models", self._proc, self.start_deadline_s,
                       ready=lambda r: r.status_code == 200 and MODEL in r.text,
                       name="llama_cpp.server", log=self.log_tail, interval_s=0.1)
