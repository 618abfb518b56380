"""A copy of the report-run fixture to damage, for the run directory's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.rundir.helpers import RUN_DIR


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh copy of the fixture run to damage."""
    return Path(shutil.copytree(RUN_DIR, tmp_path / "run"))
