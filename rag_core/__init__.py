"""Docent's engine: ingest documents, index them in Chroma, chat over them with sources.

Everything the Streamlit pages and the CLI do goes through these names
(``tests/test_public_api.py`` guards the list).
"""

from rag_core.chat import AnswerStream, ChatService, ChatTurn
from rag_core.context import AppContext, build_context
from rag_core.errors import (
    ConfigError,
    ConsistencyError,
    DatabaseDamagedError,
    DocentError,
    IndexMismatchError,
    IngestError,
    ModelError,
    NotFoundError,
    ProviderError,
)
from rag_core.ingestion import Conflict, IngestionService, IngestResult
from rag_core.jobs import JobRunner, JobView, Upload
from rag_core.loaders import SUPPORTED_EXTS
from rag_core.payloads import EvalResult, Source
from rag_core.settings import DocentSettings, RetrievalSettings, env_pinned_fields, load_settings, save_settings
from rag_core.store import DocumentRecord, Message, Session

__all__ = [
    "SUPPORTED_EXTS",
    "AnswerStream",
    "AppContext",
    "ChatService",
    "ChatTurn",
    "ConfigError",
    "Conflict",
    "ConsistencyError",
    "DatabaseDamagedError",
    "DocentError",
    "DocentSettings",
    "DocumentRecord",
    "EvalResult",
    "IndexMismatchError",
    "IngestError",
    "IngestResult",
    "IngestionService",
    "JobRunner",
    "JobView",
    "Message",
    "ModelError",
    "NotFoundError",
    "ProviderError",
    "RetrievalSettings",
    "Session",
    "Source",
    "Upload",
    "build_context",
    "env_pinned_fields",
    "load_settings",
    "save_settings",
]
