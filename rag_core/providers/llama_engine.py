"""The local model loaded once per process: llama.cpp's server inside xllamacpp, called in-process.

* ``xllamacpp.Server`` always opens a listener for llama.cpp's HTTP API, which we
  never use: we call ``handle_completions`` in-process. To keep the model off the
  network it listens on a Unix socket inside a private temporary folder (POSIX) or
  on 127.0.0.1 with a random port (elsewhere), and in both cases behind a random API
  key, so neither other users nor browser pages can reach it.
* One engine (loaded weights + KV cache) per model file and context size is shared
  by every ``LlamaCppLLM`` in the process, loaded lazily on first use under a lock:
  Streamlit builds objects per session, and two copies of a 1 GB model would double
  the start time and memory.
* A per-engine lock serialises generations: on a 2-core machine two answers at once
  are not faster than one after the other, and a single llama.cpp slot keeps the
  whole context window for one prompt. Concurrent sessions queue.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from rag_core.errors import ModelError

logger = logging.getLogger(__name__)


class LlamaEngine:
    """One loaded model: the xllamacpp server plus the lock that serialises generations."""

    def __init__(self, model_path: str, context_window: int, n_threads: int) -> None:
        self.model_path = model_path
        self.context_window = context_window
        self.n_threads = n_threads
        self.lock = threading.Lock()
        self.server: Any = None
        self.load_seconds: float | None = None
        self._load_lock = threading.Lock()

    def get_server(self) -> Any:
        """Load the model on first use; later calls return the same server."""
        if self.server is not None:
            return self.server
        with self._load_lock:
            if self.server is None:
                self.server = self._load()
        return self.server

    def _load(self) -> Any:
        path = Path(self.model_path)
        check_gguf_file(path)
        try:
            import xllamacpp
        except ImportError as exc:  # pragma: no cover - xllamacpp is a hard dependency
            raise ModelError(
                f"The local LLM runtime xllamacpp cannot be imported ({exc}). "
                "Run `pip install -r requirements.txt`, or choose another LLM provider."
            ) from exc

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.context_window
        params.n_parallel = 1  # one slot: the whole context window for one prompt
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.offline = True  # never fetch anything from a model hub
        params.ui = False
        params.verbosity = 0 if not logger.isEnabledFor(logging.DEBUG) else 3
        params.api_keys = [secrets.token_urlsafe(32)]
        socket_dir = None
        if os.name == "posix":
            socket_dir = tempfile.mkdtemp(prefix="docent-llm-")  # mode 0700: private to this user
            # Removed at exit; the Server cannot be weak-referenced, and engines live until exit.
            weakref.finalize(self, shutil.rmtree, socket_dir, True)
            params.hostnames = [os.path.join(socket_dir, "llama.sock")]
        else:  # pragma: no cover - Windows: loopback, random port, random key
            params.hostnames = ["127.0.0.1"]
            params.port = 0

        logger.info("Loading local LLM %s (n_ctx=%d, threads=%d)", path, self.context_window, self.n_threads)
        started = time.perf_counter()
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:
            if socket_dir:
                shutil.rmtree(socket_dir, ignore_errors=True)
            raise ModelError(
                f"llama.cpp (xllamacpp) could not load the local model {path}: {exc}. "
                "The file may be damaged (delete it to have it assembled again), or the machine "
                "may lack memory (about 2 GB free is needed); otherwise choose another LLM provider."
            ) from exc
        self.load_seconds = time.perf_counter() - started
        logger.info("Local LLM loaded in %.1f s", self.load_seconds)
        return server


_ENGINES: dict[tuple[str, int, int], LlamaEngine] = {}
_ENGINES_LOCK = threading.Lock()


def shared_engine(model_path: str, context_window: int, n_threads: int) -> LlamaEngine:
    """The shared engine for this model file and load-time settings (sampling is per request)."""
    key = (str(Path(model_path).expanduser().resolve()), context_window, n_threads)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = LlamaEngine(*key)
        return engine


def check_gguf_file(path: Path) -> None:
    """Fail with a clear message before llama.cpp answers with a bare 'failed to init'."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(
            f"The local model file {path} cannot be read ({exc}). "
            "Start the app again to have it assembled, or choose another LLM provider."
        ) from exc
    if magic != b"GGUF":
        raise ModelError(f"{path} is not a GGUF model file. Delete it to have it assembled again.")


def resolve_threads(n_threads: int) -> int:
    return n_threads if n_threads > 0 else max(1, os.cpu_count() or 1)
