"""The local model served once for a team's app processes: ``python -m rag_core serve-model``.

Each app process that uses the ``local`` provider loads its own copy of the model (1.1 GB,
seconds to load, a core's worth of generation each). With several app processes that is
one copy too many: this serves the local model once as an OpenAI-compatible HTTP server
(``/v1/chat/completions``), the llama.cpp server inside the installed runtime (xllamacpp),
and the app processes point at it with the ``openai`` provider:

    DOCENT_LLM_PROVIDER=openai
    DOCENT_OPENAI_BASE_URL=http://127.0.0.1:8081/v1
    DOCENT_OPENAI_MODEL=qwen2.5-coder-1.5b

It listens on loopback unless told otherwise. An address beyond loopback needs a key
(``--api-key`` or DOCENT_SERVE_API_KEY), or ``--no-api-key`` said on purpose, which is warned
about: without a key, anyone who reaches the port uses the model (``exposure``). A GPU machine serves the same API with vLLM or
Ollama instead (docs/team.md).
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from rag_core.errors import ConfigError, ModelError
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


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine alone (``localhost``, 127.x, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


def exposure(host: str, api_key: str | None, allow_no_key: bool) -> str | None:
    """What to warn of before serving on ``host`` (None: nothing). Beyond loopback without a key,
    a ``ConfigError`` unless ``allow_no_key`` says it is meant (then the warning)."""
    if api_key or is_loopback(host):
        return None
    if not allow_no_key:
        raise ConfigError(
            f"Refusing to serve the model on {host} without a key: anyone who can reach that address could use it. "
            "Give a key with --api-key KEY (or DOCENT_SERVE_API_KEY) and set the same one as DOCENT_OPENAI_API_KEY "
            "in the app processes; or listen on 127.0.0.1; or, on a network you trust, pass --no-api-key."
        )
    return (
        f"WARNING: serving the model on {host} without a key (--no-api-key): anyone who can reach this address "
        "can use it. Give a key with --api-key KEY to close it."
    )


def start_model_server(
    settings: DocentSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 8081,
    parallel: int = 2,
    api_key: str | None = None,
    allow_no_key: bool = False,
    progress: Any = None,
) -> ServedModel:
    """Assemble the local model if needed, load it and open llama.cpp's HTTP API. Beyond
    loopback, without ``api_key`` and ``allow_no_key``: a ``ConfigError`` before anything is loaded.

    ``parallel`` slots answer at once, each with the full ``llm_context_window``; more
    slots serve more people at once, each answer a little slower on a CPU."""
    exposure(host, api_key, allow_no_key)
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
