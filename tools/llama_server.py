"""llama.cpp's own C++ server (`llama-server`), built once per machine for the tests.

    python tools/llama_server.py          # build it unless the cached one answers
    python tools/llama_server.py --path   # where it is (or would be)

`make install` runs it. The source is the llama-cpp-python sdist the `engines` extra pins
in pyproject.toml (its vendor/llama.cpp, the same code as the Python server's library):
that pin is the one place the version is written, so the binary cannot drift from it.
The sdist comes from PyPI through pip (its cache), nothing else is downloaded: the Web UI
is not built and no prebuilt one is fetched (`LLAMA_USE_PREBUILT_UI` defaults ON and
would download one at build time), and there is no TLS, no curl.

The binary is cached under `${XDG_CACHE_HOME:-$HOME/.cache}/evalkit/llama.cpp-VERSION/`,
beside pip's own cache, so a second clone (or a `make clean`) does not build it again. A
cached binary is kept only if it answers `--version`; a build writes it under another
name and renames it into place, so a build that was stopped leaves nothing half-made.

The tests find it by the same rule (`binary_path`, from tests/engines/native_server.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "llama-cpp-python"
#: CPU only and portable (no -march=native: the cache may be shared with another CPU),
#: static (one file to cache), the server target and nothing that downloads
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_APP=OFF",
)
#: how long `--version` may take before the binary counts as not answering
VERSION_TIMEOUT_S = 30


def pinned_version(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The llama-cpp-python version the `engines` extra pins (`==X.Y.Z`)."""
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for req in extras["engines"]:
        m = re.fullmatch(rf"{PACKAGE}(\[[^]]*\])?==([0-9][0-9A-Za-z.]*)", req.replace(" ", ""))
        if m:
            return m.group(2)
    raise SystemExit(f"pyproject.toml's `engines` extra pins no {PACKAGE}==VERSION")


def cache_dir(version: str | None = None) -> Path:
    """${XDG_CACHE_HOME:-$HOME/.cache}/evalkit/llama.cpp-VERSION."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalkit" / f"llama.cpp-{version or pinned_version()}"


def binary_path(version: str | None = None) -> Path:
    """Where the built llama-server is (whether or not it is there yet)."""
    return cache_dir(version) / "bin" / "llama-server"


def answers(path: Path) -> str | None:
    """The binary's `--version` text if it runs and says it; None otherwise."""
    if not path.is_file() or not os.access(path, os.X_OK):
        return None
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    said = (done.stdout + done.stderr).strip()
    return said if done.returncode == 0 and "version" in said else None


def _run(cmd: list[str], *, quiet: bool = False) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL if quiet else None)


def build(version: str) -> Path:
    """Download the sdist through pip, build the server target, put it in the cache."""
    target = binary_path(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    jobs = str(os.cpu_count() or 2)
    with tempfile.TemporaryDirectory(prefix="build-", dir=target.parent.parent) as tmp:
        work = Path(tmp)
        # the sdist only: its build backend (to read its metadata) comes as wheels
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
              "--no-binary", PACKAGE, f"{PACKAGE}=={version}", "-d", str(work / "sdist")])
        sdists = list((work / "sdist").glob("*.tar.gz"))
        if len(sdists) != 1:
            raise SystemExit(f"pip downloaded {len(sdists)} sdists of {PACKAGE}=={version}")
        with tarfile.open(sdists[0]) as tar:
            tar.extractall(work / "src", filter="data")
        src = next((work / "src").glob("*/vendor/llama.cpp"))
        _run(["cmake", "-S", str(src), "-B", str(work / "build"), *CMAKE_FLAGS], quiet=True)
        _run(["cmake", "--build", str(work / "build"), "--target", "llama-server", "-j", jobs])
        partial = target.with_name(target.name + ".partial")
        shutil.copy2(work / "build" / "bin" / "llama-server", partial)
        os.replace(partial, target)
    return target


def main(argv: list[str]) -> int:
    version = pinned_version()
    path = binary_path(version)
    if argv[1:] == ["--path"]:
        print(path)
        return 0
    if argv[1:]:
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        return 2
    if answers(path):
        print(f"llama-server (llama-cpp-python {version}): cached at {path}")
        return 0
    print(f"building llama-server from llama-cpp-python {version}'s llama.cpp, once per "
          f"machine (17 CPU-minutes: about 10 minutes on 2 idle cores); cached at {path}",
          flush=True)
    started = time.monotonic()
    build(version)
    said = answers(path)
    if said is None:
        raise SystemExit(f"the built {path} does not answer --version")
    print(f"built {path} in {time.monotonic() - started:.0f} s: {said.splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
