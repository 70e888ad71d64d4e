"""The rag_core features of issue 13 that the pages use when they are there.

They are built in parallel with the pages (see api-contract.md): the chat engine's
``rewrite=``/``regenerate=``, ``.preview``, ``.stop()``, ``.served_by`` and session
summaries; ``ctx.viewer``, ``rag_core.exchange`` and ``ctx.suggestions``. Every page asks
here, so a rag_core without one of them still works (the control is not offered), and
once they are all merged these checks can go.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from types import ModuleType
from typing import Any

from rag_core import AppContext

logger = logging.getLogger(__name__)


def stream_accepts(ctx: AppContext, name: str) -> bool:
    """Whether ``ctx.chat.stream`` takes the keyword ``name`` (``rewrite``, ``regenerate``)."""
    try:
        return name in inspect.signature(ctx.chat.stream).parameters
    except (TypeError, ValueError):
        return False


def viewer(ctx: AppContext) -> Any | None:
    """``ctx.viewer`` (page images and passages in context), or None."""
    return getattr(ctx, "viewer", None)


def suggestions(ctx: AppContext) -> Any | None:
    """``ctx.suggestions`` (questions drawn from the documents, follow-ups), or None."""
    return getattr(ctx, "suggestions", None)


def exchange() -> ModuleType | None:
    """``rag_core.exchange`` (export and import a session), or None."""
    try:
        return importlib.import_module("rag_core.exchange")
    except ImportError:
        return None


def summaries(ctx: AppContext, session_id: str) -> list[Any]:
    """The summaries of a session's older turns (``text``, ``upto_message_id``, ``created``)."""
    read = getattr(ctx.sessions, "summaries", None)
    return list(read(session_id)) if callable(read) else []
