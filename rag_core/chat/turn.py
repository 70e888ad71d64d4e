"""One question answered, as one object: a ``Turn`` owns its phases, its timings (the
model's load included), its stored answer and its follow-up questions.

The phases, in order (``ChatService.turn`` runs the first; ``result()`` runs them all, which
is ``ChatService.ask``):

1. ``search`` — before the model is needed: a first turn, a self-contained follow-up and an
   elliptical one the rules complete are searched at once (final, reranked); a follow-up
   that needs the LLM's rewrite is searched with its conversation (a first look). Either way
   ``sources`` and ``preview`` (the sentence of the sources that best answers the question)
   can be shown within a second.
2. ``load_model(progress)`` — the model, through the loader, timed (``model_load_s``); the
   app calls it behind a visible status, any later phase calls it when it needs the model.
3. ``prepare()`` — a follow-up the LLM must rewrite is rewritten and searched again; the
   evidence and the prompt are settled.
4. iterating — the answer's words; ``stop()`` ends it after the current word, and a consumer
   that goes away (a rerun, a closed page) ends it too: the part written is kept.
5. store — once the words end (or stop), the answer is stored in the session (``stored``,
   with its id), the model reads ahead for a follow-up (``read_ahead``) and the finished
   ``answered`` turn is there; ``follow_ups()`` then offers questions to ask next.

The question itself was stored before the turn began (``ChatService``): whatever fails
from the search on, the question is kept. The turn holds its session's claim (one question
at a time, ``rag_core.storage.claims``): it renews it while it loads and writes, and lets it
go once the answer is stored, or when it fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.llms import LLM

from rag_core.chat import read_ahead
from rag_core.chat.checking import TurnFigures, chunks_in
from rag_core.chat.components import ChatComponents
from rag_core.chat.computed import COMPUTED_BY, Computation, computed_for
from rag_core.chat.engine import DocentChatEngine, Retrieved, first_query, standing, uncited
from rag_core.chat.evidence import preview_of
from rag_core.chat.messages import (
    STOPPED_MARK,
    ChatTurn,
    count_tokens,
    llama_timings,
    safe_error,
    stored_answer,
    to_source,
    without_repeat,
)
from rag_core.chat.notices import instruction_notices, refusal, search_notices
from rag_core.chat.registered import COVER_BY, listed_for
from rag_core.errors import DiskFullError, DocentError, ProviderError
from rag_core.payloads import Source
from rag_core.prompts import NO_ANSWER, STOPPED_BEFORE
from rag_core.providers.answering import ANSWERING
from rag_core.providers.llm import ProgressFn
from rag_core.providers.threads import LOAD
from rag_core.retrieval import ConversationQueries
from rag_core.storage import Claim, Message, Summary

logger = logging.getLogger(__name__)


class Turn:
    """One question being answered. Iterate for the answer's words (text deltas).

    ``condensed_question``, ``sources``, ``notices`` and ``preview`` are there from the
    search on (final once ``prepare()`` has run); ``answered`` and ``stored`` once the words
    end. ``started`` is when the question was asked (``time.perf_counter()``): timings count
    from there."""

    def __init__(
        self,
        components: ChatComponents,
        question: str,
        *,
        session_id: str | None,
        history: list[ChatMessage],
        summary: Summary | None,
        names: list[str] | None,
        notices: list[str],
        rewrite: str | None,
        started: float,
        claim: Claim | None = None,
    ) -> None:
        self.components = components
        self.question = question
        self.session_id = session_id
        self.rewrite = (rewrite or "").strip() or None
        self.started = started
        self.condensed_question = question
        self.sources: list[Source] = []
        self.notices = list(notices)
        self.preview: dict[str, Any] | None = None
        self.timings: dict[str, float] = {}
        self.served_by: dict[str, str] = {}
        self.stopped = False
        self._written: str | None = None  # the answer as the model wrote it, before the check's marks
        self.answered: ChatTurn | None = None
        self.stored: Message | None = None  # the answer's row in the session, with its id
        self.save = True  # False: the question could not be stored (a full disk), nor is the answer
        self._history, self._summary, self._names = history, summary, names
        self._asked_notices = list(notices)
        self._found: Retrieved | None = None  # the first search; it settles the parts below
        self._engine: DocentChatEngine
        self._conversation: ConversationQueries | None = None
        self._kept: list[ChatMessage] = []  # the history the memory keeps for this question
        self._needs_rewrite = False
        self._chunks: Iterator[ChatResponse] | None = None
        self._stop_asked = False
        self._figures: TurnFigures | None = None  # the question's cells, then the answer's check
        self._computed: Computation | None = None  # a measure the question defines, computed
        self._claim = claim  # the session's, held from before the question was stored until the answer is

    # ------------------------------------------------------------------ 1. search
    def search(self) -> None:
        """The first search, before the model is needed; the sources and the preview."""
        LOAD.mark()  # the load the model's threads are chosen for is read from here on
        c, s = self.components, self.components.settings
        c.index.ensure_compatible()
        pairs = [(m.role.value, m.content or "") for m in self._history]
        self._conversation = c.conversation(self.question, pairs)
        reranker = c.models.reranker()
        memory = c.memory(self._history, self.question)
        self._kept = memory.get(input=self.question)
        idf = c.keywords.get(self._names).idf
        self._engine = c.engine(c.retriever(self._names), self._llm, memory, reranker, idf)
        ruled = first_query(self.question, self.rewrite, self._kept, s.condense, s.followup_rules)
        self._needs_rewrite = ruled is None
        query = ruled[0] if ruled else self.question
        # Final unless the LLM must rewrite a follow-up first; then a first look, not reranked.
        found = self._engine.retrieve(query, rerank=ruled is not None, conversation=self._conversation)
        self._found = self._unrelated_dropped(found)
        self.condensed_question = query
        self.sources = self._sources(self._found)
        self.preview = preview_of(query if ruled else self.question, self.sources, idf)
        self._engine_timings()
        self.timings["preview_s"] = round(time.perf_counter() - self.started, 3)
        how = ruled[1] if ruled else "llm"
        self.served_by = {"llm": c.llm_label(), "rerank": c.rerank_label(reranker), "condense": how}

    # ------------------------------------------------------------------ 2. the model
    @property
    def model_pending(self) -> bool:
        """True while the local model is still to load: the answer will wait for it, so the
        app shows that wait (``load_model`` with a progress callback)."""
        return self.components.settings.llm_provider == "local" and not self.components.models.llm_ready

    def load_model(self, progress: ProgressFn | None = None) -> float:
        """Load the model through the loader (``progress`` hears each step: assembling,
        loading); the seconds waited. The answer's timings count from the question, so its
        total holds this wait, and ``model_load_s`` says how much of it that was."""
        models = self.components.models
        if models.llm_ready:
            return 0.0
        t = time.perf_counter()
        self._renew(force=True)

        def heard(message: str) -> None:  # a long load renews the session's claim as it goes
            self._renew()
            if progress is not None:
                progress(message)

        models.llm(heard)
        waited = time.perf_counter() - t
        self.timings.setdefault("model_load_s", round(waited, 3))
        return waited

    def _llm(self) -> LLM:
        """The engine's model: loaded (and the load timed) the first time a phase needs it."""
        self.load_model()
        return self.components.models.llm()

    # ------------------------------------------------------------------ 3. prepare
    def prepare(self) -> None:
        """Rewrite and search again if the question needs the model for that; settle the
        prompt and load the model. Idempotent; iterating calls it first."""
        if self._chunks is not None:
            return
        if self._found is None:
            self.search()
        try:
            with ANSWERING.hold_if(self.components.settings.answer_pauses_indexing):  # a rewrite is the answer's too
                self._prepare()
        except DocentError:
            self._release()
            raise
        except BaseException as e:
            self._release()
            if not isinstance(e, Exception):
                raise
            raise ProviderError(
                f"The language model failed: {safe_error(e, self.components.secrets)}. Your question is kept; try again."
            ) from e

    def _prepare(self) -> None:
        engine, found = self._engine, self._found
        assert found is not None
        if self._needs_rewrite:  # a follow-up only the LLM can make stand alone: rewrite, search again
            self.condensed_question = engine.condense(self.question, self._kept)
            self.served_by["condense"] = engine.condensed_by
            found = self._unrelated_dropped(engine.retrieve(self.condensed_question, conversation=self._conversation))
        first = None if self._needs_rewrite else self.preview  # a preview of this search's sources
        self._computed, found = computed_for(
            self.components, self.question, self.condensed_question, found, self._names, first
        )
        listed, found = listed_for(self.components, self.question, self.condensed_question, found, self._names, first)
        sources = self._sources(found)
        language = self.components.language_notices(self.question, sources)
        said = search_notices(self._asked_notices, found.notices, language, found.stats, bool(found.nodes))
        said += instruction_notices(sources)  # text in a source addressing an assistant: which file, which page
        if found.notices:
            self.served_by["rerank"] = "skipped: " + found.notices[0]
        about = self.components.subjects_of(found.nodes)  # what each source's document is about
        evidence = engine.evidence(self.condensed_question, found.nodes, about) if found.nodes else []
        if evidence and self.components.settings.check_figures:  # the cells asked for, found by structure, first
            bm25 = self.components.keywords.get(self._names)
            c, q = self.components, self.condensed_question
            self._figures = TurnFigures(q, found.nodes, chunks_in(bm25), c.cover_of, about, c.strangers(q, found.stats))
            evidence = self._figures.first(evidence)
        if evidence and self._computed is not None:  # a measure the question defines, computed, first
            evidence = self._computed.evidence(found.nodes, self._figures) + evidence
        how = "typed" if evidence and engine.quotes else self.served_by["condense"]  # quoting: the words typed
        asked, kept = standing(self.question, self.condensed_question, how, self._kept)
        alone = listed or (self._computed.alone() if self._computed is not None else None)  # the app answers
        self._figures = None if alone else self._figures  # checked by no one: its own figures, each page named
        messages = engine.messages(kept, evidence, asked, self._summary) if evidence and not alone else None
        if alone:
            self.served_by["llm"] = COVER_BY if listed else COMPUTED_BY
        elif messages is not None:
            engine.llm  # noqa: B018 - load the model now, timed, before the first word
            self.timings["prompt_tokens"] = sum(count_tokens(m.content or "") for m in messages)
        self._engine_timings()
        self._chunks = engine.stream_answer(messages, alone or refusal(found.stats, bool(found.nodes)))
        self.sources, self.notices = sources, said

    # ------------------------------------------------------------------ 4. the words
    def stop(self) -> None:
        """Stop the answer after the current word; what was written is kept, marked as stopped."""
        self._stop_asked = True

    def __iter__(self) -> Iterator[str]:
        """The answer's words; indexing in this app waits meanwhile (``answer_pauses_indexing``)."""
        with ANSWERING.hold_if(self.components.settings.answer_pauses_indexing):
            yield from self._words()

    def _words(self) -> Iterator[str]:
        self.prepare()
        assert self._chunks is not None
        parts: list[str] = []
        chunks = self._chunks
        finished = False
        first = 0.0
        try:
            for chunk in chunks:
                self.timings.update(llama_timings(chunk))
                delta = chunk.delta or ""
                if not delta:
                    continue
                if not parts:
                    first = time.perf_counter()
                    self.timings["first_token_s"] = round(first - self.started, 3)
                parts.append(delta)
                self._renew()
                yield delta
                if self._stop_asked:
                    self.stopped = True
                    break
            finished = True
        except DocentError:
            raise
        except GeneratorExit:  # the consumer went away (a rerun, a closed page): keep what was written
            self.stopped = True
            raise
        except Exception as e:
            raise ProviderError(
                f"The language model failed while answering: {safe_error(e, self.components.secrets)}. "
                "Your question is kept; try again."
            ) from e
        finally:
            close = getattr(chunks, "close", None)
            if callable(close) and (not finished or self.stopped):
                close()  # asks llama.cpp to stop generating
            try:
                if finished or (self.stopped and parts):
                    self._finish(parts, first)
            finally:
                self._release()  # the answer is stored, or there will be none: the session is free

    def close(self) -> None:
        """Given up before its words (the page went away, a failure): the question stays unanswered."""
        self._release()

    def abandon(self) -> None:
        """Stopped before its words (a new question, Stop, a click): a stopped answer says so."""
        try:
            if self.answered is None:
                self.stopped = True
                self._finish([], 0.0, empty=STOPPED_BEFORE)
        finally:
            self._release()

    def result(self) -> ChatTurn:
        """Run the turn to the end (every phase left) and return the answered turn."""
        if self.answered is None:
            for _ in self:
                pass
        assert self.answered is not None
        return self.answered

    # ------------------------------------------------------------------ 5. store, and after
    def _finish(self, parts: list[str], first: float, empty: str = NO_ANSWER) -> None:
        end = time.perf_counter()
        self.timings["total_s"] = round(end - self.started, 3)
        if len(parts) > 1 and first and end > first:
            self.timings["tokens_per_s"] = round((len(parts) - 1) / (end - first), 2)
        answer = without_repeat("".join(parts)).strip() or empty  # a loop cut at its first repeat
        self._written = answer  # as the model wrote it: what the next turns' history holds
        if self._figures is not None:  # each figure checked against the sources, marked if unsupported
            checked = self._figures.check(answer)
            answer = checked.answer
            self.timings.update(self._figures.fields(checked))
        if self._computed is not None:  # the app's own arithmetic, each operand's page named
            answer = self._computed.completed(answer, self.question)
        if self.stopped:
            answer += STOPPED_MARK
        counts = [int(self.timings.get(k, 0)) for k in ("figures_checked", "figures_unsupported")]
        found = (self.condensed_question, self.sources, self.timings, self.notices)
        self.answered = ChatTurn(answer, *found, self.session_id, self.served_by, self.stopped, *counts)
        self._store(self.answered)

    def _store(self, answered: ChatTurn) -> None:
        """The answer into its session (a one-off question has none: nothing is stored)."""
        if self.session_id is None or not self.save:
            return
        message = stored_answer(answered, self.preview, bool(self.rewrite), self._written)
        try:
            self.stored = self.components.sessions.append(self.session_id, message)
            # a follow-up may come: the model reads its prompts' beginnings meanwhile
            exchange = (self.question, uncited(message.meta.get("written") or answered.answer))
            read_ahead.start(self.components, self._engine, self._history, self._summary, exchange)
        except DiskFullError as e:  # the answer was written on screen: say it is not kept, don't lose the turn
            answered.notices.append(e.unsaved_notice())
            self.save = False

    def follow_ups(self, n: int = 2) -> list[str]:
        """Up to ``n`` questions to ask next, from the sources the answer drew on (rules only:
        ``SuggestionService.follow_ups``); none before the answer is written, for a stopped
        answer, or for one without sources."""
        answered, suggestions = self.answered, self.components.suggestions
        if answered is None or answered.stopped or not answered.sources or suggestions is None:
            return []
        questions = suggestions.follow_ups(self.question, answered.answer, answered.sources, n=n)
        return [q for q in questions if q.strip()][:n]

    # ------------------------------------------------------------------ helpers
    def _unrelated_dropped(self, found: Retrieved) -> Retrieved:
        """Nothing, when what was found cannot be related to a question in another language
        (``ChatComponents.across_languages``): the refusal and the notice say how to switch."""
        if found.nodes and self.components.across_languages(self.question, self._sources(found)):
            found.nodes = []
        return found

    def _renew(self, *, force: bool = False) -> None:
        if self._claim is not None:
            self._claim.renew(force=force)

    def _release(self) -> None:
        if self._claim is not None:
            self._claim.release()

    def _sources(self, found: Retrieved) -> list[Source]:
        return [to_source(h, found.extras.get(h.node.node_id)) for h in found.nodes]

    def _engine_timings(self) -> None:
        self.timings.update({k: round(v, 3) for k, v in self._engine.timings.items()})
