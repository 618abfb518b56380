"""The catalog database: one SQLite file, versioned migrations, safe for several writers.

Several cron jobs may register at once, so the file is in WAL mode (readers never block
the writer), every connection waits up to `BUSY_TIMEOUT_S` for a lock instead of failing
("database is locked"), and each write is one short `BEGIN IMMEDIATE` transaction (the
write lock taken up front, so two writers never deadlock upgrading a read lock). The
schema's version is `PRAGMA user_version`; `MIGRATIONS` are applied in order, each once,
inside the same kind of transaction, so two processes opening a new file migrate it once.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalkit.analysis.jsonread import Json
from evalkit.errors import UsageError

#: how long a connection waits for another writer's lock before it gives up
BUSY_TIMEOUT_S = 30.0

#: the schema, one step per version: never edit a step once released, add one
MIGRATIONS: tuple[str, ...] = (
    # 1: the runs, probes, imports, reports and panel samples
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        vendor TEXT,
        model TEXT,
        endpoint TEXT,
        suite_version TEXT,
        tool_version TEXT,
        started TEXT,
        ended TEXT,
        registered TEXT NOT NULL,
        status TEXT,
        validity TEXT,
        figures TEXT NOT NULL DEFAULT '{}',
        files TEXT NOT NULL DEFAULT '{}',
        path TEXT NOT NULL,
        source TEXT
    );
    CREATE INDEX runs_by_vendor ON runs (vendor, model, started);
    CREATE INDEX runs_by_kind ON runs (kind, started);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

#: what an entry may be
KINDS = ("probe", "import", "report", "panel")


def now_iso() -> str:
    """The time now as the catalog stores times: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def utc_iso(text: Any) -> str | None:
    """A time as the catalog stores it (UTC ISO 8601, to the second); None when `text` is
    not a time (an import that carries none)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Entry:
    """What one registration says: what was made, of whom, when, how good, and where."""

    kind: str
    path: str
    vendor: str | None = None
    model: str | None = None
    endpoint: str | None = None
    suite_version: str | None = None
    tool_version: str | None = None
    started: str | None = None
    ended: str | None = None
    status: str | None = None
    validity: str | None = None
    #: headline figures (JSON numbers), e.g. baseline TTFT p50
    figures: Mapping[str, Json] = field(default_factory=dict)
    #: file name -> {"sha256", "size", "mtime_ns"}: what `edited` is checked against
    files: Mapping[str, Mapping[str, Json]] = field(default_factory=dict)
    #: for a report: the run directory it reviewed
    source: str | None = None


@dataclass(frozen=True)
class Row:
    """An entry as read back, with its id and when it was registered."""

    id: int
    registered: str
    entry: Entry


_COLUMNS = ("kind", "vendor", "model", "endpoint", "suite_version", "tool_version",
            "started", "ended", "status", "validity", "figures", "files", "path", "source")


class Catalog:
    """The catalog file at `path` (created, with its folder, on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @contextlib.contextmanager
    def _connect(self, create: bool = True) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.exists():
            raise UsageError(f"no catalog at {self.path} yet: `evalkit probe`, `import`, "
                             "`report` and `panel sample` create it (or give --catalog "
                             "PATH / EVALKIT_CATALOG)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._migrate(con)
            yield con
        finally:
            con.close()

    def _wal(self, con: sqlite3.Connection) -> None:
        """Put the file in WAL mode (persistent: once per file, outside a transaction).

        The switch needs the file to itself, and SQLite answers it `database is locked`
        at once, without its busy handler, while another process holds a lock: six
        processes opening a new catalog together failed so (seen beside a loaded suite).
        It is retried until `BUSY_TIMEOUT_S`, and skipped once another has made it."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                con.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _migrate(self, con: sqlite3.Connection) -> None:
        """Bring the schema up to SCHEMA_VERSION, each step once whoever else is opening it."""
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: catalog schema {version} is newer than this "
                             f"evalkit knows ({SCHEMA_VERSION}); upgrade evalkit")
        self._wal(con)
        con.execute("BEGIN IMMEDIATE")
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]  # another may have won
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.execute(f"PRAGMA user_version = {step + 1}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def register(self, entry: Entry) -> int:
        """Add an entry in one short transaction; its id."""
        if entry.kind not in KINDS:
            raise ValueError(f"unknown kind {entry.kind!r}")
        values = [getattr(entry, c) for c in _COLUMNS]
        values[_COLUMNS.index("figures")] = json.dumps(dict(entry.figures), default=str)
        values[_COLUMNS.index("files")] = json.dumps(
            {k: dict(v) for k, v in entry.files.items()})
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                cur = con.execute(
                    f"INSERT INTO runs (registered, {', '.join(_COLUMNS)}) "
                    f"VALUES (?, {', '.join('?' for _ in _COLUMNS)})", [now_iso(), *values])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return int(cur.lastrowid or 0)

    def rows(self, *, vendor: str | None = None, model: str | None = None,
             since: str | None = None, until: str | None = None,
             kind: str | None = None) -> list[Row]:
        """Entries oldest first (by when the run started, else when it was registered)."""
        where, args = [], []
        for column, value in (("vendor", vendor), ("model", model), ("kind", kind)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if since is not None:
            where.append("COALESCE(started, registered) >= ?")
            args.append(since)
        if until is not None:
            where.append("COALESCE(started, registered) < ?")
            args.append(until)
        sql = (f"SELECT id, registered, {', '.join(_COLUMNS)} FROM runs"
               + (f" WHERE {' AND '.join(where)}" if where else "")
               + " ORDER BY COALESCE(started, registered), id")
        with self._connect(create=False) as con:
            return [_row(r) for r in con.execute(sql, args).fetchall()]

    def get(self, run_id: int) -> Row | None:
        """One entry by id (None: no such entry)."""
        with self._connect(create=False) as con:
            r = con.execute(f"SELECT id, registered, {', '.join(_COLUMNS)} FROM runs "
                            "WHERE id = ?", (run_id,)).fetchone()
        return _row(r) if r else None


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _row(r: tuple[Any, ...]) -> Row:
    data = dict(zip(_COLUMNS, r[2:], strict=True))
    data["figures"], data["files"] = _json(data["figures"]), _json(data["files"])
    return Row(int(r[0]), str(r[1]), Entry(**data))
