"""Where a run came from, as MLPerf LoadGen records it: run.json's `provenance`.

A scorecard is argued over long after its run, so the run says what made it: the evalkit
version and, from a checkout, its git commit and whether the tree was dirty; the SHA-256
of the package's own files (`package_digest`: the code and the files it ships, so an
edited install is told from a released one whatever its version says); the Python,
platform and CPU; the command line with its secrets taken out; and the prompt seed, so
every synthetic prompt can be re-made bit for bit from a record
(`evalkit.probe.plan.prompts.synthetic(counted_prompt_tokens, requested_output_tokens,
prompt_id, seed)`).

`provenance_findings(run_json, current())` says where a run's recorded provenance differs
from the evalkit now running: what `verify` reports.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import evalkit
from evalkit.errors import EvalkitError

#: the package's own files, by folder as installed: what pyproject.toml ships
#: (the code and its package data; templates/ and questionnaires/ sit beside the package
#: in a checkout and inside it in a wheel, and are hashed under the installed name)
PACKAGE_FILES = ("*.py", "*.json")
DATA_FILES = {"templates": ("*.j2", "*.css"), "questionnaires": ("*.yaml", "*.json")}
#: a short digest as a page prints it
SHORT = 12
#: how long `git` may take to say what the checkout is (s)
GIT_TIMEOUT_S = 3.0

#: a flag whose value is a secret, by its last word (`--api-key KEY`, `--token=T`,
#: `--sign-passphrase P`); a flag naming where a secret is (`--api-key-env VAR`) or a
#: count (`--prompt-tokens`) is not one
_SECRET_FLAG = re.compile(
    r"^--?([\w-]*[-_])?(api[-_]?key|key|token|secret|password|passwd|passphrase|"
    r"credentials?|bearer|authorization)$", re.I)
_HEADER_FLAGS = frozenset({"--header", "-H"})
#: flags whose URL may carry a token in its query under any name (`url_as_written`)
_TOKEN_URL_FLAGS = frozenset({"--metrics-url"})
_SCHEMES = re.compile(r"(?i)\b(bearer|basic|token)\s+[^\s'\"]+")
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|key|tok)-[A-Za-z0-9_\-]{8,}")
_URL_USER = re.compile(r"(?i)(\w+://)[^/\s@]+@")
#: a query value whose name ends in a secret's word (`api_key`, `x-api-key`, `dd-api-key`,
#: `subscription-key`, `access_token`, `sig`, Azure Functions' `code`)
_QUERY_SECRET = re.compile(r"(?i)([?&](?:[\w.-]*[-_.])?(?:api[-_]?key|apikey|key|token|sig|"
                           r"signature|password|passwd|secret|code|auth|authorization|credentials?)=)"
                           r"[^&\s#]+")


def url_as_written(url: str) -> str:
    """`url` as a run may write it: a user:password@ blanked and every query value
    blanked, whatever its name (a metrics page behind a token takes it in the query, and a
    token's parameter name is the vendor's choice: `?t=`, `?k=`), the fragment dropped.
    The names stay, so a reader sees that the URL had a query and what it asked for."""
    base, _, _fragment = url.partition("#")
    base = _URL_USER.sub(r"\1***@", base)
    path, sep, query = base.partition("?")
    if not sep:
        return base
    blanked = "&".join(f"{part.partition('=')[0]}=***" if "=" in part else part
                       for part in query.split("&"))
    return f"{path}?{blanked}"


def _files(package: Path, data: Mapping[str, Path]) -> list[tuple[str, Path]]:
    """(path as installed, file) of every file the digest covers."""
    out = []
    for pattern in PACKAGE_FILES:
        for f in package.rglob(pattern):
            rel = f.relative_to(package)
            if "__pycache__" in rel.parts or rel.parts[0] in DATA_FILES or not f.is_file():
                continue
            out.append((f"evalkit/{rel.as_posix()}", f))
    for name, folder in data.items():
        for pattern in DATA_FILES.get(name, ("*",)):
            out += [(f"evalkit/{name}/{f.name}", f) for f in folder.glob(pattern)
                    if f.is_file()]
    return sorted(set(out))


def package_digest(package: Path, data: Mapping[str, Path]) -> str:
    """SHA-256 over the package's files: each one's path as installed, its size and its
    bytes, in path order, so a file renamed, moved, added or changed changes it.

    `package` is the evalkit folder; `data` maps `templates` and `questionnaires` to where
    they are (beside the package in a checkout, inside it when installed)."""
    h = hashlib.sha256()
    for rel, f in _files(package, data):
        body = f.read_bytes()
        h.update(f"{rel}\0{len(body)}\0".encode())
        h.update(body)
    return h.hexdigest()


@functools.cache
def installed_digest() -> str | None:
    """The running evalkit's `package_digest` (once per process: about a hundred small
    files); None when its files cannot be read."""
    from evalkit.resources import data_dir

    try:
        data = {name: data_dir(name) for name in DATA_FILES}
        return package_digest(Path(evalkit.__file__).resolve().parent, data)
    except (OSError, EvalkitError):
        return None


@functools.cache
def git_state() -> dict[str, Any] | None:
    """The checkout evalkit runs from: {commit, dirty}; None when it is not run from a
    checkout of its own (an install), or git is missing or slow."""
    top = Path(evalkit.__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(top), *args], capture_output=True,
                                  text=True, timeout=GIT_TIMEOUT_S, check=False,
                                  env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    root = git("rev-parse", "--show-toplevel")
    if root is None or Path(root).resolve() != top:  # a site-packages inside some repo
        return None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    if commit is None:
        return None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()[:120] or None
    except OSError:
        pass
    return platform.processor()[:120] or None


def command_line(argv: Sequence[str], redact: Callable[[str], str] = str) -> list[str]:
    """The command line as run.json may keep it: a secret flag's value (`--api-key KEY`,
    `--token=T`), a header's value, bearer tokens, key-like words, a URL's user part,
    secret query values and every query value of a `--metrics-url` are `***`; `redact` (a
    Target's) blanks the key it was given in every form it may take."""
    out: list[str] = []
    hide = header = token_url = False
    for arg in argv:
        arg = str(arg)
        if token_url:
            arg, token_url = url_as_written(arg), False
        if hide:
            out.append("***")
            hide = False
            continue
        if header:
            name, sep, _ = arg.partition(":")
            out.append(f"{name}: ***" if sep else "***")
            header = False
            continue
        flag, eq, value = arg.partition("=")
        if flag.startswith("-") and _SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}=***")
            else:
                out.append(arg)
                hide = True
            continue
        if flag in _TOKEN_URL_FLAGS:
            if eq:
                arg = f"{flag}={url_as_written(value)}"
            else:
                token_url = True
        elif flag in _HEADER_FLAGS:
            if eq:
                out.append(f"{flag}={value.partition(':')[0]}: ***")
            else:
                out.append(arg)
                header = True
            continue
        arg = redact(arg)
        arg = _SCHEMES.sub(lambda m: f"{m.group(1)} ***", arg)
        arg = _KEY_LIKE.sub(lambda m: f"{m.group(1)}-***", arg)
        arg = _URL_USER.sub(r"\1***@", arg)
        out.append(_QUERY_SECRET.sub(r"\1***", arg))
    return out


