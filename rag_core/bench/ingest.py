"""Ingestion against its limit and against LlamaIndex's defaults, re-ingestion, deletion.

- limit: embedding the very chunks Docent stored, in one tight batched loop (what
  ingestion costs at the least with this embedding model), on every ``every``-th chunk of
  each file, embedded right after that file is indexed: throughput in chunks per second.
  Interleaved, the two see the same machine: this machine's embedding speed drifts by
  ±10 % over minutes, and a limit taken in one block after the ingest moved the ratio by more
  than the code did (docs/performance.md, "The embedding limit, side by side");
- naive: each PDF page read with pypdf (what LlamaIndex's default ``PDFReader`` does) and
  ``VectorStoreIndex.from_documents`` with LlamaIndex's defaults and the same embedding model,
  on the first ``naive_files`` files: throughput in pages per second.
Docent's own throughputs are over the whole folder, the files ingested in one run as
``ingest_paths`` does (each read while the one before is embedded; the reading still going on
when a file is done is waited for on Docent's clock, before the limit's batch). The reading
worker is started before the context is built, as ``python -m rag_core ingest`` does (and the
Upload page when it opens): what is left of its start after that is on Docent's clock. Sampling keeps the benchmark within its
15 minutes on 2 cores: three full passes over 20 filings would take half an hour.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from llama_index.core.schema import MetadataMode

from rag_core.bench.inputs import fresh_context
from rag_core.bench.stats import ratio
from rag_core.ingestion.ahead import ReadAhead, start_reading
from rag_core.settings import DocentSettings


def bench_ingest(
    settings: DocentSettings, docs: Path, every: int = 4, naive_files: int = 5
) -> tuple[dict[str, Any], Path]:
    """The figures, and the data folder now holding ``docs`` (the answers are timed over it)."""
    start_reading()  # as the CLI's ``ingest`` does, before its context
    ctx = fresh_context(settings, "ingest")
    files = sorted(p for p in docs.iterdir() if p.is_file())
    embed, size = ctx.embed_model, settings.embed_batch_size
    results: list[Any] = []
    first_s = limit_s = 0.0
    sampled = 0
    pending: list[str] = []  # the sample not yet embedded: whole batches, as the ingest embeds them
    ahead = ReadAhead(ctx.settings)  # the next file is read while one is embedded, as ``ingest_paths`` does
    run = ctx.ingestion.ingest_each([(path, path.name) for path in files], ahead=ahead)
    for path in files:
        t = time.perf_counter()
        results.append(next(run))
        # The next file's reading, begun while this one was embedded, ends on Docent's clock:
        # the limit below never shares the cores with it.
        ahead.wait()
        first_s += time.perf_counter() - t
        nodes = ctx.index.document_nodes(results[-1].file)
        pending += [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes[::every]]
        t = time.perf_counter()
        while len(pending) >= size or (pending and path == files[-1]):
            batch, pending = pending[:size], pending[size:]
            embed.get_text_embedding_batch(batch)
            sampled += len(batch)
        limit_s += time.perf_counter() - t
    t = time.perf_counter()
    again = ctx.ingestion.ingest_paths(files)
    reingest_s = time.perf_counter() - t

    chunks = sum(r.chunks for r in results)
    pages = sum(r.pages for r in results)
    naive_s, naive_chunks, naive_pages = _naive(files[:naive_files], embed)
    docent_chunks_per_s = chunks / first_s if first_s else None
    limit_chunks_per_s = sampled / limit_s if limit_s else None
    docent_pages_per_s = pages / first_s if first_s else None
    naive_pages_per_s = naive_pages / naive_s if naive_s else None
    return (
        {
            "files": len(files),
            "indexed": sum(r.status in ("indexed", "replaced") for r in results),
            "chunks": chunks,
            "pages": pages,
            "docent_s": round(first_s, 1),
            "chunks_per_s": round(docent_chunks_per_s, 2) if docent_chunks_per_s else None,
            "pages_per_s": round(docent_pages_per_s, 2) if docent_pages_per_s else None,
            "limit_chunks": sampled,
            "limit_embed_s": round(limit_s, 1),
            "limit_chunks_per_s": round(limit_chunks_per_s, 2) if limit_chunks_per_s else None,
            "limit_taken": "interleaved",  # after each file, on every ``every``-th of its chunks
            "naive_files": len(files[:naive_files]),
            "naive_pages": naive_pages,
            "naive_s": round(naive_s, 1),
            "naive_chunks": naive_chunks,
            "naive_pages_per_s": round(naive_pages_per_s, 2) if naive_pages_per_s else None,
            "reingest_s": round(reingest_s, 2),
            "skipped_on_reingest": sum(r.status == "skipped" for r in again),
            "ingest_vs_limit": ratio(docent_chunks_per_s, limit_chunks_per_s),  # throughput: docent / limit
            "ingest_vs_naive": ratio(docent_pages_per_s, naive_pages_per_s),  # throughput: docent / naive
            "reingest_vs_first": ratio(reingest_s, first_s),
        },
        ctx.settings.data_dir,
    )


def _naive(files: list[Path], embed: Any) -> tuple[float, int, int]:
    from llama_index.core import Document, VectorStoreIndex
    from pypdf import PdfReader

    t = time.perf_counter()
    documents = []
    for path in files:
        reader = PdfReader(str(path))
        for number, page in enumerate(reader.pages, 1):
            documents.append(
                Document(text=page.extract_text() or "", metadata={"file_name": path.name, "page": number})
            )
    index = VectorStoreIndex.from_documents(documents, embed_model=embed)
    seconds = time.perf_counter() - t
    return seconds, len(index.docstore.docs), len(documents)


def bench_delete(settings: DocentSettings, chunks: int = 1000) -> dict[str, Any]:
    """Seconds to delete a document of about ``chunks`` chunks (hash embedding: the vectors'
    origin does not change what deleting them costs)."""
    from rag_core.providers.embeddings import HashEmbedding

    ctx = fresh_context(
        settings.model_copy(update={"embed_provider": "hash"}), "delete", embed_model=HashEmbedding(dim=384)
    )
    words = "revenue margin quarter segment cash flow operating income expenses shares dividend".split()
    paragraph = " ".join(words[(i * 7) % len(words)] + f" {i}" for i in range(90))
    path = ctx.settings.data_dir / "big.txt"
    path.write_text("\n\n".join(f"Section {n}. {paragraph}." for n in range(chunks)), encoding="utf-8")
    result = ctx.ingestion.ingest_file(path)
    t = time.perf_counter()
    ctx.ingestion.delete(result.file)
    return {"chunks": result.chunks, "delete_1k_s": round(time.perf_counter() - t, 3)}
