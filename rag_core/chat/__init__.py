"""Chat over the documents: the engine (``engine``) and the service that runs it in
sessions (``service``). Every prompt is in ``rag_core.prompts``."""

from rag_core.chat.engine import DocentChatEngine, FencePassages, clean_condensed, trim_history
from rag_core.chat.service import AnswerStream, ChatService, ChatTurn, safe_error, to_source
from rag_core.prompts import CONDENSE_PROMPT, CONTEXT_PROMPT, NO_ANSWER

__all__ = [
    "CONDENSE_PROMPT",
    "CONTEXT_PROMPT",
    "NO_ANSWER",
    "AnswerStream",
    "ChatService",
    "ChatTurn",
    "DocentChatEngine",
    "FencePassages",
    "clean_condensed",
    "safe_error",
    "to_source",
    "trim_history",
]
