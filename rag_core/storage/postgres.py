"""The PostgreSQL backend: a team's database server (``DOCENT_DATABASE_URL=postgresql://…``).

The same numbered migrations as SQLite (``rag_core.storage.migrations``), applied under an
advisory lock so that app processes starting together migrate once. Connections come
from the process's pool (``rag_core.postgres``): checked as they leave it, so a server that
restarted costs one failed action at most, never a restart of Docent. An unreachable
server raises ``DatabaseUnavailableError``.

No backup is taken here: a server database is backed up by its own tools (``pg_dump``,
docs/team.md), and there is no file to move aside when damaged.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rag_core import postgres
from rag_core.storage.database import Database, Row, without_nul
from rag_core.storage.dialect import POSTGRES
from rag_core.storage.migrations import MIGRATIONS

MIGRATION_LOCK = 0x646F63656E74_01  # pg_advisory_lock key: "docent" + 1, the migrations


class _Cursor:
    """What one statement reports, as the stores read it."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    @property
    def lastrowid(self) -> int | None:
        return None  # the stores use RETURNING instead

    def fetchone(self) -> Any:
        return self._cursor.fetchone() if self._cursor.description else None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor.fetchall() if self._cursor.description else [])


class _Transaction:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> _Cursor:
        return _Cursor(self._conn.execute(postgres.placeholders(sql), without_nul(parameters)))


class PostgresDatabase(Database):
    """One PostgreSQL database, migrated when opened; connections from the process's pool."""

    dialect = POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = postgres.shown_url(url)
        self.backups = None
        self._migrate()

    @contextmanager
    def connect(self) -> Iterator[_Transaction]:
        with postgres.borrowed(self.url) as conn, postgres.translated(self.url), conn.transaction():
            yield _Transaction(conn)

    def query(self, sql: str, params: tuple = ()) -> list[Row]:
        with postgres.borrowed(self.url) as conn, postgres.translated(self.url):
            rows = conn.execute(postgres.placeholders(sql), without_nul(params)).fetchall()
            conn.rollback()  # a read leaves no transaction open in the pool
            return rows

    def _migrate(self) -> None:
        with postgres.borrowed(self.url) as conn, postgres.translated(self.url):
            conn.autocommit = True
            try:
                conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
                try:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
                    )
                    done = {r[0] for r in conn.execute("SELECT name FROM _migrations").fetchall()}
                    for fn in MIGRATIONS:
                        if fn.__name__ in done:
                            continue
                        with conn.transaction():  # its DDL and its record land together or not at all
                            conn.execute(fn(POSTGRES))
                            conn.execute("INSERT INTO _migrations VALUES (%s, %s)", (fn.__name__, time.time()))
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            finally:
                conn.autocommit = False

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM _migrations ORDER BY name")]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        row = self.query("SELECT current_setting('server_version'), pg_database_size(current_database())")[0]
        out.update(
            server_version=row[0],
            size_mb=round(int(row[1]) / 1e6, 1),
            backups="not taken by Docent: pg_dump on the server's schedule (docs/team.md)",
        )
        return out

    def close(self) -> None:
        """Nothing per thread to close: connections go back to the pool after each use."""
