"""The SQLite backend: one file, its numbered migrations, a connection per thread.

The schema moves forward through the numbered migrations of
``rag_core.storage.migrations``, recorded in ``_migrations``. WAL mode and a busy timeout let several Streamlit sessions
and an upload write at once.

A file that SQLite cannot read raises ``DatabaseDamagedError`` (never a bare
``sqlite3.DatabaseError``); ``rag_core.storage.backups`` moves such a file aside and
rebuilds. An online backup is taken before migrations change an existing file, and then
on a schedule.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_core.errors import DatabaseDamagedError, DiskFullError, damaged, disk_full, free_bytes, translated
from rag_core.storage.database import Database, Row, without_nul
from rag_core.storage.dialect import SQLITE
from rag_core.storage.migrations import MIGRATIONS


class _Transaction:
    """A transaction's connection whose statements take their text as PostgreSQL's do (no NUL)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self._conn.execute(sql, without_nul(parameters))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class SQLiteDatabase(Database):
    """One SQLite file, checked and migrated on open; a connection per thread.

    ``backups`` (a ``rag_core.storage.backups.Backups``) is asked for a copy before a migration
    changes an existing file and after each write transaction (it decides whether one is due)."""

    dialect = SQLITE

    def __init__(self, path: Path, backups: Any = None) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.backups = backups
        self._local = threading.local()
        self.full: DiskFullError | None = None  # set when opened read-only for want of space
        if self.path.exists() and self.path.stat().st_size == 0:
            raise damaged(self.path, "the file is empty (0 bytes)")
        try:
            conn = self._connection()
            problem = conn.execute("PRAGMA quick_check").fetchone()[0]
            if problem != "ok":
                raise damaged(self.path, problem)
            conn.execute("PRAGMA journal_mode=WAL")
            self._migrate(conn)
        except sqlite3.DatabaseError as e:
            self.close()
            full = disk_full(self.path.parent, e) if isinstance(e, sqlite3.OperationalError) else None
            if full is None:
                raise damaged(self.path, str(e)) from e
            self._read_only(full)  # not damage: the file is left as it is, and read
        except DatabaseDamagedError:
            self.close()
            raise

    def _read_only(self, full: DiskFullError) -> None:
        """On a disk too full for WAL's side files (-shm, -wal), the file is read as it is on
        disk (SQLite's ``immutable``: no side files, no locks): listing and asking keep
        working; every write says the disk is full. Another process cannot write either."""
        if not self.path.exists() or self._pending_migrations():
            raise full
        self.full = full

    def _immutable(self) -> str:
        return f"{self.path.resolve().as_uri()}?immutable=1"

    def _writable_again(self) -> bool:
        """After space was freed: the file opened for writing again, in this thread."""
        self.close()
        full, self.full = self.full, None
        try:
            self._connection().execute("PRAGMA journal_mode=WAL")
            return True
        except sqlite3.DatabaseError:
            self.close()
            self.full = full
            return False

    def _pending_migrations(self) -> bool:
        try:
            conn = self._connection_to(self._immutable())
            done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
        except sqlite3.DatabaseError:
            return True
        finally:
            self.close()
        return any(fn.__name__ not in done for fn in MIGRATIONS)

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connection_to(self._immutable() if self.full else str(self.path))
        return conn

    def _connection_to(self, where: str) -> sqlite3.Connection:
        uri = where.startswith("file:")
        conn = sqlite3.connect(where, timeout=30, isolation_level=None, check_same_thread=False, uri=uri)
        conn.row_factory = sqlite3.Row
        if not self.full:
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA synchronous=NORMAL")
        self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextmanager
    def connect(self) -> Iterator[_Transaction]:
        """A transaction: committed on success, rolled back on error."""
        if self.full and not self._writable_again():
            raise DiskFullError(self.full.folder, free_bytes(self.full.folder))
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Transaction(conn)
            except BaseException:
                if conn.in_transaction:  # SQLite has rolled back itself after SQLITE_FULL
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            raise translated(self.path, e) from e
        if self.backups is not None:
            self.backups.if_due(self)

    def query(self, sql: str, params: tuple = ()) -> list[Row]:
        try:
            return self._connection().execute(sql, without_nul(params)).fetchall()
        except sqlite3.DatabaseError as e:
            raise translated(self.path, e) from e

    def _migrate(self, db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL)")
        done = {r[0] for r in db.execute("SELECT name FROM _migrations")}
        todo = [fn for fn in MIGRATIONS if fn.__name__ not in done]
        if todo and done and self.backups is not None:  # an existing file is about to change
            self.backups.take(self, label=f"before-{todo[0].__name__}")
        for fn in todo:
            # One transaction per migration: its DDL and its record land together or not at all.
            db.executescript(
                f"BEGIN IMMEDIATE; {fn(SQLITE)}; INSERT INTO _migrations VALUES ('{fn.__name__}', {time.time()}); COMMIT;"
            )

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["size_mb"] = round(self.path.stat().st_size / 1e6, 1) if self.path.exists() else 0.0
        if self.backups is not None:
            newest = self.backups.list()
            out["backups"] = len(newest)
            out["newest_backup"] = newest[0].name if newest else None
        return out

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY name")]
