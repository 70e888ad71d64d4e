import pytest

from rag_core import IndexMismatchError, NotFoundError, build_context
from rag_core.health import check
from rag_core.providers.embeddings import HashEmbedding
from rag_core.recovery import rebuild
from tests.pdfgen import ZEPHYR_PAGES, make_pdf


@pytest.fixture
def zephyr(tmp_path):
    p = tmp_path / "in" / "zephyr.pdf"
    p.parent.mkdir()
    make_pdf(ZEPHYR_PAGES, p)
    return p


def test_ingest_then_skip_then_replace(ctx, zephyr):
    first = ctx.ingestion.ingest_file(zephyr)
    assert (first.status, first.pages) == ("indexed", 3) and first.chunks >= 3
    again = ctx.ingestion.ingest_file(zephyr)
    assert again.status == "skipped" and again.reason == "unchanged"
    make_pdf([*ZEPHYR_PAGES[:2], "Chapter 3 rewritten: the pump is now solar powered."], zephyr)
    replaced = ctx.ingestion.ingest_file(zephyr, on_conflict="replace")
    assert replaced.status == "replaced"
    texts = [n.get_content() for n in ctx.index.all_nodes()]
    assert any("solar" in t for t in texts)
    assert not any("Never run the Zephyr pump dry" in t for t in texts)  # old page 3 gone
    assert check(ctx)[0] == []


def test_replace_with_fewer_pages_removes_stale_pages(ctx, zephyr):
    ctx.ingestion.ingest_file(zephyr)
    make_pdf(ZEPHYR_PAGES[:1], zephyr)
    r = ctx.ingestion.ingest_file(zephyr, on_conflict="replace")
    assert r.status == "replaced" and r.pages == 1
    assert {n.metadata["page"] for n in ctx.index.all_nodes()} == {1}
    assert ctx.index.ref_doc_ids_for("zephyr.pdf") == ["zephyr.pdf::p0001"]
    assert check(ctx)[0] == []


