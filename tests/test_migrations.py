"""rag_core.storage.migrations: every migration, on SQLite and on a real PostgreSQL, from an
empty database and from the schema the previous release left (SQLite: a docent.db made by
main's migrations before issue 19, a74d177; PostgreSQL: the migration before the newest)."""

from __future__ import annotations

import ast
import json
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from rag_core.storage import DocumentRegistry, Message, SessionStore, SQLiteDatabase
from rag_core.storage.dialect import POSTGRES, SQLITE
from rag_core.storage.migrations import MIGRATIONS
from rag_core.storage.postgres import PostgresDatabase

ROOT = Path(__file__).resolve().parents[1]
PREVIOUS = ROOT / "tests" / "data" / "docent-a74d177.sql"
NAMES = [m.__name__ for m in MIGRATIONS]


def sqlite_columns(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    tables = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    return {t: sorted(r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')) for t in tables}


def postgres_columns(db: PostgresDatabase) -> dict[str, list[str]]:
    rows = db.query(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
        " ORDER BY table_name, column_name"
    )
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def previous_release(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(PREVIOUS.read_text(encoding="utf-8"))
    conn.close()
    return path


def test_the_previous_release_fixture_is_what_its_migrations_made():
    """tests/data/docent-a74d177.sql holds the DDL of a74d177's own migrations, word for word."""
    try:
        old = subprocess.run(
            ["git", "show", "a74d177:rag_core/store.py"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("the git history with a74d177 is not here (a shallow clone)")
    ns: dict = {}
    for node in ast.parse(old).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("m0"):
            exec(compile(ast.Module([node], []), "a74d177", "exec"), ns)
    fixture = PREVIOUS.read_text(encoding="utf-8")
    for name in sorted(k for k in ns if k.startswith("m0")):
        for statement in ns[name]().split(";"):
            if statement.strip():
                assert statement.strip() in fixture, name
        assert f"VALUES('{name}'" in fixture


def test_sqlite_from_empty_applies_every_migration(tmp_path):
    db = SQLiteDatabase(tmp_path / "docent.db")
    assert db.applied_migrations() == NAMES
    columns = sqlite_columns(db.path)
    assert "owner" in columns["sessions"] and "library" in columns["documents"]
    assert {"saved_settings", "generation", "kvstore"} <= set(columns)


def test_sqlite_from_the_previous_release_keeps_every_row(tmp_path):
    db = SQLiteDatabase(previous_release(tmp_path / "docent.db"))
    assert db.applied_migrations() == NAMES
    local = SessionStore(db)  # without sign-in: the one local person, who had them all
    assert [s.name for s in local.list()] == ["Chat 2026-11-30 09:15", "Apple filings"]
    apple = local.get("a1b2c3d4e5f6")
    assert apple.doc_filter == ["2022 Q3 AAPL.pdf"]
    messages = local.messages(apple.id)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].sources[0]["page"] == 2 and messages[1].meta == {"timings": {"total_s": 2.5}}
    assert [s.text for s in local.summaries(apple.id)] == ["Asked about net sales."]
    appended = local.append(apple.id, Message("user", "And the quarter before?"))
    assert appended.id is not None and appended.id > messages[-1].id  # type: ignore[operator]
    registry = DocumentRegistry(db)
    assert [d.name for d in registry.list(status=None)] == ["2022 Q3 AAPL.pdf", "notes/tea.md"]
    assert registry.get("2022 Q3 AAPL.pdf").size == 3400123  # type: ignore[union-attr]
    assert registry.citations("2022 Q3 AAPL.pdf") == (1, 1)
    assert SessionStore(db, "ana@example.org").list() == []  # a person who signs in later sees none of them


@pytest.mark.parametrize("done", range(1, len(MIGRATIONS)))
def test_sqlite_from_each_earlier_step(tmp_path, monkeypatch, done):
    monkeypatch.setattr("rag_core.storage.sqlite.MIGRATIONS", MIGRATIONS[:done])
    SQLiteDatabase(tmp_path / "docent.db")
    monkeypatch.undo()
    assert SQLiteDatabase(tmp_path / "docent.db").applied_migrations() == NAMES


def test_postgres_from_empty_has_the_same_tables_and_columns_as_sqlite(pg_url, tmp_path):
    db = PostgresDatabase(pg_url)
    assert db.applied_migrations() == NAMES
    assert postgres_columns(db) == sqlite_columns(SQLiteDatabase(tmp_path / "docent.db").path)
    PostgresDatabase(pg_url)  # opening again applies nothing twice
    assert len(db.query("SELECT name FROM _migrations")) == len(NAMES)


def _old_rows(db: PostgresDatabase, done: int) -> None:
    """Rows as the schema after ``done`` migrations takes them (sessions and messages exist from m001)."""
    with db.connect() as c:
        c.execute("INSERT INTO sessions (id, name, created, updated) VALUES ('s1', 'Old chat', 1.5, 2.5)")
        c.execute(
            "INSERT INTO messages (session_id, role, content, sources, meta, created)"
            " VALUES ('s1', 'assistant', 'An answer', ?, '{}', 3.0)",
            (json.dumps([{"file": "a.pdf", "page": 1}]),),
        )
        if done >= 2:
            c.execute(
                "INSERT INTO documents (name, sha256, size, kind, status, added, updated)"
                " VALUES ('a.pdf', 'ab', 5000000000, 'pdf', 'indexed', 1780000000.123, 1780000000.123)"
            )


@pytest.mark.parametrize("done", [len(MIGRATIONS) - 1, 3])
def test_postgres_from_an_earlier_step_keeps_its_rows(pg_url, monkeypatch, done):
    """From the migration before the newest, and from the last schema the previous release had."""
    monkeypatch.setattr("rag_core.storage.postgres.MIGRATIONS", MIGRATIONS[:done])
    _old_rows(PostgresDatabase(pg_url), done)
    monkeypatch.undo()
    db = PostgresDatabase(pg_url)
    assert db.applied_migrations() == NAMES
    [session] = SessionStore(db).list()
    assert (session.name, session.created) == ("Old chat", 1.5)
    doc = DocumentRegistry(db).get("a.pdf")
    assert doc is not None and doc.size == 5_000_000_000  # 64-bit sizes
    assert doc.added == 1780000000.123  # times keep their milliseconds (a double, not PostgreSQL's REAL)
    assert DocumentRegistry(db).citations("a.pdf") == (1, 1)


def test_each_dialect_gets_its_own_types():
    """A column type one database lacks or reads otherwise never reaches it."""
    for migration in MIGRATIONS:
        lite, pg = migration(SQLITE), migration(POSTGRES)
        assert not re.search(r"BIGSERIAL|DOUBLE PRECISION|JSONB", lite), migration.__name__
        assert not re.search(r"AUTOINCREMENT|\bREAL\b|\bINTEGER\b", pg), migration.__name__
    assert sorted(NAMES) == NAMES and len(set(NAMES)) == len(NAMES)
