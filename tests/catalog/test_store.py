"""The catalog database: a real SQLite file, its migrations, several writers at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalkit.catalog.paths import catalog_path, data_dir
from evalkit.catalog.store import SCHEMA_VERSION, Catalog, Entry, utc_iso
from evalkit.errors import UsageError


def _entry(i: int, vendor: str = "Acme", started: str = "2026-11-30T07:00:00+00:00") -> Entry:
    return Entry(kind="probe", path=f"/runs/{i}", vendor=vendor, model="m",
                 started=started, validity="valid", figures={"requests": i})


def test_a_new_file_is_migrated_to_the_schema_in_wal_mode(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "sub" / "c.sqlite")
    rid = cat.register(_entry(1))
    con = sqlite3.connect(cat.path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT id, vendor, figures FROM runs").fetchall() == [
        (rid, "Acme", '{"requests": 1}')]
    con.close()


def test_a_newer_schema_is_refused_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(UsageError, match="newer than this evalkit"):
        Catalog(path).register(_entry(1))


def test_rows_filter_by_vendor_model_and_since_oldest_first(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "c.sqlite")
    cat.register(_entry(1, started="2026-10-02T00:00:00+00:00"))
    cat.register(_entry(2, vendor="Other"))
    cat.register(_entry(3, started="2026-08-01T00:00:00+00:00"))
    assert [r.entry.path for r in cat.rows(vendor="Acme")] == ["/runs/3", "/runs/1"]
    assert [r.entry.path for r in cat.rows(since="2026-09-01T00:00:00+00:00")] == [
        "/runs/1", "/runs/2"]
    assert cat.rows(model="nope") == []
    assert cat.get(2) is not None and cat.get(2).entry.vendor == "Other"  # type: ignore[union-attr]
    assert cat.get(99) is None


def test_reading_a_catalog_that_does_not_exist_says_how_one_is_made(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no catalog at"):
        Catalog(tmp_path / "none.sqlite").rows()
    assert not (tmp_path / "none.sqlite").exists()


WRITER = """
import sys
from evalkit.catalog.store import Catalog, Entry
cat = Catalog(sys.argv[1])
for i in range(int(sys.argv[3])):
    cat.register(Entry(kind="panel", path=f"/p/{sys.argv[2]}/{i}", vendor=sys.argv[2]))
"""


def test_several_processes_write_at_once_and_none_is_lost(tmp_path: Path) -> None:
    """Six processes opening a new file at once (each migrating it) and registering 25
    entries each: 150 rows, distinct ids, every writer's every entry."""
    path = tmp_path / "c.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{k}", "25"],
                              stderr=subprocess.PIPE, text=True) for k in range(6)]
    errors = [p.communicate(timeout=120)[1] for p in procs]  # every one, then judge
    assert [p.returncode for p in procs] == [0] * 6, errors
    rows = Catalog(path).rows()
    assert len(rows) == 150 and len({r.id for r in rows}) == 150
    for k in range(6):
        assert {r.entry.path for r in rows if r.entry.vendor == f"w{k}"} == {
            f"/p/w{k}/{i}" for i in range(25)}


def test_times_are_stored_in_utc() -> None:
    assert utc_iso("2026-11-30T08:00:00+01:00") == "2026-11-30T07:00:00+00:00"
    assert utc_iso("2026-11-30T07:00:00Z") == "2026-11-30T07:00:00+00:00"
    assert utc_iso("2026-11-30") == "2026-11-30T00:00:00+00:00"
    assert utc_iso("yesterday") is None and utc_iso(3) is None


def test_the_default_place_follows_the_platform(tmp_path: Path) -> None:
    home = Path("/home/u")
    assert data_dir({}, "linux", home) == home / ".local/share/evalkit"
    assert data_dir({"XDG_DATA_HOME": "/x"}, "linux", home) == Path("/x/evalkit")
    assert data_dir({"XDG_DATA_HOME": "rel"}, "linux", home) == home / ".local/share/evalkit"
    assert data_dir({}, "darwin", home) == home / "Library/Application Support/evalkit"
    assert data_dir({"LOCALAPPDATA": "C:/L"}, "win32", home) == Path("C:/L/evalkit")
    assert catalog_path(None, {"EVALKIT_CATALOG": "/e.sqlite"}) == Path("/e.sqlite")
    assert catalog_path("/given.sqlite", {"EVALKIT_CATALOG": "/e.sqlite"}) == Path(
        "/given.sqlite")
    assert catalog_path(None, {"XDG_DATA_HOME": "/x"}) == Path("/x/evalkit/catalog.sqlite")


def test_the_suite_never_writes_the_users_catalog() -> None:
    """conftest points EVALKIT_CATALOG at a temporary file for every test."""
    import os

    assert "pytest" in os.environ["EVALKIT_CATALOG"] or "/tmp" in os.environ["EVALKIT_CATALOG"]
    assert catalog_path() == Path(os.environ["EVALKIT_CATALOG"])


def test_a_new_catalog_waits_for_another_process_holding_its_file(tmp_path: Path) -> None:
    """SQLite refuses the switch to WAL at once, without its busy handler, while another
    connection holds a write lock (the six writers above failed so beside a loaded suite):
    the migration waits for the lock instead of failing."""
    path = tmp_path / "c.sqlite"
    locked, release = threading.Event(), threading.Event()

    def other_process() -> None:  # a connection of its own thread, as another process's
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(10)
        time.sleep(0.3)
        con.execute("COMMIT")
        con.close()

    holder = threading.Thread(target=other_process)
    holder.start()
    try:
        assert locked.wait(10)
        release.set()
        Catalog(path).register(Entry(kind="panel", path="/p/0", vendor="v"))
    finally:
        holder.join(10)
    assert [r.entry.path for r in Catalog(path).rows()] == ["/p/0"]
