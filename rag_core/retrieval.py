"""Retrieval: vector search over Chroma fused with BM25 keyword search.

The default embedding (MiniLM) is English-only and truncates at 256 word pieces, so
keyword search carries names, figures and Chinese text. The BM25 index is built from
the chunks stored in Chroma and rebuilt only when the index changes. Tokens are
lower-cased words plus character bigrams for CJK runs, which needs no dictionary.
Results are fused by reciprocal rank (RRF, k=60).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, defaultdict
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from rag_core.index import VectorIndex

_LATIN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*", re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STOP = frozenset(
    "a an the of to in on for and or is are was were be been it its this that these those what which who whom "
    "how why when where do does did can could would should will shall may might with by from as at about into "
    "than then there their they them he she his her you your we our i me my not no yes".split()
)
RRF_K = 60


def tokenize(text: str) -> list[str]:
    """Latin words (no stop words) and CJK character bigrams (and single characters)."""
    text = text.lower()
    tokens = [_stem(w) for w in _LATIN.findall(text) if w not in _STOP]
    for run in _CJK.findall(text):
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def _stem(word: str) -> str:
    """Plural/third-person 's' only: 'delivers' matches 'deliver', 'pumps' matches 'pump'."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and not word[0].isdigit():
        return word[:-1]
    return word


class BM25:
    """A small Okapi BM25 over a fixed list of nodes."""

    def __init__(self, nodes: list[TextNode], k1: float = 1.2, b: float = 0.75) -> None:
        self.nodes = nodes
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for i, node in enumerate(nodes):
            counts = Counter(tokenize(node.get_content()))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((i, tf))
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        n = len(self.nodes)
        scores: dict[int, float] = defaultdict(float)
        for term in set(tokenize(query)):
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for i, tf in plist:
                denom = tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.avg or 1))
                scores[i] += idf * tf * (self.k1 + 1) / denom
        return sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]


class KeywordCache:
    """BM25 indexes keyed by the index version and the document filter."""

    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._cache: dict[Any, BM25] = {}

    def get(self, names: list[str] | None) -> BM25:
        key = (self.index.version, tuple(sorted(names)) if names else None)
        with self._lock:
            bm = self._cache.get(key)
            if bm is None:
                self._cache = {k: v for k, v in self._cache.items() if k[0] == key[0]}
                bm = BM25(self.index.all_nodes(names))
                self._cache[key] = bm
            return bm


def doc_filter(names: list[str] | None) -> MetadataFilters | None:
    if not names:
        return None
    return MetadataFilters(filters=[MetadataFilter(key="doc_key", value=list(names), operator=FilterOperator.IN)])


class HybridRetriever(BaseRetriever):
    """Vector (Chroma) + BM25, fused by reciprocal rank, or vectors alone.

    The fused score is scaled so that rank 1 in both lists is 1.0; the per-list scores
    of the last call are in ``last_extras`` (by node id) for the sources display.
    """

    def __init__(
        self,
        index: VectorIndex,
        keywords: KeywordCache,
        top_k: int = 5,
        mode: str = "hybrid",
        similarity_cutoff: float = 0.0,
        names: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.index = index
        self.keywords = keywords
        self.top_k = top_k
        self.mode = mode
        self.similarity_cutoff = similarity_cutoff
        self.names = names
        self.last_stats: dict[str, Any] = {}
        self.last_extras: dict[str, dict[str, float]] = {}

    def _vector(self, query: QueryBundle, k: int) -> list[NodeWithScore]:
        if self.index.collection.count() == 0:
            return []
        embedding = self.index.embed_model.get_query_embedding(query.query_str)
        result = self.index.vector_store.query(
            VectorStoreQuery(query_embedding=embedding, similarity_top_k=k, filters=doc_filter(self.names))
        )
        hits = []
        for node, score in zip(result.nodes or [], result.similarities or []):
            if self.similarity_cutoff and score < self.similarity_cutoff:
                continue
            hits.append(NodeWithScore(node=node, score=float(score)))
        return hits

    def _keyword(self, query: QueryBundle, k: int) -> list[NodeWithScore]:
        bm = self.keywords.get(self.names)
        return [NodeWithScore(node=bm.nodes[i], score=s) for i, s in bm.search(query.query_str, k)]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        pool = max(self.top_k * 3, 10)
        vec = self._vector(query_bundle, pool)
        if self.mode == "vector":
            self.last_stats = {"vector_hits": len(vec), "keyword_hits": 0}
            return vec[: self.top_k]
        kw = self._keyword(query_bundle, pool)
        self.last_stats = {"vector_hits": len(vec), "keyword_hits": len(kw)}
        fused: dict[str, float] = defaultdict(float)
        by_id: dict[str, NodeWithScore] = {}
        extras: dict[str, dict[str, float]] = defaultdict(dict)
        for name, hits in (("vector_score", vec), ("keyword_score", kw)):
            top = max((float(h.score or 0.0) for h in hits), default=0.0) or 1.0
            for rank, hit in enumerate(hits):
                nid = hit.node.node_id
                # RRF, with ties (rank 1 + rank 2 vs rank 2 + rank 1) broken by relative score.
                fused[nid] += 1.0 / (RRF_K + rank + 1) + 1e-5 * float(hit.score or 0.0) / top
                extras[nid][name] = round(float(hit.score or 0.0), 4)
                by_id.setdefault(nid, hit)
        best = 2.0 / (RRF_K + 1)
        ranked = sorted(fused.items(), key=lambda x: (-x[1], x[0]))[: self.top_k]
        self.last_extras = {nid: extras[nid] for nid, _ in ranked}
        return [NodeWithScore(node=by_id[nid].node, score=round(score / best, 4)) for nid, score in ranked]
