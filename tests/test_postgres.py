"""PostgreSQL as Docent's database (rag_core.storage.postgres, rag_core.postgres, rag_core.pglock),
against a real server: the stores behave as on SQLite, each person sees their own
conversations on both, the write lock and the generation work across processes' objects,
a restarted server costs one clear error and no restart."""

from __future__ import annotations

import threading
import time

import pytest

from rag_core import DatabaseUnavailableError, NotFoundError
from rag_core.pglock import PostgresWriteLock
from rag_core.postgres import shown_url
from rag_core.storage import DocumentRegistry, Message, SessionStore, SQLiteDatabase
from rag_core.storage.kvstore import DatabaseKVStore
from rag_core.storage.postgres import PostgresDatabase


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path):
    if request.param == "sqlite":
        return SQLiteDatabase(tmp_path / "docent.db")
    return PostgresDatabase(request.getfixturevalue("pg_url"))


def test_each_person_sees_opens_and_changes_only_their_own_conversations(db):
    ana, ben, local = SessionStore(db, "ana@example.org"), SessionStore(db, "ben@example.org"), SessionStore(db)
    mine = ana.create("Ana's plan")
    ana.append(mine.id, Message("user", "secret question"))
    ben.create("Ben's chat")
    assert [s.name for s in ana.list()] == ["Ana's plan"]
    assert [s.name for s in ben.list()] == ["Ben's chat"]
    assert local.list() == []
    for attempt in (
        lambda: ben.get(mine.id),
        lambda: ben.append(mine.id, Message("user", "x")),
        lambda: ben.rename(mine.id, "taken"),
        lambda: ben.delete(mine.id),
        lambda: ben.set_doc_filter(mine.id, ["a.pdf"]),
        lambda: ben.clear(mine.id),
        lambda: ben.add_summary(mine.id, 1, "x"),
    ):
        with pytest.raises(NotFoundError):
            attempt()
    assert ben.messages(mine.id) == [] and ben.summaries(mine.id) == [] and ben.find(mine.id) is None
    assert [m.content for m in ana.messages(mine.id)] == ["secret question"]
    imported = ben.add_whole("Ana's plan", [Message("user", "hello")])
    assert imported.name == "Ana's plan"  # names are per person: nothing to rename
    assert ana.total() == 3


def test_the_registry_is_per_library_and_messages_keep_their_order(db):
    shared, ana = DocumentRegistry(db), DocumentRegistry(db, "ana@example.org")
    shared.mark_pending("report.pdf", "a" * 64, 10, "pdf")
    shared.mark_indexed("report.pdf", 2, 5)
    ana.register("report.pdf", "b" * 64, 5_000_000_000, 3, 7, "pdf")
    assert shared.get("report.pdf").sha256 == "a" * 64  # type: ignore[union-attr]
    assert ana.get("report.pdf").size == 5_000_000_000  # type: ignore[union-attr]
    ana.register("report.pdf", "c" * 64, 1, 1, 1, "pdf")  # again: replaces the row
    assert [d.sha256 for d in ana.list()] == ["c" * 64]
    ana.remove("report.pdf")
    assert ana.list() == [] and [d.name for d in shared.list()] == ["report.pdf"]

    sessions = SessionStore(db, "ana@example.org")
    s = sessions.create()
    ids = [sessions.append(s.id, Message("user" if i % 2 == 0 else "assistant", f"m{i}")).id for i in range(6)]
    assert ids == sorted(ids) and len(set(ids)) == 6
    assert [m.content for m in sessions.messages(s.id)] == [f"m{i}" for i in range(6)]
    sessions.append(s.id, Message("assistant", "cites", sources=[{"file": "report.pdf", "page": 1}]))
    assert ana.citations("report.pdf") == (1, 1)
    assert shared.citations("report.pdf") == (1, 1)  # the shared library's readers may be anyone
    assert DocumentRegistry(db, "ben@example.org").citations("report.pdf") == (0, 0)
    assert sessions.drop_after(s.id, ids[2]) == 4


