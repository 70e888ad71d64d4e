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

from rag_core.errors import DatabaseDamagedError, damaged, translated
from rag_core.storage.database import Database, Row
from rag_core.storage.dialect import SQLITE
from rag_core.storage.migrations import MIGRATIONS


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
            raise damaged(self.path, str(e)) from e
        except DatabaseDamagedError:
            self.close()
            raise

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
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
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A transaction: committed on success, rolled back on error."""
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            raise translated(self.path, e) from e
        if self.backups is not None:
            self.backups.if_due(self)

    def query(self, sql: str, params: tuple = ()) -> list[Row]:
        try:
            return self._connection().execute(sql, params).fetchall()
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
