"""Running the reference endpoint: blocking `serve` for the CLI, `ReferenceServer` for code.

`ReferenceServer` picks a free loopback port and runs the endpoint either in a
subprocess (default, the accurate mode: no GIL shared with the client being measured)
or in a thread of this process (cheaper to start, for functional tests):

    with ReferenceServer(profile="gpu", truth_log=tmp / "truth.jsonl") as srv:
        httpx.get(srv.base_url + "/models")
        srv.truth()   # the server's own record of every request, read back
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import httpx

from evalkit.errors import EvalkitError, UsageError
from evalkit.kernelclock import SO_TIMESTAMPNS
from evalkit.reference.app import ARRIVAL_EXTENSION, ReferenceApp
from evalkit.reference.child import first_line, stop_child
from evalkit.reference.kernelsocket import KernelStampedSocket, kernel_stamped
from evalkit.reference.params import DEFAULT_PROFILE, get_profile
from evalkit.reference.parse import MODEL, count_tokens
from evalkit.reference.tlssocket import TLSSocket, server_context

STARTUP_TIMEOUT_S = 20.0



def _bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 lets the kernel pick a free one (no race)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP, and TCP_NODELAY set here so accepted sockets inherit it (Linux):
    # asyncio only sets it itself when the socket's proto says TCP, and with Nagle on, a
    # small content chunk written right after the role chunk waits for the client's
    # delayed ACK, moving the client's first token by ~20-40 ms against the truth log.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # kernel receive stamps from a connection's first packet: an accepted socket inherits
    # the option, so a request sent the moment its connection opened is stamped too
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(4096)
    sock.set_inheritable(True)
    return sock


class _Polls:
    """When an event loop's latest poll (`epoll_wait`) began and returned."""

    def __init__(self, selector: Any) -> None:
        self.began = self.returned = 0
        self._select = selector.select
        selector.select = self.select  # the instance attribute shadows the method

    def select(self, timeout: float | None = None) -> Any:
        self.began = time.perf_counter_ns()
        try:
            return self._select(timeout)
        finally:
            self.returned = time.perf_counter_ns()


_POLLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Polls] = \
    weakref.WeakKeyDictionary()


def _polls(loop: asyncio.AbstractEventLoop) -> _Polls | None:
    """The poll stamps of a selector event loop (None for one without a selector)."""
    found = _POLLS.get(loop)
    selector = getattr(loop, "_selector", None)
    if found is None and selector is not None:
        found = _POLLS[loop] = _Polls(selector)
    return found


def arrival_stamped_protocol(tls: ssl.SSLContext | None = None) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol, stamping when the event loop first sees each request.

    `data_received` is where the loop hands over a socket read, before any HTTP parsing;
    the stamp taken there goes into the request's ASGI scope (`extensions`, under
    `ARRIVAL_EXTENSION`) when the parser finds the first byte of a request in that read,
    and the app logs it as `arrived_ns`, with the loop's poll that reported the read
    (`poll_began_ns`, `polled_ns`). So the truth log splits a client's send side: until
    the poll began the server's loop was busy with other work; within the poll, the
    bytes waited in the kernel for the server's process to get a CPU (microseconds on an
    idle machine); from the poll's return to `arrived_ns`, the loop ran the callbacks
    ahead of this one; from there to `received_ns` (the handler's first line), HTTP
    parsing and task dispatch. `kernel_ns` is the kernel's receive stamp of that read
    (SO_TIMESTAMPNS): from the client's send to it is the client and the network (a few
    microseconds on loopback), from it to `arrived_ns` the server's process alone.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class ArrivalStampedProtocol(HttpToolsProtocol):
        _arrived: dict[object, object] = {}  # noqa: RUF012  (replaced per read)
        _polls: _Polls | None = None
        _kernel: KernelStampedSocket | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._polls = _polls(self.loop)
            self._kernel = kernel_stamped(transport)
            if tls is not None:
                _tls_inside(transport, self._kernel, tls)
            super().connection_made(transport)
            if tls is not None:
                self.scheme = "https"

        def data_received(self, data: bytes) -> None:
            now = time.perf_counter_ns()  # the stamp: nothing before it
            polls, kernel = self._polls, self._kernel
            self._arrived = {"arrived_ns": now,
                             "poll_began_ns": polls.began if polls else None,
                             "polled_ns": polls.returned if polls else None,
                             "kernel_ns": kernel.kernel_ns if kernel else None}
            super().data_received(data)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope["extensions"] = {ARRIVAL_EXTENSION: self._arrived}

    return ArrivalStampedProtocol


