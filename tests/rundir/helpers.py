"""The report-run fixture and ways to damage a copy of it, shared by the run directory's tests
(from the former tests/test_run_dirs.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pypdf

RUN_DIR = Path(__file__).parent.parent / "data" / "report_run"


def _lines(d: Path) -> list[bytes]:
    return (d / "requests.jsonl").read_bytes().splitlines()


def _put_lines(d: Path, lines: list[bytes]) -> None:
    (d / "requests.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def _text(pdf: Path) -> str:
    return re.sub(r"\s+", " ", "\n".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages))


def _page_one(pdf: Path) -> str:
    return re.sub(r"\s+", " ", pypdf.PdfReader(pdf).pages[0].extract_text())


def _record(**over: Any) -> bytes:
    d = json.loads(_lines(RUN_DIR)[20])
    d.update(over)
    return json.dumps(d).encode()
