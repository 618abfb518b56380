"""A reference endpoint in a child process says its URL on its first stdout line once it
listens (the port is the kernel's choice); `first_line` reads it with a deadline, and
`stop_child` ends the child."""

from __future__ import annotations

import subprocess
import threading


def first_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's first stdout line, stripped ("" if none came within `timeout_s`: a
    pipe's read has no deadline of its own, so it is read in a thread that is left
    behind, a daemon, if the child never speaks)."""
    line: list[str] = []

    def read() -> None:
        if proc.stdout is not None:
            line.append(proc.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    return line[0].strip() if line else ""


def stop_child(proc: subprocess.Popen[str], grace_s: float) -> None:
    """SIGTERM, SIGKILL after `grace_s`, and the pipe closed: no child left behind."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
