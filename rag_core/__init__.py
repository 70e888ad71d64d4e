"""Docent's engine: ingest documents, index them in Chroma, chat over them with sources.

Everything the Streamlit pages and the CLI do goes through these names
(``tests/test_public_api.py`` guards the list).
"""

# First, before any library below is imported: their telemetry off (see offline.py).
import rag_core.offline  # noqa: F401  # isort: skip

from rag_core.chat import ChatService, ChatTurn, Turn
from rag_core.context import AppContext, build_context
from rag_core.errors import (
    ChromaUnavailableError,
    ConfigError,
    ConsistencyError,
    DatabaseDamagedError,
    DatabaseUnavailableError,
    DocentError,
    IndexMismatchError,
    IngestError,
    ModelError,
    NotFoundError,
    ProviderError,
)
from rag_core.exchange import ImportReport, export_json, export_markdown, export_session, import_session
from rag_core.ingestion import Conflict, IngestionService, IngestResult
from rag_core.jobs import JobRunner, JobView, Upload
from rag_core.loaders import SUPPORTED_EXTS, UPLOAD_LABEL, UPLOAD_TYPES
from rag_core.payloads import EvalResult, Source
from rag_core.settings import DocentSettings, RetrievalSettings, env_pinned_fields, load_settings, save_settings
from rag_core.storage import Busy, DocumentRecord, Message, Session, SessionBusyError
from rag_core.suggestions import SuggestionService
from rag_core.viewer import PageImage, PassageContext, Viewer

__all__ = [
    "SUPPORTED_EXTS",
    "UPLOAD_LABEL",
    "UPLOAD_TYPES",
    "AppContext",
    "Busy",
    "ChatService",
    "ChatTurn",
    "ChromaUnavailableError",
    "ConfigError",
    "Conflict",
    "ConsistencyError",
    "DatabaseDamagedError",
    "DatabaseUnavailableError",
    "DocentError",
    "DocentSettings",
    "DocumentRecord",
    "EvalResult",
    "ImportReport",
    "IndexMismatchError",
    "IngestError",
    "IngestResult",
    "IngestionService",
    "JobRunner",
    "JobView",
    "Message",
    "ModelError",
    "NotFoundError",
    "PageImage",
    "PassageContext",
    "ProviderError",
    "RetrievalSettings",
    "Session",
    "SessionBusyError",
    "Source",
    "SuggestionService",
    "Turn",
    "Upload",
    "Viewer",
    "build_context",
    "env_pinned_fields",
    "export_json",
    "export_markdown",
    "export_session",
    "import_session",
    "load_settings",
    "save_settings",
]
