"""The database (rag_core.storage): SQLite's numbered migrations, sessions and their messages."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rag_core import NotFoundError
from rag_core.storage import MIGRATIONS, Message, SessionStore, SQLiteDatabase


def test_migrations_are_numbered_recorded_and_idempotent(tmp_path):
    db = SQLiteDatabase(tmp_path / "x.db")
    assert db.applied_migrations() == [m.__name__ for m in MIGRATIONS]
    SQLiteDatabase(tmp_path / "x.db")  # reopening applies nothing twice
    rows = sqlite3.connect(tmp_path / "x.db").execute("SELECT count(*) FROM _migrations").fetchone()
    assert rows[0] == len(MIGRATIONS)
    mode = sqlite3.connect(tmp_path / "x.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_sessions_crud_and_messages(tmp_path):
    store = SessionStore(SQLiteDatabase(tmp_path / "s.db"))
    a = store.create("First")
    b = store.create()
    assert b.name.startswith("Chat ")
    store.rename(a.id, "Renamed")
    store.append(a.id, Message("user", "hello"))
    store.append(
        a.id,
        Message(
            "assistant",
            "hi",
            condensed_question="hello?",
            sources=[{"file": "f.pdf", "page": 2, "score": 0.5, "text": "t"}],
        ),
    )
    msgs = store.messages(a.id)
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert msgs[1].sources[0]["page"] == 2 and msgs[1].condensed_question == "hello?"
    assert store.list()[0].id == a.id  # most recently updated first
    store.set_doc_filter(a.id, ["b.pdf", "a.pdf"])
    assert store.get(a.id).doc_filter == ["a.pdf", "b.pdf"]
    store.delete(a.id)
    with pytest.raises(NotFoundError):
        store.get(a.id)
    assert json.dumps([s.name for s in store.list()]) == json.dumps([b.name])
    with pytest.raises(NotFoundError):
        store.append("nope", Message("user", "x"))


def test_a_database_on_a_full_disk_is_read_and_a_write_says_the_disk_is_full(tmp_path):
    import contextlib
    import os
    import subprocess

    from rag_core.errors import DiskFullError

    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)]).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        store = SessionStore(SQLiteDatabase(disk / "docent.db"))
        s = store.create("pumps")
        store.append(s.id, Message("user", "How many litres?"))
        store.db.close()  # the last connection: SQLite removes its -wal and -shm files
        filler = disk / "filler"
        with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        # Before: "disk I/O error" opening it (WAL's -shm cannot be made): every command stopped.
        full = SessionStore(SQLiteDatabase(disk / "docent.db"))
        assert [m.content for m in full.messages(s.id)] == ["How many litres?"]
        with pytest.raises(DiskFullError, match=r"The disk holding .* is full \(0\.0 MB free\)"):
            full.append(s.id, Message("assistant", "12 litres."))
        filler.unlink()  # room again: the same store writes, nothing was lost
        full.append(s.id, Message("assistant", "12 litres."))
        assert [m.content for m in full.messages(s.id)] == ["How many litres?", "12 litres."]
        full.db.close()
    finally:
        subprocess.run(["umount", "-l", str(disk)])