def test_the_docstore_lives_in_rows(db):
    kv = DatabaseKVStore(db)
    kv.put_all([("a", {"x": 1}), ("b", {"y": "ü"})], collection="docstore/data")
    kv.put("a", {"x": 2}, collection="docstore/data")
    kv.put("a", {"x": 3}, collection="docstore-lib-1/data")
    assert kv.get_all("docstore/data") == {"a": {"x": 2}, "b": {"y": "ü"}}
    assert kv.delete("b", collection="docstore/data") and not kv.delete("b", collection="docstore/data")
    assert kv.clear("docstore/") == 1
    assert kv.get("a", "docstore/data") is None and kv.get("a", "docstore-lib-1/data") == {"x": 3}


def test_the_docstore_finds_a_documents_keys_by_prefix_and_loads_a_json_docstore_whole(db):
    kv = DatabaseKVStore(db)
    kv.put_all([("a.pdf::p1", {"h": 1}), ("a.pdf::p2", {"h": 2}), ("a.pdf:;x", {"h": 3}), ("a.pdfx", {})], "ds/m")
    assert kv.keys("ds/m", "a.pdf::") == ["a.pdf::p1", "a.pdf::p2"]  # whatever the server's collation
    assert kv.keys("ds/m") == sorted(["a.pdf::p1", "a.pdf::p2", "a.pdf:;x", "a.pdfx"]) and kv.count("ds/m") == 4
    old = {"ds/data": {"n1": {"text": "ü"}}, "ds/m": {"a.pdf::p1": {"h": 9}}}
    kv.load(old)
    assert kv.holds(old) and kv.get("a.pdf::p1", "ds/m") == {"h": 9}
    assert not kv.holds({"ds/m": {"a.pdf::p1": {"h": 1}}})


def test_a_password_never_reaches_a_message():
    url = "postgresql://docent:s3cret@db.example.org:5432/docent"
    assert shown_url(url) == "postgresql://docent@db.example.org:5432/docent"


def test_a_server_that_went_away_is_a_clear_error_then_works_again(pg_url, postgres_server):
    db = PostgresDatabase(pg_url)
    sessions = SessionStore(db)
    kept = sessions.create("before")
    postgres_server.stop()
    try:
        with pytest.raises(DatabaseUnavailableError) as caught:
            sessions.append(kept.id, Message("user", "while it is down"))
        assert "cannot be reached" in str(caught.value) and "PostgreSQL is running" in str(caught.value)
    finally:
        postgres_server.start()
    sessions.append(kept.id, Message("user", "after"))  # the same objects: no restart of Docent
    assert [m.content for m in sessions.messages(kept.id)] == ["after"]


def test_one_writer_across_processes_and_the_generation_travels(pg_url):
    PostgresDatabase(pg_url)  # the tables
    first, second = PostgresWriteLock(pg_url), PostgresWriteLock(pg_url)  # as two processes hold them
    reloaded: list[str] = []
    before = second.generation()
    with first.hold() as got:
        assert got and first.depth == 1
        with first.hold():  # re-entrant in its thread
            assert first.depth == 2
        assert second.held_elsewhere()
        with second.hold(wait=False) as other:
            assert other is False
    assert not second.held_elsewhere()
    deadline = time.monotonic() + 5
    while second.generation() == before and time.monotonic() < deadline:
        time.sleep(0.05)  # the notification comes on the listener's connection
    assert second.generation() != before
    second.catch_up(lambda: reloaded.append("reload"))
    assert reloaded == ["reload"]
    second.catch_up(lambda: reloaded.append("again"))
    assert reloaded == ["reload"]  # nothing new since


