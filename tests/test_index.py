"""Several processes on one data folder (rag_core.index): the write lock covers every
read-modify-write, and a process that takes it first catches up with what others wrote.

Before: two ``python -m rag_core ingest`` at once both said "indexed", then ``check`` said
"registered but missing from the docstore" — each process had persisted its own in-memory
docstore over the other's, and its Chroma client did not see the other's vectors.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag_core import build_context
from rag_core.files import FolderLock
from rag_core.health import check
from tests.test_crash import cli, cli_env, json_lines

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # real `python -m rag_core` processes beside each other
WAITING = "waiting for the write lock"
TOPICS = {
    "a": ["anchovy", "albatross", "avalanche"],
    "b": ["bassoon", "beetroot", "blizzard"],
}


def _ingest(data: Path, folder: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rag_core", "-v", "--data-dir", str(data), "ingest", str(folder), "--json"],
        cwd=ROOT, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _collect(stream, lines: list[str], waiting: threading.Event) -> threading.Thread:
    """Read a process's stderr into ``lines``; set ``waiting`` when it says it waits for the
    lock, or when the stream ends (the process did: the caller tells which)."""

    def read() -> None:
        for line in stream:
            lines.append(line)
            if WAITING in line:
                waiting.set()
        waiting.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_two_ingest_processes_at_once_lose_nothing(tmp_path):
    data = tmp_path / "data"
    folders = {}
    for key, words in TOPICS.items():
        folder = folders[key] = tmp_path / key
        folder.mkdir()
        for word in words:
            (folder / f"{word}.txt").write_text(f"The {word} report. " + f"{word} notes and figures. " * 40)
    assert cli(data, "docs", "list").returncode == 0  # the data folder exists

    # Hold the lock until both processes have loaded their docstore and Chroma view and wait
    # for it: their writes then interleave for sure, from views that are stale for one of them.
    lock = FolderLock(data / ".write.lock")
    with lock.hold():
        procs = {key: _ingest(data, folder) for key, folder in folders.items()}
        errs: dict[str, list[str]] = {key: [] for key in procs}
        waiting = {key: threading.Event() for key in procs}
        readers = [_collect(p.stderr, errs[key], waiting[key]) for key, p in procs.items()]
        for key in procs:
            assert waiting[key].wait(240), f"the processes never waited for the lock: {errs}"
            assert any(WAITING in line for line in errs[key]), f"{key} ended without waiting for the lock: {errs}"
    # stdout read here, stderr by its reader alone: communicate() would read and close stderr
    # under the reader ("I/O operation on closed file" in its thread)
    outs = {key: p.stdout.read() for key, p in procs.items()}
    for p in procs.values():
        p.wait(timeout=300)
    for reader in readers:
        reader.join(timeout=10)
    for key, proc in procs.items():
        assert proc.returncode == 0, errs[key]
        assert sorted(r["status"] for r in json_lines(outs[key])) == ["indexed"] * 3

    checked = cli(data, "check", "--json")
    assert checked.returncode == 0, checked.stdout
    assert json.loads(checked.stdout) | {"ok": True, "documents": 6} == json.loads(checked.stdout)
    for words in TOPICS.values():
        for word in words:
            asked = cli(data, "ask", "--json", f"{word} figures")
            assert asked.returncode == 0, asked.stderr
            assert f"{word}.txt" in [s["file"] for s in json.loads(asked.stdout)["sources"]]


def test_a_running_process_sees_what_another_process_wrote(make_settings, llm, tmp_path):
    """The app beside the CLI: its view catches up on the next read, and its next write starts
    from the current docstore instead of overwriting the CLI's entries."""
    ctx = build_context(make_settings(), llm=llm)
    first = tmp_path / "first.txt"
    first.write_text("Quokkas live on Rottnest Island.")
    assert ctx.ingestion.ingest_file(first).status == "indexed"
    assert ctx.chat.retrieve("Quokkas Rottnest")[0]["file"] == "first.txt"

    other = tmp_path / "other.txt"
    other.write_text("Axolotls regrow their limbs.")
    ran = cli(ctx.settings.data_dir, "ingest", str(other), "--json")
    assert ran.returncode == 0 and json_lines(ran.stdout)[0]["status"] == "indexed"

    assert ctx.chat.retrieve("Axolotls regrow limbs")[0]["file"] == "other.txt"  # seen without a restart
    third = tmp_path / "third.txt"
    third.write_text("Pangolins have scales.")
    assert ctx.ingestion.ingest_file(third).status == "indexed"
    assert check(ctx)[0] == []
    assert ctx.index.docstore_names() == {"first.txt", "other.txt", "third.txt"}
    fresh = cli(ctx.settings.data_dir, "check", "--json")
    assert fresh.returncode == 0 and json.loads(fresh.stdout)["documents"] == 3, fresh.stdout


