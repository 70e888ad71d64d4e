"""The one composition root: ``build_context(settings)`` wires every service once.

Nothing per-user lives here (the current session, typed keys and drafts belong to
the caller), so the Streamlit app can cache the context with ``st.cache_resource``; a
signed-in person works through ``ctx.for_person(who)``, the same context seeing only that
person's conversations (and, with ``libraries = "per_user"``, only their documents).
The LLM and the reranker are built lazily by a ``ModelLoader``: the local model takes a
while to assemble and load, and a page that only lists documents should not wait for it.
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass, field, replace

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
from rag_core.storage import Backups, Database, DocumentRegistry, SessionStore, SQLiteDatabase, open_database
from rag_core.storage.jobs import JobStore
from rag_core.storage.kvstore import DatabaseKVStore
from rag_core.storage.postgres import PostgresDatabase
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
    person: str = field(default="", kw_only=True)  # whose conversations these are ('' the one local person)
    recover: bool = field(default=True, kw_only=True, repr=False)
    _people: dict[str, AppContext] = field(default_factory=dict, kw_only=True, repr=False)
    _people_lock: threading.Lock = field(default_factory=threading.Lock, kw_only=True, repr=False)

    def llm(self, progress: ProgressFn | None = None) -> LLM:
        """The LLM, built and loaded on first use (assembling the local model if needed)."""
        return self.models.llm(progress)

    @property
    def llm_ready(self) -> bool:
        """True once the LLM is built and loaded (the first answer will not wait for it)."""
        return self.models.llm_ready

    def reranker(self) -> BaseNodePostprocessor | None:
        return self.models.reranker()

    def for_person(self, person: str) -> AppContext:
        """This context as ``person`` sees it (built once per person, then reused): their
        conversations alone, and with ``libraries = "per_user"`` their own library (documents,
        retrieval, the viewer, suggestions); the models, the database and the jobs are shared."""
        if person == self.person:
            return self
        with self._people_lock:
            found = self._people.get(person)
            if found is None:
                found = self._people[person] = _as_person(self, person)
        return found


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
    backups: Backups | None = None
    sqlite_db: SQLiteDatabase | None = None
    notices: list[str] = []
    if settings.database:  # PostgreSQL: the server keeps its own backups (docs/team.md)
        db: Database = PostgresDatabase(settings.database)
    else:
        every = settings.backup_interval_hours * 3600 or None
        backups = Backups(settings.paths.backups, every_s=every, keep=settings.backup_keep)
        sqlite_db, notices = open_database(settings.paths.database, backups, repair=recover)
        db = sqlite_db
    index = open_index(settings, embed, DatabaseKVStore(db) if settings.database else None)
    saved = saved_notice(settings)  # saved settings that could not be used: their defaults run
    notices = [saved, *notices, *index.take_notices()] if saved else [*notices, *index.take_notices()]
    sessions = SessionStore(db)
    registry = DocumentRegistry(db, settings.library)
    ingestion = IngestionService(settings, index, registry)
    models = ModelLoader(settings, llm=llm, **({"reranker": reranker} if reranker is not None else {}))
    suggestions = SuggestionService(settings, index, registry, models)
    chat = ChatService(settings, index, sessions, models, suggestions, registry=registry)
    jobs = job_runner(settings.data_dir)
    jobs.use(JobStore(db))  # progress seen, and stopped, from every process on this database
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
        recover=recover,
    )
    if recover:
        _recover(ctx)
    if recover and backups is not None and sqlite_db is not None:
        backups.if_due(sqlite_db, starting=True)
    return ctx


def _recover(ctx: AppContext) -> None:
    if ctx.index.mismatch() is None:
        report = recovery.recover(ctx.ingestion)
        ctx.recovered, ctx.reregistered = report.removed, report.reregistered
        ctx.notices += report.notices()


def _as_person(ctx: AppContext, person: str) -> AppContext:
    """``ctx`` for ``person``: the conversation store is theirs; so is the library, per user."""
    sessions = ctx.sessions.for_owner(person)
    library = person if ctx.settings.libraries == "per_user" else ctx.settings.library
    if library == ctx.settings.library:
        # Everything but the conversations is shared, the chat's keyword index included.
        chat = copy.copy(ctx.chat)
        chat.components = copy.copy(ctx.chat.components)
        chat.sessions = chat.components.sessions = sessions
        return replace(ctx, sessions=sessions, chat=chat, person=person, _people={}, notices=list(ctx.notices))
    settings = ctx.settings.model_copy(update={"library": library})
    index = open_index(settings, ctx.embed_model, ctx.index._kv)
    registry = DocumentRegistry(ctx.db, library)
    ingestion = IngestionService(settings, index, registry)
    suggestions = SuggestionService(settings, index, registry, ctx.models)
    scoped = replace(
        ctx,
        settings=settings,
        index=index,
        sessions=sessions,
        registry=registry,
        ingestion=ingestion,
        chat=ChatService(settings, index, sessions, ctx.models, suggestions, registry=registry),
        viewer=Viewer(settings, registry, index),
        suggestions=suggestions,
        person=person,
        recovered=[],
        reregistered=[],
        notices=list(ctx.notices),
        _people={},
    )
    if ctx.recover:
        _recover(scoped)
    return scoped