def test_a_waiting_writer_gets_the_lock_when_the_holder_lets_go(pg_url):
    PostgresDatabase(pg_url)
    first, second = PostgresWriteLock(pg_url), PostgresWriteLock(pg_url)
    order: list[str] = []
    waited = threading.Event()

    def later() -> None:
        with second.hold(on_wait=waited.set):
            order.append("second")

    with first.hold():
        thread = threading.Thread(target=later)
        thread.start()
        assert waited.wait(10)
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]


def test_docent_on_postgres_writes_no_docent_db_and_a_second_process_sees_everything(
    pg_url, make_settings, llm, three_docs, tmp_path
):
    from rag_core import build_context, load_settings, save_settings

    settings = make_settings(database_url=pg_url, files_dir=tmp_path / "shared-files")
    ctx = build_context(settings, llm=llm)
    results = ctx.ingestion.ingest_paths([three_docs])
    assert {r.status for r in results} == {"indexed"}
    answer = ctx.chat.ask("What colour are bananas?", ctx.sessions.create("fruit").id)
    assert "bananas.txt" in {s["file"] for s in answer.sources}
    save_settings(settings.model_copy(update={"chunk_size": 300}), environ={})
    data = settings.data_dir
    assert not (data / "docent.db").exists() and not (data / "docstore.json").exists()
    assert ctx.index.store.kvstore.db is ctx.db and ctx.index.store.docstore_entries() > 0  # the docstore's rows
    assert ctx.index.store.db.schema == "docent_kw" and not (data / "index.db").exists()  # the keyword index too
    words = ctx.index.keywords.docs()
    assert set(words) == {"bananas.txt", "tea.md", "zephyr.pdf"} and sum(words.values()) == ctx.index.chunk_count()
    assert not (data / "settings.json").exists() and not (data / "backups").exists()
    assert sorted(p.name for p in (tmp_path / "shared-files").iterdir()) == ["bananas.txt", "tea.md", "zephyr.pdf"]

    # Another process: its own data folder (caches, embedded Chroma aside), the same database.
    other = load_settings(
        {"DOCENT_DATABASE_URL": pg_url},
        data_dir=tmp_path / "other",
        embed_provider="hash",
        llm_provider="extractive",
    )
    assert other.chunk_size == 300  # saved by the first, read from the database
    seen = build_context(other, llm=llm, recover=False)
    assert [d.name for d in seen.registry.list()] == ["bananas.txt", "tea.md", "zephyr.pdf"]
    assert seen.index.docstore_names() == {"bananas.txt", "tea.md", "zephyr.pdf"}
    assert [s.name for s in seen.sessions.list()] == ["fruit"]


def test_a_process_with_its_own_folder_finds_another_machines_documents_by_keyword_at_once(
    pg_url, make_settings, llm, tmp_path
):
    """Two machines: each its own data folder (here their Chroma is one folder, as a Chroma
    server would be one), one database, and in it one keyword index: B finds A's new
    document by keyword the moment A's write commits, with nothing of its own to fill."""
    from rag_core import build_context, load_settings

    a = build_context(make_settings(database_url=pg_url, files_dir=tmp_path / "shared-files"), llm=llm)
    (tmp_path / "first.txt").write_text("Alpacas graze on the altiplano.")
    assert a.ingestion.ingest_file(tmp_path / "first.txt").status == "indexed"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "chroma").symlink_to(a.settings.paths.chroma)
    other = load_settings(
        {"DOCENT_DATABASE_URL": pg_url}, data_dir=tmp_path / "other", embed_provider="hash", llm_provider="extractive"
    )
    b = build_context(other, llm=llm, recover=False)
    assert b.index.keywords.docs() == {"first.txt": 1} and not (tmp_path / "other" / "index.db").exists()
    (tmp_path / "second.txt").write_text("Quetzals nest in the cloud forest of Monteverde.")
    assert a.ingestion.ingest_file(tmp_path / "second.txt").status == "indexed"
    assert b.index.keywords.docs() == {"first.txt": 1, "second.txt": 1}  # no wait, no catching up
    assert b.chat.retrieve("quetzals Monteverde")[0]["file"] == "second.txt"
