"""The chat engine: condense a follow-up, retrieve, rerank, pick the evidence, answer.

A LlamaIndex ``BaseChatEngine`` whose steps are public, so that the service can time them
and show the sources before the answer starts:

    condense(message, history) -> standalone question   (rules first, then the LLM)
    retrieve(question)         -> passages + notices      (retriever, then rerank)
    messages(history, passages, question) -> the prompt  (system, history, sources + question)

The prompt puts what stays the same first (the system prompt, then the conversation) and
this turn's sources and question last, so llama.cpp's prompt cache reuses what it already
read; the sources are the lines that bear on the question, within a token budget
(``evidence``), numbered for citing, fenced in ``<documents>``. The engine holds no memory
between turns: the service loads the session's history from SQLite.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.generic_utils import messages_to_history_str
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine.types import AgentChatResponse, BaseChatEngine, StreamingAgentChatResponse, ToolOutput
from llama_index.core.llms import LLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_core.chat.evidence import Evidence, select_evidence
from rag_core.chat.followups import complete_ellipsis, resolve_pointers, self_contained
from rag_core.chat.messages import repeating_from, without_repeat
from rag_core.chat.summary import as_message
from rag_core.prompts import CONDENSE_PROMPT, FENCE_RULE, NO_ANSWER, QUESTION_PROMPT
from rag_core.providers.rerank import GuardedRerank
from rag_core.retrieval import ConversationQueries, HybridRetriever, Retrieval
from rag_core.storage import Summary

_FENCE_TAG = re.compile(r"</?\s*(?:passage|documents)", re.IGNORECASE)


def unfence(text: str) -> str:
    """Document text cannot close (or open) the ``<documents>`` fence."""
    return _FENCE_TAG.sub(lambda m: m.group(0).replace("<", "‹"), text)


def trim_history(messages: list[ChatMessage], token_limit: int, question: str | None = None) -> list[ChatMessage]:
    """The most recent messages that fit in ``token_limit`` tokens (as the memory buffer trims)."""
    if not messages:
        return []
    memory = ChatMemoryBuffer.from_defaults(chat_history=list(messages), token_limit=max(token_limit, 1))
    return memory.get(input=question)


_ENDS = re.compile(r"[.!?\n]")  # a piece of the answer that may end a sentence
_MARKERS = re.compile(r"\s*(?<![\w\]])\[\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\](?:\s*\[\d{1,3}\])*")


def uncited(answer: str) -> str:
    """``answer`` without its source markers ("[3]", "[1][2]", "[1, 2]"): they number the sources of
    its own turn, and in a later turn's prompt they would point at other sources (a rewrite copied
    one into the question searched: "… in the nine months ended in [3]?")."""
    return _MARKERS.sub("", answer)


def clean_condensed(raw: str, fallback: str) -> str:
    """The model's rewrite, without quotes, labels or a second line; the original if empty,
    or if the model echoed one of the prompt's example rewrites (a small model sometimes
    answers "What is the capital of Australia?" to an unrelated question)."""
    text = (raw or "").strip()
    text = re.sub(r"^(standalone question|question|rewritten question)\s*[:：]\s*", "", text, flags=re.I)
    text = text.split("\n")[0].strip().strip("\"“”'`").strip()
    if text in _example_rewrites(CONDENSE_PROMPT) and text != fallback.strip():
        return fallback
    return text or fallback


@functools.lru_cache(maxsize=4)
def _example_rewrites(prompt: str) -> frozenset[str]:
    """The example answers inside a condense prompt (lines "Standalone question: ...")."""
    return frozenset(m.strip() for m in re.findall(r"^Standalone question:(.+)$", prompt, flags=re.M))


def condense_prompt(question: str, history: list[ChatMessage]) -> str:
    """The rewrite's prompt for ``question`` after ``history`` (already trimmed)."""
    return CONDENSE_PROMPT.format(chat_history=messages_to_history_str(history), question=question)


def condense_question(llm: LLM, question: str, history: list[ChatMessage]) -> str:
    """One LLM call: ``question`` rewritten to stand alone, given ``history`` (already trimmed)."""
    return clean_condensed(str(llm.complete(condense_prompt(question, history), max_tokens=96)), question)


def rule_rewrite(question: str, history: list[ChatMessage]) -> tuple[str, str] | None:
    """A follow-up that stands alone without the LLM: (question, how) — ``how`` is "first turn",
    "self-contained" or "rule" (an elliptical follow-up completed from the previous question)."""
    if not history:
        return question, "first turn"
    previous = next((m.content or "" for m in reversed(history) if m.role == MessageRole.USER), "")
    completed = complete_ellipsis(question, previous) or resolve_pointers(question, previous)
    if completed:
        return completed, "rule"
    if self_contained(question):
        return question, "self-contained"
    return None


