"""Errors that rag_core raises on purpose.

Every one of them carries a message a person can act on. Pages and the CLI catch
``DocentError`` and show ``str(error)``; anything else is a bug.

    DocentError
    ├── ConfigError            bad or missing setting (unknown provider name, missing key, ...)
    ├── ModelError             a model cannot be assembled, verified or loaded
    ├── ProviderError          a provider (LLM endpoint, reranker) failed at run time
    ├── IngestError            one file could not be ingested (carries ``file`` and ``reason``)
    │   └── IngestCancelled    the user cancelled it (the document is left absent, never half)
    ├── IndexMismatchError     the index holds vectors of another embedding model
    ├── ConsistencyError       docstore, Chroma and SQLite disagree
    │   └── DatabaseDamagedError  docent.db cannot be read (the message says how it is rebuilt)
    ├── DatabaseUnavailableError  the PostgreSQL server cannot be reached (nothing lost; try again)
    └── NotFoundError          a session or document that does not exist

``damaged`` and ``translated`` build ``DatabaseDamagedError`` here, beside the class: the
database raises it and the backups act on it, and neither should import the other for it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class DocentError(Exception):
    """Base class of every error rag_core raises on purpose."""


class ConfigError(DocentError):
    """A setting is wrong or missing; the message says how to fix it."""


class ModelError(DocentError):
    """A local model cannot be assembled, verified or loaded."""


class ProviderError(DocentError):
    """A provider (LLM endpoint, reranker) failed while answering."""


class IngestError(DocentError):
    """One file could not be ingested."""

    def __init__(self, file: str, reason: str) -> None:
        super().__init__(f"{file}: {reason}")
        self.file = file
        self.reason = reason


class IngestCancelled(IngestError):
    """The user cancelled an ingestion; what it had written is removed."""

    def __init__(self, file: str) -> None:
        super().__init__(file, "cancelled")


class IndexMismatchError(DocentError):
    """The index was built with another embedding model."""


class ConsistencyError(DocentError):
    """Docstore, Chroma and SQLite disagree."""


class DatabaseDamagedError(ConsistencyError):
    """The SQLite file is damaged or not a database."""


class DatabaseUnavailableError(DocentError):
    """The database server (PostgreSQL) cannot be reached right now; the next action tries again."""


class NotFoundError(DocentError):
    """A session or document that does not exist."""


DAMAGED_HINT = (
    "Restart Docent, or run `python -m rag_core check --repair`: the damaged file is moved aside "
    "(never deleted), the latest backup from backups/ is restored, whatever rows can still be read "
    "are copied over, and the indexed documents are registered again from the index."
)


def damaged(path: Path, why: str) -> DatabaseDamagedError:
    """The error for a database file that cannot be read, with what repairs it."""
    return DatabaseDamagedError(f"The database {path} is damaged ({why}). {DAMAGED_HINT}")


def translated(path: Path, e: sqlite3.DatabaseError) -> Exception:
    """A damaged file's error as ``DatabaseDamagedError``; locks, constraints and the like unchanged."""
    if type(e) is sqlite3.DatabaseError:  # not an OperationalError, IntegrityError, ...
        return damaged(path, str(e))
    return e
