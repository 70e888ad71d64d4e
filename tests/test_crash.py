"""Faults during ingestion: a SIGKILL of a real ``python -m rag_core ingest`` half-way through a
400-page PDF, and failures inside a running process (embedding dies, disk full).

After each, the document is fully indexed or absent (never half), ``python -m rag_core check``
passes, the upload can simply be repeated, and every session and message is intact.
"""

import errno
import json
import os
import pty
import re
import select
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
from rag_core.providers.embeddings import HashEmbedding
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

ROOT = Path(__file__).resolve().parents[1]
BIG_PAGES = 400
WORDS = [
    "pump",
    "valve",
    "litre",
    "battery",
    "pressure",
    "flow",
    "metre",
    "ampere",
    "circuit",
    "seal",
    "rotor",
    "impeller",
]


def big_manual(path: Path, pages: int = BIG_PAGES) -> Path:
    """A long manual: ~45 lines of words per page, so embedding it takes seconds, not milliseconds."""
    text = []
    for i in range(pages):
        lines = [f"Page {i + 1} of the big manual, section {i // 10}."]
        lines += [" ".join(WORDS[(i * 7 + j * 5 + k) % len(WORDS)] for k in range(14)) for j in range(45)]
        text.append("\n".join(lines))
    make_pdf(text, path)
    return path


def cli_env() -> dict[str, str]:
    """The machine's environment without Docent settings or keys (the module fixture runs
    before conftest's per-test isolation), plus hash embedding and the extractive LLM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_") and not k.endswith("_API_KEY")}
    return {**env, "DOCENT_EMBED_PROVIDER": "hash", "DOCENT_LLM_PROVIDER": "extractive"}


def cli(data_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rag_core", "--data-dir", str(data_dir), *args],
        cwd=ROOT, env=cli_env(), input=stdin, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def db_rows(data_dir: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Read the SQLite file as another process would, without taking part in its writes."""
    with sqlite3.connect(f"file:{data_dir / 'docent.db'}?mode=ro", uri=True, timeout=30) as conn:
        return conn.execute(sql, params).fetchall()


def conversation(data_dir: Path) -> list[tuple]:
    return db_rows(
        data_dir,
        "SELECT s.id, s.name, m.id, m.role, m.content, m.condensed_question, m.sources "
        "FROM sessions s LEFT JOIN messages m ON m.session_id = s.id ORDER BY s.id, m.id",
    )


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> tuple[Path, Path]:
    """A data folder with one document and two sessions made through the CLI, and the big PDF."""
    base = tmp_path_factory.mktemp("crash")
    data = base / "data"
    zephyr = base / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, zephyr)
    assert cli(data, "ingest", str(zephyr), "--json").returncode == 0
    first = cli(data, "chat", "--session", "pumps", "--json",
                stdin="How many litres per minute?\nWhat battery does it use?\n/quit\n")  # fmt: skip
    second = cli(data, "chat", "--session", "safety", "--json", stdin="Can two pumps share a battery?\n")
    for run in (first, second):
        assert run.returncode == 0, run.stderr
        assert all(turn["answer"] and turn["sources"] for turn in json_lines(run.stdout))
    assert len(db_rows(data, "SELECT id FROM messages")) == 6
    return data, big_manual(base / "big.pdf")


def wait_for_progress(terminal: int, proc: subprocess.Popen, wanted: re.Pattern[str], timeout: float = 240) -> str:
    """Read the progress an ingest draws on its terminal until a line matches ``wanted``."""
    seen = ""
    readable = select.poll()  # not select.select: a long test run holds file descriptors past 1024
    readable.register(terminal, select.POLLIN)
    deadline = time.monotonic() + timeout
    while not wanted.search(seen):
        assert proc.poll() is None, f"ingest ended before the kill: {seen[-300:]!r}"
        assert time.monotonic() < deadline, f"no progress matching {wanted.pattern!r}: {seen[-300:]!r}"
        if readable.poll(1000):
            seen += os.read(terminal, 4096).decode(errors="replace")
    return seen