#: (certificate file, key file) in PEM: serve HTTPS with them (None: plain HTTP)
TLSFiles = tuple[Path, Path]
#: HTTPS on the server's stamped socket (`evalkit.reference.tlssocket`; False: asyncio's
#: SSL transport, as before, for comparisons: `--server-tls asyncio` in bench_tls.py)
LEAN_TLS = True


def _tls_inside(transport: asyncio.Transport, stamped: KernelStampedSocket | None,
                context: ssl.SSLContext) -> None:
    """TLS on the transport's own socket (`tlssocket.TLSSocket`, over the stamped one)."""
    raw = stamped if stamped is not None else getattr(transport, "_sock", None)
    transport._sock = TLSSocket(raw, context)  # type: ignore[attr-defined, arg-type]


def _uvicorn_server(app: ReferenceApp, tls: TLSFiles | None = None) -> Any:
    """uvicorn serving `app`; over HTTPS with TLS on the stamped socket (`LEAN_TLS`), or
    asyncio's SSL transport under uvicorn's own TLS settings, to compare."""
    import uvicorn

    lean = server_context(*tls) if tls is not None and LEAN_TLS else None
    certfile, keyfile = ((str(tls[0]), str(tls[1])) if tls is not None and lean is None
                         else (None, None))
    config = uvicorn.Config(app, loop="asyncio", http=arrival_stamped_protocol(lean),
                            lifespan="on", access_log=False, log_level="warning", backlog=4096,
                            timeout_keep_alive=30, timeout_graceful_shutdown=1,
                            ssl_certfile=certfile, ssl_keyfile=keyfile)
    return uvicorn.Server(config)


def _tls_files(tls: tuple[Path | str, Path | str] | None) -> TLSFiles | None:
    """Both files, loaded here once: uvicorn loads them only once it serves, after the
    URL is announced, and its error for a bad one is a traceback."""
    if tls is None:
        return None
    cert, key = Path(tls[0]), Path(tls[1])
    for what, path in (("certificate", cert), ("key", key)):
        if not path.is_file():
            raise UsageError(f"the TLS {what} file {str(path)!r} does not exist")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise UsageError(f"cannot serve HTTPS with {str(cert)!r} and {str(key)!r}: "
                         f"{exc} (a PEM certificate and its unencrypted key)") from None
    return cert, key


def serve(host: str = "127.0.0.1", port: int = 8000, profile: str = DEFAULT_PROFILE,
          overrides: Mapping[str, Any] | None = None, truth_log: Path | None = None,
          seed: int = 0, announce: Callable[[str], None] | None = None,
          tls: tuple[Path | str, Path | str] | None = None) -> None:
    """Serve the reference endpoint until interrupted (blocking; the CLI's edge).

    `tls` (certificate, key) serves HTTPS, as every vendor does: the client's TLS path
    (its CPU, its stamps) is then measured against the same truth log. Over HTTPS the
    truth log's `kernel_ns` is the stamp of the read that completed a request's TLS
    record (TLS runs on the stamped socket, `evalkit.reference.tlssocket`; with
    `LEAN_TLS` off, asyncio's, none for a connection's first request when it came with
    the handshake's last read), and `arrived_ns` is when its loop saw it decrypted."""
    prof = get_profile(profile, overrides)
    files = _tls_files(tls)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    app = ReferenceApp(prof, seed, Path(truth_log) if truth_log else None)
    server = _uvicorn_server(app, files)
    # this process is the server alone: what exists now (imports, the tokenizer's tables)
    # lives until it exits, so no garbage collection needs to walk it while it serves
    count_tokens("warm up")
    gc.freeze()
    shown = f"[{host}]" if ":" in host else host
    if announce is not None:
        announce(f"{'https' if files else 'http'}://{shown}:{bound}/v1")
    server.run(sockets=[sock])


