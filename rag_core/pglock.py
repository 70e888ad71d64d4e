"""The write lock and the generation when the state lives in PostgreSQL.

The same contract as ``rag_core.datadir.WriteLock`` (one writer among this process's
threads and every other process; a generation token that tells each process another one
wrote), on server mechanisms instead of files, so that app processes on several machines
share it:

- the lock is a session advisory lock (``pg_advisory_lock``) held on a connection of its
  own for as long as the outermost hold lasts; a writer killed with ``kill -9`` loses its
  connection, and the server lets the lock go at once;
- the generation is the one row of table ``generation``, changed with every take and
  release, and announced with ``NOTIFY docent_generation``: a thread per process LISTENs,
  so reading the generation (before every read of the index) costs no round trip. While
  that listener is cut off (the server restarted), the row is read directly.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from rag_core import postgres
from rag_core.datadir import WriteLock
from rag_core.errors import DatabaseUnavailableError

logger = logging.getLogger(__name__)

LOCK_KEY = 0x646F63656E74_02  # pg_advisory_lock key: "docent" + 2, the write lock
CHANNEL = "docent_generation"
BUMP = (
    "INSERT INTO generation (id, token, updated) VALUES (1, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET token = excluded.token, updated = excluded.updated"
)


class GenerationWatcher:
    """One LISTEN connection per URL in a process, keeping the latest generation token."""

    _watchers: ClassVar[dict[str, GenerationWatcher]] = {}
    _watchers_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, url: str) -> None:
        self.url = url
        self.token: str | None = None  # None while not listening: read the row instead
        self._thread = threading.Thread(target=self._listen, name="docent-generation", daemon=True)
        self._thread.start()

    @classmethod
    def of(cls, url: str) -> GenerationWatcher:
        with cls._watchers_lock:
            if url not in cls._watchers:
                cls._watchers[url] = cls(url)
            return cls._watchers[url]

    def read(self) -> str:
        """The token in the database now (one query)."""
        with postgres.connect(self.url) as conn:
            row = conn.execute("SELECT token FROM generation WHERE id = 1").fetchone()
            return str(row[0]) if row else ""

    def current(self, last_known: str) -> str:
        """The token: as last heard, or read now while the listener is away (``last_known``
        when the server cannot be reached either: nothing new can have been written)."""
        token = self.token
        if token is not None:
            return token
        try:
            return self.read()
        except (DatabaseUnavailableError, Exception):
            return last_known

    def _listen(self) -> None:
        delay = 0.5
        while True:
            try:
                with postgres.connect(self.url) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    row = conn.execute("SELECT token FROM generation WHERE id = 1").fetchone()
                    self.token = str(row[0]) if row else ""
                    delay = 0.5
                    while True:
                        for note in conn.notifies(timeout=30.0):
                            self.token = note.payload
                        conn.execute("SELECT 1")  # a dead connection shows here, between notifications
            except Exception as e:
                if self.token is not None:
                    logger.warning("lost the database's change notifications (%s); reading the row until back", e)
                self.token = None
                time.sleep(delay)
                delay = min(delay * 2, 5.0)


class PostgresWriteLock:
    """``WriteLock``'s contract on a PostgreSQL server (see the module's docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._threads = threading.RLock()  # one writer among this process's threads
        self._local = threading.local()
        self._mutex = threading.RLock()  # a catch-up here never interleaves with a bump here
        self._conn: Any = None  # the connection that holds the advisory lock
        self._watcher = GenerationWatcher.of(url)
        self._seen = self._watcher.current("")

    @property
    def depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    @property
    def seen(self) -> str:
        """The generation this lock last caught up with (or made)."""
        return self._seen

    def generation(self) -> str:
        return self._watcher.current(self._seen)

    def catch_up(self, reload: Callable[[], None]) -> None:
        with self._mutex:
            token = self.generation()
            if token != self._seen:
                reload()
                self._seen = token

    def _bump(self) -> None:
        with self._mutex:
            token = uuid.uuid4().hex
            self._conn.execute(BUMP, (token, time.time()))
            self._conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, token))
            self._seen = token
            if self._watcher.token is not None:
                self._watcher.token = token  # our own change, known before its notification comes back

    def _take(self, wait: bool, on_wait: Callable[[], None] | None) -> bool:
        conn = postgres.connect(self.url)
        try:
            with postgres.translated(self.url):
                got = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()[0]
                if not got and wait:
                    if on_wait is not None:
                        on_wait()
                    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
                    got = True
        except BaseException:
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._conn = conn
        return True

    def _let_go(self) -> None:
        conn, self._conn = self._conn, None
        with contextlib.suppress(Exception):  # a lost connection has let the lock go already
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
        with contextlib.suppress(Exception):
            conn.close()

    @contextmanager
    def hold(
        self,
        wait: bool = True,
        *,
        on_wait: Callable[[], None] | None = None,
        catch_up: Callable[[], None] | None = None,
    ) -> Iterator[bool]:
        with self._held(wait, on_wait, catch_up, mark=True) as acquired:
            yield acquired

    @contextmanager
    def quiet(self, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
        """``WriteLock.quiet``: held without a catch-up or a new generation."""
        with self._held(wait, on_wait, None, mark=False) as acquired:
            yield acquired

    @contextmanager
    def _held(
        self, wait: bool, on_wait: Callable[[], None] | None, catch_up: Callable[[], None] | None, mark: bool
    ) -> Iterator[bool]:
        """The lock; ``mark``: catch up when taken and mark the generation changed (``hold``)."""
        if not self._threads.acquire(blocking=False):
            if not wait:
                yield False
                return
            if on_wait is not None:
                on_wait()
            self._threads.acquire()
        try:
            outermost = self.depth == 0
            if outermost and not self._take(wait, on_wait):
                yield False
                return
            self._local.depth = self.depth + 1
            try:
                if outermost and mark:
                    with self._mutex, postgres.translated(self.url):
                        if catch_up is not None:
                            self.catch_up(catch_up)
                        self._bump()
                yield True
            finally:
                self._local.depth = self.depth - 1
                if outermost:
                    if mark:
                        with contextlib.suppress(Exception):  # the server went away: its lock went with it
                            self._bump()
                    self._let_go()
        finally:
            self._threads.release()

    def held_elsewhere(self) -> bool:
        """True when another process (or another thread here) is writing right now."""
        if self.depth:
            return False
        if self._conn is not None:
            return True  # another thread of this process holds it
        with postgres.connect(self.url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = %s AND objid = %s AND objsubid = 1",
                (LOCK_KEY >> 32, LOCK_KEY & 0xFFFFFFFF),
            ).fetchone()
            return bool(row[0])


def write_lock(data_dir: Path, database: str | None) -> Any:
    """The data folder's lock (``datadir.WriteLock``), or the database server's when the state
    lives in PostgreSQL (``database``: its URL)."""
    return PostgresWriteLock(database) if database else WriteLock(data_dir)
