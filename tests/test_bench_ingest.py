"""``bench``'s ingest figures (rag_core.bench.ingest): Docent's ingest against the embedding
limit taken on the very chunks it stored, file by file, so that both see the same machine; the
next file's reading (``ingestion.ahead``) over before the limit's batches."""

from __future__ import annotations

import itertools
import threading
import time

from tests.pdfgen import make_pdf

WORDS = "revenue margin quarter segment cash flow operating income expenses shares dividend".split()


def _page(seed: int) -> str:
    words = [f"{WORDS[(seed + i * 7) % len(WORDS)]}{(seed * 31 + i) % 97}" for i in range(420)]
    return "\n".join(" ".join(words[i : i + 12]) for i in range(0, len(words), 12))


def test_the_limit_embeds_every_fourth_stored_chunk_of_each_file_right_after_it_in_whole_batches(
    make_settings, tmp_path, monkeypatch
):
    from rag_core.bench import ingest as bench_ingest
    from rag_core.ingestion import ahead

    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        make_pdf([_page(10 * n + p) for p in range(3)], docs / f"filing{n}.pdf")
    events: list[tuple[str, list[str]]] = []  # ("ingest", files) when an ingest begins; (phase, texts) per batch
    phase = ["limit"]
    real = bench_ingest.fresh_context

    def recording(settings, name, **kwargs):
        ctx = real(settings, name, **kwargs)
        kind, ingestion = type(ctx.embed_model), ctx.ingestion
        embed_texts, ingest_file, ingest_paths = (
            kind._get_text_embeddings,
            ingestion.ingest_file,
            ingestion.ingest_paths,
        )

        def texts_seen(self, texts):
            events.append((phase[0], list(texts)))
            return embed_texts(self, texts)

        def file_seen(path, *args, **kw):
            events.append(("ingest", [path.name]))
            phase[0] = "indexing"
            try:
                return ingest_file(path, *args, **kw)
            finally:
                phase[0] = "limit"

        def paths_seen(paths, *args, **kw):
            events.append(("again", [p.name for p in paths]))
            return ingest_paths(paths, *args, **kw)

        # On the class, undone after the test: the embedding instance is shared between contexts.
        monkeypatch.setattr(kind, "_get_text_embeddings", texts_seen)
        object.__setattr__(ingestion, "ingest_file", file_seen)
        object.__setattr__(ingestion, "ingest_paths", paths_seen)
        return ctx

    real_read = ahead.loaders.load_file_guarded

    def read_seen(path, name, *args, **kw):  # a reading's end, on whichever thread it ran
        try:
            return real_read(path, name, *args, **kw)
        finally:
            if threading.current_thread().name == "docent-read-next":
                time.sleep(0.5)  # a reading that outlasts the file before: the limit must wait for it
            events.append(("read", [name]))

    monkeypatch.setattr(bench_ingest, "fresh_context", recording)
    monkeypatch.setattr(ahead.loaders, "load_file_guarded", read_seen)
    out, _ = bench_ingest.bench_ingest(make_settings(embed_batch_size=4), docs, every=4, naive_files=0)

    names = sorted(p.name for p in docs.iterdir())
    again = next(i for i, (kind, _) in enumerate(events) if kind == "again")
    starts = [i for i, (kind, _) in enumerate(events[:again]) if kind == "ingest"] + [again]
    assert [events[i][1] for i in starts] == [[n] for n in names] + [names]  # each file in one run, then all again
    indexed = [t for kind, b in events if kind == "indexing" for t in b]
    assert out["chunks"] == len(indexed) > 12
    per_file = [
        [t for kind, b in events[start:end] if kind == "indexing" for t in b]
        for start, end in itertools.pairwise(starts)
    ]
    assert out["limit_chunks"] == sum(len(texts[::4]) for texts in per_file)
    limit = [(i, b) for i, (kind, b) in enumerate(events) if kind == "limit"]
    assert sum(len(b) for _, b in limit) == out["limit_chunks"]
    assert all(len(b) == 4 for _, b in limit[:-1])  # whole batches, as the ingest embeds them
    for i, batch in limit:  # the very texts the ingest embedded, after it embedded them
        assert set(batch) <= {t for kind, b in events[:i] if kind == "indexing" for t in b}
    read = [(b[0], i) for i, (kind, b) in enumerate(events[:again]) if kind == "read"]
    assert [name for name, _ in read] == names  # each file read once, in order (the next while one is embedded)
    reads = dict(read)
    for k in range(len(names) - 1):  # the next file's reading had ended before the limit's batches after a file
        assert all(reads[names[k + 1]] < i for i, _ in limit if starts[k] < i < starts[k + 1])
    assert limit[0][0] < starts[2]  # interleaved: the limit began before the last file was indexed
    assert limit[-1][0] < starts[3]  # and ended before the re-ingest
    assert out["limit_taken"] == "interleaved" and out["ingest_vs_limit"] is not None
