"""Chroma's failures as errors a person can act on.

Chroma lets through what its transport or its storage raised: an ``httpx.ConnectError``
when the server (``DOCENT_CHROMA_HOST``) was killed, an ``InternalError: Error in
compaction`` when the disk under the embedded index is full. Shown as they are, that is a
traceback in the chat and four in the CLI. So every call Docent makes on the Chroma client
and on its collection goes through ``Guarded``, which turns those into
``ChromaUnavailableError`` ("the Chroma server at host:port does not answer") and
``DiskFullError`` ("the disk holding <dir> is full (N MB free)"); anything else passes
through unchanged. Writes are not retried here: the caller keeps what it was asked (the
question, the file) so that it can be done again once the server answers, and the next
call simply tries again, so no restart is needed.

One failure is retried: a *read* of the embedded index that met another process's write.
An embedded client that reopens after another process wrote brings its vector segment up
to date from Chroma's log on its first read ("backfill"); beside the writer applying the same
log, that read failed with ``InternalError: Error sending backfill request to compactor:
Failed to apply logs to the hnsw segment writer`` (or crashed the process). ``rag_core.index``
now makes that first read under the write lock; where it cannot (a writer busy for longer
than a new process waits), such a read is read again a moment later, and after
``READ_RETRIES_S`` it is an ``IndexBusyError`` that says so, not a traceback.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_core.errors import ChromaUnavailableError, DocentError, IndexBusyError, disk_full

READS = frozenset({"count", "get", "query", "peek"})  # calls that change nothing: safe to repeat
READ_RETRIES_S = (0.05, 0.2, 0.5, 1.0)  # waits before reading again (1.75 s in all)
_MET_A_WRITE = ("backfill", "Failed to apply logs")  # Chroma's words for a read that met a write


@dataclass(frozen=True)
class ChromaPlace:
    """Where the index lives: a server (``host``, ``port``) or a folder on this disk."""

    folder: Path
    host: str | None = None
    port: int = 8000


def unreachable(error: BaseException) -> str | None:
    """Why a server did not answer, when ``error`` (or what caused it) says it did not."""
    import httpx

    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, httpx.TransportError | ConnectionError | TimeoutError):
            return str(seen) or type(seen).__name__
        if "Could not connect to a Chroma server" in str(seen):
            return "nothing listens there"
        seen = seen.__cause__ or seen.__context__
    return None


@contextmanager
def translated(place: ChromaPlace) -> Iterator[None]:
    """Chroma's own errors for a server gone or a disk full, as ``DocentError``s."""
    try:
        yield
    except DocentError:
        raise
    except Exception as e:
        if place.host:
            why = unreachable(e)
            if why is not None:
                raise ChromaUnavailableError(place.host, place.port, why) from e
        else:
            full = disk_full(place.folder, e)
            if full is not None:
                raise full from e
        raise


def met_a_write(error: BaseException) -> bool:
    """Whether ``error`` is Chroma's failure of a read that met another process's write."""
    return type(error).__name__ == "InternalError" and any(words in str(error) for words in _MET_A_WRITE)


class Guarded:
    """A Chroma client or collection whose method calls go through ``translated``;
    attributes (``metadata``, ``name``) are read as they are."""

    def __init__(self, target: Any, place: ChromaPlace) -> None:
        self._target = target
        self._place = place

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            waits = iter(READ_RETRIES_S if name in READS and not self._place.host else ())
            while True:
                try:
                    with translated(self._place):
                        return value(*args, **kwargs)
                except Exception as e:
                    if not met_a_write(e):
                        raise
                    wait = next(waits, None)
                    if wait is None:
                        if name not in READS or self._place.host:
                            raise
                        raise IndexBusyError(self._place.folder, str(e)[:160]) from e
                    time.sleep(wait)

        return call

    def __repr__(self) -> str:
        return f"Guarded({self._target!r})"
