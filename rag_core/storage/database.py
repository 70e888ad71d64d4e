"""The database as the stores see it: a transaction, a query, the migrations applied.

``SessionStore`` and ``DocumentRegistry`` are written against this interface alone, in
SQL with ``?`` placeholders, so that a second backend can sit beside SQLite without
rewriting them: a server database (PostgreSQL, issue 19) would be another ``Database``
with its own numbered migrations, translating the placeholders and the few SQLite
spellings the stores use (``INSERT OR REPLACE``, ``json_each``) in one place, and chosen
where the context opens the database. Today there is one: ``rag_core.storage.sqlite``.

Keys never reach a database: nothing here stores settings.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

Migration = Callable[[], str]  # named m001_..., m002_...: returns the DDL of one step


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
