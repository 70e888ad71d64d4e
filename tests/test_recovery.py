"""Start-up recovery, ``check`` and ``rebuild`` when ``docent.db`` is emptied, cut in half or
lost, and while another process ingests (rag_core.recovery, rag_core.storage.backups, rag_core.health).

Real ``python -m rag_core`` processes on a real data folder: Chroma, SQLite, stored copies.
Before these fixes an emptied ``docent.db`` made the next start delete every document's
vectors, a damaged one was a traceback on every command, and ``rebuild`` ignored ``files/``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_core import build_context
from rag_core.health import check
from tests.pdfgen import ZEPHYR_PAGES, make_pdf
from tests.test_crash import big_manual, cli, conversation, db_rows, json_lines

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = {"zephyr.pdf": "How many litres per minute?", "bananas.txt": "Bananas", "tea.md": "Green tea"}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> Path:
    """Three documents and a conversation made through the CLI; `docs list` once more after
    the chat, as a later start would (that start backs up the changed file)."""
    base = tmp_path_factory.mktemp("recovery")
    folder = base / "corpus"
    folder.mkdir()
    make_pdf(ZEPHYR_PAGES, folder / "zephyr.pdf")
    (folder / "bananas.txt").write_text("Bananas are yellow fruit that grow in bunches on large herbaceous plants.")
    (folder / "tea.md").write_text("# Tea\nGreen tea is steamed or pan-fired soon after picking.\n")
    data = base / "data"
    assert cli(data, "ingest", str(folder), "--json").returncode == 0
    chat = cli(data, "chat", "--session", "pumps", "--json", stdin="How many litres per minute?\nWhat battery?\n")
    assert chat.returncode == 0, chat.stderr
    assert cli(data, "docs", "list").returncode == 0
    return data


def fresh_copy(template: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(template, data)
    return data


def assert_every_document_answers(data: Path) -> None:
    listed = cli(data, "docs", "list", "--json")
    assert sorted(d["name"] for d in json_lines(listed.stdout)) == sorted(QUESTIONS)
    for name, question in QUESTIONS.items():
        asked = cli(data, "ask", "--json", question)
        assert asked.returncode == 0, asked.stderr
        assert name in [s["file"] for s in json.loads(asked.stdout)["sources"]], (name, asked.stdout)
    final = cli(data, "check", "--json")
    assert final.returncode == 0, final.stdout
    assert json.loads(final.stdout)["documents"] == 3


@pytest.mark.slow  # `python -m rag_core` processes on the data folder
def test_an_emptied_database_loses_no_document_and_says_so(indexed, tmp_path):
    data = fresh_copy(indexed, tmp_path)
    before = conversation(data)
    (data / "docent.db").write_bytes(b"")  # truncate -s 0 docent.db
    for extra in ("-wal", "-shm"):
        Path(f"{data / 'docent.db'}{extra}").unlink(missing_ok=True)

    # `check` reports it, and touches nothing.
    reported = cli(data, "check", "--json")
    assert reported.returncode == 1
    [problem] = json.loads(reported.stdout)["problems"]
    assert "is damaged (the file is empty (0 bytes))" in problem and "check --repair" in problem
    assert (data / "docent.db").stat().st_size == 0

    # The next start: the empty file is moved aside, the backup restored, nothing deleted.
    started = cli(data, "docs", "list", "--json")
    assert started.returncode == 0 and "Traceback" not in started.stderr
    assert "notice: The database docent.db was damaged (the file is empty (0 bytes))" in started.stderr
    [aside] = data.glob("docent.db.damaged-*")
    assert aside.stat().st_size == 0
    assert conversation(data) == before  # the conversation came back from the backup
    assert_every_document_answers(data)


@pytest.mark.slow  # `python -m rag_core` processes on the data folder
def test_a_lost_registry_without_backup_registers_whole_documents_again(indexed, tmp_path):
    data = fresh_copy(indexed, tmp_path)
    shutil.rmtree(data / "backups")
    with sqlite3.connect(data / "docent.db") as conn:
        conn.execute("DELETE FROM documents")  # the registry is gone, the index is whole

    reported = cli(data, "check", "--json")
    assert reported.returncode == 1
    problems = json.loads(reported.stdout)["problems"]
    assert len(problems) == 3 and all("registers it again from the index" in p for p in problems)

    repaired = cli(data, "check", "--repair", "--json")
    assert repaired.returncode == 0, repaired.stdout
    assert json.loads(repaired.stdout)["reregistered"] == sorted(QUESTIONS)
    rows = db_rows(data, "SELECT name, status, chunks > 0, size > 0 FROM documents ORDER BY name")
    assert rows == [(name, "indexed", 1, 1) for name in sorted(QUESTIONS)]
    assert db_rows(data, "SELECT pages FROM documents WHERE name = 'zephyr.pdf'") == [(3,)]
    assert_every_document_answers(data)


@pytest.mark.slow  # `python -m rag_core` processes on the data folder
def test_a_database_cut_in_half_is_moved_aside_and_rebuilt_from_what_is_left(indexed, tmp_path):
    data = fresh_copy(indexed, tmp_path)
    turns = "".join(f"Question {i} about the pump and its {'valve ' * 300}?\n" for i in range(30))
    assert cli(data, "chat", "--session", "long", "--json", stdin=turns).returncode == 0  # after the backup
    with sqlite3.connect(data / "docent.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = data / "docent.db"
    damaged = db.read_bytes()[: db.stat().st_size // 2]
    db.write_bytes(damaged)

    started = cli(data, "sessions", "list")
    assert started.returncode == 0, started.stderr
    assert "Traceback" not in started.stderr and "DatabaseError" not in started.stderr
    assert "was damaged (database disk image is malformed)" in started.stderr
    assert "rows still readable in the damaged file were copied over" in started.stderr
    [aside] = data.glob("docent.db.damaged-*[0-9]")
    assert aside.read_bytes() == damaged  # moved aside exactly as it was, never deleted
    assert "pumps" in started.stdout and "long" in started.stdout  # the backup's, and the salvaged one
    assert len(db_rows(data, "SELECT 1 FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.name = 'long'"))
    assert_every_document_answers(data)


@pytest.mark.slow  # `python -m rag_core` processes on the data folder
def test_rebuild_works_from_the_stored_files_when_registry_and_index_are_gone(indexed, tmp_path):
    data = fresh_copy(indexed, tmp_path)
    for gone in (
        "chroma",
        "index.db",
        "index.db-wal",
        "index.db-shm",
        "docent.db",
        "docent.db-wal",
        "docent.db-shm",
        "backups",
    ):
        path = data / gone
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    rebuilt = cli(data, "rebuild", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert sorted((r["file"], r["status"]) for r in json_lines(rebuilt.stdout)) == [
        (name, "indexed") for name in sorted(QUESTIONS)
    ]
    assert_every_document_answers(data)


@pytest.mark.slow  # `python -m rag_core` processes on the data folder
def test_check_tells_an_ingest_in_progress_from_an_interrupted_one(indexed, tmp_path):
    data = fresh_copy(indexed, tmp_path)
    big = big_manual(tmp_path / "big.pdf", pages=120)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest", str(big), "--json"],
        cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not db_rows(data, "SELECT 1 FROM documents WHERE name = 'big.pdf' AND status = 'pending'"):
            assert proc.poll() is None, f"ingest ended before it was checked: {proc.communicate()}"
            assert time.monotonic() < deadline, "the registry row never turned pending"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGSTOP)  # frozen mid-ingest, holding the write lock
        try:
            during = cli(data, "check", "--json")
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert during.returncode == 0, during.stdout
        report = json.loads(during.stdout)
        assert (report["problems"], report["ingesting"], report["interrupted"]) == ([], ["big.pdf"], [])
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out)["status"] == "indexed"
    finally:
        proc.kill()
    after = cli(data, "check", "--json")
    assert after.returncode == 0 and json.loads(after.stdout)["documents"] == 4


def cli_env() -> dict[str, str]:
    from tests.test_crash import cli_env as env

    return env()


# --------------------------------------------------------------------------- inside one process
def test_recovery_removes_only_what_a_pending_marker_proves(make_settings, llm, three_docs):
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    # A marker file with no registry row (docent.db lost the pending row): interrupted.
    ctx.ingestion.markers.put("tea.md", "0" * 64)
    ctx.registry.remove("tea.md")
    # No marker, no row: whole, registered again.
    ctx.registry.remove("bananas.txt")
    fresh = build_context(make_settings(), llm=llm)
    assert (fresh.recovered, fresh.reregistered) == (["tea.md"], ["bananas.txt"])
    assert [d.name for d in fresh.ingestion.documents()] == ["bananas.txt", "zephyr.pdf"]
    assert check(fresh)[0] == []
    assert fresh.chat.retrieve("bananas yellow")[0]["file"] == "bananas.txt"


def test_a_marker_left_after_the_row_turned_indexed_removes_nothing(make_settings, llm, three_docs):
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    sha = ctx.registry.get("tea.md").sha256
    ctx.ingestion.markers.put("tea.md", sha)  # killed between mark_indexed and dropping the marker
    ctx.ingestion.markers.put("bananas.txt", "f" * 64)  # killed before the row turned pending
    fresh = build_context(make_settings(), llm=llm)
    assert fresh.recovered == [] and len(fresh.ingestion.documents()) == 3
    assert fresh.ingestion.markers.all() == {} and check(fresh)[0] == []
