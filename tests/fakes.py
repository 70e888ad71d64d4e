"""Fakes for what we don't run in unit tests: a scripted LLM. (The deterministic
embedding is rag_core's own ``HashEmbedding``, which ranks by shared words.)"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM


class ScriptedLLM(CustomLLM):
    """Answers from queues and records every prompt it was given.

    ``condense`` answers complete() calls (the condense step); ``answers`` answers chat
    calls. An exception in a queue is raised instead of answered.
    """

    _condense: deque = PrivateAttr(default_factory=deque)
    _answers: deque = PrivateAttr(default_factory=deque)
    _prompts: list = PrivateAttr(default_factory=list)
    _chats: list = PrivateAttr(default_factory=list)

    def __init__(self, answers: Sequence[Any] = (), condense: Sequence[Any] = (), **kw: Any) -> None:
        super().__init__(**kw)
        self._answers.extend(answers)
        self._condense.extend(condense)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=8192, num_output=256, is_chat_model=True, model_name="scripted")

    @property
    def prompts(self) -> list[str]:
        return self._prompts

    @property
    def chats(self) -> list[list[ChatMessage]]:
        return self._chats

    def script(self, answers: Sequence[Any] = (), condense: Sequence[Any] = ()) -> None:
        self._answers.extend(answers)
        self._condense.extend(condense)

    @staticmethod
    def _next(queue: deque, default: str) -> str:
        item = queue.popleft() if queue else default
        if isinstance(item, BaseException):
            raise item
        return item

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self._prompts.append(prompt)
        return CompletionResponse(text=self._next(self._condense, "standalone question"))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponseGen:
        text = self.complete(prompt).text
        yield CompletionResponse(text=text, delta=text)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponse:
        self._chats.append(list(messages))
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=self._next(self._answers, "ok")))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kw: Any) -> ChatResponseGen:
        self._chats.append(list(messages))
        text = self._next(self._answers, "ok")
        acc = ""
        for word in text.split(" "):
            delta = word if not acc else " " + word
            acc += delta
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=acc), delta=delta)
