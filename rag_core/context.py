"""The one composition root: ``build_context(settings)`` wires every service once.

Nothing per-user lives here (the current session, typed keys and drafts belong to
the caller), so the Streamlit app can cache the context with ``st.cache_resource``.
The LLM and the reranker are built lazily: the local model takes a while to assemble
and load, and a page that only lists documents should not wait for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from rag_core.chat import ChatService
from rag_core.index import VectorIndex, open_index
from rag_core.ingestion import IngestionService
from rag_core.providers.embeddings import build_embedding
from rag_core.providers.llm import build_llm
from rag_core.providers.rerank import build_reranker
from rag_core.settings import DocentSettings
from rag_core.store import Database, DocumentRegistry, SessionStore

logger = logging.getLogger(__name__)

DB_FILE = "docent.db"


@dataclass
class AppContext:
    settings: DocentSettings
    embed_model: BaseEmbedding
    index: VectorIndex
    db: Database
    sessions: SessionStore
    registry: DocumentRegistry
    ingestion: IngestionService
    chat: ChatService
    _llm: LLM | None = None
    _reranker: BaseNodePostprocessor | None = None
    _reranker_built: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    recovered: list[str] = field(default_factory=list)
    _llm_loaded: bool = False

    def llm(self, progress: Callable[[str], None] | None = None) -> LLM:
        """The LLM, built on first use (assembling/loading the local model if needed)."""
        with self._lock:
            if self._llm is None:
                self._llm = build_llm(self.settings, progress)
            load = getattr(self._llm, "load", None)
            if callable(load) and not self._llm_loaded:
                if progress:
                    progress("Loading the local model into memory…")
                load()
            self._llm_loaded = True
            return self._llm

    @property
    def llm_ready(self) -> bool:
        """True once the LLM is built and loaded (the first answer will not wait for it)."""
        return self._llm is not None and self._llm_loaded

    def reranker(self) -> BaseNodePostprocessor | None:
        with self._lock:
            if not self._reranker_built:
                self._reranker = build_reranker(self.settings)
                self._reranker_built = True
            return self._reranker


def build_context(
    settings: DocentSettings,
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    reranker: BaseNodePostprocessor | None = None,
    recover: bool = True,
) -> AppContext:
    """Wire everything from settings. Tests pass fakes for ``llm``/``embed_model``/``reranker``.

    ``recover`` removes what an interrupted ingestion left (see ``IngestionService.recover``);
    ``check`` turns it off so that it can report the damage instead."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    embed = embed_model or build_embedding(settings)
    index = open_index(settings, embed)
    db = Database(settings.data_dir / DB_FILE)
    sessions = SessionStore(db)
    registry = DocumentRegistry(db)
    ingestion = IngestionService(settings, index, registry)
    holder: dict[str, AppContext] = {}
    chat = ChatService(
        settings,
        index,
        sessions,
        llm_factory=lambda: holder["ctx"].llm(),
        reranker_factory=lambda: holder["ctx"].reranker(),
    )
    ctx = AppContext(settings, embed, index, db, sessions, registry, ingestion, chat)
    if llm is not None:
        ctx._llm = llm
    if reranker is not None:
        ctx._reranker, ctx._reranker_built = reranker, True
    holder["ctx"] = ctx
    if recover and index.mismatch() is None:
        ctx.recovered = ingestion.recover()
    return ctx
