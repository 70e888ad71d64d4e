"""Backups of docent.db and what a damaged file does (rag_core.storage.backups, rag_core.storage.sqlite)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from rag_core import DatabaseDamagedError, build_context
from rag_core.storage import MIGRATIONS, Backups, Message, SessionStore, SQLiteDatabase, open_database


def test_a_backup_is_taken_before_migrations_change_an_existing_file(tmp_path, monkeypatch):
    backups = Backups(tmp_path / "backups", every_s=None)
    db = SQLiteDatabase(tmp_path / "docent.db", backups)
    SessionStore(db).create("kept")
    assert backups.list() == []  # a new file: nothing to protect

    def m999_extra(dialect) -> str:
        return "CREATE TABLE extra (x INTEGER);"

    monkeypatch.setattr("rag_core.storage.sqlite.MIGRATIONS", [*MIGRATIONS, m999_extra])
    SQLiteDatabase(tmp_path / "docent.db", backups)
    [backup] = backups.list()
    assert backup.name.endswith("-before-m999_extra.db")
    with sqlite3.connect(backup) as conn:  # the state before the migration, sessions included
        assert conn.execute("SELECT name FROM sessions").fetchall() == [("kept",)]
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'extra'").fetchall()


def test_backups_keep_their_interval_and_count_across_many_starts(make_settings, llm):
    """Every CLI command is a start: 600 of them on one day used to leave a backup each."""
    settings = make_settings(backup_interval_hours=24, backup_keep=2)
    ctx = build_context(settings, llm=llm)
    backups = settings.data_dir / "backups"
    assert len(list(backups.glob("docent-*.db"))) == 1  # the first start
    for i in range(20):
        ctx.sessions.create(f"s{i}")  # a command that wrote ...
        build_context(settings, llm=llm)  # ... and the next one starting
    # Within the interval: no new scheduled one, but the one "latest" copy, taken again by each
    # start that finds the file changed, so an emptied file loses nothing written before it.
    [first, latest] = sorted(backups.glob("docent-*.db"))
    assert latest.name.endswith("-latest.db") and not first.name.endswith("-latest.db")
    with sqlite3.connect(latest) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 20

    def a_day_later() -> None:  # every file's time moved back a day: the next start is a day later
        for old in [*backups.glob("docent-*.db"), *settings.data_dir.glob("docent.db*")]:
            stamp = old.stat().st_mtime - 25 * 3600
            os.utime(old, (stamp, stamp))

    a_day_later()
    build_context(settings, llm=llm)  # changed since, and the newest is older than the interval
    assert len(list(backups.glob("docent-*.db"))) == 2
    a_day_later()
    build_context(settings, llm=llm)  # older than the interval, but nothing changed since
    assert len(list(backups.glob("docent-*.db"))) == 2
    newest = max(backups.glob("docent-*.db"))
    a_day_later()
    running = build_context(settings, llm=llm)  # nothing changed since the newest: none on start
    assert max(backups.glob("docent-*.db")) == newest
    running.sessions.create("t0")  # a write finds the newest backup a day old: a backup
    assert max(backups.glob("docent-*.db")) != newest
    for i in range(1, 3):
        ctx.sessions.create(f"t{i}")
        a_day_later()
        build_context(settings, llm=llm)
    kept = sorted(backups.glob("docent-*.db"))
    assert len(kept) == 2  # the count holds
    with sqlite3.connect(kept[-1]) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 23


def test_a_damaged_file_is_a_clear_error_then_moved_aside_and_salvaged(tmp_path):
    path = tmp_path / "docent.db"
    db = SQLiteDatabase(path)
    store = SessionStore(db)
    session = store.create("notes")
    store.append(session.id, Message("user", "hello"))
    db.close()  # the last connection: the WAL is folded into the file
    raw = bytearray(path.read_bytes())
    raw[0:16] = b"not a database!!"
    path.write_bytes(bytes(raw))

    with pytest.raises(DatabaseDamagedError, match=r"is damaged \(.*\)\. Restart Docent"):
        SQLiteDatabase(path)
    backups = Backups(tmp_path / "backups")
    with pytest.raises(DatabaseDamagedError):
        open_database(path, backups, repair=False)
    assert path.read_bytes() == bytes(raw)  # reporting leaves it as it is

    db, [notice] = open_database(path, backups)
    assert "moved aside as docent.db.damaged-" in notice and "no backup existed" in notice
    [aside] = tmp_path.glob("docent.db.damaged-*")
    assert aside.read_bytes() == bytes(raw)
    assert SessionStore(db).list() == []  # a header that is gone takes every row with it


def test_damage_found_while_running_is_a_docent_error_not_a_traceback(tmp_path):
    path = tmp_path / "docent.db"
    db = SQLiteDatabase(path)
    store = SessionStore(db)
    store.create("one")
    db.close()
    path.write_bytes(b"\0" * 4096 + path.read_bytes()[4096:])  # the first page zeroed underneath
    for extra in ("-wal", "-shm"):
        (tmp_path / f"docent.db{extra}").unlink(missing_ok=True)
    with pytest.raises(DatabaseDamagedError, match="check --repair"):
        store.list()