def standing(typed: str, condensed: str, how: str, history: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The question an answering prompt ends with, and the conversation before it: a follow-up's
    standalone rewrite, alone, when a rule or the LLM made one ("And in the latest 10-Q?" →
    "What was Intel's net revenue in its latest 10-Q?"), as LlamaIndex's condense-question
    engine answers (a small model given the follow-up after the conversation repeats the last
    answer's figure: docs/evaluation.md); else the question as typed after the conversation
    (first turns, self-contained follow-ups, an edited search)."""
    if how in ("rule", "llm") and condensed.strip():
        return condensed, []
    return typed, history


def first_query(
    question: str, rewrite: str | None, kept: Sequence[ChatMessage], condense: bool, rules: bool
) -> tuple[str, str] | None:
    """The question searched first and how it was made ("edited", "off", "first turn", or a
    rule's), or None when only the model can make a follow-up stand alone."""
    if rewrite:
        return rewrite, "edited"
    if not condense:
        return question, "off"
    if not kept:
        return question, "first turn"
    return rule_rewrite(question, list(kept)) if rules else None


@dataclass
class Retrieved:
    """What one search found: the passages (reranked), notices (rerank skipped...), and
    what the retriever measured (``Retrieval.extras`` and ``Retrieval.stats``)."""

    nodes: list[NodeWithScore]
    notices: list[str] = field(default_factory=list)
    extras: dict[str, dict[str, float]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def reordered(self, nodes: list[NodeWithScore], preview: dict[str, Any] | None = None) -> Retrieved:
        """The same search with ``nodes`` as its passages (an app's answer puts the pages it is
        read from first); ``preview``'s source number follows its passage (to the first source
        when its passage is gone, as a passage of the cover taken for the cover)."""
        if preview is not None and preview.get("source"):
            was = self.nodes[int(preview["source"]) - 1].node.node_id
            preview["source"] = next((i + 1 for i, n in enumerate(nodes) if n.node.node_id == was), 1)
        return replace(self, nodes=nodes)


class DocentChatEngine(BaseChatEngine):
    """Condense + retrieve + answer with the history and the evidence of the passages."""

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: LLM | Callable[[], LLM],
        memory: ChatMemoryBuffer,
        *,
        system_prompt: str,
        condense: bool = True,
        condense_token_limit: int = 0,
        context_tokens: int = 0,
        count_tokens: Callable[[str], int] = len,
        idf: Callable[[str], float] | None = None,
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
    ) -> None:
        self._retriever = retriever
        self._llm_or_factory = llm
        self._memory = memory
        self._system_prompt = f"{system_prompt.strip()}\n{FENCE_RULE}"
        self._condense = condense
        self._condense_token_limit = condense_token_limit
        self._context_tokens = context_tokens
        self._count_tokens = count_tokens
        self._idf = idf
        self._postprocessors = list(node_postprocessors or [])
        self.timings: dict[str, float] = {}
        self.condensed_by = ""

    @property
    def llm(self) -> LLM:
        """The LLM, loaded on first use (a factory may load the local model)."""
        if not isinstance(self._llm_or_factory, LLM):
            self._llm_or_factory = self._llm_or_factory()
        return self._llm_or_factory

    # ------------------------------------------------------------------ steps
    def condense(self, message: str, history: list[ChatMessage]) -> str:
        """The standalone question to search with: by rule when one applies, else the LLM."""
        if not self._condense:
            self.condensed_by = "off"
            return message
        ruled = rule_rewrite(message, history)
        if ruled is not None:
            self.condensed_by = ruled[1]
            return ruled[0]
        t = time.perf_counter()
        if self._condense_token_limit:
            history = trim_history(history, self._condense_token_limit)
        question = condense_question(self.llm, message, history)
        self.timings["condense_s"] = time.perf_counter() - t
        self.condensed_by = "llm"
        return question

    @property
    def quotes(self) -> bool:
        """Whether the answers quote the passages sharing most words with the question (the
        ``extractive`` provider, no model): then a follow-up is answered as typed, as before."""
        return getattr(self.llm.metadata, "model_name", "") == "extractive"

    def next_prompts(
        self, history: list[ChatMessage], summary: Summary | None, mark: str
    ) -> tuple[list[ChatMessage], str | None]:
        """What the next question's prompts will begin with, after ``history``: the answer's
        messages and the rewrite's prompt (None with ``condense`` off), ``mark`` standing
        where the question and its sources will go (``chat.read_ahead``)."""
        answer = self.messages(history, [], mark, summary)
        if not self._condense:
            return answer, None
        kept = trim_history(history, self._condense_token_limit) if self._condense_token_limit else history
        return answer, condense_prompt(mark, kept)

    def retrieve(
        self, question: str, *, rerank: bool = True, conversation: ConversationQueries | None = None
    ) -> Retrieved:
        """Search, then rerank (a failed rerank is a notice, not an error); ``rerank=False``
        for a first look that a second search replaces. ``conversation``: a follow-up's
        conversation, searched with it (Docent's own retriever; another ignores it)."""
        t = time.perf_counter()
        if isinstance(self._retriever, HybridRetriever):
            found = self._retriever.search(question, conversation)
        else:
            found = Retrieval(self._retriever.retrieve(question))
        nodes = found.hits
        self.timings["retrieve_s"] = time.perf_counter() - t
        bundle = QueryBundle(question)
        notices: list[str] = []
        t = time.perf_counter()
        for post in self._postprocessors if rerank else []:
            if isinstance(post, GuardedRerank):
                nodes, said = post.rerank(nodes, bundle)
                notices.extend(said)
            else:
                nodes = post.postprocess_nodes(nodes, query_bundle=bundle)
        if self._postprocessors and rerank:
            self.timings["rerank_s"] = time.perf_counter() - t
        return Retrieved(nodes, notices, found.extras, found.stats)

    def evidence(
        self, question: str, nodes: list[NodeWithScore], about: Mapping[str, str] | None = None
    ) -> list[Evidence]:
        """The lines of the passages worth reading for ``question``, within the token budget;
        ``about``: what each document is about (by its name, or by a passage's node id where
        its section's subject is not its document's), written beside it."""
        passages = []
        for hit in nodes:
            meta = hit.node.metadata or {}
            file = str(meta.get("file_name") or meta.get("doc_key") or "document")
            about = about or {}
            subject = about.get(hit.node.node_id) or about.get(str(meta.get("doc_key") or meta.get("file_name") or ""))
            if subject:
                file = f"{file} ({subject})"
            page = meta.get("page_label") or meta.get("page")
            text = hit.node.get_content()
            if meta.get("context"):  # the page's title and table header above this chunk
                text = "\n".join(str(meta["context"]).split(" | ")) + "\n" + text
            passages.append((unfence(text), unfence(file), page, meta.get("heading")))
        return select_evidence(question, passages, self._context_tokens, self._count_tokens, self._idf)

    def messages(
        self, history: list[ChatMessage], evidence: list[Evidence], message: str, summary: Summary | None = None
    ) -> list[ChatMessage]:
        """The answering prompt: the system prompt, the summary of older turns, the recent
        history, then the sources and the question."""
        sources = "\n\n".join(ev.render() for ev in evidence)
        return [
            ChatMessage(role=MessageRole.SYSTEM, content=self._system_prompt),
            *([as_message(summary)] if summary else []),
            *history,
            ChatMessage(role=MessageRole.USER, content=QUESTION_PROMPT.format(sources=sources, question=message)),
        ]

    def stream_answer(
        self, messages: list[ChatMessage] | None, refusal: str = NO_ANSWER
    ) -> Generator[ChatResponse, None, None]:
        """The answer as it is written; ``None`` (nothing retrieved) says so (``refusal``)
        without the LLM."""
        if messages is None:
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=refusal), delta=refusal)
            return
        slot = getattr(self.llm, "answer_slot", None)  # the local model keeps a slot for answers
        stream = self.llm.stream_chat(messages, **({"slot": slot} if slot is not None else {}))
        written = ""
        try:
            for chunk in stream:
                yield chunk
                written += chunk.delta or ""
                if _ENDS.search(chunk.delta or "") and repeating_from(written) is not None:
                    return  # going round in a loop: the text before the repeat is the answer
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()  # the model stops writing (llama.cpp's request is closed)

    # ------------------------------------------------------------------ BaseChatEngine
    def _prepare(self, message: str, chat_history: list[ChatMessage] | None):
        if chat_history is not None:
            self._memory.set(chat_history)
        history = self._memory.get(input=message)
        question = self.condense(message, history)
        found = self.retrieve(question)
        asked, kept = standing(
            message, question, "typed" if found.nodes and self.quotes else self.condensed_by, history
        )
        messages = self.messages(kept, self.evidence(question, found.nodes), asked) if found.nodes else None
        source = ToolOutput(
            tool_name="retriever", content=str(found.nodes), raw_input={"message": question}, raw_output=found.nodes
        )
        return messages, source, found

    def stream_chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> StreamingAgentChatResponse:
        messages, source, found = self._prepare(message, chat_history)
        return StreamingAgentChatResponse(
            chat_stream=self.stream_answer(messages), sources=[source], source_nodes=found.nodes
        )

    def chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AgentChatResponse:
        messages, source, found = self._prepare(message, chat_history)
        text = without_repeat("".join(r.delta or "" for r in self.stream_answer(messages)))
        return AgentChatResponse(response=text, sources=[source], source_nodes=found.nodes)

    async def achat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AgentChatResponse:
        return await asyncio.to_thread(self.chat, message, chat_history)

    async def astream_chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> Any:
        raise NotImplementedError("Docent answers synchronously; use stream_chat")

    def reset(self) -> None:
        self._memory.reset()

    @property
    def chat_history(self) -> list[ChatMessage]:
        return self._memory.get_all()