class ReferenceServer:
    """The reference endpoint on a free loopback port for the length of a `with` block."""

    def __init__(self, profile: str = DEFAULT_PROFILE,
                 overrides: Mapping[str, object] | None = None, truth_log: Path | None = None,
                 mode: Literal["subprocess", "thread"] = "subprocess", seed: int = 0,
                 host: str = "127.0.0.1",
                 tls: tuple[Path | str, Path | str] | None = None) -> None:
        """`tls`: (certificate, key) PEM files to serve HTTPS with; the certificate must
        name `host` (clients, and the readiness check here, verify it against itself)."""
        get_profile(profile, overrides)  # fail here, in the caller, on a bad name or value
        self.tls = _tls_files(tls)
        if mode not in ("subprocess", "thread"):
            raise UsageError(f"mode must be 'subprocess' or 'thread', not {mode!r}")
        self.profile, self.overrides = profile, dict(overrides or {})
        self.truth_log = Path(truth_log) if truth_log is not None else None
        self.mode, self.seed, self.host = mode, seed, host
        self.model = MODEL
        self.base_url = ""
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> ReferenceServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start the endpoint and return once `/v1/models` answers."""
        atexit.register(self.stop)  # never leave a server process behind
        if self.mode == "thread":
            self._start_thread()
        else:
            self._start_subprocess()
        self._wait_ready()

    def _start_thread(self) -> None:
        sock = _bind(self.host, 0)
        prof = get_profile(self.profile, self.overrides)
        self._server = _uvicorn_server(ReferenceApp(prof, self.seed, self.truth_log), self.tls)
        scheme = "https" if self.tls else "http"
        self.base_url = f"{scheme}://{self.host}:{sock.getsockname()[1]}/v1"
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="evalkit-reference", daemon=True)
        self._thread.start()

    def _start_subprocess(self) -> None:
        cmd = [sys.executable, "-m", "evalkit.reference", "--host", self.host, "--port", "0",
               "--profile", self.profile, "--seed", str(self.seed),
               "--overrides", json.dumps(self.overrides)]
        if self.truth_log is not None:
            cmd += ["--truth-log", str(self.truth_log)]
        if self.tls is not None:
            cmd += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
            if not LEAN_TLS:  # as this process was asked to (a comparison)
                cmd.append("--asyncio-tls")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        url = first_line(proc, STARTUP_TIMEOUT_S)
        if not url.startswith("http"):
            self.stop()
            raise EvalkitError(f"the reference endpoint did not start (said {url!r})")
        self.base_url = url

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        # one client: building one costs ~50 ms
        with httpx.Client(timeout=2.0, verify=self.verify) as client:
            while True:
                try:
                    if client.get(self.base_url + "/models").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or (self._proc and self._proc.poll() is not None):
                    self.stop()
                    raise EvalkitError("the reference endpoint did not answer /v1/models")
                time.sleep(0.02)

    def stop(self) -> None:
        """Stop the endpoint (open streams are cut after a short grace period)."""
        atexit.unregister(self.stop)
        if self._server is not None:
            self._server.should_exit = True
            if self._thread is not None:
                self._thread.join(10)
            self._server = self._thread = None
        if self._proc is not None:
            stop_child(self._proc, 10)
            self._proc = None

    @property
    def pid(self) -> int | None:
        """The server process's id (None in thread mode): a benchmark may give it its own
        core or a higher priority, as a vendor's server has its own machine."""
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------------ ground truth
    @property
    def verify(self) -> ssl.SSLContext | bool:
        """What a client of this endpoint verifies its certificate with: the certificate
        itself over HTTPS (it is self-signed), httpx's default otherwise."""
        if self.tls is None:
            return True
        return ssl.create_default_context(cafile=str(self.tls[0]))

    @property
    def root_url(self) -> str:
        """The server root (base_url without `/v1`)."""
        return self.base_url.removesuffix("/v1")

    def state(self, client: httpx.Client | None = None) -> dict[str, object]:
        """Requests in flight and logged so far, and the effective parameters."""
        url = self.root_url + "/_reference/state"
        if client is None:
            with httpx.Client(timeout=5, verify=self.verify) as own:
                return dict(own.get(url).json())
        return dict(client.get(url).json())

    def truth(self, timeout_s: float = 10.0) -> list[dict[str, object]]:
        """Every ground-truth line written so far, once no request is in flight."""
        if self.truth_log is None:
            raise UsageError("this ReferenceServer was started without truth_log")
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=5, verify=self.verify) as client:
            while self.state(client)["in_flight"] and time.monotonic() < deadline:
                time.sleep(0.01)
        if not self.truth_log.exists():
            return []
        with self.truth_log.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.endswith("\n")]
