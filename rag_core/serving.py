"""The local model served once for a team's app processes: ``python -m rag_core serve-model``.

Each app process that uses the ``local`` provider loads its own copy of the model (1.1 GB,
seconds to load, a core's worth of generation each). With several app processes that is
one copy too many: this serves the local model once as an OpenAI-compatible HTTP server
(``/v1/chat/completions``), the llama.cpp server inside the installed runtime (xllamacpp),
and the app processes point at it with the ``openai`` provider:

    DOCENT_LLM_PROVIDER=openai
    DOCENT_OPENAI_BASE_URL=http://127.0.0.1:8081/v1
    DOCENT_OPENAI_MODEL=qwen2.5-coder-1.5b

It listens on loopback unless told otherwise; ``--api-key`` (or DOCENT_SERVE_API_KEY) makes it
ask for a key, for when it must listen wider. A GPU machine serves the same API with vLLM or
Ollama instead (docs/team.md).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from rag_core.errors import ModelError
from rag_core.model_store import ensure_local_model
from rag_core.providers.llama_engine import check_gguf_file, resolve_threads
from rag_core.settings import DocentSettings

logger = logging.getLogger(__name__)

MODEL_NAME = "qwen2.5-coder-1.5b"  # what /v1/models lists, and DOCENT_OPENAI_MODEL names


@dataclass
class ServedModel:
    """A running server: where it listens, and the runtime object that keeps it running."""

    url: str
    model: str
    server: Any
    load_seconds: float


def start_model_server(
    settings: DocentSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 8081,
    parallel: int = 2,
    api_key: str | None = None,
    progress: Any = None,
) -> ServedModel:
    """Assemble the local model if needed, load it and open llama.cpp's HTTP API.

    ``parallel`` slots answer at once, each with the full ``llm_context_window``; more
    slots serve more people at once, each answer a little slower on a CPU."""
    path = ensure_local_model(settings.model_dir, progress=progress)
    check_gguf_file(path)
    import xllamacpp

    threads = resolve_threads(settings.llm_threads)
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = MODEL_NAME
    params.n_parallel = max(1, parallel)
    params.n_ctx = settings.llm_context_window * params.n_parallel  # split among the slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.offline = True  # never fetch anything from a model hub
    params.ui = False
    params.verbosity = 0 if not logger.isEnabledFor(logging.DEBUG) else 3
    params.hostnames = [host]
    params.port = port
    if api_key:
        params.api_keys = [api_key]
    started = time.perf_counter()
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:
        raise ModelError(
            f"llama.cpp could not serve the local model {path} on {host}:{port}: {exc}. "
            "Is the port taken? Choose another with --port."
        ) from exc
    return ServedModel(f"http://{host}:{port}/v1", MODEL_NAME, server, time.perf_counter() - started)


def serve_forever(served: ServedModel) -> None:
    """Block until SIGINT or SIGTERM; the server stops with the process."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    while not stop.wait(3600):
        pass
