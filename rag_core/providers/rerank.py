"""Rerankers, as a registry of builder functions.

``cohere`` when a key is configured (``auto`` picks it then); ``local`` runs a
sentence-transformers cross-encoder from a folder the user gives (no PyPI package
ships cross-encoder weights, and nothing is fetched from a hub); ``none`` keeps the
retrieval order. Every reranker is wrapped in ``GuardedRerank``: if it fails (network
down, 401, 5xx, timeout) the answer still comes, with the top passages in retrieval
order and a notice that rerank was skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_core.errors import ConfigError
from rag_core.settings import DocentSettings

logger = logging.getLogger(__name__)


class GuardedRerank(BaseNodePostprocessor):
    """Runs an inner reranker; on any failure keeps the first ``top_n`` and says why.

    ``rerank`` returns the notice with the passages, per call: one reranker is shared by
    every session, so a notice kept on it would show in another user's chat."""

    top_n: int = 4
    label: str = "rerank"
    _inner: Any = PrivateAttr()

    def __init__(self, inner: BaseNodePostprocessor, top_n: int, label: str) -> None:
        super().__init__(top_n=top_n, label=label)
        self._inner = inner

    @classmethod
    def class_name(cls) -> str:
        return "GuardedRerank"

    def rerank(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> tuple[list[NodeWithScore], list[str]]:
        """The reranked passages and the notices of this call (empty unless rerank was skipped)."""
        if not nodes:
            return nodes, []
        try:
            return self._inner.postprocess_nodes(nodes, query_bundle=query_bundle), []
        except Exception as e:
            reason = _describe(e)
            logger.warning("%s skipped: %s", self.label, reason)
            return nodes[: self.top_n], [f"{self.label} was skipped ({reason}); passages are in retrieval order."]

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return self.rerank(nodes, query_bundle)[0]


def _describe(e: Exception) -> str:
    status = getattr(e, "status_code", None)
    if status == 401 or status == 403:
        return f"the key was refused (HTTP {status})"
    if status:
        return f"HTTP {status}"
    name = type(e).__name__
    if "Timeout" in name:
        return "timed out"
    if "Connect" in name or "Network" in name:
        return "service unreachable"
    return name


def build_cohere(settings: DocentSettings, http_client: Any = None) -> BaseNodePostprocessor:
    if not settings.cohere_api_key:
        raise ConfigError(
            "Cohere rerank needs a key: enter it on the Settings page or set COHERE_API_KEY "
            "(or DOCENT_COHERE_API_KEY); or choose rerank 'none'."
        )
    import httpx
    from cohere import ClientV2
    from llama_index.postprocessor.cohere_rerank import CohereRerank

    key = settings.cohere_api_key.get_secret_value()
    rerank = CohereRerank(top_n=settings.rerank_top_n, model=settings.cohere_model, api_key=key, max_retries=1)
    client = http_client or httpx.Client(timeout=settings.cohere_timeout)
    # Bounded wait, no ten retries: our own client with a timeout replaces the default one.
    # CohereRerank takes no client or timeout, so its private ``_client`` is set here;
    # tests/test_rerank.py pins that the installed version still calls it.
    rerank._client = ClientV2(api_key=key, timeout=settings.cohere_timeout, httpx_client=client)
    return GuardedRerank(rerank, settings.rerank_top_n, "Cohere rerank")


def build_local_cross_encoder(settings: DocentSettings, http_client: Any = None) -> BaseNodePostprocessor:
    folder = settings.local_rerank_model
    if not folder or not folder.is_dir():
        raise ConfigError(
            "rerank_provider 'local' needs local_rerank_model: a folder holding a sentence-transformers "
            "cross-encoder (for example a downloaded copy of cross-encoder/ms-marco-MiniLM-L-6-v2). "
            "It also needs `pip install sentence-transformers`."
        )
    try:
        from llama_index.core.postprocessor import SentenceTransformerRerank
    except ImportError as e:  # pragma: no cover
        raise ConfigError(f"{e}; pip install sentence-transformers") from e
    inner = SentenceTransformerRerank(model=str(folder), top_n=settings.rerank_top_n)
    return GuardedRerank(inner, settings.rerank_top_n, "Local rerank")


RERANKERS: dict[str, Callable[..., BaseNodePostprocessor]] = {
    "cohere": build_cohere,
    "local": build_local_cross_encoder,
}


def build_reranker(settings: DocentSettings, http_client: Any = None) -> BaseNodePostprocessor | None:
    """The reranker the settings ask for, or None."""
    name = settings.rerank_provider
    if name == "none":
        return None
    if name == "auto":
        if not settings.cohere_api_key:
            return None
        name = "cohere"
    try:
        builder = RERANKERS[name]
    except KeyError:
        known = ", ".join(["auto", "none", *RERANKERS])
        raise ConfigError(f"Unknown rerank provider {name!r}; known: {known}") from None
    return builder(settings, http_client=http_client)
