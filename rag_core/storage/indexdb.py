"""``index.db``: the index's own SQLite file, beside ``chroma/``: the ingestion docstore
(``kvstore``) and the keyword index (``fts``), each written per document.

Why a file of its own and not ``docent.db``: everything here is derived from the stored
files and reset with the vectors (``rebuild``), while ``docent.db`` holds what cannot be
derived (conversations) and is copied whole into ``backups/`` on a schedule: a keyword
index of a million chunks (gigabytes) has no place in those copies, and a restored backup
must never bring back an old docstore beside newer vectors. A damaged ``index.db`` is moved
aside (never deleted) and started afresh: the keyword index is built again from Chroma
(``rag_core.index``) and ``check --repair`` ingests again what the docstore lost.

The schema moves forward through numbered migrations, as ``docent.db``'s do. Unlike
``docent.db`` there is no ``quick_check`` on open: it reads the whole file, which at a
million chunks is seconds on every start; damage shows as an error where it is met.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rag_core.errors import ConsistencyError, DiskFullError, disk_full, free_bytes
from rag_core.storage.database import Database
from rag_core.storage.dialect import SQLITE

logger = logging.getLogger(__name__)


def i001_docstore() -> str:
    return """
        CREATE TABLE kvstore (  -- as migration m006_kvstore makes it in docent.db or PostgreSQL
            collection TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,  -- JSON
            PRIMARY KEY (collection, key)
        ) WITHOUT ROWID;
        CREATE TABLE index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """


def i002_keywords() -> str:
    # Chunks and pages with their tokens (rag_core.text.tokenize, space-joined); FTS5 over
    # the same tokens as a contentless index (postings only: the rows are here). Per
    # document and term: chunks and pages holding it, and whether its file name does.
    return """
        CREATE TABLE kw_docs (
            docno INTEGER PRIMARY KEY,
            doc TEXT NOT NULL UNIQUE,
            chunks INTEGER NOT NULL DEFAULT 0,
            length INTEGER NOT NULL DEFAULT 0,
            pages INTEGER NOT NULL DEFAULT 0,
            page_length INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE kw_chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- positions are never reused
            node_id TEXT NOT NULL UNIQUE,
            ref_doc_id TEXT,
            docno INTEGER NOT NULL,
            page INTEGER,
            length INTEGER NOT NULL,
            tokens TEXT NOT NULL,
            text TEXT NOT NULL,
            meta BLOB NOT NULL  -- the metadata dict Chroma holds (JSON, zlib): to give back the same node
        );
        CREATE INDEX kw_chunks_doc ON kw_chunks (docno, page);
        CREATE INDEX kw_chunks_ref ON kw_chunks (ref_doc_id);
        CREATE TABLE kw_pages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            docno INTEGER NOT NULL,
            page INTEGER NOT NULL,
            length INTEGER NOT NULL,
            tokens TEXT NOT NULL,
            UNIQUE (docno, page)
        );
        CREATE TABLE kw_terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL, pdf INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE kw_doc_terms (
            term TEXT NOT NULL,
            docno INTEGER NOT NULL,
            df INTEGER NOT NULL DEFAULT 0,     -- chunks of the document holding the term
            pdf INTEGER NOT NULL DEFAULT 0,    -- pages of the document holding it
            named INTEGER NOT NULL DEFAULT 0,  -- 1: in its file name's words, 2: in its name's stem, 3: both
            PRIMARY KEY (term, docno)
        ) WITHOUT ROWID;
        CREATE INDEX kw_doc_terms_doc ON kw_doc_terms (docno);
        CREATE VIRTUAL TABLE kw_chunks_fts USING fts5(tokens, content='', detail=none, tokenize="ascii tokenchars '.,'");
        CREATE VIRTUAL TABLE kw_pages_fts USING fts5(tokens, content='', detail=none, tokenize="ascii tokenchars '.,'")
        """


INDEX_MIGRATIONS: list[Callable[[], str]] = [i001_docstore, i002_keywords]

DAMAGED_INDEX_HINT = (
    "Restart Docent or run `python -m rag_core check --repair`: the file is moved aside (never deleted), "
    "the keyword index is built again from the vectors, and documents are ingested again from their stored copies."
)


class IndexDatabaseError(ConsistencyError):
    """``index.db`` cannot be read."""


class IndexMeta:
    """The index's own facts (``index_meta``: e.g. that the keyword index is complete), in
    ``index.db`` or in a team's keyword schema (``rag_core.storage.pg_keywords``)."""

    def query(self, sql: str, params: Sequence[Any] = (), /) -> list[Any]:
        raise NotImplementedError

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def meta(self, key: str) -> str | None:
        rows = self.query("SELECT value FROM index_meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str | None) -> None:
        with self.transaction() as c:
            if value is None:
                c.execute("DELETE FROM index_meta WHERE key = ?", (key,))
            else:
                c.execute(
                    "INSERT INTO index_meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )


class IndexDB(IndexMeta, Database):
    """One SQLite file, migrated on open; a connection per thread; transactions that nest
    (the outermost commits). A ``Database``, so that the docstore's key-value store
    (``rag_core.storage.kvstore``) runs on it as it runs on PostgreSQL."""

    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.full: DiskFullError | None = None  # set when opened read-only for want of space
        try:
            self._migrate(self._connection())
        except sqlite3.DatabaseError as e:
            self.close()
            full = self.error(e)
            if not isinstance(full, DiskFullError) or not self._readable_as_is():
                raise full from e
            self.full = full  # read as it is on disk, as docent.db is (``SQLiteDatabase._read_only``)

    def error(self, e: sqlite3.DatabaseError) -> Exception:
        if type(e) is sqlite3.DatabaseError:  # malformed, not a database: not a lock or a constraint
            return IndexDatabaseError(f"The index database {self.path} is damaged ({e}). {DAMAGED_INDEX_HINT}")
        if isinstance(e, sqlite3.OperationalError):  # SQLITE_FULL, or the side files (-shm) not made
            return disk_full(self.path.parent, e) or e
        return e

    def _readable_as_is(self) -> bool:
        """Whether the file, every migration applied, can be read without writing a byte."""
        try:
            done = {r[0] for r in self._connection(immutable=True).execute("SELECT name FROM _migrations")}
            return all(fn.__name__ in done for fn in INDEX_MIGRATIONS)
        except sqlite3.DatabaseError:
            return False
        finally:
            self.close()

    def _connection(self, immutable: bool = False) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if immutable or self.full:  # no side files, no locks: nothing written, so nothing to fail
                uri = f"{self.path.resolve().as_uri()}?immutable=1"
                conn = sqlite3.connect(uri, isolation_level=None, check_same_thread=False, uri=True)
            else:
                conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA busy_timeout=60000")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            self._local.depth = 0
        return conn

    def _writable(self) -> None:
        """After space was freed: the file opened for writing again; else ``DiskFullError``."""
        full, self.full = self.full, None
        self.close()
        try:
            self._connection()
        except sqlite3.DatabaseError:
            self.close()
            self.full = full
            raise DiskFullError(full.folder, free_bytes(full.folder)) from None  # type: ignore[union-attr]

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Statements that land together: committed when the outermost block ends, rolled back
        when it raises."""
        if self.full and not getattr(self._local, "depth", 0):
            self._writable()
        conn = self._connection()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield conn
            finally:
                self._local.depth -= 1
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as e:
            raise self.error(e) from e
        self._local.depth = 1
        try:
            yield conn
        except BaseException:
            self._local.depth = 0
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        self._local.depth = 0
        try:
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            raise self.error(e) from e

    def connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self.transaction()

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY applied")]

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._connection().execute(sql, params).fetchall()
        except sqlite3.DatabaseError as e:
            raise self.error(e) from e

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL)")
        done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
        for fn in INDEX_MIGRATIONS:
            if fn.__name__ not in done:
                conn.executescript(
                    f"BEGIN IMMEDIATE; {fn()}; INSERT INTO _migrations VALUES ('{fn.__name__}', {time.time()}); COMMIT;"
                )


def open_index_db(path: Path) -> tuple[IndexDB, list[str]]:
    """The index database, and what had to be done to open it: a file SQLite cannot read is
    moved aside (``index.db.damaged-<time>``, with its ``-wal``/``-shm``) and a new one started."""
    try:
        return IndexDB(path), []
    except IndexDatabaseError:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = path.with_name(f"{path.name}.damaged-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{path}{suffix}")
            if part.exists():
                part.rename(Path(f"{aside}{suffix}"))
        logger.warning("the index database %s was damaged: moved aside as %s", path, aside)
        notice = (
            f"The index database was damaged: it was moved aside as {aside.name} and started afresh; the keyword "
            "index is built again from the vectors, and `python -m rag_core check --repair` ingests again "
            "whatever it lists."
        )
        return IndexDB(path), [notice]
