"""Real gateways in front of an engine, as test subprocesses: nginx from Debian's package
and LiteLLM's proxy, each on a free loopback port, killed when its test is done.

    with Nginx(upstream_port, workdir, buffering=True) as gw:     # nginx's default proxy
        gw.base_url                                                # http://127.0.0.1:P/v1
    with LiteLLMProxy({"evalkit-reference": (engine_base_url, "evalkit-reference")},
                      workdir) as gw:
        gw.base_url

Both are installed by the project's own files (`make gateways`, part of `make test`):
nginx with `apt-get install -y nginx` where /usr/sbin/nginx is missing (the package's
service is never started: we run our own master with our own config), LiteLLM into
`.venv-gateway` from `gateway-requirements.txt` beside this file, every package pinned
by version and SHA-256 (litellm 1.82.6: the wheel BerriAI's post-incident audit lists as
clean, sha256 164a3ef3...; 1.82.7, 1.82.8 and 1.107.0 were compromised uploads).

LiteLLM runs offline and alone: no database (no DATABASE_URL), no callbacks, telemetry
off, the bundled model-cost map, Anthropic beta headers, blog posts and policy templates
(LITELLM_LOCAL_*), no Hugging Face downloads (HF_HUB_OFFLINE), LITELLM_MODE=PRODUCTION
(no .env read from the working folder), and HTTP(S)_PROXY at a dead loopback port so
that any outbound call it still tried would fail here instead of leaving the machine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import TracebackType

from tests.engines.process import free_port, stop_process, wait_answering

ROOT = Path(__file__).resolve().parents[2]
NGINX = Path("/usr/sbin/nginx")
LITELLM = ROOT / ".venv-gateway" / "bin" / "litellm"
INSTALL_HINT = "the gateways are installed by `make gateways` (part of `make test`)"

#: nginx's default reverse proxy, as most endpoints behind one have it: `proxy_pass`
#: and nothing else (HTTP/1.0 upstream, proxy_buffering on, 4-8 KB buffers)
DEFAULT_LOCATION = "proxy_pass http://127.0.0.1:{port};"
#: the SSE-friendly one every guide to streaming behind nginx gives
UNBUFFERED_LOCATION = ("proxy_pass http://127.0.0.1:{port}; proxy_buffering off; "
                       "proxy_http_version 1.1; proxy_set_header Connection \"\";")


class _Process:
    """A gateway process: start, wait until it answers GET /v1/models, stop."""

    name = "the gateway"
    start_deadline_s = 20.0

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / "gateway.log"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def prepare(self) -> None:
        """Write the config (the port is chosen by then)."""

    def start(self) -> _Process:
        self.port = free_port()
        self.prepare()
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=self.env(),
                                          cwd=self.workdir)
        try:
            wait_answering(f"{self.base_url}/models", self._proc, self.start_deadline_s,
                           ready=lambda r: r.status_code == 200, name=self.name,
                           log=self.log_tail, interval_s=0.1)
        except BaseException:
            self.stop()
            raise
        return self

    def log_tail(self, n: int = 30) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_process(proc)

    def __enter__(self) -> _Process:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class Nginx(_Process):
    """nginx (Debian's package) as a reverse proxy to `upstream_port` on loopback: its
    default proxy config (`buffering=True`) or the SSE-friendly one."""

    name = "nginx"
    start_deadline_s = 10.0

    def __init__(self, upstream_port: int, workdir: Path, *, buffering: bool) -> None:
        super().__init__(workdir)
        self.upstream_port = upstream_port
        self.buffering = buffering

    def prepare(self) -> None:
        location = (DEFAULT_LOCATION if self.buffering else UNBUFFERED_LOCATION).format(
            port=self.upstream_port)
        d = self.workdir
        # as root the master hands its workers to `nobody`, who cannot enter pytest's 0700
        # temporary folders: the workers stay root (this is a test on loopback)
        user = "user root;" if os.geteuid() == 0 else ""
        (d / "nginx.conf").write_text(f"""\
{user}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{self.port};
    location / {{ {location} }}
  }}
}}
""")

    def command(self) -> list[str]:
        if not NGINX.exists():
            raise AssertionError(f"{NGINX} is missing: {INSTALL_HINT}")
        conf = self.workdir / "nginx.conf"
        return [str(NGINX), "-p", str(self.workdir), "-e", str(self.workdir / "error.log"),
                "-c", str(conf)]


class LiteLLMProxy(_Process):
    """LiteLLM's proxy serving models from OpenAI-compatible engines, offline, with no
    database."""

    name = "LiteLLM's proxy"
    start_deadline_s = 180.0  # it imports a great deal: 20-30 s alone, 90 s on a loaded host

    def __init__(self, routes: dict[str, tuple[str, str]], workdir: Path) -> None:
        """`routes`: the model name it serves -> (the engine's base URL, its model)."""
        super().__init__(workdir)
        self.routes = routes

    def prepare(self) -> None:
        models = "".join(f"""\
  - model_name: {name}
    litellm_params:
      model: openai/{model}
      api_base: {url}
      api_key: none
""" for name, (url, model) in self.routes.items())
        (self.workdir / "config.yaml").write_text(f"""\
model_list:
{models}litellm_settings:
  telemetry: false
  callbacks: []
  success_callback: []
  failure_callback: []
""")

    def command(self) -> list[str]:
        if not LITELLM.exists():
            raise AssertionError(f"{LITELLM} is missing: {INSTALL_HINT}")
        return [str(LITELLM), "--config", str(self.workdir / "config.yaml"),
                "--host", "127.0.0.1", "--port", str(self.port), "--telemetry", "False",
                "--num_workers", "1"]

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE")
        dead = "http://127.0.0.1:9"  # the discard port: nothing listens, a call fails now
        return {**{k: v for k, v in os.environ.items() if k in keep},
                "HOME": str(self.workdir), "LITELLM_MODE": "PRODUCTION",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
                "LITELLM_LOCAL_BLOG_POSTS": "True", "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
                "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True", "DISABLE_ADMIN_UI": "True",
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead,
                "https_proxy": dead, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost"}


def installed() -> list[str]:
    """What of the gateways is missing here (empty: both are installed)."""
    return [str(p) for p in (NGINX, LITELLM) if not p.exists()]

