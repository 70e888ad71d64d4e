"""Keyword search: a small Okapi BM25 over the chunks stored in Chroma.

The BM25 index is built from the chunks Chroma holds and rebuilt only when the index
changes (``KeywordCache``, keyed by the index version and the document filter). Besides
chunk search it knows, per document, every term of its chunks and of its file name: the
document list of the fusion (``doc_scores``) and the relevance signals use that.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from typing import Any

from llama_index.core.schema import TextNode

from rag_core.index import VectorIndex
from rag_core.text import query_terms, tokenize


def doc_of(node: Any) -> str:
    """The document a chunk belongs to (its name)."""
    meta = node.metadata or {}
    return str(meta.get("doc_key") or meta.get("file_name") or "")


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
        self.by_id: dict[str, TextNode] = {node.node_id: node for node in nodes}
        # Per document: every term of its chunks and of its file name ("2023 Q1 NVDA.pdf").
        self.doc_terms: dict[str, set[str]] = defaultdict(set)
        for node in nodes:
            key = doc_of(node)
            if key not in self.doc_terms:
                self.doc_terms[key].update(tokenize(str(node.metadata.get("file_name") or key)))
        for term, plist in self.postings.items():
            for i, _ in plist:
                self.doc_terms[doc_of(nodes[i])].add(term)
        self.doc_df: Counter[str] = Counter(t for terms in self.doc_terms.values() for t in terms)
        self.doc_chunks: Counter[str] = Counter(doc_of(node) for node in nodes)

    def idf(self, term: str) -> float:
        """Inverse document frequency; a term found nowhere gets the highest value."""
        n = len(self.nodes)
        df = len(self.postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def coverage(self, query: str, text: str) -> float:
        """Share of the query's terms, weighted by idf, that ``text`` contains."""
        terms = query_terms(query)
        if not terms:
            return 0.0
        have = set(tokenize(text))
        weights = {t: self.idf(t) for t in terms}
        total = sum(weights.values()) or 1.0
        return sum(w for t, w in weights.items() if t in have) / total

    def doc_scores(self, query: str) -> dict[str, float]:
        """Per document, the idf-weighted share (idf over documents) of the query's terms
        found anywhere in it or in its file name: which documents the question is about."""
        terms = query_terms(query)
        n = len(self.doc_terms)
        if not terms or not n:
            return {}
        weights = {t: math.log(1 + (n - self.doc_df[t] + 0.5) / (self.doc_df[t] + 0.5)) for t in terms}
        total = sum(weights.values()) or 1.0
        return {doc: sum(w for t, w in weights.items() if t in have) / total for doc, have in self.doc_terms.items()}

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (node position, score) pairs."""
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
