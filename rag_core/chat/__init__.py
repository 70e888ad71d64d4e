"""Chat over the documents: the service (``service``: a question checked, stored, its
conversation recalled) starts a ``Turn`` (``turn``: search, preview, model, prompt, words,
stored answer, follow-ups) built from the shared parts (``components``) around the engine
(``engine``: condense, retrieve, the evidence the model reads, the prompt), with the
follow-up rules (``followups``) and the summaries of long conversations (``summary``).
Every prompt is in ``rag_core.prompts``."""

from rag_core.chat.engine import DocentChatEngine, clean_condensed, trim_history
from rag_core.chat.messages import STOPPED_MARK, ChatTurn, safe_error, to_source
from rag_core.chat.service import ChatService, Searched, TurnOptions
from rag_core.chat.turn import Turn
from rag_core.prompts import CONDENSE_PROMPT, NO_ANSWER

__all__ = [
    "CONDENSE_PROMPT",
    "NO_ANSWER",
    "STOPPED_MARK",
    "ChatService",
    "ChatTurn",
    "DocentChatEngine",
    "Searched",
    "Turn",
    "TurnOptions",
    "clean_condensed",
    "safe_error",
    "to_source",
    "trim_history",
]
