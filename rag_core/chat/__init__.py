"""Chat over the documents: the engine (``engine``: condense, retrieve, the evidence the
model reads, the prompt), the follow-up rules (``followups``), the answer stream (``stream``)
and the service that runs them in sessions (``service``). Every prompt is in ``rag_core.prompts``."""

from rag_core.chat.engine import DocentChatEngine, clean_condensed, trim_history
from rag_core.chat.messages import to_source
from rag_core.chat.service import ChatService
from rag_core.chat.stream import AnswerStream, ChatTurn, safe_error
from rag_core.prompts import CONDENSE_PROMPT, NO_ANSWER

__all__ = [
    "CONDENSE_PROMPT",
    "NO_ANSWER",
    "AnswerStream",
    "ChatService",
    "ChatTurn",
    "DocentChatEngine",
    "clean_condensed",
    "safe_error",
    "to_source",
    "trim_history",
]
