"""People (rag_core.context ``for_person``): each person sees their own conversations, and with
``libraries = "per_user"`` their own documents alone: retrieval, the viewer, suggestions."""

from __future__ import annotations

import pytest

from rag_core import NotFoundError, build_context
from rag_core.exchange import export_session, import_session


def test_in_a_shared_library_people_share_documents_but_not_conversations(make_settings, llm, three_docs):
    ctx = build_context(make_settings(), llm=llm)
    ana, ben = ctx.for_person("ana@example.org"), ctx.for_person("ben@example.org")
    assert ctx.for_person("ana@example.org") is ana  # built once per person
    ana.ingestion.ingest_paths([three_docs])
    assert [d.name for d in ben.registry.list()] == ["bananas.txt", "tea.md", "zephyr.pdf"]
    chat = ana.sessions.create("Ana's fruit")
    turn = ana.chat.ask("What colour are bananas?", chat.id)
    assert "bananas.txt" in {s["file"] for s in turn.sources}
    assert [m.role for m in ana.sessions.messages(chat.id)] == ["user", "assistant"]
    assert ben.sessions.list() == [] and ctx.sessions.list() == []
    with pytest.raises(NotFoundError):
        ben.chat.ask("And green ones?", chat.id)  # another person's session is not there for ben
    with pytest.raises(NotFoundError):
        export_session(ben, chat.id)
    assert ben.chat.components.keywords is ana.chat.components.keywords  # one keyword index for the library


def test_import_assigns_the_chat_to_the_importer(make_settings, llm, three_docs):
    ctx = build_context(make_settings(), llm=llm)
    ana, ben = ctx.for_person("ana@example.org"), ctx.for_person("ben@example.org")
    ana.ingestion.ingest_paths([three_docs])
    chat = ana.sessions.create("To share")
    ana.chat.ask("What colour are bananas?", chat.id)
    exported = export_session(ana, chat.id)
    report = import_session(ben, exported)
    assert [s.id for s in ben.sessions.list()] == [report.session_id]
    assert [s.name for s in ana.sessions.list()] == ["To share"]  # ana's own is untouched, and hers alone


def test_a_library_per_person_keeps_documents_apart(make_settings, llm, three_docs, tmp_path):
    ctx = build_context(make_settings(libraries="per_user", files_dir=tmp_path / "files"), llm=llm)
    ana, ben = ctx.for_person("ana@example.org"), ctx.for_person("ben@example.org")
    ana.ingestion.ingest_paths([three_docs])
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "bananas.txt").write_text("Ben's bananas are blue, he says.")
    ben.ingestion.ingest_paths([tmp_path / "mine"])  # the same name, another library: no conflict
    assert [d.name for d in ana.registry.list()] == ["bananas.txt", "tea.md", "zephyr.pdf"]
    assert [d.name for d in ben.registry.list()] == ["bananas.txt"]
    assert ctx.registry.list() == []  # the shared library is another library still
    found = ben.chat.search("What is green tea?")
    assert {s["file"] for s in found.sources} <= {"bananas.txt"}
    assert "blue" in ben.chat.ask("What colour are bananas?", ben.sessions.create().id).sources[0]["text"]
    with pytest.raises(NotFoundError):
        ben.viewer.page_image("zephyr.pdf", 1)  # ana's document does not open for ben
    assert ana.viewer.page_image("zephyr.pdf", 1).png
    assert all("Zephyr" not in q for q in ben.suggestions.for_documents(None, n=3))
    assert ana.settings.paths.files != ben.settings.paths.files
    assert ana.index.collection.name != ben.index.collection.name != ctx.index.collection.name


def test_a_persons_library_has_its_own_index_db_and_takes_in_its_old_docstore_json(make_settings, llm, tmp_path):
    from llama_index.core import Document
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from rag_core.datadir import library_key

    settings = make_settings(libraries="per_user", files_dir=tmp_path / "files")
    key = library_key("ana@example.org")
    old = SimpleDocumentStore()  # what an earlier version left for ana's library
    old.add_documents([Document(id_="kept.txt::text", text="kept")])
    old.set_document_hash("kept.txt::text", "h0")
    old.persist(str(settings.data_dir / f"docstore-{key}.json"))
    ana = build_context(settings, llm=llm).for_person("ana@example.org")
    assert ana.index.docstore.get_document_hash("kept.txt::text") == "h0"
    assert list(settings.data_dir.glob(f"docstore-{key}.json.migrated-*"))  # kept aside, never deleted
    (tmp_path / "a.txt").write_text("Ana's alpacas graze on the altiplano.")
    assert ana.ingestion.ingest_file(tmp_path / "a.txt").status == "indexed"
    assert ana.settings.paths.index_db == settings.data_dir / f"index-{key}.db" != settings.paths.index_db
    assert set(ana.index.keywords.docs()) == {"a.txt"} and ana.index.docstore_names() == {"a.txt", "kept.txt"}
    shared = build_context(settings, llm=llm)
    assert shared.index.keywords.docs() == {} and shared.index.docstore_names() == set()


def test_without_sign_in_there_is_one_local_person(ctx):
    assert ctx.for_person("") is ctx and ctx.person == ""
