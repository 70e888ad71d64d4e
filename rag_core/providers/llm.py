"""LLMs, as a registry of builder functions.

- ``local``: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, assembled from PyPI parts) on llama.cpp.
- ``openai``: any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, LM Studio).
- ``extractive``: no model at all; quotes the passage that best matches the question.
  Instant and deterministic: for weak machines, and for fast end-to-end tests.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
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
from llama_index.core.llms import LLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from rag_core.errors import ConfigError
from rag_core.prompts import CONDENSE_MARKER
from rag_core.settings import DocentSettings

ProgressFn = Callable[[str], None]  # a one-line status message


def build_local(settings: DocentSettings, progress: ProgressFn | None = None) -> LLM:
    from rag_core.model_store import ensure_local_model
    from rag_core.providers.local_llm import build_local_llm

    path = ensure_local_model(settings.model_dir, progress=progress)
    if progress:
        progress("Loading the local model…")
    return build_local_llm(
        path,
        context_window=settings.llm_context_window,
        max_new_tokens=settings.llm_max_new_tokens,
        temperature=settings.llm_temperature,
        n_threads=settings.llm_threads,  # 0: chosen per answer for the free cores
        short_spin=settings.llm_short_spin,
    )


def build_openai(settings: DocentSettings, progress: ProgressFn | None = None) -> LLM:
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    local_endpoint = re.match(r"https?://(localhost|127\.|\[::1\])", settings.openai_base_url or "")
    if not key and not local_endpoint:
        raise ConfigError(
            "The 'openai' LLM provider needs a key: enter it on the Settings page, or set OPENAI_API_KEY "
            "(or DOCENT_OPENAI_API_KEY). For a local endpoint such as Ollama, set the base URL to "
            "http://localhost:11434/v1 and any key."
        )
    try:
        from llama_index.llms.openai_like import OpenAILike
    except ImportError as e:  # pragma: no cover
        raise ConfigError("pip install llama-index-llms-openai-like") from e
    return OpenAILike(
        model=settings.openai_model,
        api_base=settings.openai_base_url,
        api_key=key or "unused",
        is_chat_model=True,
        context_window=settings.llm_context_window,
        max_tokens=settings.llm_max_new_tokens,
        temperature=settings.llm_temperature,
        timeout=settings.llm_timeout,
        max_retries=1,
    )


def build_extractive(settings: DocentSettings, progress: ProgressFn | None = None) -> LLM:
    return ExtractiveLLM()


LLMS: dict[str, Callable[..., LLM]] = {
    "local": build_local,
    "openai": build_openai,
    "extractive": build_extractive,
}


def build_llm(settings: DocentSettings, progress: ProgressFn | None = None) -> LLM:
    """The LLM named by ``settings.llm_provider``."""
    try:
        builder = LLMS[settings.llm_provider]
    except KeyError:
        raise ConfigError(f"Unknown LLM provider {settings.llm_provider!r}; known: {', '.join(LLMS)}") from None
    return builder(settings, progress)


# ---------------------------------------------------------------------------- extractive
_SOURCE = re.compile(r"^\[(\d+)\] (.*)$", re.M)  # "[2] report.pdf, page 4": a source's first line
_WORDS = re.compile(r"\w+", re.U)


class ExtractiveLLM(CustomLLM):
    """Answers by quoting the sentences of the retrieved passages that share most words
    with the question. Condensing joins the previous question to the follow-up."""

    delay: float = 0.0  # seconds between streamed words (tests of streaming set it)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=32768, num_output=512, is_chat_model=True, model_name="extractive")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer_prompt(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = ""
        for delta in self._words(self._answer_prompt(prompt)):
            text += delta
            yield CompletionResponse(text=text, delta=delta)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=self._answer_chat(messages)))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        text = ""
        for delta in self._words(self._answer_chat(messages)):
            text += delta
            yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)

    def _words(self, text: str):
        for piece in re.findall(r"\S+\s*", text):
            if self.delay:
                time.sleep(self.delay)
            yield piece

    def _answer_prompt(self, prompt: str) -> str:
        if CONDENSE_MARKER in prompt:
            return self._condense(prompt)
        return self._extract(prompt, prompt)

    def _answer_chat(self, messages: Sequence[ChatMessage]) -> str:
        last = next((m.content or "" for m in reversed(messages) if m.role == MessageRole.USER), "")
        context, _, question = last.rpartition("</documents>")
        return self._extract(context, question.strip() or last)

    @staticmethod
    def _condense(prompt: str) -> str:
        question = prompt.rsplit("Follow-up message:", 1)[-1].split(CONDENSE_MARKER)[0].strip()
        users = re.findall(r"^user: (.*)$", prompt, re.M | re.I)
        previous = users[-1].strip() if users else ""
        return f"{question} ({previous})" if previous and previous != question else question

    @staticmethod
    def _extract(context: str, question: str) -> str:
        """The sentence of the numbered sources that shares most words with the question,
        cited as the answering prompt asks ("[2]")."""
        blocks = _SOURCE.split(context.split("<documents>", 1)[-1])
        # split() gives [before, number, where, body, number, where, body, ...]
        sources = [(blocks[i], blocks[i + 1], blocks[i + 2]) for i in range(1, len(blocks) - 2, 3)]
        if not sources:
            return "The documents don't say."
        q = {w.lower() for w in _WORDS.findall(question) if len(w) > 2}
        best: tuple[float, str, str, str] = (-1.0, "", "", "")
        for number, where, body in sources:
            for sentence in re.split(r"(?<=[.!?。！？])\s+|\n+", body):
                words = {w.lower() for w in _WORDS.findall(sentence)}
                score = len(q & words) + min(len(sentence), 300) / 3000
                if sentence.strip() and sentence.strip() != "…" and score > best[0]:
                    best = (score, sentence.strip(), where.strip(), number)
        _, sentence, where, number = best
        return f"According to {where}: {sentence} [{number}]"
