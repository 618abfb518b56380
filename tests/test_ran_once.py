"""`make test` runs each test once (tests/ran_once.py): the coverage run records what it
selected as soon as it has collected, and the suite beside it waits for that list and
leaves those tests to it. A list read too early would run the core's tests twice; a list
never written must stop the run, not run everything."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TESTS = '''
def test_core_one(): pass
def test_core_two(): assert False
def test_other(): pass
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tests.ran_once", "--rootdir", str(folder), "-c", str(folder / "pytest.ini"),
         *args, str(folder / "test_x.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "test_x.py").write_text(TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def test_the_selection_is_written_and_left_out_passed_or_not(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    selected = tmp_path / "out" / "selected.txt"
    first = _pytest(folder, "-k", "core", "--record-selected", str(selected))
    assert first.returncode == 1  # test_core_two fails there, and fails that run
    ids = selected.read_text().splitlines()
    assert [i.rsplit("::", 1)[1] for i in ids] == ["test_core_one", "test_core_two"]
    assert not selected.with_name("selected.txt.partial").exists()
    second = _pytest(folder, "--skip-passed", str(selected))
    assert second.returncode == 0, second.stdout
    assert "1 passed, 2 deselected" in second.stdout


def test_the_suite_waits_for_the_list_and_not_past_its_deadline(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    selected = tmp_path / "selected.txt"

    listed = tmp_path / "listed.txt"
    _pytest(folder, "--collect-only", "-k", "core", "--record-selected", str(listed))
    ids = listed.read_text()
    assert ids.count("::test_core_") == 2

    def write_late_ids() -> None:
        time.sleep(2.0)
        selected.write_text(ids)

    writer = threading.Thread(target=write_late_ids)
    writer.start()
    waited = _pytest(folder, "--skip-passed", str(selected), "--await-list", "60")
    writer.join()
    assert waited.returncode == 0 and "1 passed, 2 deselected" in waited.stdout, waited.stdout
    # never written: an error once the deadline passes, never the whole suite
    missing = _pytest(folder, "--skip-passed", str(tmp_path / "never.txt"),
                      "--await-list", "0.5")
    assert missing.returncode == 4 and "never.txt" in missing.stderr + missing.stdout
