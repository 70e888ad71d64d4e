"""``check``: do the registry (SQLite), the docstore and Chroma agree?"""

from __future__ import annotations

from typing import Any

from rag_core.context import AppContext


def check(ctx: AppContext) -> tuple[list[str], dict[str, Any]]:
    """Problems found (empty when consistent) and a summary of what is there."""
    problems: list[str] = []
    mismatch = ctx.index.mismatch()
    if mismatch:
        problems.append(mismatch)
    records = ctx.registry.list(status=None)
    indexed = {r.name: r for r in records if r.status == "indexed"}
    for r in records:
        if r.status == "pending":
            problems.append(f"{r.name}: ingestion was interrupted (pending); run any command to recover it")
    doc_names = ctx.index.docstore_names()
    chroma_names = ctx.index.chroma_names()
    for name in sorted(doc_names - set(indexed)):
        problems.append(f"{name}: in the docstore but not in the registry")
    for name in sorted(chroma_names - set(indexed)):
        problems.append(f"{name}: has vectors in Chroma but is not in the registry")
    for name, rec in sorted(indexed.items()):
        if name not in doc_names:
            problems.append(f"{name}: registered but missing from the docstore")
        n = ctx.index.chunk_count(name)
        if n != rec.chunks:
            problems.append(f"{name}: registry says {rec.chunks} chunks, Chroma holds {n}")
    summary = {
        "documents": len(indexed),
        "chunks": ctx.index.chunk_count(),
        "docstore_entries": len(ctx.index.docstore.get_all_document_hashes()),
        "sessions": len(ctx.sessions.list()),
        "embed_model": ctx.index.embed_name,
    }
    return problems, summary
