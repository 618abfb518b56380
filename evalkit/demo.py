"""`evalkit demo`: the whole job on the built-in reference endpoint, with no network."""

from __future__ import annotations

from pathlib import Path


def run_demo(out_dir: Path) -> list[Path]:
    """Run what exists of the pipeline; return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return []