def test_an_empty_library_searched_then_filled_by_another_process_is_searched_again(make_settings, llm, tmp_path):
    """Whether the collection is empty is read once per index version (Chroma's count is slow
    on a large collection): another process's first document must still be found at once."""
    ctx = build_context(make_settings(), llm=llm)
    assert ctx.index.is_empty()
    assert ctx.chat.retrieve("Axolotls regrow limbs") == []
    other = tmp_path / "other.txt"
    other.write_text("Axolotls regrow their limbs.")
    ran = cli(ctx.settings.data_dir, "ingest", str(other), "--json")
    assert ran.returncode == 0 and json_lines(ran.stdout)[0]["status"] == "indexed"
    assert not ctx.index.is_empty()
    assert ctx.chat.retrieve("Axolotls regrow limbs")[0]["file"] == "other.txt"


_HOLD = """
import sys
from pathlib import Path
from rag_core.datadir import WRITE_LOCK_FILE
from rag_core.files import FolderLock
with FolderLock(Path(sys.argv[1]) / WRITE_LOCK_FILE).hold():
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_view_is_reopened_only_while_no_other_process_writes(make_settings, llm, tmp_path):
    """Found with real processes (an app searching beside a CLI indexing 900 small files): the
    first read of a reopened embedded view brings it up to date from Chroma's log, and beside
    another process's write it failed ("Failed to apply logs to the hnsw segment writer") or
    killed the searching process (segmentation fault, 2 runs of 2). Now the view is reopened
    and first read under the write lock; while another process holds it, the last one is searched."""
    ctx = build_context(make_settings(), llm=llm)
    (tmp_path / "first.txt").write_text("Quokkas live on Rottnest Island.")
    assert ctx.ingestion.ingest_file(tmp_path / "first.txt").status == "indexed"
    other = tmp_path / "other.txt"
    other.write_text("Axolotls regrow their limbs.")
    ran = cli(ctx.settings.data_dir, "ingest", str(other), "--json")
    assert ran.returncode == 0 and json_lines(ran.stdout)[0]["status"] == "indexed"

    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(ctx.settings.data_dir)],
        cwd=ROOT, env=cli_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = ctx.index.version
        assert ctx.chat.retrieve("Quokkas Rottnest")[0]["file"] == "first.txt"  # the last view, no error
        assert ctx.index.version == before  # not reopened while the other process holds the lock
    finally:
        holder.communicate("\n", timeout=30)
    assert ctx.chat.retrieve("Axolotls regrow limbs")[0]["file"] == "other.txt"
    assert ctx.index.version != before  # reopened once the lock was free
    (tmp_path / "third.txt").write_text("Pangolins have scales.")
    assert ctx.ingestion.ingest_file(tmp_path / "third.txt").status == "indexed"
    assert ctx.index.docstore_names() == {"first.txt", "other.txt", "third.txt"}
    assert check(ctx)[0] == []


def test_a_search_looks_once_for_what_other_processes_wrote_and_sees_it_at_the_next(ctx, tmp_path, monkeypatch):
    """A search read the generation file at each of its dozen reads of the index (half a
    millisecond at 100k chunks, where the search itself takes ten); now once, at its start."""
    (tmp_path / "first.txt").write_text("Quokkas live on Rottnest Island.")
    assert ctx.ingestion.ingest_file(tmp_path / "first.txt").status == "indexed"
    writer, reads = ctx.index._writer, []
    real = writer.generation
    monkeypatch.setattr(writer, "generation", lambda: reads.append(1) or real())
    assert ctx.chat.retrieve("Quokkas Rottnest")[0]["file"] == "first.txt"
    assert len(reads) <= 2, len(reads)  # the search's one look (and the chat service's own, before it)

    with ctx.index.one_view():
        before = ctx.index.version
        writer._generation.write_text("written-by-another-process", encoding="utf-8")
        assert ctx.index.version == before  # the block keeps the view it started with
    assert ctx.index.version != before  # the next look reopens
