"""The database as the stores see it: a transaction, a query, the migrations applied.

``SessionStore`` and ``DocumentRegistry`` are written against this interface alone, in
portable SQL with ``?`` placeholders, so that either backend serves them: SQLite
(``rag_core.storage.sqlite``, the laptop) or PostgreSQL (``rag_core.storage.postgres``, a
team's server, chosen by ``DOCENT_DATABASE_URL``). Both apply the same numbered migrations
(``rag_core.storage.migrations``); where they spell things differently their ``dialect``
says how (``rag_core.storage.dialect``).

Keys never reach a database: nothing here stores settings.

Text reaches either database without NUL characters (``without_nul``): PostgreSQL refuses
them in text, SQLite would keep them, and a question or a name must be taken alike by both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from rag_core.storage.dialect import Dialect


def without_nul(parameters: Sequence[Any] | Mapping[str, Any]) -> Any:
    """A statement's parameters with every NUL dropped from their text: what a NUL in a
    question, a name or a pasted passage becomes on both backends (it is never text anyone
    meant: a binary paste, UTF-16 read as bytes)."""

    def clean(value: Any) -> Any:
        return value.replace("\x00", "") if isinstance(value, str) and "\x00" in value else value

    if isinstance(parameters, Mapping):
        return {k: clean(v) for k, v in parameters.items()}
    return tuple(clean(v) for v in parameters)


class Row(Protocol):
    """One result row: by column name or position, and ``dict(row)``."""

    def keys(self) -> list[str]: ...

    def __getitem__(self, key: Any) -> Any: ...


class Cursor(Protocol):
    """What one statement in a transaction reports."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


class Transaction(Protocol):
    """Statements that land together or not at all."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...


class Database(ABC):
    """One database, checked and migrated when it is opened.

    ``backups`` is asked for a copy before a migration changes an existing database and
    after each write transaction (it decides whether one is due): ``take(db, label=...)`` and
    ``if_due(db)``, as ``rag_core.storage.backups.Backups`` offers them."""

    location: str  # where it is, for messages: a path, or a server without its password
    dialect: Dialect  # how this database spells what differs
    backups: Any = None

    @abstractmethod
    def connect(self) -> AbstractContextManager[Transaction]:
        """A transaction: committed when the block ends, rolled back when it raises."""

    @abstractmethod
    def query(self, sql: str, params: tuple = ()) -> list[Row]:
        """The rows of one read."""

    @abstractmethod
    def applied_migrations(self) -> list[str]:
        """The names of the migrations applied, in order."""

    @abstractmethod
    def close(self) -> None:
        """Close this thread's connection."""

    def describe(self) -> dict[str, Any]:
        """What ``check`` reports about the database itself."""
        applied = self.applied_migrations()
        return {"kind": self.dialect.name, "location": self.location, "migration": applied[-1] if applied else None}
