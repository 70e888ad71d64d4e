"""The chat engine: condense a follow-up, retrieve, rerank, fence the passages, answer.

A LlamaIndex ``BaseChatEngine`` whose steps are public, so that the service can time
them and show the sources before the answer starts:

    condense(message, history) -> standalone question   (skipped on a first turn)
    retrieve(question)         -> passages + notices      (retriever, rerank, fence)
    messages(history, passages, message) -> the prompt    (system + history + question)

The prompt is the one LlamaIndex's ``CondensePlusContextChatEngine`` builds (the passages
fenced in ``<documents>`` inside the system message, then the history, then the
question), written out here rather than through its private ``_run_c3``. The engine
holds no memory between turns: the service loads the session's history from SQLite.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, cast

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.generic_utils import messages_to_history_str
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine.types import (
    AgentChatResponse,
    BaseChatEngine,
    StreamingAgentChatResponse,
    ToolOutput,
)
from llama_index.core.llms import LLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from rag_core.prompts import CONDENSE_PROMPT, NO_ANSWER
from rag_core.providers.rerank import GuardedRerank


class FencePassages(BaseNodePostprocessor):
    """Formats each passage for the LLM as ``<passage file_name=".." page="..">…</passage>``
    and neutralises a closing tag inside the text, so document text cannot end the fence."""

    @classmethod
    def class_name(cls) -> str:
        return "FencePassages"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        out = []
        for hit in nodes:
            node = cast(TextNode, hit.node.model_copy())
            node.text = re.sub(
                r"</?\s*(passage|documents)", lambda m: m.group(0).replace("<", "‹"), node.text, flags=re.I
            )
            node.text_template = "<passage {metadata_str}>\n{content}\n</passage>"
            node.metadata_template = '{key}="{value}"'
            node.metadata_separator = " "
            node.excluded_llm_metadata_keys = [k for k in node.metadata if k not in ("file_name", "page", "heading")]
            out.append(NodeWithScore(node=node, score=hit.score))
        return out


def trim_history(messages: list[ChatMessage], token_limit: int, question: str | None = None) -> list[ChatMessage]:
    """The most recent messages that fit in ``token_limit`` tokens (as the memory buffer trims)."""
    if not messages:
        return []
    memory = ChatMemoryBuffer.from_defaults(chat_history=list(messages), token_limit=max(token_limit, 1))
    return memory.get(input=question)


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


def condense_question(llm: LLM, question: str, history: list[ChatMessage]) -> str:
    """One LLM call: ``question`` rewritten to stand alone, given ``history`` (already trimmed)."""
    prompt = CONDENSE_PROMPT.format(chat_history=messages_to_history_str(history), question=question)
    return clean_condensed(str(llm.complete(prompt)), question)


@dataclass
class Retrieved:
    """What one search found: the passages (fenced for the prompt) and notices (rerank skipped...)."""

    nodes: list[NodeWithScore]
    notices: list[str] = field(default_factory=list)


class DocentChatEngine(BaseChatEngine):
    """Condense + retrieve + answer with the history and the fenced passages."""

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: LLM,
        memory: ChatMemoryBuffer,
        *,
        context_prompt: str,
        condense: bool = True,
        condense_token_limit: int = 0,
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
    ) -> None:
        self._retriever = retriever
        self._llm = llm
        self._memory = memory
        self._context_prompt = context_prompt
        self._condense = condense
        self._condense_token_limit = condense_token_limit
        self._postprocessors = [*(node_postprocessors or []), FencePassages()]
        self.timings: dict[str, float] = {}

    # ------------------------------------------------------------------ steps
    def condense(self, message: str, history: list[ChatMessage]) -> str:
        """The standalone question to search with (``message`` itself on a first turn)."""
        if not self._condense or not history:
            return message
        t = time.perf_counter()
        if self._condense_token_limit:
            history = trim_history(history, self._condense_token_limit)
        question = condense_question(self._llm, message, history)
        self.timings["condense_s"] = time.perf_counter() - t
        return question

    def retrieve(self, question: str) -> Retrieved:
        """Search, then rerank (a failed rerank is a notice, not an error), then fence."""
        t = time.perf_counter()
        nodes = self._retriever.retrieve(question)
        bundle = QueryBundle(question)
        notices: list[str] = []
        for post in self._postprocessors:
            if isinstance(post, GuardedRerank):
                nodes, said = post.rerank(nodes, bundle)
                notices.extend(said)
            else:
                nodes = post.postprocess_nodes(nodes, query_bundle=bundle)
        self.timings["retrieve_s"] = time.perf_counter() - t
        return Retrieved(nodes, notices)

    def messages(self, history: list[ChatMessage], nodes: list[NodeWithScore], message: str) -> list[ChatMessage]:
        """The answering prompt: the system message with the passages, the history, the question."""
        texts = [n.node.get_content(metadata_mode=MetadataMode.LLM).strip() for n in nodes]
        context = "\n\n".join(t for t in texts if t)
        system = self._context_prompt.replace("{context_str}", context)
        return [
            ChatMessage(role=self._llm.metadata.system_role, content=system),
            *history,
            ChatMessage(role=MessageRole.USER, content=message),
        ]

    def stream_answer(self, messages: list[ChatMessage] | None) -> Generator[ChatResponse, None, None]:
        """The answer as it is written; ``None`` (nothing retrieved) says so without the LLM."""
        if messages is None:
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=NO_ANSWER), delta=NO_ANSWER)
            return
        yield from self._llm.stream_chat(messages)

    # ------------------------------------------------------------------ BaseChatEngine
    def _prepare(self, message: str, chat_history: list[ChatMessage] | None):
        if chat_history is not None:
            self._memory.set(chat_history)
        history = self._memory.get(input=message)
        question = self.condense(message, history)
        found = self.retrieve(question)
        messages = self.messages(history, found.nodes, message) if found.nodes else None
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
        text = "".join(r.delta or "" for r in self.stream_answer(messages))
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
