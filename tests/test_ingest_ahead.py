"""Reading the next file while this one is embedded (``rag_core.ingestion.ahead``), with the
real reading worker, Chroma and SQLite in ``tmp_path``; the embedding slowed where a test needs
the two to overlap for certain."""

from __future__ import annotations

import threading
import time

from llama_index.core.schema import MetadataMode

from rag_core import build_context, loaders
from rag_core.health import check
from rag_core.ingestion import ahead as ahead_module
from rag_core.recovery import rebuild
from tests.pdfgen import ZEPHYR_PAGES, make_pdf


def _spy_reads(monkeypatch) -> list[tuple[str, float, float, str]]:
    """Every reading in the worker: (name, start, end, thread name)."""
    reads: list[tuple[str, float, float, str]] = []
    real = loaders.load_file_guarded

    def spy(path, name, sha256, **kwargs):
        started = time.monotonic()
        try:
            return real(path, name, sha256, **kwargs)
        finally:
            reads.append((name, started, time.monotonic(), threading.current_thread().name))

    monkeypatch.setattr(ahead_module.loaders, "load_file_guarded", spy)
    return reads


def _slow_embedding(ctx, monkeypatch, seconds: float) -> list[tuple[float, float]]:
    """Each embedding batch takes at least ``seconds``; their (start, end)."""
    batches: list[tuple[float, float]] = []
    kind = type(ctx.index.embed_model)  # patched on the class: the instance is shared between contexts
    real = kind._get_text_embeddings

    def slow(self, texts):
        started = time.monotonic()
        time.sleep(seconds)
        try:
            return real(self, texts)
        finally:
            batches.append((started, time.monotonic()))

    monkeypatch.setattr(kind, "_get_text_embeddings", slow)
    return batches


def _chunks(ctx) -> set[tuple[str, int, str]]:
    return {
        (n.metadata["file_name"], n.metadata.get("page") or 0, n.get_content(metadata_mode=MetadataMode.NONE))
        for n in ctx.index.all_nodes()
    }


def test_the_next_file_is_read_while_this_one_is_embedded(ctx, three_docs, monkeypatch):
    reads = _spy_reads(monkeypatch)
    batches = _slow_embedding(ctx, monkeypatch, 0.6)
    results = ctx.ingestion.ingest_paths([three_docs])
    assert [(r.file, r.status) for r in results] == [
        ("bananas.txt", "indexed"),
        ("tea.md", "indexed"),
        ("zephyr.pdf", "indexed"),
    ]
    assert [name for name, *_ in reads] == ["bananas.txt", "tea.md", "zephyr.pdf"]  # each read once
    assert reads[0][3] != "docent-read-next" and {r[3] for r in reads[1:]} == {"docent-read-next"}
    first_embedded = batches[0][1]  # bananas.txt has one batch: its end
    assert reads[1][1] < first_embedded  # tea.md's reading began before bananas.txt's embedding ended
    assert check(ctx)[0] == []


def test_what_is_indexed_is_the_same_as_one_file_at_a_time(make_settings, llm, three_docs, tmp_path):
    together = build_context(make_settings(), llm=llm)
    together.ingestion.ingest_paths([three_docs])
    apart = build_context(make_settings(data_dir=tmp_path / "apart"), llm=llm)
    for path in sorted(three_docs.iterdir()):
        apart.ingestion.ingest_file(path)
    assert _chunks(together) == _chunks(apart) and len(_chunks(together)) >= 5
    assert [d.name for d in together.ingestion.documents()] == [d.name for d in apart.ingestion.documents()]


def test_a_file_read_ahead_that_fails_fails_at_its_own_turn(ctx, tmp_path, monkeypatch):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Apples are red or green and grow on trees.")
    (folder / "b.pdf").write_bytes(b"%PDF-1.4 nothing else")
    (folder / "c.txt").write_text("Cherries are small stone fruit.")
    reads = _spy_reads(monkeypatch)
    results = {r.file: r for r in ctx.ingestion.ingest_paths([folder])}
    assert results["a.txt"].status == "indexed" and results["c.txt"].status == "indexed"
    assert results["b.pdf"].status == "failed" and "damaged" in results["b.pdf"].reason
    assert [name for name, *_ in reads] == ["a.txt", "b.pdf", "c.txt"]
    assert [d.name for d in ctx.ingestion.documents()] == ["a.txt", "c.txt"]
    assert check(ctx)[0] == []


def test_a_name_taken_by_the_file_before_is_read_again_under_its_new_name(ctx, tmp_path, monkeypatch):
    """Both files are called report.txt: the second was read ahead as report.txt, before the
    first was written; kept as both, it is indexed as 'report (2).txt', read again under that
    name, and its chunks carry it."""
    one, two = tmp_path / "one" / "report.txt", tmp_path / "two" / "report.txt"
    for path, text in ((one, "The first report covers the Zephyr pump."), (two, "The second report covers tea.")):
        path.parent.mkdir()
        path.write_text(text)
    reads = _spy_reads(monkeypatch)
    results = ctx.ingestion.ingest_paths([one, two], on_conflict="keep_both")
    assert [(r.file, r.status) for r in results] == [("report.txt", "indexed"), ("report (2).txt", "indexed")]
    assert [name for name, *_ in reads] == ["report.txt", "report.txt", "report (2).txt"]
    (node,) = ctx.index.document_nodes("report (2).txt")
    assert node.metadata["file_name"] == "report (2).txt" and "tea" in node.get_content()


