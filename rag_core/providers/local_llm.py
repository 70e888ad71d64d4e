"""The default, fully offline LLM: Qwen2.5-Coder-1.5B-Instruct (GGUF) on llama.cpp via xllamacpp.

Why xllamacpp rather than llama-cpp-python: it ships prebuilt CPU wheels of
llama.cpp, so ``pip install`` takes seconds instead of compiling llama.cpp for
9-22 minutes on a 2-core machine (and needs no compiler), while first-token latency
and tokens/s on the same prompt were the same within noise. It also embeds
llama.cpp's own C++ server, which is thread safe and streams through a callback.

How it is wired:

* The loaded model is an engine shared by every ``LlamaCppLLM`` of the process, its
  generations one at a time (``llama_engine``).
* We format ChatML ourselves (``chatml``: the GGUF's template, minus tool calling) and
  send a raw prompt, so ``complete`` and ``chat`` share one code path, the prompt is
  testable without the model, and control tokens inside documents cannot forge turns.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.llm import default_completion_to_prompt

from rag_core.errors import ProviderError
from rag_core.providers.chatml import STOP_STRINGS, completion_to_chatml, messages_to_chatml
from rag_core.providers.llama_engine import ANSWER_SLOT, OTHER_SLOT, LlamaEngine, shared_engine

logger = logging.getLogger(__name__)
READ_AHEAD_PIECE_CHARS = 200  # about 50 tokens: under a second of prompt reading on two free cores

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def _raise_for_error(payload: dict[str, Any], context_window: int) -> None:
    error = payload.get("error") if isinstance(payload, dict) else None
    if not error:
        return
    message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        raise ProviderError(
            f"The prompt is too long for the local model ({error.get('n_prompt_tokens')} tokens, "
            f"context window {context_window}). Ask about fewer passages (lower top-k), shorten the "
            "chat history, or raise the LLM context window in the settings."
        )
    raise ProviderError(f"The local model failed to answer: {message}")


def _choice_text(payload: dict[str, Any]) -> str:
    choices = payload.get("choices") or [{}]
    return choices[0].get("text") or ""


# --------------------------------------------------------------------------- LLM


class LlamaCppLLM(CustomLLM):
    """LlamaIndex LLM running a local GGUF (Qwen2.5 ChatML) through xllamacpp, offline."""

    model_path: str = Field(description="Path of the GGUF model file.")
    context_window: int = Field(default=4096, gt=0, description="Context window (n_ctx), in tokens.")
    max_new_tokens: int = Field(default=512, gt=0, description="Longest answer, in tokens.")
    temperature: float = Field(default=0.1, ge=0.0, description="Sampling temperature.")
    n_threads: int = Field(
        default=0,
        description="CPU threads; 0 or less: chosen before each answer for the cores other programs leave free.",
    )
    seed: int = Field(default=0, description="Sampling seed, for repeatable answers.")
    short_spin: bool = Field(
        default=False,
        description="Threads waiting for each other spin briefly, then sleep (read at the process's first model load).",
    )

    _engine: LlamaEngine | None = PrivateAttr(default=None)

    # The llama.cpp slot answers are read in (``slot=`` of a call), apart from every other prompt,
    # so the answers' fixed beginning stays read between conversations (``llama_engine.SLOTS``).
    answer_slot: ClassVar[int] = ANSWER_SLOT
    other_slot: ClassVar[int] = OTHER_SLOT

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("messages_to_prompt", messages_to_chatml)
        super().__init__(**kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "LlamaCppLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_new_tokens,
            is_chat_model=True,
            model_name=MODEL_NAME,
        )

    # -- engine ------------------------------------------------------------------

    def _get_engine(self) -> LlamaEngine:
        if self._engine is None:
            self._engine = shared_engine(self.model_path, self.context_window, self.n_threads, self.short_spin)
        return self._engine

    def load(self) -> float:
        """Load the model now (e.g. behind a spinner); returns the seconds loading took."""
        engine = self._get_engine()
        engine.get_server()
        return engine.load_seconds or 0.0

    def reload(self) -> float:
        """Load the model afresh: every prompt llama.cpp cached is forgotten (benchmarks time
        prompt reading from the same empty cache). Returns the seconds loading took."""
        return self._get_engine().reload()

    def unload(self) -> None:
        """Free the model's memory (every LLM on this model file shares it); the next use loads it."""
        self._get_engine().unload()

    def _request(self, prompt: str, stream: bool, **kwargs: Any) -> dict[str, Any]:
        """The llama.cpp request; per-call ``max_tokens``/``temperature``/``seed``/``stop`` win."""

        def pick(name: str, default: Any) -> Any:
            value = kwargs.get(name)
            return default if value is None else value

        return {
            "prompt": prompt,
            "max_tokens": int(pick("max_tokens", self.max_new_tokens)),
            "temperature": float(pick("temperature", self.temperature)),
            "seed": int(pick("seed", self.seed)),
            "stop": [*STOP_STRINGS, *pick("stop", [])],
            "cache_prompt": bool(pick("cache_prompt", True)),  # reuse the KV cache of the shared prefix
            "id_slot": int(pick("slot", OTHER_SLOT)),  # answers keep their own slot (``answer_slot``)
            "stream": stream,
        }

    def _completion_prompt(self, prompt: str, formatted: bool) -> str:
        """A bare prompt becomes a ChatML user turn, unless the caller set ``completion_to_prompt``."""
        if formatted:
            return prompt
        custom = self.completion_to_prompt
        if custom is not None and custom is not default_completion_to_prompt:
            return custom(prompt)
        return completion_to_chatml(prompt, self.system_prompt)

    def _chat_prompt(self, messages: Sequence[ChatMessage]) -> str:
        return (self.messages_to_prompt or messages_to_chatml)(messages)

    def chat_prompt(self, messages: Sequence[ChatMessage]) -> str:
        """The prompt text ``chat``/``stream_chat`` send for ``messages``."""
        return self._chat_prompt(messages)

    def completion_prompt(self, prompt: str) -> str:
        """The prompt text ``complete`` sends for ``prompt``."""
        return self._completion_prompt(prompt, False)

    def read_ahead(
        self,
        prompts: Sequence[str],
        piece_chars: int = READ_AHEAD_PIECE_CHARS,
        slots: Sequence[int] | None = None,
    ) -> dict[str, Any]:
        """Read ``prompts`` (as ``chat_prompt``/``completion_prompt`` render them) into
        llama.cpp's prompt cache, so that a later prompt beginning with one of them reads only
        the rest; ``slots``: the slot each is read in (an answer's in ``answer_slot``; default
        ``other_slot``). In pieces of about ``piece_chars``, each extending the cached one;
        before each piece it gives way: it stops as soon as a generation waits for the model, or
        a newer read-ahead began. Never loads the model, never changes its threads. Returns the
        prompt tokens read and whether it stopped early."""
        engine = self._get_engine()
        ticket = engine.new_read_ahead()
        read = 0
        for k, prompt in enumerate(prompts):
            slot = slots[k] if slots is not None and k < len(slots) else self.other_slot
            for cut in _cuts(prompt, piece_chars):
                if engine.waiting or engine.read_ahead_ticket != ticket or engine.server is None:
                    return {"tokens": read, "stopped": True}
                with engine.lock:
                    server = engine.server
                    if server is None:
                        return {"tokens": read, "stopped": True}
                    piece = self._request(prompt[:cut], stream=False, max_tokens=0, slot=slot)
                    result = server.handle_completions(piece)
                timings = result.get("timings") if isinstance(result, dict) else None
                read += int((timings or {}).get("prompt_n") or 0)
        return {"tokens": read, "stopped": False}

    def _generate(self, prompt: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        engine = self._get_engine()
        with engine.generation():
            server, threads = engine.server_for_generation()
            try:
                result = server.handle_completions(self._request(prompt, stream=False, **kwargs))
            finally:
                engine.generation_done()
        _raise_for_error(result, self.context_window)
        if isinstance(result, dict):
            result["threads"] = threads
        return _choice_text(result), result

    def _generate_stream(self, prompt: str, **kwargs: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield ``(delta, raw_chunk)`` as llama.cpp produces them.

        xllamacpp delivers chunks to a callback on the calling thread and returns only
        at the end, so generation runs in a worker thread that feeds a queue. When the
        consumer stops early (generator closed) the callback asks llama.cpp to stop.
        """
        engine = self._get_engine()
        engine.get_server()  # a failed load is raised here, on the caller's thread
        request = self._request(prompt, stream=True, **kwargs)
        chunks: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        cancelled = threading.Event()

        figures: dict[str, Any] = {}  # the last chunk carries the timings (prompt tokens read, reused)

        def on_chunk(chunk: Any) -> bool:
            if isinstance(chunk, dict) and "timings" in chunk:
                figures["chunk"] = chunk
            chunks.put(("chunk", chunk))
            return cancelled.is_set() or engine.closing  # True asks llama.cpp to stop

        def worker() -> None:
            try:
                result = None
                with engine.generation():  # may queue behind another session's answer
                    if not cancelled.is_set():
                        server, threads = engine.server_for_generation()
                        try:
                            result = server.handle_completions(request, on_chunk)
                        finally:
                            engine.generation_done()
                        result = result if isinstance(result, dict) else figures.get("chunk")
                        if isinstance(result, dict):
                            result = {**result, "threads": threads}  # the threads this answer ran with
                chunks.put(("done", result))
            except BaseException as exc:
                chunks.put(("error", exc))

        thread = threading.Thread(target=worker, name="docent-llm-stream", daemon=True)
        thread.start()
        try:
            while True:
                kind, payload = chunks.get()
                if kind == "error":
                    raise ProviderError(f"The local model failed to answer: {payload}") from payload
                if isinstance(payload, dict):
                    _raise_for_error(payload, self.context_window)
                if kind == "done":
                    if isinstance(payload, dict):  # the final figures: prompt tokens read and reused, threads
                        yield "", payload
                    return
                delta = _choice_text(payload)
                if delta:
                    yield delta, payload
        finally:
            cancelled.set()

    # -- LlamaIndex API ----------------------------------------------------------

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        text, raw = self._generate(self._completion_prompt(prompt, formatted), **kwargs)
        return CompletionResponse(text=text, raw=raw)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        full_prompt = self._completion_prompt(prompt, formatted)

        def gen() -> CompletionResponseGen:
            text = ""
            for delta, raw in self._generate_stream(full_prompt, **kwargs):
                text += delta
                yield CompletionResponse(text=text, delta=delta, raw=raw)

        return gen()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        text, raw = self._generate(self._chat_prompt(messages), **kwargs)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), raw=raw)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        prompt = self._chat_prompt(messages)

        def gen() -> ChatResponseGen:
            text = ""
            for delta, raw in self._generate_stream(prompt, **kwargs):
                text += delta
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta, raw=raw)

        return gen()


def build_local_llm(
    model_path: Path,
    *,
    context_window: int = 4096,
    max_new_tokens: int = 512,
    temperature: float = 0.1,
    n_threads: int = 0,
    short_spin: bool = False,
) -> LlamaCppLLM:
    """Build the default local LLM for a verified GGUF (see ``rag_core.model_store``).

    The model itself loads on first use; call ``.load()`` to do it up front. ``n_threads``
    0: chosen before each answer for the free cores (``threads``).
    """
    return LlamaCppLLM(
        model_path=str(model_path),
        context_window=context_window,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        n_threads=n_threads,
        short_spin=short_spin,
    )


def _cuts(prompt: str, piece_chars: int) -> list[int]:
    """Where to end each piece of a read-ahead: after a space or line end near every
    ``piece_chars`` characters, the last at the prompt's end."""
    cuts: list[int] = []
    at = 0
    while len(prompt) - at > piece_chars:
        space = max(prompt.rfind(" ", at + 1, at + piece_chars + 1), prompt.rfind("\n", at + 1, at + piece_chars + 1))
        at = space if space > at else at + piece_chars
        cuts.append(at)
    return [*cuts, len(prompt)] if prompt else []
