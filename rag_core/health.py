"""``check``: do the registry (SQLite), the docstore, the keyword index and Chroma agree?

Three kinds of finding are kept apart:

- *ingesting*: another process holds the write lock and these documents carry a pending
  marker: an ingestion in progress, not damage (nothing to do);
- *interrupted*: a pending marker and nobody writing: a crash left it; the next start or
  ``check --repair`` removes it;
- *problems*: everything else that disagrees, each with what fixes it.
"""

from __future__ import annotations

from typing import Any, Protocol

from rag_core import recovery
from rag_core.entities import EntityIndex
from rag_core.index import VectorIndex
from rag_core.ingestion import IngestionService
from rag_core.settings import DocentSettings
from rag_core.storage import Database, DocumentRegistry, SessionStore


class CheckedContext(Protocol):
    """What ``check`` reads of ``rag_core.context.AppContext``: the three stores that must
    agree (index, registry, the ingestion markers) and the sessions it counts."""

    @property
    def settings(self) -> DocentSettings: ...

    @property
    def index(self) -> VectorIndex: ...

    @property
    def registry(self) -> DocumentRegistry: ...

    @property
    def ingestion(self) -> IngestionService: ...

    @property
    def sessions(self) -> SessionStore: ...

    @property
    def db(self) -> Database: ...


def check(ctx: CheckedContext) -> tuple[list[str], dict[str, Any]]:
    """Problems found (empty when consistent) and a summary of what is there."""
    problems: list[str] = []
    mismatch = ctx.index.mismatch()
    if mismatch:
        problems.append(mismatch)
    busy = ctx.index.held_elsewhere()
    marked = recovery.interrupted(ctx.ingestion)
    ingesting = sorted(marked) if busy else []
    interrupted = [] if busy else sorted(marked)
    for name in interrupted:
        problems.append(
            f"{name}: ingestion was interrupted (pending); the next start or `check --repair` removes what it left"
        )
    records = ctx.registry.list(status=None)
    indexed = {r.name: r for r in records if r.status == "indexed" and r.name not in marked}
    known = set(indexed) | set(marked)
    doc_names = ctx.index.docstore_names()
    chroma_names = ctx.index.chroma_names()
    keyword_docs = ctx.index.keywords.docs()
    files = ctx.settings.paths.files
    for name in sorted(chroma_names - known):
        fix = (
            "the registry lost it (docent.db emptied or restored?); the next start or `check --repair` registers "
            "it again from the index"
            if recovery.whole_sha(ctx.ingestion, name)
            else recovery.unresolved(ctx.ingestion, name)
        )
        problems.append(f"{name}: has vectors in Chroma but is not in the registry: {fix}")
    for name in sorted(doc_names - known - chroma_names):
        problems.append(f"{name}: in the docstore but has no vectors; `check --repair` removes the entry")
    for name in sorted(set(keyword_docs) - known - chroma_names):
        problems.append(f"{name}: in the keyword index but has no vectors; `check --repair` removes its words")
    for name, rec in sorted(indexed.items()):
        has_copy = (files / name).is_file()
        fix = (
            "`check --repair` ingests it again from its stored copy"
            if has_copy
            else "its stored copy is missing: ingest or upload the file again to restore it"
        )
        if name not in doc_names:
            problems.append(f"{name}: registered but missing from the docstore; {fix}")
        n = ctx.index.chunk_count(name)
        if n != rec.chunks:
            problems.append(f"{name}: registry says {rec.chunks} chunks, Chroma holds {n}; {fix}")
        elif keyword_docs.get(name, 0) != n:
            problems.append(
                f"{name}: the keyword index holds {keyword_docs.get(name, 0)} of its {n} chunks; `check --repair` "
                "indexes its words again from the vectors"
            )
        elif not has_copy:
            problems.append(
                f"{name}: its stored copy in files/ is missing, so a rebuild cannot restore it; ingest or upload the "
                "file again to keep a copy"
            )
    summary = {
        "documents": len(indexed),
        "chunks": ctx.index.chunk_count(),
        "docstore_entries": ctx.index.store.docstore_entries(),
        "keyword_chunks": sum(keyword_docs.values()),
        "sessions": ctx.sessions.total(),
        "embed_model": ctx.index.embed_name,
        "ingesting": ingesting,
        "interrupted": interrupted,
        # documents whose subjects are not read yet (indexed before Docent read them, or by an
        # older reader): not damage; the first question or `check --repair` reads them
        "profiles_missing": len(EntityIndex(ctx.index, ctx.registry).missing()),
        "database": ctx.db.describe(),
    }
    return problems, summary
