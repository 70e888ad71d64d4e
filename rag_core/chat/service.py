"""Answering questions in sessions: the question checked and stored, its conversation
recalled from SQLite, then a ``Turn`` that answers it.

The engine holds no memory between turns: each turn recalls the session's history from
SQLite (the recent messages word for word, the older ones folded into a summary), and its
answer, with the condensed question and the sources, is written back by the turn. The
question is stored before anything can fail, so a failed answer keeps it and Retry does
not store it twice.

A session answers one question at a time: a turn first claims its session in the database
(``rag_core.storage.claims``), waiting while another tab, app or command answers there, and
lets go once its answer is stored. So the stored order is always question, answer, and a
question's history holds the answers before it. A question left without an answer (it
failed, or its process died) is not history: it has no answer to read.

Besides answering, the service searches without answering (``search``, ``retrieve``: the
evaluation and the tests), and rewrites a follow-up as the chat would (``condense``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypedDict, Unpack

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.utils import get_tokenizer

from rag_core.chat.components import ChatComponents
from rag_core.chat.engine import condense_question, rule_rewrite, trim_history, uncited
from rag_core.chat.messages import ChatTurn, History, as_chat_messages, count_tokens, to_source
from rag_core.chat.summary import fold
from rag_core.chat.turn import Turn
from rag_core.errors import DiskFullError, DocentError
from rag_core.index import VectorIndex
from rag_core.payloads import Source
from rag_core.providers.models import ModelLoader
from rag_core.settings import DocentSettings
from rag_core.storage import Busy, DocumentRegistry, Message, SessionStore, Summary
from rag_core.suggestions import SuggestionService

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4  # what a question's length limit says in characters


class TurnOptions(TypedDict, total=False):
    """How a question is asked, besides its text and its session."""

    history: History | None  # a one-off question's conversation ((role, text), oldest first)
    rewrite: str | None  # the standalone question to search with, as the user corrected it
    regenerate: bool  # answer the session's last question again, replacing its answer
    waiting: Callable[[Busy], None] | None  # hears, while the session answers another question, which one


@dataclass
class Searched:
    """A search without an answer: the sources a question would get, and what the retriever
    measured (relevance signals, variants, retry, gate, routing)."""

    sources: list[Source]
    stats: dict[str, Any]


def _answered(messages: list[Message], i: int) -> bool:
    """The question ``messages[i]`` has its answer right after it."""
    return i + 1 < len(messages) and messages[i + 1].role == "assistant"


class ChatService:
    """Answers questions in sessions. Holds no per-user state."""

    def __init__(
        self,
        settings: DocentSettings,
        index: VectorIndex,
        sessions: SessionStore,
        models: ModelLoader,
        suggestions: SuggestionService | None = None,
        registry: DocumentRegistry | None = None,
    ) -> None:
        self.components = ChatComponents(settings, index, sessions, models, suggestions, registry)
        self.settings = settings
        self.index = index
        self.sessions = sessions
        self.models = models

    # ------------------------------------------------------------------ answer
    def turn(self, question: str, session_id: str | None = None, **options: Unpack[TurnOptions]) -> Turn:
        """Start answering ``question`` in ``session_id`` (None: a one-off, nothing saved);
        returns once the question is stored and searched (a fraction of a second), with the
        sources and the preview to show while the model loads and reads (see ``Turn``)."""
        started = time.perf_counter()
        regenerate = bool(options.get("regenerate"))
        notices: list[str] = []
        if not regenerate:
            question, notices = self.check_question(question)
        claim = None
        if session_id is not None:
            with contextlib.suppress(DiskFullError):  # nothing can be stored either: answered, unsaved
                claim = self.sessions.claims.take(session_id, question, options.get("waiting"))
        try:
            history, summary, names, question, unsaved = self._recall(
                session_id, question, options.get("history"), regenerate
            )
            if unsaved is not None:  # a full disk: answered all the same, kept nowhere, and said so
                notices.append(unsaved.unsaved_notice())
            turn = Turn(
                self.components,
                question,
                session_id=session_id,
                history=history,
                summary=summary,
                names=names,
                notices=notices,
                rewrite=options.get("rewrite"),
                started=started,
                claim=claim,
            )
            turn.save = unsaved is None
            turn.search()  # after the question is stored: whatever fails from here on, the question is kept
        except BaseException:
            if claim is not None:
                claim.release()
            raise
        return turn

    def ask(self, question: str, session_id: str | None = None, **options: Unpack[TurnOptions]) -> ChatTurn:
        """The same turn, run to the end: the answered turn."""
        return self.turn(question, session_id, **options).result()

    def check_question(self, question: str) -> tuple[str, list[str]]:
        """The question to answer, and a notice if it had to be cut to the limit."""
        question = (question or "").strip()
        if not question:
            raise DocentError("Type a question first: it is empty.")
        limit = self.settings.max_question_tokens
        if count_tokens(question) <= limit:
            return question, []
        cut = get_tokenizer()(question)[:limit]
        import tiktoken

        text = tiktoken.get_encoding("cl100k_base").decode(cut).strip()
        return text, [
            f"Your question was cut to its first {limit:,} tokens (about {limit * CHARS_PER_TOKEN:,} characters) of "
            f"{len(question):,} characters: the model reads the question, the sources and the conversation at once, "
            f"{self.settings.llm_context_window:,} tokens in all. Ask about a shorter passage, or raise "
            "max_question_tokens in the settings."
        ]

    def _recall(
        self, session_id: str | None, question: str, given: History | None, regenerate: bool
    ) -> tuple[list[ChatMessage], Summary | None, list[str] | None, str, DiskFullError | None]:
        """The session's recent messages, the summary of the older ones, its document filter,
        the question to answer (stored first; a retry or a regeneration does not store it
        twice), and the ``DiskFullError`` that kept it from being stored, if any."""
        if session_id is None:
            return as_chat_messages(given or []), None, None, question, None
        unsaved: DiskFullError | None = None
        session = self.sessions.get(session_id)
        past = self.sessions.messages(session_id)
        if regenerate:
            last = next((i for i in range(len(past) - 1, -1, -1) if past[i].role == "user"), None)
            if last is None:
                raise DocentError("There is no answer to regenerate in this conversation yet.")
            last_id = past[last].id
            if last_id is not None:
                self.sessions.drop_after(session_id, last_id)
            question = past[last].content
            past = past[: last + 1]
        if past and past[-1].role == "user" and past[-1].content == question:
            past = past[:-1]  # a retry of a question whose answer failed: don't store it twice
        else:
            try:
                self.sessions.append(session_id, Message("user", question))
            except DiskFullError as e:  # reading the documents still works: the answer comes, unsaved
                unsaved = e
        past = [m for i, m in enumerate(past) if m.content and (m.role != "user" or _answered(past, i))]
        # an answer as the model wrote it, without the check's marks: they quote the documents,
        # and document text reaches the model only fenced, as sources (``Turn._store``)
        past = [replace(m, content=m.meta["written"]) if m.meta.get("written") else m for m in past]
        past = [replace(m, content=uncited(m.content)) if m.role == "assistant" else m for m in past]
        c = self.components
        summary, recent = fold(self.sessions, session_id, past, c.memory_budget(question), count_tokens, c.summary_llm)
        history = [ChatMessage(role=MessageRole(m.role), content=m.content) for m in recent]
        return history, summary, session.doc_filter, question, unsaved

    # ------------------------------------------------------------------ search and rewrite alone
    def search(
        self,
        question: str,
        names: list[str] | None = None,
        top_k: int | None = None,
        history: History | None = None,
        typed: str | None = None,
    ) -> Searched:
        """Search only (no answer), as a chat turn searches (without the reranker).
        ``history`` ((role, text) pairs, oldest first) and ``typed`` (the question as the
        user typed it, when ``question`` is its rewrite) search as a chat follow-up does."""
        self.index.ensure_compatible()
        c = self.components
        retriever = c.retriever(names, top_k or self.settings.retrieval.top_k, rerank=False)
        found = retriever.search(question, c.conversation(typed or question, history or []))
        return Searched([to_source(h, found.extras.get(h.node.node_id)) for h in found.hits], found.stats)

    def retrieve(
        self,
        question: str,
        names: list[str] | None = None,
        top_k: int | None = None,
        history: History | None = None,
        typed: str | None = None,
    ) -> list[Source]:
        """The sources ``search`` finds."""
        return self.search(question, names, top_k, history, typed).sources

    def condense_window(self, question: str, history: History) -> History:
        """The history a rewrite of ``question`` sees, as the chat trims it: the session's
        messages kept in memory (``memory_token_limit``), then the most recent
        ``condense_token_limit`` tokens of those."""
        kept = trim_history(as_chat_messages(history), max(self.settings.memory_token_limit, 1), question)
        if self.settings.condense_token_limit:
            kept = trim_history(kept, self.settings.condense_token_limit)
        return [(m.role.value, m.content or "") for m in kept]

    def condense(self, question: str, history: History, *, rules: bool | None = None) -> str:
        """Rewrite ``question`` given (role, text) history, oldest first, as the chat would:
        the follow-up rules first (``followup_rules``, or ``rules`` when given), then the LLM."""
        if not history or not self.settings.condense:
            return question
        window = self.condense_window(question, history)
        if not window:
            return question
        if self.settings.followup_rules if rules is None else rules:
            ruled = rule_rewrite(question, as_chat_messages(window))
            if ruled is not None:
                return ruled[0]
        return condense_question(self.models.llm(), question, as_chat_messages(window))
