"""Answering questions in sessions: the history from SQLite, the engine, the answer stream.

The engine holds no memory between turns: each turn loads the session's history from
SQLite into a token-limited ``ChatMemoryBuffer``, and the question, the answer, the
condensed question and the sources are written back. The question is stored before
anything can fail, so a failed answer keeps it and Retry does not store it twice.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.schema import NodeWithScore

from rag_core.chat.engine import DocentChatEngine, condense_question, trim_history
from rag_core.errors import DocentError, ProviderError
from rag_core.index import VectorIndex
from rag_core.payloads import Source
from rag_core.prompts import CONTEXT_PROMPT, NO_ANSWER
from rag_core.providers.embeddings import MULTILINGUAL
from rag_core.providers.models import ModelLoader
from rag_core.retrieval import ConversationQueries, HybridRetriever, KeywordCache
from rag_core.settings import DocentSettings
from rag_core.store import Message, SessionStore

logger = logging.getLogger(__name__)

History = list[tuple[str, str]]  # (role, text) pairs, oldest first


@dataclass
class ChatTurn:
    """One answered question. ``as_json`` is the CLI's ``--json`` contract."""

    answer: str
    condensed_question: str
    sources: list[Source]
    timings: dict[str, float]
    notices: list[str] = field(default_factory=list)
    session_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class AnswerStream:
    """An answer being written. Iterate for text deltas; ``turn`` is complete afterwards.

    ``condensed_question`` and ``sources`` are known before the first delta, so a page can
    show what was searched while the answer streams. ``started`` is when the question was
    asked (``time.perf_counter()``): the timings count from there.
    """

    def __init__(
        self,
        chunks: Iterator[ChatResponse],
        condensed_question: str,
        sources: list[Source],
        timings: dict[str, float],
        notices: list[str],
        on_done: Callable[[ChatTurn], None],
        session_id: str | None,
        *,
        started: float,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self._chunks = chunks
        self.condensed_question = condensed_question
        self.sources = sources
        self.timings = timings
        self.notices = notices
        self._on_done = on_done
        self.session_id = session_id
        self.started = started
        self.secrets = secrets
        self.turn: ChatTurn | None = None

    def __iter__(self) -> Iterator[str]:
        parts: list[str] = []
        try:
            for chunk in self._chunks:
                delta = chunk.delta or ""
                if not delta:
                    continue
                if not parts:
                    self.timings["first_token_s"] = round(time.perf_counter() - self.started, 3)
                parts.append(delta)
                yield delta
        except DocentError:
            raise
        except Exception as e:
            raise ProviderError(
                f"The language model failed while answering: {safe_error(e, self.secrets)}. "
                "Your question is kept; try again."
            ) from e
        self.timings["total_s"] = round(time.perf_counter() - self.started, 3)
        answer = "".join(parts).strip() or NO_ANSWER
        self.turn = ChatTurn(answer, self.condensed_question, self.sources, self.timings, self.notices, self.session_id)
        self._on_done(self.turn)

    def result(self) -> ChatTurn:
        """Drain the stream and return the finished turn."""
        if self.turn is None:
            for _ in self:
                pass
        assert self.turn is not None
        return self.turn


def safe_error(e: Exception, secrets: tuple[str, ...] = ()) -> str:
    """An error's message with the configured keys, and anything shaped like a key, masked."""
    msg = f"{type(e).__name__}: {e}"
    for secret in secrets:
        if secret and len(secret) >= 4:
            msg = msg.replace(secret, "***")
    msg = re.sub(r"(sk|key|Bearer)[-_ ]?[A-Za-z0-9_\-]{8,}", r"\1-***", msg)
    return msg[:300]


def _secrets(settings: DocentSettings) -> tuple[str, ...]:
    return tuple(k.get_secret_value() for k in (settings.openai_api_key, settings.cohere_api_key) if k)


def to_source(hit: NodeWithScore, extras: dict[str, float] | None = None) -> Source:
    """A passage as the pages, the CLI and SQLite show it."""
    meta = hit.node.metadata
    src: Source = {
        "file": meta.get("file_name") or meta.get("doc_key"),
        "page": meta.get("page"),
        "score": round(float(hit.score or 0.0), 4),
        "text": hit.node.get_content(),
    }
    if meta.get("page_label") and str(meta.get("page_label")) != str(meta.get("page")):
        src["page_label"] = meta["page_label"]
    if meta.get("heading"):
        src["heading"] = meta["heading"]
    if extras:
        src.update(extras)  # type: ignore[typeddict-item]
    return src


def _chat_messages(history: History) -> list[ChatMessage]:
    return [ChatMessage(role=MessageRole(role), content=text) for role, text in history]


class ChatService:
    """Answers questions in sessions. Holds no per-user state."""

    def __init__(
        self, settings: DocentSettings, index: VectorIndex, sessions: SessionStore, models: ModelLoader
    ) -> None:
        self.settings = settings
        self.index = index
        self.sessions = sessions
        self.models = models
        self.keywords = KeywordCache(index)

    # ------------------------------------------------------------------ building blocks
    def retriever(self, names: list[str] | None = None, top_k: int | None = None) -> HybridRetriever:
        s = self.settings
        k = top_k or s.retrieval.top_k
        if self.models.reranker() is not None:
            k = max(k, s.rerank_top_n * 3)
        return HybridRetriever(
            self.index,
            self.keywords,
            s.retrieval,
            names=names,
            top_k=k,
            multilingual=s.embed_provider in MULTILINGUAL,
            llm_factory=self.models.llm,
        )

    def retrieve(
        self,
        question: str,
        names: list[str] | None = None,
        top_k: int | None = None,
        stats: dict[str, Any] | None = None,
        history: History | None = None,
        typed: str | None = None,
    ) -> list[Source]:
        """Search only (no answer): the sources a question would get. ``stats``, if given,
        receives what the retriever measured (relevance signals, variants, retry, gate).
        ``history`` ((role, text) pairs, oldest first) and ``typed`` (the question as the
        user typed it, when ``question`` is its rewrite) search as a chat follow-up does."""
        self.index.ensure_compatible()
        r = self.retriever(names, top_k)
        r.top_k = top_k or self.settings.retrieval.top_k
        r.conversation = self.conversation(typed or question, history or [])
        hits = r.retrieve(question)
        if stats is not None:
            stats.update(r.last_stats)
        return [to_source(h, r.last_extras.get(h.node.node_id)) for h in hits]

    def conversation(self, typed: str, history: History) -> ConversationQueries | None:
        """The extra searches a follow-up gets from its conversation (``history_search``)."""
        if not history or not self.settings.history_search:
            return None
        return ConversationQueries(typed, history) or None

    def condense_window(self, question: str, history: History) -> History:
        """The history a rewrite of ``question`` sees, as the chat trims it: the session's
        messages kept in memory (``memory_token_limit``), then the most recent
        ``condense_token_limit`` tokens of those."""
        kept = trim_history(_chat_messages(history), max(self.settings.memory_token_limit, 1), question)
        if self.settings.condense_token_limit:
            kept = trim_history(kept, self.settings.condense_token_limit)
        return [(m.role.value, m.content or "") for m in kept]

    def condense(self, question: str, history: History) -> str:
        """Rewrite ``question`` given (role, text) history, oldest first, as the chat would."""
        if not history or not self.settings.condense:
            return question
        window = self.condense_window(question, history)
        if not window:
            return question
        return condense_question(self.models.llm(), question, _chat_messages(window))

    # ------------------------------------------------------------------ chat
    def _history(
        self, session_id: str | None, question: str, given: History | None = None
    ) -> tuple[list[ChatMessage], list[str] | None]:
        """The session's earlier messages and document filter; stores the question first.
        Without a session, ``given`` (role, text) pairs are the history (evaluation)."""
        if session_id is None:
            return _chat_messages(given or []), None
        session = self.sessions.get(session_id)
        past = self.sessions.messages(session_id)
        if past and past[-1].role == "user" and past[-1].content == question:
            past = past[:-1]  # a retry of a question whose answer failed: don't store it twice
        else:
            self.sessions.append(session_id, Message("user", question))
        history = [ChatMessage(role=MessageRole(m.role), content=m.content) for m in past if m.content]
        return history, session.doc_filter

    def stream(self, question: str, session_id: str | None = None, *, history: History | None = None) -> AnswerStream:
        """Start answering ``question`` in ``session_id`` (None: a one-off, nothing saved, with
        ``history`` as its conversation)."""
        question = (question or "").strip()
        if not question:
            raise DocentError("Type a question first.")
        started = time.perf_counter()
        past, names = self._history(session_id, question, history)

        # After the question is stored: whatever fails from here on, the question is kept.
        self.index.ensure_compatible()
        llm = self.models.llm()
        retriever = self.retriever(names)
        retriever.conversation = self.conversation(question, [(m.role.value, m.content or "") for m in past])
        reranker = self.models.reranker()
        memory = ChatMemoryBuffer.from_defaults(
            chat_history=past, token_limit=max(self.settings.memory_token_limit, 1), llm=llm
        )
        engine = DocentChatEngine(
            retriever,
            llm,
            memory,
            context_prompt=CONTEXT_PROMPT.replace("{system_prompt}", self.settings.system_prompt),
            condense=self.settings.condense,
            condense_token_limit=self.settings.condense_history_tokens,
            node_postprocessors=[reranker] if reranker is not None else [],
        )
        secrets = _secrets(self.settings)
        try:
            kept = memory.get(input=question)
            condensed = engine.condense(question, kept)
            found = engine.retrieve(condensed)
        except DocentError:
            raise
        except Exception as e:
            raise ProviderError(
                f"The language model failed: {safe_error(e, secrets)}. Your question is kept; try again."
            ) from e
        messages = engine.messages(kept, found.nodes, question) if found.nodes else None
        extras = retriever.last_extras
        sources = [to_source(h, extras.get(h.node.node_id)) for h in found.nodes]
        timings = {k: round(v, 3) for k, v in engine.timings.items()}

        def on_done(turn: ChatTurn) -> None:
            if session_id is not None:
                self.sessions.append(
                    session_id,
                    Message(
                        "assistant",
                        turn.answer,
                        condensed_question=turn.condensed_question,
                        sources=turn.sources,
                        meta={"timings": turn.timings, "notices": turn.notices},
                    ),
                )

        return AnswerStream(
            engine.stream_answer(messages),
            condensed,
            sources,
            timings,
            found.notices,
            on_done,
            session_id,
            started=started,
            secrets=secrets,
        )

    def ask(self, question: str, session_id: str | None = None, *, history: History | None = None) -> ChatTurn:
        return self.stream(question, session_id, history=history).result()
