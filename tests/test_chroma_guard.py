"""``rag_core.chroma_guard``: a read of the embedded index that met another process's write is
read again, then said plainly; writes and a server's reads are not repeated. Fakes: the race
itself cannot be made to happen on demand (tests/test_index.py drives a real Chroma through it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core import chroma_guard
from rag_core.chroma_guard import ChromaPlace, Guarded
from rag_core.errors import IndexBusyError

MET = (
    "Error executing plan: Error sending backfill request to compactor: Failed to apply logs to the hnsw segment writer"
)


class InternalError(Exception):
    """Named as chromadb's own: the guard tells Chroma's errors by their name and words."""


class Collection:
    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or InternalError(MET)
        self.calls = {"count": 0, "add": 0}

    def count(self) -> int:
        self.calls["count"] += 1
        if self.calls["count"] <= self.failures:
            raise self.error
        return 7

    def add(self, ids: list[str]) -> None:
        self.calls["add"] += 1
        raise self.error


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(chroma_guard.time, "sleep", waits.append)
    return waits


def test_a_read_that_met_a_write_is_read_again(tmp_path: Path, no_waiting):
    target = Collection(failures=2)
    assert Guarded(target, ChromaPlace(tmp_path)).count() == 7
    assert target.calls["count"] == 3
    assert no_waiting == list(chroma_guard.READ_RETRIES_S[:2])


def test_a_read_that_keeps_meeting_writes_says_so_and_names_the_folder(tmp_path: Path):
    target = Collection(failures=99)
    with pytest.raises(IndexBusyError) as raised:
        Guarded(target, ChromaPlace(tmp_path)).count()
    assert str(tmp_path) in str(raised.value) and "another process" in str(raised.value)
    assert target.calls["count"] == len(chroma_guard.READ_RETRIES_S) + 1


def test_writes_other_errors_and_a_servers_reads_are_not_repeated(tmp_path: Path, no_waiting):
    write = Collection(failures=99)
    with pytest.raises(InternalError):
        Guarded(write, ChromaPlace(tmp_path)).add(ids=["a"])
    assert write.calls["add"] == 1

    other = Collection(failures=1, error=InternalError("Error in compaction: something else"))
    with pytest.raises(InternalError):
        Guarded(other, ChromaPlace(tmp_path)).count()
    assert other.calls["count"] == 1

    served = Collection(failures=1)
    with pytest.raises(InternalError):
        Guarded(served, ChromaPlace(tmp_path, host="chroma.internal")).count()
    assert served.calls["count"] == 1 and no_waiting == []