def current() -> dict[str, object]:
    """The running evalkit: version, suite version, package digest, checkout."""
    return {"evalkit_version": evalkit.__version__, "suite_version": evalkit.SUITE_VERSION,
            "package_sha256": installed_digest(), "git": git_state()}


def provenance(*, argv: Sequence[str] | None = None, redact: Callable[[str], str] = str,
               prompts: Mapping[str, object] | None = None) -> dict[str, object]:
    """run.json's `provenance`: `current()`, the machine, the command line (`argv`,
    default the interpreter's own, secrets removed: `command_line`) and how the prompts
    were made (`prompts`: the seed, and what else re-makes them)."""
    return {
        **current(),
        "python": {"version": platform.python_version(),
                   "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": {"system": platform.platform(), "machine": platform.machine(),
                     "cpu_model": _cpu_model(), "cpu_count": os.cpu_count()},
        "command_line": command_line(sys.orig_argv if argv is None else argv, redact),
        "prompts": dict(prompts or {}),
    }


def short(digest: object) -> str:
    """A digest as a page prints it (`a1b2c3d4e5f6`), or `—`."""
    return digest[:SHORT] if isinstance(digest, str) and digest else "—"


def provenance_findings(run: Mapping[str, object], now: Mapping[str, object]) -> list[str]:
    """Where a run.json's `provenance` and the evalkit now running (`now`: `current()`)
    part ways, one sentence each; [] when they agree. A run from before the suite
    recorded its provenance says so. Pure: what `verify` reports."""
    recorded = run.get("provenance")
    if not isinstance(recorded, Mapping):
        return ["the run records no provenance (written by an older suite): the evalkit "
                "that measured it cannot be checked"]
    out = []
    for key, what in (("evalkit_version", "evalkit version"),
                      ("suite_version", "suite version"),
                      ("package_sha256", "package digest")):
        was, is_ = recorded.get(key), now.get(key)
        if was != is_:
            show: Callable[[Any], str] = short if key == "package_sha256" else str
            out.append(f"{what}: the run was measured with {show(was)}, this is {show(is_)}")
    return out
