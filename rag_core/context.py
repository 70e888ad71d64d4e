"""The one composition root: ``build_context(settings)`` wires every service once.

Nothing per-user lives here (the current session, typed keys and drafts belong to
the caller), so the Streamlit app can cache the context with ``st.cache_resource``.
The LLM and the reranker are built lazily by a ``ModelLoader``: the local model takes a
while to assemble and load, and a page that only lists documents should not wait for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from rag_core import recovery
from rag_core.chat import ChatService
from rag_core.index import VectorIndex, open_index
from rag_core.ingestion import IngestionService
from rag_core.jobs import JobRunner, job_runner
from rag_core.providers.embeddings import build_embedding
from rag_core.providers.llm import ProgressFn
from rag_core.providers.models import ModelLoader
from rag_core.settings import DocentSettings, saved_notice
from rag_core.storage import Backups, Database, DocumentRegistry, SessionStore, open_database
from rag_core.suggestions import SuggestionService
from rag_core.viewer import Viewer

logger = logging.getLogger(__name__)


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
    models: ModelLoader
    jobs: JobRunner  # background uploads of this data folder (shared; sessions keep their job ids)
    recovered: list[str] = field(default_factory=list)  # interrupted ingestions removed on start
    reregistered: list[str] = field(default_factory=list)  # whole documents the registry had lost
    notices: list[str] = field(default_factory=list)  # what start-up had to repair or ignore, for the user
    # Keyword-only, so they follow the defaulted fields yet need no None default (pages use them as is).
    viewer: Viewer = field(kw_only=True)  # page images and passages in context (rag_core/viewer.py)
    suggestions: SuggestionService = field(kw_only=True)  # suggested questions (rag_core/suggestions.py)

    def llm(self, progress: ProgressFn | None = None) -> LLM:
        """The LLM, built and loaded on first use (assembling the local model if needed)."""
        return self.models.llm(progress)

    @property
    def llm_ready(self) -> bool:
        """True once the LLM is built and loaded (the first answer will not wait for it)."""
        return self.models.llm_ready

    def reranker(self) -> BaseNodePostprocessor | None:
        return self.models.reranker()


def build_context(
    settings: DocentSettings,
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    reranker: BaseNodePostprocessor | None = None,
    recover: bool = True,
) -> AppContext:
    """Wire everything from settings. Tests pass fakes for ``llm``/``embed_model``/``reranker``.

    ``recover`` removes what an interrupted ingestion left, registers again whole documents the
    registry lost (see ``rag_core.recovery``) and moves a damaged ``docent.db`` aside to rebuild
    it (``rag_core.storage.backups``); ``check`` turns it off so that it can report the damage instead."""
    settings.paths.create()  # a ConfigError that says what to do, not a FileExistsError
    embed = embed_model or build_embedding(settings)
    index = open_index(settings, embed)
    every = settings.backup_interval_hours * 3600 or None
    backups = Backups(settings.paths.backups, every_s=every, keep=settings.backup_keep)
    db, notices = open_database(settings.paths.database, backups, repair=recover)
    saved = saved_notice(settings)  # saved settings that could not be used: their defaults run
    notices = [saved, *notices] if saved else notices
    sessions = SessionStore(db)
    registry = DocumentRegistry(db)
    ingestion = IngestionService(settings, index, registry)
    models = ModelLoader(settings, llm=llm, **({"reranker": reranker} if reranker is not None else {}))
    suggestions = SuggestionService(settings, index, registry, models)
    chat = ChatService(settings, index, sessions, models, suggestions)
    jobs = job_runner(settings.data_dir)
    ctx = AppContext(
        settings,
        embed,
        index,
        db,
        sessions,
        registry,
        ingestion,
        chat,
        models,
        jobs,
        notices=notices,
        viewer=Viewer(settings, registry, index),
        suggestions=suggestions,
    )
    if recover and index.mismatch() is None:
        report = recovery.recover(ingestion)
        ctx.recovered, ctx.reregistered = report.removed, report.reregistered
        ctx.notices += report.notices()
    if recover:
        backups.if_due(db, starting=True)
    return ctx
