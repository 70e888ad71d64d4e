"""index.db (rag_core.storage.indexstore, kvstore, indexdb): the docstore as LlamaIndex key-value
rows, a data folder of an earlier version (docstore.json, no index.db) migrated on open and
its file kept aside, a keyword index filled from Chroma when it never was, a damaged index.db
moved aside. Real Chroma and SQLite in tmp_path, hash embedding."""

from __future__ import annotations

import json

import pytest
from llama_index.core import Document
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.docstore.keyval_docstore import KVDocumentStore

from rag_core import build_context
from rag_core.errors import ConsistencyError
from rag_core.health import check
from rag_core.index import _OPEN
from rag_core.storage.indexdb import IndexDB
from rag_core.storage.indexstore import HASHES, KEYWORDS_COMPLETE, migrate_docstore, open_index_store
from rag_core.storage.kvstore import DatabaseKVStore

PAGES = {"alpha.txt": "Alpacas graze on the altiplano. " * 30, "beta.md": "# Beta\n\nBeetles bore into bark.\n" * 20}


@pytest.fixture
def indexed(make_settings, llm, tmp_path):
    """A data folder with two documents, and the settings that open it."""
    settings = make_settings()
    ctx = build_context(settings, llm=llm)
    for name, text in PAGES.items():
        (tmp_path / name).write_text(text)
        assert ctx.ingestion.ingest_file(tmp_path / name).status == "indexed"
    return settings


def reopen(settings, llm):
    """A context as a new process builds it (the process's open index forgotten)."""
    _OPEN.clear()
    return build_context(settings, llm=llm)


def as_earlier_version(settings) -> dict:
    """Turn the folder into what an earlier version left: the docstore (page hashes and page
    texts) in docstore.json as SimpleDocumentStore wrote it, and no index.db."""
    store = open_index_store(settings.paths.index_db)
    hashes = store.kvstore.get_all(HASHES)
    store.db.close()
    old = SimpleDocumentStore()
    for page_id, value in hashes.items():
        old.add_documents([Document(id_=page_id, text=f"text of {page_id}")], store_text=True)
        old.set_document_hash(page_id, value["doc_hash"])
    old.persist(str(settings.paths.docstore))
    _OPEN.clear()
    for suffix in ("", "-wal", "-shm"):
        (settings.data_dir / f"index.db{suffix}").unlink(missing_ok=True)
    return json.loads(settings.paths.docstore.read_text())


def test_the_docstore_is_llama_index_key_value_rows(tmp_path):
    kv = DatabaseKVStore(IndexDB(tmp_path / "index.db"))
    docstore = KVDocumentStore(kv)
    docstore.add_documents([Document(id_="a.txt::text", text="hello")])
    docstore.set_document_hash("a.txt::text", "h1")
    again = KVDocumentStore(DatabaseKVStore(IndexDB(tmp_path / "index.db")))  # another process, same file
    assert again.get_document_hash("a.txt::text") == "h1" and again.get_document("a.txt::text").text == "hello"
    kv.put_all([("b::p1", {"x": 1}), ("b::p2", {"x": 2}), ("bb", {"x": 3})], "c")
    assert kv.keys("c", "b::") == ["b::p1", "b::p2"] and kv.count("c") == 3
    assert kv.delete("bb", "c") and not kv.delete("bb", "c") and kv.get("bb", "c") is None
    assert kv.clear("c") == 2 and kv.get_all("c") == {}


def test_an_earlier_versions_folder_is_migrated_and_its_docstore_kept_aside(indexed, llm, tmp_path):
    old = as_earlier_version(indexed)
    written = indexed.paths.docstore.read_bytes()
    ctx = reopen(indexed, llm)
    [aside] = indexed.data_dir.glob("docstore.json.migrated-*")
    assert aside.read_bytes() == written and not indexed.paths.docstore.exists()  # kept, byte for byte
    assert ctx.index.store.kvstore.holds(old)
    assert check(ctx)[0] == []
    assert ctx.chat.retrieve("Which insects bore into bark?")[0]["file"] == "beta.md"  # words filled from Chroma
    assert ctx.index.store.db.meta(KEYWORDS_COMPLETE) == "1"
    # The page hashes came along: the same file is skipped, a changed one replaced without duplicates.
    assert ctx.ingestion.ingest_file(tmp_path / "alpha.txt").status == "skipped"
    (tmp_path / "beta.md").write_text("# Beta\n\nBeetles bore into bark and birch.\n" * 20)
    again = ctx.ingestion.ingest_file(tmp_path / "beta.md", on_conflict="replace")
    assert again.status == "replaced" and ctx.index.chunk_count("beta.md") == again.chunks
    assert check(ctx)[0] == []