def test_unchanged_files_are_not_read_ahead(ctx, three_docs, monkeypatch):
    ctx.ingestion.ingest_paths([three_docs])
    reads = _spy_reads(monkeypatch)
    again = ctx.ingestion.ingest_paths([three_docs])
    assert {r.status for r in again} == {"skipped"} and reads == []


def test_a_rebuild_reads_ahead_and_keeps_the_order(ctx, three_docs, monkeypatch):
    ctx.ingestion.ingest_paths([three_docs])
    before = _chunks(ctx)
    reads = _spy_reads(monkeypatch)
    results = rebuild(ctx.ingestion)
    assert [(r.file, r.status) for r in results] == [
        ("bananas.txt", "indexed"),
        ("tea.md", "indexed"),
        ("zephyr.pdf", "indexed"),
    ]
    assert {r[3] for r in reads[1:]} == {"docent-read-next"}
    assert _chunks(ctx) == before and check(ctx)[0] == []


def test_a_run_stopped_early_stops_its_reading_ahead(ctx, tmp_path, monkeypatch):
    """The CLI interrupted after the first file: the second file's reading, under way, is
    stopped (its worker killed), and nothing of it is written."""
    first = tmp_path / "a.txt"
    first.write_text("Apples are red or green and grow on trees.")
    second = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, second)
    stopped = threading.Event()
    real = loaders.load_file_guarded

    def slow_second(path, name, sha256, cancelled=None, **kwargs):
        if name == "zephyr.pdf":  # the reading takes long; it stops once told to
            while not (cancelled is not None and cancelled()):
                time.sleep(0.02)
            stopped.set()
            raise RuntimeError("stopped")
        return real(path, name, sha256, cancelled=cancelled, **kwargs)

    monkeypatch.setattr(ahead_module.loaders, "load_file_guarded", slow_second)
    run = ctx.ingestion.ingest_each([(first, "a.txt"), (second, "zephyr.pdf")])
    assert next(run).status == "indexed"
    run.close()  # as Ctrl-C between two files
    assert stopped.wait(5)
    assert [d.name for d in ctx.ingestion.documents()] == ["a.txt"]


def test_the_reading_ahead_waits_while_an_answer_is_written(ctx, tmp_path, monkeypatch):
    """Like the embedding, the next file's reading does not start while an answer is being
    written (``providers.answering``): its worker would take the cores the answer's prompt needs.
    An answer begins as a.txt's reading ends, and is written for a second."""
    from rag_core.providers.answering import ANSWERING

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("Apples are red or green and grow on trees.")
    second.write_text("Bananas are yellow.")
    reads = _spy_reads(monkeypatch)
    spied = ahead_module.loaders.load_file_guarded
    holding, released = threading.Event(), []

    def answer() -> None:
        with ANSWERING.hold():
            holding.set()
            time.sleep(1.0)
            released.append(time.monotonic())

    def read_then_answer(path, name, sha256, **kwargs):
        loaded = spied(path, name, sha256, **kwargs)
        if name == "a.txt":
            threading.Thread(target=answer).start()
            assert holding.wait(5)
        return loaded

    monkeypatch.setattr(ahead_module.loaders, "load_file_guarded", read_then_answer)
    results = ctx.ingestion.ingest_paths([first, second])
    assert [r.status for r in results] == ["indexed", "indexed"]
    (name, started, _, thread) = reads[1]
    assert (name, thread) == ("b.txt", "docent-read-next")
    assert released and started >= released[0]  # read once the answer was written, not before


def test_the_cli_starts_the_reading_worker_while_it_opens_the_models_and_the_index(tmp_path, monkeypatch, capsys):
    """``python -m rag_core ingest`` starts the worker that reads files before it builds its
    context, so the worker's start (its interpreter and imports) overlaps the context's."""
    from rag_core.cli import documents, main
    from rag_core.loaders import budget

    budget._close_idle()
    monkeypatch.setattr(budget, "_warmed", False)
    monkeypatch.setenv("DOCENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DOCENT_EMBED_PROVIDER", "hash")
    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "extractive")
    seen: list[bool] = []
    real_context = documents.context

    def slow_context(args, *rest, **kwargs):
        deadline = time.monotonic() + 30  # the worker starts in about a second on two cores
        while not budget._idle and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append(bool(budget._idle))  # up and waiting before the context was built
        return real_context(args, *rest, **kwargs)

    monkeypatch.setattr(documents, "context", slow_context)
    make_pdf(ZEPHYR_PAGES, tmp_path / "zephyr.pdf")
    assert main(["ingest", "--json", str(tmp_path / "zephyr.pdf")]) == 0
    assert seen == [True]
    assert '"status": "indexed"' in capsys.readouterr().out