@pytest.mark.slow  # CLI processes: the data folder made, the ingest killed, then check, repair, ingest again
@pytest.mark.parametrize("moment", ["row turned pending", "two batches embedded"])
def test_sigkill_mid_ingestion_leaves_the_document_whole_or_absent(prepared, tmp_path, moment):
    template, big = prepared
    data = tmp_path / "data"
    shutil.copytree(template, data)
    before = conversation(data)

    # stderr on a terminal: the ingest draws its progress there ("big.pdf: embedding parts
    # 33-48 of 400: …"), which says when the first two batches of pages are in the index.
    terminal, progress = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest", str(big)],
        cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=progress,
    )  # fmt: skip
    os.close(progress)
    try:
        deadline = time.monotonic() + 240
        while not db_rows(data, "SELECT 1 FROM documents WHERE name = 'big.pdf' AND status = 'pending'"):
            assert proc.poll() is None, f"ingest ended before the kill: {proc.communicate()}"
            assert time.monotonic() < deadline, "the registry row never turned pending"
            time.sleep(0.02)
        if moment == "two batches embedded":
            wait_for_progress(terminal, proc, re.compile(r"big\.pdf: embedding parts 33-48 of 400"))
        assert proc.poll() is None, "ingestion finished before the kill: make the PDF bigger"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
        os.close(terminal)
    assert proc.returncode == -signal.SIGKILL

    # `check` reports the damage rather than hiding it: it does not repair unless asked. It
    # names an interrupted ingestion as such, once (not also as "vectors not in the registry").
    damaged = cli(data, "check", "--json")
    assert damaged.returncode == 1
    report = json.loads(damaged.stdout)
    assert report["problems"] == [
        "big.pdf: ingestion was interrupted (pending); the next start or `check --repair` removes what it left"
    ]
    assert (report["interrupted"], report["ingesting"]) == (["big.pdf"], [])

    # Restart. Any command recovers first; `check --repair` also says what it removed.
    if moment == "row turned pending":
        listed = cli(data, "docs", "list", "--json")
        assert [d["name"] for d in json_lines(listed.stdout)] == ["zephyr.pdf"]
    else:
        repaired = cli(data, "check", "--repair", "--json")
        assert repaired.returncode == 0, repaired.stdout
        assert json.loads(repaired.stdout)["repaired"] == ["big.pdf"]
    after = cli(data, "check", "--json")
    assert after.returncode == 0, after.stdout
    assert json.loads(after.stdout) | {"ok": True, "documents": 1} == json.loads(after.stdout)
    assert db_rows(data, "SELECT name, status FROM documents") == [("zephyr.pdf", "indexed")]
    assert not (data / "files" / "big.pdf").exists()
    assert conversation(data) == before  # every session and message intact

    # The upload can simply be repeated.
    again = cli(data, "ingest", str(big), "--json")
    assert again.returncode == 0, again.stderr
    (result,) = json_lines(again.stdout)
    assert (result["status"], result["pages"]) == ("indexed", BIG_PAGES)
    final = cli(data, "check", "--json")
    assert final.returncode == 0 and json.loads(final.stdout)["documents"] == 2
    assert conversation(data) == before


# --------------------------------------------------------------------------- inside one process
def test_embedding_failure_half_way_leaves_the_running_index_consistent(make_settings, llm, tmp_path, monkeypatch):
    ctx = build_context(make_settings(), llm=llm)
    manual = big_manual(tmp_path / "manual.pdf", pages=60)  # four batches of 16 pages
    assert ctx.ingestion.ingest_file(manual).status == "indexed"
    make_pdf([f"A new edition, page {i}." for i in range(1, 61)], manual)
    calls = {"n": 0}
    original = HashEmbedding._get_text_embedding

    def dies_half_way(self, text):
        calls["n"] += 1
        if calls["n"] > 20:  # the new edition has one chunk per page: dies in the second batch
            raise RuntimeError("embedding model crashed")
        return original(self, text)

    monkeypatch.setattr(HashEmbedding, "_get_text_embedding", dies_half_way)
    r = ctx.ingestion.ingest_file(manual, on_conflict="replace")
    assert r.status == "failed" and "embedding model crashed" in r.reason
    # No restart needed: the failed replace left nothing half there (the old edition went with it).
    assert check(ctx)[0] == []
    assert ctx.ingestion.documents() == [] and ctx.index.chunk_count() == 0
    assert not (ctx.settings.data_dir / "files" / "manual.pdf").exists()

    monkeypatch.setattr(HashEmbedding, "_get_text_embedding", original)
    assert ctx.ingestion.ingest_file(manual).status == "indexed"
    assert check(ctx)[0] == []


def test_disk_full_while_keeping_the_copy_is_a_clear_failure(ctx, tmp_path, monkeypatch):
    doc = tmp_path / "notes.txt"
    doc.write_text("Notes about the pump.")

    def disk_full(src, dst, **kw):
        Path(dst).write_bytes(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shutil, "copyfile", disk_full)
    r = ctx.ingestion.ingest_file(doc)
    full = f"the disk holding {ctx.settings.data_dir} is full ("
    assert r.status == "failed" and r.reason.startswith(full) and "free some space and ingest it again" in r.reason
    # the disk said it was full: what the file wrote is not proven gone until a start with room
    assert "nothing of it was kept" in r.reason or "removed at the next start" in r.reason
    # not proven gone on a disk that said it was full: `check` says so, the repair removes it
    assert [p for p in check(ctx)[0] if "notes.txt" in p and "check --repair" in p]
    assert ctx.ingestion.documents() == []
    from rag_core.recovery import recover

    recover(ctx.ingestion)
    assert check(ctx)[0] == [] and ctx.ingestion.documents() == []
    assert list((ctx.settings.data_dir / "files").iterdir()) == []  # no partial copy left behind
    monkeypatch.undo()
    assert ctx.ingestion.ingest_file(doc).status == "indexed"


def test_a_path_that_cannot_be_read_is_refused_with_a_reason(ctx, tmp_path):
    folder = tmp_path / "looks-like-a-file.txt"
    folder.mkdir()
    r = ctx.ingestion.ingest_file(folder)
    assert (r.status, r.reason) == ("failed", "file system error: Is a directory")
    gone = ctx.ingestion.ingest_file(tmp_path / "deleted-meanwhile.pdf")
    assert (gone.status, gone.reason) == ("failed", "file not found")
    assert check(ctx)[0] == []