def test_a_migration_cut_short_is_finished_on_the_next_open(indexed, llm):
    old = as_earlier_version(indexed)
    store = open_index_store(indexed.paths.index_db)
    store.kvstore.load({HASHES: dict(list(old[HASHES].items())[:1])})  # killed mid-way: part in, the file still there
    store.db.close()
    ctx = reopen(indexed, llm)
    assert ctx.index.store.kvstore.holds(old) and not indexed.paths.docstore.exists()
    assert check(ctx)[0] == []


def test_a_copy_that_differs_keeps_the_file_and_says_so(indexed, monkeypatch):
    as_earlier_version(indexed)
    store = open_index_store(indexed.paths.index_db)
    monkeypatch.setattr(DatabaseKVStore, "holds", lambda self, collections: False)
    with pytest.raises(ConsistencyError, match="the file is kept as it is"):
        migrate_docstore(store, indexed.paths.docstore)
    assert indexed.paths.docstore.exists()


def test_an_unreadable_docstore_json_is_moved_aside_and_check_says_what_to_do(indexed, llm):
    as_earlier_version(indexed)
    indexed.paths.docstore.write_text('{"docstore/metadata": {"alpha.txt::te')  # cut short
    ctx = reopen(indexed, llm)
    [aside] = indexed.data_dir.glob("docstore.json.damaged-*")
    assert aside.read_text().startswith('{"docstore/metadata"')
    assert any("could not be read" in notice for notice in ctx.notices)
    problems = check(ctx)[0]
    assert problems and all("missing from the docstore" in p and "check --repair" in p for p in problems)


def test_a_damaged_index_db_is_moved_aside_and_the_words_come_back_from_chroma(indexed, llm):
    _OPEN.clear()
    path = indexed.paths.index_db
    for suffix in ("-wal", "-shm"):
        (indexed.data_dir / f"index.db{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    ctx = reopen(indexed, llm)
    [aside] = indexed.data_dir.glob("index.db.damaged-*")
    assert aside.read_bytes().startswith(b"this is not a database")
    assert any("index database was damaged" in notice for notice in ctx.notices)
    assert ctx.chat.retrieve("Where do alpacas graze?")[0]["file"] == "alpha.txt"
    assert ctx.index.keywords.docs() == {name: ctx.index.chunk_count(name) for name in PAGES}


def test_a_keyword_index_fill_cut_short_starts_again(indexed, llm):
    store = open_index_store(indexed.paths.index_db)
    counts = store.keywords.docs()
    store.keywords.delete_docs(["beta.md"])  # a fill killed after the first batch
    store.db.set_meta(KEYWORDS_COMPLETE, None)
    store.db.close()
    ctx = reopen(indexed, llm)
    assert ctx.index.keywords.docs() == counts and check(ctx)[0] == []


def test_check_finds_words_out_of_step_with_the_vectors_and_repair_restores_them(indexed, llm):
    from rag_core import recovery

    ctx = reopen(indexed, llm)
    ctx.index.keywords.delete_docs(["alpha.txt"])
    problems = check(ctx)[0]
    n = ctx.index.chunk_count("alpha.txt")
    assert problems == [
        f"alpha.txt: the keyword index holds 0 of its {n} chunks; `check --repair` indexes its words again from the vectors"
    ]
    assert recovery.repair(ctx.ingestion) == []  # nothing ingested again: the words come from the vectors
    assert check(ctx)[0] == [] and ctx.chat.retrieve("alpacas altiplano")[0]["file"] == "alpha.txt"


def test_rebuild_starts_the_docstore_and_keywords_afresh(indexed, llm):
    from rag_core import recovery

    ctx = reopen(indexed, llm)
    ctx.index.store.kvstore.put("left::p1", {"doc_hash": "x"}, HASHES)  # what a rebuild must not keep
    results = recovery.rebuild(ctx.ingestion)
    assert sorted(r.status for r in results) == ["indexed", "indexed"]
    assert ctx.index.docstore_names() == set(PAGES) and check(ctx)[0] == []
    assert sum(ctx.index.keywords.docs().values()) == ctx.index.chunk_count()