def test_delete_removes_vectors_docstore_entries_and_registry_row(ctx, zephyr, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("Bananas are yellow and grow in bunches.")
    ctx.ingestion.ingest_paths([zephyr, other])
    ctx.ingestion.delete("zephyr.pdf")
    assert ctx.index.chunk_count("zephyr.pdf") == 0
    assert ctx.index.ref_doc_ids_for("zephyr.pdf") == []
    assert [d.name for d in ctx.ingestion.documents()] == ["other.txt"]
    assert check(ctx)[0] == []
    with pytest.raises(NotFoundError):
        ctx.ingestion.delete("zephyr.pdf")


def test_a_bad_file_does_not_stop_the_batch(ctx, tmp_path, zephyr):
    bad = tmp_path / "in" / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4 nothing else")
    (tmp_path / "in" / "notes.epub").write_bytes(b"PK..")
    results = {r.file: r for r in ctx.ingestion.ingest_paths([tmp_path / "in"])}
    assert results["zephyr.pdf"].status == "indexed"
    assert results["broken.pdf"].status == "failed" and "damaged" in results["broken.pdf"].reason
    assert results["notes.epub"].status == "failed" and "unsupported type .epub" in results["notes.epub"].reason
    assert check(ctx)[0] == []


def test_same_content_under_two_names_is_indexed_twice_with_a_warning(ctx, zephyr, tmp_path):
    copy = tmp_path / "copy.pdf"
    copy.write_bytes(zephyr.read_bytes())
    ctx.ingestion.ingest_file(zephyr)
    r = ctx.ingestion.ingest_file(copy)
    assert r.status == "indexed" and "same content as zephyr.pdf" in r.warnings[0]


def test_names_from_folders_keep_relative_paths_and_reject_traversal(ctx, tmp_path):
    from rag_core.ingestion import safe_name

    (tmp_path / "d" / "a").mkdir(parents=True)
    (tmp_path / "d" / "b").mkdir(parents=True)
    (tmp_path / "d" / "a" / "same.txt").write_text("alpha text")
    (tmp_path / "d" / "b" / "same.txt").write_text("beta text")
    names = sorted(r.file for r in ctx.ingestion.ingest_paths([tmp_path / "d"]))
    assert names == ["a/same.txt", "b/same.txt"]
    assert safe_name("../../etc/passwd") == "etc/passwd"
    assert safe_name("C:\\Users\\x\\report.pdf") == "C:/Users/x/report.pdf"
    r = ctx.ingestion.ingest_bytes(b"upload text", "../../evil.txt")
    assert r.file == "evil.txt" and r.status == "indexed"


def test_too_large_file_is_refused(make_settings, llm, tmp_path):
    ctx = build_context(make_settings(max_file_mb=1), llm=llm)
    big = tmp_path / "big.txt"
    big.write_bytes(b"a " * 600_000)
    r = ctx.ingestion.ingest_file(big)
    assert r.status == "failed" and "too large" in r.reason


def test_another_embedding_model_is_refused_until_rebuild(make_settings, llm, zephyr):
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_file(zephyr)
    other = build_context(make_settings(), llm=llm, embed_model=HashEmbedding(dim=64))
    assert "Rebuild" in other.index.mismatch()
    with pytest.raises(IndexMismatchError):
        other.chat.retrieve("pump")
    r = other.ingestion.ingest_file(zephyr, "zephyr2.pdf")
    assert r.status == "failed" and "rebuild" in r.reason.lower()
    results = rebuild(other.ingestion)
    assert [x.status for x in results] == ["indexed"]
    assert other.index.mismatch() is None
    assert other.chat.retrieve("litres per minute")[0]["page"] == 2


def test_interrupted_ingestion_is_recovered_as_absent(make_settings, llm, zephyr):
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_file(zephyr)
    # Simulate a crash after vectors were written but before the row turned 'indexed'.
    ctx.registry.mark_pending("zephyr.pdf", "new-sha", 1, "pdf")
    assert check(ctx)[0]  # inconsistent now
    fresh = build_context(make_settings(), llm=llm)  # start-up runs recovery
    assert fresh.recovered == ["zephyr.pdf"]
    assert fresh.index.chunk_count() == 0 and check(fresh)[0] == []
    assert fresh.ingestion.ingest_file(zephyr).status == "indexed"


# --------------------------------------------------------------------------- same name, different file
def test_a_different_file_of_an_indexed_name_is_refused_until_told(ctx, tmp_path):
    from rag_core.storage import Message

    report = tmp_path / "v1" / "report.txt"
    report.parent.mkdir()
    report.write_text("The 2023 report: revenue grew by nine percent.")
    assert ctx.ingestion.ingest_file(report).status == "indexed"
    session = ctx.sessions.create("finance")
    turn = ctx.chat.ask("How much did revenue grow?", session.id)
    assert [s["file"] for s in turn.sources] == ["report.txt"]

    other = tmp_path / "v2" / "report.txt"
    other.parent.mkdir()
    other.write_text("The 2024 report: revenue fell by four percent.")
    refused = ctx.ingestion.ingest_file(other)
    assert (refused.status, refused.conflict) == ("failed", True)
    assert "a different file of this name is already indexed" in refused.reason
    assert "nine percent" in ctx.chat.retrieve("revenue")[0]["text"]  # nothing changed

    conflict = ctx.ingestion.conflict("report.txt", other.read_bytes())
    assert (conflict.answers, conflict.conversations, conflict.keep_both_name) == (1, 1, "report (2).txt")
    assert ctx.ingestion.conflict("report.txt", report.read_bytes()) is None  # the same file: no question

    both = ctx.ingestion.ingest_file(other, on_conflict="keep_both")
    assert (both.status, both.file) == ("indexed", "report (2).txt")
    assert "this one was kept as report (2).txt" in both.warnings[0]
    again = ctx.ingestion.ingest_file(other, on_conflict="keep_both")
    assert (again.status, again.reason) == ("skipped", "unchanged (kept as report (2).txt)")
    assert {d.name for d in ctx.ingestion.documents()} == {"report.txt", "report (2).txt"}

    replaced = ctx.ingestion.ingest_file(other, on_conflict="replace")
    assert replaced.status == "replaced"
    assert replaced.warnings == [
        "same content as report (2).txt (indexed under both names)",
        "1 earlier answer(s) in 1 conversation(s) cite the previous version; they keep the passages they "
        "quoted, which may differ from this version",
    ]
    kept = ctx.sessions.messages(session.id)[-1]
    assert isinstance(kept, Message) and "nine percent" in kept.sources[0]["text"]  # the answer keeps its text
    assert check(ctx)[0] == []


def test_keep_both_names():
    from rag_core.ingestion import numbered

    assert numbered("report.pdf", 2) == "report (2).pdf"
    assert numbered("report (2).pdf", 3) == "report (3).pdf"
    assert numbered("a/b/notes", 2) == "a/b/notes (2)"
    assert numbered(".profile.md", 2) == ".profile (2).md"


def test_a_failed_rebuild_keeps_the_stored_copy(ctx, zephyr, monkeypatch):
    """The stored copy is the only copy a rebuild reads: a failure must not delete it."""
    assert ctx.ingestion.ingest_file(zephyr).status == "indexed"
    stored = ctx.settings.data_dir / "files" / "zephyr.pdf"
    monkeypatch.setattr(HashEmbedding, "_get_text_embeddings", lambda self, texts: 1 / 0)
    [failed] = rebuild(ctx.ingestion)
    assert failed.status == "failed" and stored.exists()
    monkeypatch.undo()
    assert [r.status for r in rebuild(ctx.ingestion)] == ["indexed"]


def test_a_chunk_from_the_middle_of_a_table_keeps_its_title_and_period_columns(make_settings, llm, tmp_path):
    from rag_core import build_context
    from rag_core.ingestion.transforms import chunk_context

    rows = "\n".join(f"Line item {i} {1000 + i:,} {2000 + i:,}" for i in range(48))
    page = (
        "Apple Inc.\nCONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)\n(In millions)\n"
        "Three Months Ended\nJune 25,\n2022\nJune 26,\n2021\n" + rows
    )
    make_pdf([page], tmp_path / "10q.pdf")
    ctx = build_context(make_settings(chunk_size=64, chunk_overlap=0), llm=llm)
    ctx.ingestion.ingest_file(tmp_path / "10q.pdf")
    nodes = ctx.index.all_nodes()
    later = next(n for n in nodes if "Line item 40 " in n.get_content())
    assert "CONDENSED CONSOLIDATED STATEMENTS" not in later.get_content()  # cut from the middle...
    context = later.metadata["context"]  # ...yet it knows its statement and its columns
    assert context.startswith("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)")
    assert "Three Months Ended | June 25, | 2022 | June 26, | 2021" in context
    # for the answering model only: search reads the chunk's own text (docs/evaluation.md)
    from llama_index.core.schema import MetadataMode

    from rag_core.retrieval.keywords import search_text

    assert "Three Months Ended" not in later.get_content(metadata_mode=MetadataMode.EMBED)
    assert "Three Months Ended" not in search_text(later)
    llm.script(answers=["Line item 40 was 1,040 [1]."])
    ctx.chat.ask("What was line item 40?")
    prompt = str(llm.chats[-1][-1].content)
    assert "Line item 40" in prompt and "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS" in prompt
    assert chunk_context(["Title", "plain text"], set()) == ""


def test_a_named_pipe_is_refused_at_once_never_opened(ctx, tmp_path):
    """A FIFO called notes.txt used to hang the ingest for ever (reading it waits for a writer),
    given by name or inside a folder."""
    import os
    import threading

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "real.txt").write_text("The kettle boils water in three minutes.")
    os.mkfifo(folder / "notes.txt")
    results: list = []
    worker = threading.Thread(
        target=lambda: results.extend(
            [ctx.ingestion.ingest_file(folder / "notes.txt"), *ctx.ingestion.ingest_paths([folder])]
        ),
        daemon=True,
    )
    worker.start()
    worker.join(60)
    if worker.is_alive():  # let the hung read go, so the test ends
        with open(folder / "notes.txt", "wb"):
            pass
        pytest.fail("ingesting a named pipe hangs")
    reason = "not a regular file (a named pipe): only files can be indexed"
    assert [(r.file, r.status, r.reason) for r in results] == [
        ("notes.txt", "failed", reason),
        ("notes.txt", "failed", reason),  # in a folder: listed and refused, not skipped in silence
        ("real.txt", "indexed", ""),
    ]
    assert check(ctx)[0] == []


def test_the_keyword_mirror_gives_back_a_documents_chunks_as_chroma_does(ctx, three_docs):
    """Reading what a document is about and its chunk count ask the keyword index, not Chroma:
    both must hold the same chunks, down to their metadata."""
    ctx.ingestion.ingest_paths([three_docs])
    for record in ctx.ingestion.documents():
        mirrored = {n.node_id: n for n in ctx.index.document_nodes(record.name)}
        stored = {n.node_id: n for n in ctx.index.all_nodes([record.name])}
        assert mirrored.keys() == stored.keys() and len(stored) == record.chunks == ctx.index.chunk_count(record.name)
        for node_id, node in stored.items():
            twin = mirrored[node_id]
            assert (twin.get_content(), twin.metadata, twin.ref_doc_id, twin.start_char_idx) == (
                node.get_content(),
                node.metadata,
                node.ref_doc_id,
                node.start_char_idx,
            )
