"""The SQLite file: sessions, messages with their sources, and the document registry.

The schema moves forward through numbered migrations recorded in ``_migrations``
(simonw/llm's pattern). WAL mode and a busy timeout let several Streamlit sessions
and an upload write at once. Keys never reach this file: nothing here stores settings.

A file that SQLite cannot read raises ``DatabaseDamagedError`` (never a bare
``sqlite3.DatabaseError``); ``rag_core.backups`` moves such a file aside and rebuilds. An
online backup is taken before migrations change an existing file, and then on a schedule.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_core.backups import damaged, translated
from rag_core.errors import DatabaseDamagedError, DocentError, NotFoundError
from rag_core.payloads import Source


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


MIGRATIONS: list[Callable[[], str]] = [m001_sessions, m002_documents]


class Database:
    """One SQLite file, checked and migrated on open; a connection per thread.

    ``backups`` (a ``rag_core.backups.Backups``) is asked for a copy before a migration
    changes an existing file and after each write transaction (it decides whether one is due)."""

    def __init__(self, path: Path, backups: Any = None) -> None:
        self.path = Path(path)
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

    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
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


# ============================================================================ sessions
@dataclass
class Session:
    id: str
    name: str
    created: float
    updated: float
    doc_filter: list[str] | None = None


@dataclass
class Message:
    role: str
    content: str
    condensed_question: str | None = None
    sources: list[Source] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    created: float = 0.0
    id: int | None = None


class SessionStore:
    """Create, list, rename, delete sessions; append and read their messages."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, name: str | None = None) -> Session:
        now = time.time()
        sid = uuid.uuid4().hex[:12]
        name = (name or "").strip() or time.strftime("Chat %Y-%m-%d %H:%M", time.localtime(now))
        with self.db.connect() as c:
            c.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, NULL)", (sid, name, now, now))
        return Session(sid, name, now, now)

    def list(self) -> builtins.list[Session]:
        rows = self.db.query("SELECT * FROM sessions ORDER BY updated DESC, created DESC")
        return [self._session(r) for r in rows]

    def get(self, session_id: str) -> Session:
        rows = self.db.query("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise NotFoundError(f"No session with id {session_id!r}; `python -m rag_core sessions list` shows them.")
        return self._session(rows[0])

    def find(self, id_or_name: str) -> Session | None:
        rows = self.db.query(
            "SELECT * FROM sessions WHERE id = ? OR name = ? ORDER BY updated DESC", (id_or_name, id_or_name)
        )
        return self._session(rows[0]) if rows else None

    def rename(self, session_id: str, name: str) -> None:
        name = name.strip()
        if not name:
            raise DocentError("A session name cannot be empty.")
        with self.db.connect() as c:
            if c.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, session_id)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def delete(self, session_id: str) -> None:
        with self.db.connect() as c:
            if c.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def set_doc_filter(self, session_id: str, names: builtins.list[str] | None) -> None:
        value = json.dumps(sorted(names)) if names else None
        with self.db.connect() as c:
            if c.execute("UPDATE sessions SET doc_filter = ? WHERE id = ?", (value, session_id)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def append(self, session_id: str, message: Message) -> Message:
        now = time.time()
        with self.db.connect() as c:
            if not c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                raise NotFoundError(f"No session with id {session_id!r}.")
            cur = c.execute(
                "INSERT INTO messages (session_id, role, content, condensed_question, sources, meta, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    message.role,
                    message.content,
                    message.condensed_question,
                    json.dumps(message.sources, ensure_ascii=False),
                    json.dumps(message.meta, ensure_ascii=False),
                    now,
                ),
            )
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
        message.id, message.created = cur.lastrowid, now
        return message

    def messages(self, session_id: str) -> builtins.list[Message]:
        rows = self.db.query("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,))
        return [
            Message(
                role=r["role"],
                content=r["content"],
                condensed_question=r["condensed_question"],
                sources=json.loads(r["sources"] or "[]"),
                meta=json.loads(r["meta"] or "{}"),
                created=r["created"],
                id=r["id"],
            )
            for r in rows
        ]

    def clear(self, session_id: str) -> None:
        with self.db.connect() as c:
            c.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    def drop_after(self, session_id: str, message_id: int) -> int:
        """Remove the session's messages after ``message_id`` (an answer being regenerated);
        returns how many were removed."""
        with self.db.connect() as c:
            return c.execute("DELETE FROM messages WHERE session_id = ? AND id > ?", (session_id, message_id)).rowcount

    @staticmethod
    def _session(r: sqlite3.Row) -> Session:
        f = json.loads(r["doc_filter"]) if r["doc_filter"] else None
        return Session(r["id"], r["name"], r["created"], r["updated"], f)


# ============================================================================ documents
@dataclass
class DocumentRecord:
    name: str
    sha256: str
    size: int
    pages: int
    chunks: int
    kind: str
    status: str
    added: float
    updated: float


class DocumentRegistry:
    """Which documents are indexed. A row turns 'indexed' only after Chroma and the
    docstore hold all of the document, so a crash mid-way leaves a 'pending' row that
    recovery removes (the document is then absent, never half there)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, name: str) -> DocumentRecord | None:
        rows = self.db.query("SELECT * FROM documents WHERE name = ?", (name,))
        return DocumentRecord(**dict(rows[0])) if rows else None

    def list(self, status: str | None = "indexed") -> builtins.list[DocumentRecord]:
        if status is None:
            rows = self.db.query("SELECT * FROM documents ORDER BY name")
        else:
            rows = self.db.query("SELECT * FROM documents WHERE status = ? ORDER BY name", (status,))
        return [DocumentRecord(**dict(r)) for r in rows]

    def find_by_sha(self, sha256: str) -> builtins.list[DocumentRecord]:
        rows = self.db.query("SELECT * FROM documents WHERE sha256 = ? AND status = 'indexed'", (sha256,))
        return [DocumentRecord(**dict(r)) for r in rows]

    def mark_pending(self, name: str, sha256: str, size: int, kind: str) -> None:
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                "INSERT INTO documents (name, sha256, size, kind, status, added, updated)"
                " VALUES (?, ?, ?, ?, 'pending', ?, ?)"
                " ON CONFLICT(name) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,"
                " kind = excluded.kind, status = 'pending', updated = excluded.updated",
                (name, sha256, size, kind, now, now),
            )

    def register(self, name: str, sha256: str, size: int, pages: int, chunks: int, kind: str) -> None:
        """An 'indexed' row for a document found whole in the index (recovery)."""
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                "INSERT OR REPLACE INTO documents (name, sha256, size, pages, chunks, kind, status, added, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, 'indexed', ?, ?)",
                (name, sha256, size, pages, chunks, kind, now, now),
            )

    def citations(self, name: str) -> tuple[int, int]:
        """(answers, conversations) whose stored sources cite this document."""
        row = self.db.query(
            "SELECT COUNT(DISTINCT m.id), COUNT(DISTINCT m.session_id) FROM messages m,"
            " json_each(CASE WHEN json_valid(m.sources) THEN m.sources ELSE '[]' END) j"
            " WHERE m.role = 'assistant' AND json_extract(j.value, '$.file') = ?",
            (name,),
        )[0]
        return int(row[0]), int(row[1])

    def mark_indexed(self, name: str, pages: int, chunks: int) -> None:
        with self.db.connect() as c:
            c.execute(
                "UPDATE documents SET status = 'indexed', pages = ?, chunks = ?, updated = ? WHERE name = ?",
                (pages, chunks, time.time(), name),
            )

    def remove(self, name: str) -> None:
        with self.db.connect() as c:
            c.execute("DELETE FROM documents WHERE name = ?", (name,))
