"""Small file helpers used across rag_core: a content digest, an atomic write, a lock.

Each exists once so that every store gets the same guarantees: a killed process never
leaves a half-written file under its final name, and two processes never write one
data folder at the same time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

Progress = Callable[[str, float], None]  # (message, fraction 0..1): how long work reports itself


def file_digest(path: Path | str, algorithm: str = "sha256") -> str:
    """Hex digest of a file's bytes, read in blocks."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


@contextlib.contextmanager
def replacing(path: Path, *, mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; renamed onto ``path`` when the block
    ends without an error, removed otherwise. Readers see the old file or the new one,
    never a half of either, even if the process is killed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    with replacing(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def atomic_copy(src: Path, dest: Path) -> None:
    """Copy ``src`` to ``dest`` through a temporary file and a rename."""
    with replacing(dest) as tmp:
        shutil.copyfile(src, tmp)


class FolderLock:
    """Exclusive between threads and processes, re-entrant within a thread.

    A thread lock keeps this process's threads apart; an OS file lock (``filelock``) keeps
    other processes out. The OS drops the file lock when a process dies, so a SIGKILL never
    leaves it held."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._thread = threading.RLock()
        self._file = FileLock(str(self.path), thread_local=False, is_singleton=False)
        self._depth = 0

    @property
    def depth(self) -> int:
        """How many times the calling thread holds the lock (0: not held; only meaningful
        to the thread that holds it)."""
        return self._depth if self._thread._is_owned() else 0  # type: ignore[attr-defined]

    @contextlib.contextmanager
    def hold(self, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
        """Yields True while held; with ``wait=False`` yields False at once when someone else holds it.
        ``on_wait`` is called once before waiting, so a caller can say why it stands still."""
        if not self._thread.acquire(blocking=False):
            if not wait:
                yield False
                return
            if on_wait:
                on_wait()
            self._thread.acquire()
        try:
            if self._depth == 0:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    self._file.acquire(timeout=0)
                except Timeout:
                    if not wait:
                        yield False
                        return
                    if on_wait:
                        on_wait()
                    self._file.acquire(timeout=-1)
            self._depth += 1
            try:
                yield True
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._file.release(force=True)
        finally:
            self._thread.release()

    def held_elsewhere(self) -> bool:
        """True when another process holds the lock right now (a probe that takes and drops it)."""
        with self.hold(wait=False) as got:
            return not got
