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
    ├── ChromaUnavailableError the Chroma server (DOCENT_CHROMA_HOST) does not answer
    ├── DiskFullError          a write failed: the disk holding the data folder is full
    ├── ConsistencyError       docstore, Chroma and SQLite disagree
    │   └── DatabaseDamagedError  docent.db cannot be read (the message says how it is rebuilt)
    ├── DatabaseUnavailableError  the PostgreSQL server cannot be reached (nothing lost; try again)
    └── NotFoundError          a session or document that does not exist

``damaged`` and ``translated`` build ``DatabaseDamagedError`` here, beside the class: the
database raises it and the backups act on it, and neither should import the other for it.
``disk_full`` tells a write that failed for want of space from other failures, for every store.
"""

from __future__ import annotations

import errno
import shutil
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


class ChromaUnavailableError(DocentError):
    """The Chroma server Docent was told to use does not answer; nothing was changed."""

    def __init__(self, host: str, port: int, why: str) -> None:
        super().__init__(
            f"The Chroma server at {host}:{port} does not answer ({why}). Start it again (`chroma run --path DIR "
            f"--port {port}`), or unset DOCENT_CHROMA_HOST to use the embedded index; nothing is lost, and what "
            "failed can be done again once it answers."
        )


class IndexBusyError(DocentError):
    """Another process was writing the embedded index while this one read it, and reading
    again did not get past it; nothing was changed."""

    def __init__(self, folder: Path, why: str) -> None:
        super().__init__(
            f"The index in {folder} could not be read just now: another process (an upload, the CLI) is writing "
            f"to it ({why}). Try again in a moment; nothing is lost."
        )


class DiskFullError(DocentError):
    """A write failed because the disk holding the data folder is full. ``short`` is the
    cause alone ("the disk holding … is full (N MB free)"), for messages that say what failed."""

    def __init__(self, folder: Path, free_bytes: int) -> None:
        self.folder, self.free_bytes = Path(folder), free_bytes
        self.short = f"the disk holding {folder} is full ({free_text(free_bytes)} free)"
        super().__init__(
            f"The disk holding {folder} is full ({free_text(free_bytes)} free): free some space, then try again. "
            "Nothing saved before is lost."
        )

    def unsaved_notice(self) -> str:
        """What an answer says when the disk is too full to keep it."""
        return (
            f"Not saved: {self.short}. This question and its answer are shown but not kept in the conversation; "
            "free some space to keep the next ones."
        )


LOW_SPACE = 16 * 2**20  # below this, a write that fails without saying why failed for want of space


def free_bytes(folder: Path) -> int:
    """Free space on the disk holding ``folder`` (or its nearest existing parent)."""
    folder = Path(folder)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return LOW_SPACE  # cannot tell: not "full"


def free_text(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n < 10e6 else f"{n / 1e6:,.0f} MB"


def disk_full(folder: Path, error: BaseException) -> DiskFullError | None:
    """``error`` as a ``DiskFullError`` when it failed for want of space on the disk holding
    ``folder``, else None. An ``OSError`` says so itself (ENOSPC, EDQUOT), SQLite too (its
    SQLITE_FULL); a library that does not (Chroma's "Error in compaction: Failed to apply logs")
    counts as full when less than ``LOW_SPACE`` is left."""
    if isinstance(error, DiskFullError):
        return error
    if isinstance(error, OSError):
        said = error.errno in (errno.ENOSPC, errno.EDQUOT)
        return DiskFullError(folder, free_bytes(folder)) if said else None
    free = free_bytes(folder)
    said = getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(error)
    return DiskFullError(folder, free) if said or free < LOW_SPACE else None


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
    """A damaged file's error as ``DatabaseDamagedError``, a full disk's as ``DiskFullError``;
    locks, constraints and the like unchanged."""
    if type(e) is sqlite3.DatabaseError:  # not an OperationalError, IntegrityError, ...
        return damaged(path, str(e))
    if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return DiskFullError(path.parent, free_bytes(path.parent))
    return e
