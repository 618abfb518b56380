"""A pytest plugin so `make test` runs each test once: the pure core's fast tests under
coverage (tools/core_coverage.py), then the rest of the suite without them.

    pytest -p tests.ran_once --record-passed FILE ...   # writes the ids of tests that passed
    pytest -p tests.ran_once --skip-passed FILE         # deselects exactly those ids
    pytest -p tests.ran_once --record-selected FILE ... # writes the ids it is about to run
    pytest -p tests.ran_once --skip-passed FILE --await-list 300   # waits for FILE first

Only a test that passed is left out of the second run: one that failed, errored or was
skipped in the first runs again. A missing FILE is an error, never an empty list (that
would run everything twice, and say nothing of it).

`make test` runs the coverage run beside the timing tests, not before them
(tools/suite.py): the coverage run writes what it selected as soon as it has collected
(`--record-selected`, written whole or not at all), and the timing tests' pytest waits for
that list (`--await-list`, a deadline) and leaves those tests to it, passed or not: a test
that fails under coverage fails `make test` there.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ran_once", "run each test once (make test)")
    group.addoption("--record-passed", metavar="FILE", default=None,
                    help="write the node id of every test that passed to FILE")
    group.addoption("--skip-passed", metavar="FILE", default=None,
                    help="deselect the tests whose node ids FILE lists (--record-passed)")
    group.addoption("--record-selected", metavar="FILE", default=None,
                    help="write the node id of every test this run selected to FILE, "
                         "as soon as it has collected")
    group.addoption("--await-list", metavar="SECONDS", type=float, default=0.0,
                    help="with --skip-passed: wait up to SECONDS for FILE to appear")


class _Recorder:
    """Keeps the node ids whose setup, call and teardown all passed; writes them at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.passed: dict[str, bool] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        ok = report.passed and not hasattr(report, "wasxfail")
        if report.when == "call":
            self.passed[report.nodeid] = self.passed.get(report.nodeid, True) and ok
        elif not ok:
            self.passed[report.nodeid] = False

    def pytest_sessionfinish(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(f"{n}\n" for n, ok in self.passed.items() if ok),
                             encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    record = config.getoption("--record-passed")
    if record:
        config.pluginmanager.register(_Recorder(Path(record)), "ran_once_recorder")


def pytest_collection_finish(session: pytest.Session) -> None:
    """`--record-selected`: the ids this run will run, after -k and -m, written to a
    temporary name and renamed, so a reader waiting for the file never reads half."""
    record = session.config.getoption("--record-selected")
    if record:
        path = Path(record)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text("".join(f"{i.nodeid}\n" for i in session.items), encoding="utf-8")
        partial.replace(path)


def _await(path: Path, seconds: float) -> None:
    """Wait for `path` to exist, at most `seconds` (the run that writes it is collecting)."""
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = config.getoption("--skip-passed")
    if not skip:
        return
    _await(Path(skip), config.getoption("--await-list"))
    try:
        done = set(Path(skip).read_text(encoding="utf-8").splitlines())
    except OSError as exc:
        raise pytest.UsageError(f"--skip-passed {skip}: {exc.strerror}") from None
    kept = [item for item in items if item.nodeid not in done]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
        items[:] = kept
