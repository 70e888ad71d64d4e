"""Ingestion against its limit and against LlamaIndex's defaults, re-ingestion, deletion.

- limit: embedding the very chunks Docent stored, in one tight batched loop (what
  ingestion costs at the least with this embedding model);
- naive: each PDF page read with pypdf (what LlamaIndex's default ``PDFReader`` does) and
  ``VectorStoreIndex.from_documents`` with LlamaIndex's defaults and the same embedding model.
Throughputs are documents per second over the same folder.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from llama_index.core.schema import MetadataMode

from rag_core.bench.common import fresh_context, ratio
from rag_core.settings import DocentSettings


def bench_ingest(settings: DocentSettings, docs: Path) -> tuple[dict[str, Any], Path]:
    """The figures, and the data folder now holding ``docs`` (the answers are timed over it)."""
    ctx = fresh_context(settings, "ingest")
    files = sorted(p for p in docs.iterdir() if p.is_file())
    t = time.perf_counter()
    results = ctx.ingestion.ingest_paths(files)
    first_s = time.perf_counter() - t
    t = time.perf_counter()
    again = ctx.ingestion.ingest_paths(files)
    reingest_s = time.perf_counter() - t

    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in ctx.index.all_nodes()]
    embed = ctx.embed_model
    t = time.perf_counter()
    for start in range(0, len(texts), settings.embed_batch_size):
        embed.get_text_embedding_batch(texts[start : start + settings.embed_batch_size])
    limit_s = time.perf_counter() - t

    naive_s, naive_chunks = _naive(files, embed)
    return {
        "files": len(files),
        "indexed": sum(r.status in ("indexed", "replaced") for r in results),
        "chunks": len(texts),
        "pages": sum(r.pages for r in results),
        "docent_s": round(first_s, 1),
        "limit_embed_s": round(limit_s, 1),
        "naive_s": round(naive_s, 1),
        "naive_chunks": naive_chunks,
        "reingest_s": round(reingest_s, 2),
        "skipped_on_reingest": sum(r.status == "skipped" for r in again),
        "ingest_vs_limit": ratio(limit_s, first_s),  # throughput ratio: docent / limit
        "ingest_vs_naive": ratio(naive_s, first_s),  # throughput ratio: docent / naive
        "reingest_vs_first": ratio(reingest_s, first_s),
        "chunks_per_s": round(len(texts) / first_s, 1) if first_s else None,
    }, ctx.settings.data_dir


def _naive(files: list[Path], embed: Any) -> tuple[float, int]:
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
    return seconds, len(index.docstore.docs)


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
