"""Backups of ``docent.db``, and what happens when it is damaged.

Backups use SQLite's online backup API (a consistent copy while other connections write)
into ``<data_dir>/backups/docent-YYYYmmdd-HHMMSS-mmm-<label>.db``: one before migrations
change an existing file, one whenever something is written and the newest scheduled one is
older than ``backup_interval_hours``, and on a start when the file changed since the newest
backup: a scheduled one if due, else the single ``latest`` copy taken again; the newest
``backup_keep`` are kept.

A damaged file (``database disk image is malformed``, not a database, or emptied to 0
bytes) is never deleted: ``open_database`` moves it aside as ``docent.db.damaged-<time>``
(with its ``-wal``/``-shm``), restores the newest backup that passes an integrity check
(or starts an empty file), and copies over every row it can still read from the damaged
one. The document registry is then completed from the index by ``rag_core.recovery``.
All of this is SQLite's: a server database keeps its own backups.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

from rag_core.errors import DatabaseDamagedError
from rag_core.files import replacing
from rag_core.storage.sqlite import SQLiteDatabase

logger = logging.getLogger(__name__)

LATEST = "latest"  # the label of the one backup a start refreshes between scheduled ones


class Backups:
    """Online backups of one SQLite file into a folder, rotated."""

    def __init__(self, folder: Path, *, every_s: float | None = 24 * 3600.0, keep: int = 7) -> None:
        self.folder = Path(folder)
        self.every_s = every_s
        self.keep = keep
        self._lock = threading.Lock()
        newest = self.list()
        self._last = newest[0].stat().st_mtime if newest else 0.0  # the newest backup of any kind
        scheduled = [b for b in newest if not b.name.endswith(f"-{LATEST}.db")]
        self._last_scheduled = scheduled[0].stat().st_mtime if scheduled else 0.0

    def list(self) -> list[Path]:
        """Backups, newest first."""
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("docent-*.db"), key=lambda p: p.name, reverse=True)

    def take(self, db: SQLiteDatabase, label: str = "scheduled") -> Path:
        """Copy ``db`` now (consistent even while others write), then drop the oldest beyond ``keep``."""
        with self._lock:
            now = time.time()
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now * 1000) % 1000:03d}"
            dest = self.folder / f"docent-{stamp}-{label}.db"
            source = sqlite3.connect(db.path, timeout=30)
            try:
                with replacing(dest) as tmp:
                    target = sqlite3.connect(tmp)
                    try:
                        source.backup(target)
                    finally:
                        target.close()
            finally:
                source.close()
            self._last = now
            for old in self.list():  # one "latest" copy at most, and none older than a newer backup
                if old != dest and old.name.endswith(f"-{LATEST}.db"):
                    old.unlink(missing_ok=True)
            if label != LATEST:
                self._last_scheduled = now
            for old in self.list()[self.keep :]:
                old.unlink(missing_ok=True)
            logger.info("backed up %s to %s", db.path, dest)
            return dest

    def if_due(self, db: SQLiteDatabase, *, starting: bool = False) -> None:
        """After writes: a backup when the newest scheduled one is older than ``every_s``. On a
        start (every CLI command is one), when the file changed since the newest backup: a
        scheduled backup if one is due, else the one ``latest`` copy is taken again (it replaces
        the previous ``latest``), so a damaged file loses nothing written before this start and
        600 commands leave one copy, not 600."""
        if self.every_s is None:
            return
        due = time.time() - self._last_scheduled >= self.every_s
        if starting and self._last:
            changed = max(
                (Path(f"{db.path}{s}").stat().st_mtime for s in ("", "-wal") if Path(f"{db.path}{s}").exists()),
                default=0.0,
            )
            if changed <= self._last:
                return
        elif not due:
            return
        try:
            self.take(db, label="scheduled" if due else LATEST)
        except (OSError, sqlite3.Error) as e:  # a failed backup must not fail the write that triggered it
            logger.warning("could not back up %s: %s", db.path, e)
            self._last = self._last_scheduled = time.time()

    def newest_good(self) -> Path | None:
        """The newest backup that SQLite reads without complaint."""
        for path in self.list():
            if intact(path):
                return path
        return None


def intact(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def quarantine(path: Path) -> Path:
    """Move a damaged file and its WAL/SHM aside, under one new name; returns that name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            part.rename(f"{aside}{suffix}")
    return aside


def salvage(damaged_file: Path, db: SQLiteDatabase) -> dict[str, int]:
    """Copy every row that can still be read from a damaged file into ``db`` (rows already
    there win). Works on a temporary copy: the damaged file stays exactly as it was found."""
    copied: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="docent-salvage-") as tmp:
        work = Path(tmp) / "damaged.db"
        for suffix in ("", "-wal"):
            if Path(f"{damaged_file}{suffix}").exists():
                shutil.copyfile(f"{damaged_file}{suffix}", f"{work}{suffix}")
        try:
            old = sqlite3.connect(work)
            old.execute("PRAGMA writable_schema=ON")  # read the schema even where it points past the end
        except sqlite3.Error:
            return copied
        try:
            target = db._connection()
            tables = [
                r[0]
                for r in target.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                    " AND name != '_migrations' ORDER BY rowid"
                )
            ]
            for table in tables:
                copied[table] = _copy_rows(old, target, table)
        finally:
            old.close()
    return {t: n for t, n in copied.items() if n}


def _copy_rows(old: sqlite3.Connection, target: sqlite3.Connection, table: str) -> int:
    try:
        have = {r[1] for r in old.execute(f'PRAGMA table_info("{table}")')}
        columns = [r[1] for r in target.execute(f'PRAGMA table_info("{table}")') if r[1] in have]
        if not columns:
            return 0
        listed = ", ".join(f'"{c}"' for c in columns)
        rows = old.execute(f'SELECT {listed} FROM "{table}"')
    except sqlite3.Error:
        return 0
    n = 0
    while True:
        try:
            row = next(rows)
        except StopIteration:
            break
        except sqlite3.Error:  # the rest of this table is in the damaged part
            break
        with contextlib.suppress(sqlite3.Error):  # a row whose parent was lost, say
            cur = target.execute(
                f'INSERT OR IGNORE INTO "{table}" ({listed}) VALUES ({", ".join("?" * len(columns))})', row
            )
            n += cur.rowcount
    return n


def open_database(path: Path, backups: Backups, *, repair: bool = True) -> tuple[SQLiteDatabase, list[str]]:
    """The database, and what had to be done to open it (notices for the user).

    With ``repair=False`` a damaged file raises ``DatabaseDamagedError`` and is left as it is
    (``check`` reports; ``check --repair`` and every other start repair)."""
    try:
        return SQLiteDatabase(path, backups), []
    except DatabaseDamagedError as e:
        if not repair:
            raise
        why = str(e).split(" is damaged (", 1)[-1].split("). ", 1)[0]
    aside = quarantine(path)
    notice = f"The database {path.name} was damaged ({why}). It was moved aside as {aside.name} (not deleted)"
    good = backups.newest_good()
    if good is not None:
        shutil.copyfile(good, path)
        notice += f"; the backup {good.name} was restored"
    db = SQLiteDatabase(path, backups)
    rows = salvage(aside, db)
    if rows:
        notice += (
            "; rows still readable in the damaged file were copied over ("
            + ", ".join(f"{n} {table}" for table, n in rows.items())
            + ")"
        )
    elif good is None:
        notice += "; no backup existed, so conversations could not be restored"
    notice += ". Indexed documents are registered again from the index."
    logger.warning("%s", notice)
    return db, [notice]
