"""The models a chat needs, built on first use: the LLM and the reranker.

The local LLM takes a while to assemble and load, and a page that only lists documents
should not wait for it; so the composition root holds this loader and the chat service
asks it for the models when it answers. One loader per context, shared by every session.
"""

from __future__ import annotations

import logging
import threading
import time

from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from rag_core.providers.llm import ProgressFn, build_llm
from rag_core.providers.rerank import build_reranker
from rag_core.settings import DocentSettings

_UNSET = object()
logger = logging.getLogger(__name__)


class ModelLoader:
    """Builds the LLM (and loads its weights) and the reranker once, on first use.

    Tests hand in ready-made fakes (``llm=``, ``reranker=``)."""

    def __init__(self, settings: DocentSettings, *, llm: LLM | None = None, reranker: object = _UNSET) -> None:
        self.settings = settings
        self._llm = llm
        self._loaded = False
        self._reranker: BaseNodePostprocessor | None = None if reranker is _UNSET else reranker  # type: ignore[assignment]
        self._reranker_built = reranker is not _UNSET
        self._lock = threading.Lock()  # held while the LLM is built and loaded
        self._preload_lock = threading.Lock()  # held only to start a preload: never waits on a load
        self.load_seconds = 0.0  # how long building and loading the LLM took, once
        self.loading = ""  # what a background load (``preload``) is doing now; "" when idle
        self._preload: threading.Thread | None = None

    def llm(self, progress: ProgressFn | None = None) -> LLM:
        """The LLM, built and loaded on first use (assembling the local model if needed)."""
        with self._lock:
            if self._loaded and self._llm is not None:
                return self._llm
            started = time.perf_counter()
            if self._llm is None:
                self._llm = build_llm(self.settings, progress)
            load = getattr(self._llm, "load", None)
            if callable(load):
                if progress:
                    progress("Loading the local model into memory…")
                load()
            self._loaded = True
            self.load_seconds = time.perf_counter() - started
            return self._llm

    def preload(self) -> bool:
        """Start building and loading the LLM in a background thread, once, so that the first
        question does not wait for it; ``loading`` says what it is doing. An answer asked
        meanwhile waits for the same load (the lock), never loads twice. A failed load is
        logged and left to the first answer, which reports it. Returns True if a load runs."""
        with self._preload_lock:  # not the load's lock: a page run during a load is not held up
            if self._loaded or (self._preload is not None and self._preload.is_alive()):
                return not self._loaded
            self.loading = "Starting…"

            def work() -> None:
                try:
                    self.llm(progress=lambda message: setattr(self, "loading", message))
                except Exception as e:  # reported again, with its fix, by the first answer
                    logger.warning("loading the model in the background failed: %s", type(e).__name__)
                finally:
                    self.loading = ""

            self._preload = threading.Thread(target=work, name="docent-model-preload", daemon=True)
            self._preload.start()
            return True

    @property
    def llm_ready(self) -> bool:
        """True once the LLM is built and loaded (the next answer will not wait for it)."""
        return self._loaded

    def reranker(self) -> BaseNodePostprocessor | None:
        """The reranker the settings ask for (None: keep the retrieval order)."""
        with self._lock:
            if not self._reranker_built:
                self._reranker = build_reranker(self.settings)
                self._reranker_built = True
            return self._reranker
