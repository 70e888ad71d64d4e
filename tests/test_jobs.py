"""Background ingestion jobs (rag_core.jobs): progress per file, cancel, results until read.

The embedding is held at a gate so that the test knows where the job stands without
timing: it cancels while the first file is being embedded.
"""

from __future__ import annotations

import re
import threading

from rag_core import Upload, build_context
from rag_core.health import check
from rag_core.providers.embeddings import HashEmbedding

LONG = ("Pumps move water. " * 6000).encode()  # over 64 chunks: several embedding batches


def test_a_job_reports_progress_cancels_between_batches_and_keeps_results_until_read(make_settings, llm, monkeypatch):
    ctx = build_context(make_settings(), llm=llm)
    gate, second_batch = threading.Event(), threading.Event()
    calls = {"n": 0}
    original = HashEmbedding.__call__

    def held(self, nodes, **kwargs):  # one call per batch of chunks
        calls["n"] += 1
        if calls["n"] == 2:  # the second batch of the first file waits for the test
            second_batch.set()
            assert gate.wait(60)
        return original(self, nodes, **kwargs)

    monkeypatch.setattr(HashEmbedding, "__call__", held)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("long.txt", LONG), Upload("next.txt", b"Valves close.")])
    assert second_batch.wait(60)
    view = ctx.jobs.view(job)
    assert view.running and ctx.jobs.running() == [job]
    first, second = view.files
    assert first.state == "running"
    assert re.fullmatch(r"long\.txt: embedding parts? [\d-]+ of \d+: \d+/\d+ passages", first.message), first.message
    assert 0.3 < first.fraction < 0.95
    assert (second.state, second.message) == ("queued", "next.txt: waiting")

    ctx.jobs.cancel(job)
    gate.set()
    view = ctx.jobs.wait(job, timeout=60)
    assert view.state == "cancelled"
    assert [(r.file, r.status) for r in view.results] == [("long.txt", "cancelled"), ("next.txt", "cancelled")]
    assert calls["n"] == 2  # stopped before the third batch
    assert ctx.ingestion.documents() == [] and ctx.index.chunk_count() == 0 and check(ctx)[0] == []
    assert not (ctx.settings.data_dir / "files" / "long.txt").exists()

    ctx.jobs.forget(job)
    assert ctx.jobs.view(job) is None


def test_a_job_indexes_and_asks_nothing_twice(make_settings, llm):
    ctx = build_context(make_settings(), llm=llm)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Alpha text."), Upload("b.epub", b"PK..")])
    view = ctx.jobs.wait(job, timeout=60)
    assert view.state == "done" and view.fraction == 1.0
    assert [(r.file, r.status) for r in view.results] == [("a.txt", "indexed"), ("b.epub", "failed")]
    conflict = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Another alpha.")])
    [refused] = ctx.jobs.wait(conflict, timeout=60).results
    assert (refused.status, refused.conflict) == ("failed", True)
    replaced = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Another alpha.", on_conflict="replace")])
    assert [r.status for r in ctx.jobs.wait(replaced, timeout=60).results] == ["replaced"]


def test_the_next_upload_is_read_while_one_is_embedded_and_nothing_is_left_behind(make_settings, llm, monkeypatch):
    """The uploads' bytes are staged in files of their own; the next one is read in the worker
    while this one's embedding goes on (``ingestion.ahead``). The first file's second batch of
    embeddings waits until the second file was read: it could not be, one after the other."""
    from rag_core.ingestion import ahead

    ctx = build_context(make_settings(), llm=llm)
    read, staged = {}, []
    real_read, real_call = ahead.loaders.load_file_guarded, HashEmbedding.__call__
    calls = {"n": 0}

    def spy(path, name, sha256, **kwargs):
        staged.append(path)
        loaded = real_read(path, name, sha256, **kwargs)
        read[name] = threading.current_thread().name
        return loaded

    def held(self, nodes, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # long.txt is still being embedded
            for _ in range(600):
                if "next.txt" in read:
                    break
                threading.Event().wait(0.05)
        return real_call(self, nodes, **kwargs)

    monkeypatch.setattr(ahead.loaders, "load_file_guarded", spy)
    monkeypatch.setattr(HashEmbedding, "__call__", held)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("long.txt", LONG), Upload("next.txt", b"Valves close.")])
    view = ctx.jobs.wait(job, timeout=120)
    assert [(r.file, r.status) for r in view.results] == [("long.txt", "indexed"), ("next.txt", "indexed")]
    assert read["next.txt"] == "docent-read-next" and read["long.txt"] != "docent-read-next"
    assert len(staged) == 2 and not any(p.exists() or p.parent.parent.exists() for p in staged)
    assert [n.get_content() for n in ctx.index.document_nodes("next.txt")] == ["Valves close."]
    assert check(ctx)[0] == []
