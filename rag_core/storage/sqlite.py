"""The SQLite backend: one file, its numbered migrations, a connection per thread.

The schema moves forward through numbered migrations recorded in ``_migrations``
(simonw/llm's pattern). WAL mode and a busy timeout let several Streamlit sessions
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

from rag_core.errors import DatabaseDamagedError, damaged, disk_full, translated
from rag_core.storage.database import Database, Migration, Row


def m001_sessions() -> str:
    return """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            doc_filter TEXT  -- JSON list of document names, NULL = all documents
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content TEXT NOT NULL,
            condensed_question TEXT,
            sources TEXT,   -- JSON list of {file, page, score, text}
            meta TEXT,      -- JSON: timings, notices, error
            created REAL NOT NULL
        );
        CREATE INDEX messages_session ON messages(session_id, id);
        """


def m002_documents() -> str:
    return """
        CREATE TABLE documents (
            name TEXT PRIMARY KEY,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            pages INTEGER NOT NULL DEFAULT 0,
            chunks INTEGER NOT NULL DEFAULT 0,
            kind TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'indexed')),
            added REAL NOT NULL,
            updated REAL NOT NULL
        );
        """


def m003_summaries() -> str:
    return """
        CREATE TABLE summaries (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            upto_message_id INTEGER NOT NULL,  -- the summary stands for the messages up to this one
            text TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE INDEX summaries_session ON summaries(session_id, id);
        """


MIGRATIONS: list[Migration] = [m001_sessions, m002_documents, m003_summaries]


class SQLiteDatabase(Database):
    """One SQLite file, checked and migrated on open; a connection per thread.

    ``backups`` (a ``rag_core.storage.backups.Backups``) is asked for a copy before a migration
    changes an existing file and after each write transaction (it decides whether one is due)."""

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
            full = disk_full(self.path.parent, e) if isinstance(e, sqlite3.OperationalError) else None
            if full is not None:  # not damage: the file is left as it is
                raise full from e
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
                f"BEGIN IMMEDIATE; {fn()}; INSERT INTO _migrations VALUES ('{fn.__name__}', {time.time()}); COMMIT;"
            )

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY name")]
