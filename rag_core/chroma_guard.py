"""Chroma's failures as errors a person can act on.

Chroma lets through what its transport or its storage raised: an ``httpx.ConnectError``
when the server (``DOCENT_CHROMA_HOST``) was killed, an ``InternalError: Error in
compaction`` when the disk under the embedded index is full. Shown as they are, that is a
traceback in the chat and four in the CLI. So every call Docent makes on the Chroma client
and on its collection goes through ``Guarded``, which turns those into
``ChromaUnavailableError`` ("the Chroma server at host:port does not answer") and
``DiskFullError`` ("the disk holding <dir> is full (N MB free)"); anything else passes
through unchanged. Nothing is retried here: the caller keeps what it was asked (the
question, the file) so that it can be done again once the server answers, and the next
call simply tries again, so no restart is needed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_core.errors import ChromaUnavailableError, DocentError, disk_full


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
            with translated(self._place):
                return value(*args, **kwargs)

        return call

    def __repr__(self) -> str:
        return f"Guarded({self._target!r})"
