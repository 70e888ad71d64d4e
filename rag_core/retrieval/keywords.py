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

import numpy as np
from llama_index.core.schema import TextNode

from rag_core.index import VectorIndex
from rag_core.text import query_terms, tokenize


def doc_of(node: Any) -> str:
    """The document a chunk belongs to (its name)."""
    meta = node.metadata or {}
    return str(meta.get("doc_key") or meta.get("file_name") or "")


class BM25:
    """Okapi BM25 over a fixed list of nodes, its postings held as numpy arrays: a search adds
    one precomputed weight array per query term, so it stays fast at 100,000 chunks."""

    def __init__(self, nodes: list[TextNode], k1: float = 1.2, b: float = 0.75) -> None:
        self.nodes = nodes
        self.k1, self.b = k1, b
        counts = [Counter(tokenize(node.get_content())) for node in nodes]
        self.lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        self.avg = float(self.lengths.mean()) if len(nodes) else 0.0
        postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i, c in enumerate(counts):
            for term, count in c.items():
                docs, tfs = postings[term]
                docs.append(i)
                tfs.append(count)
        n = len(nodes)
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (self.avg or 1))
        # term -> (node positions, BM25 weight of the term in each): idf * tf (k1 + 1) / (tf + norm)
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, (docs, tfs) in postings.items():
            idx = np.array(docs, dtype=np.int32)
            tf = np.array(tfs, dtype=np.float64)
            idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            self.postings[term] = (idx, idf * tf * (self.k1 + 1) / (tf + norm[idx]))
        self.by_id: dict[str, TextNode] = {node.node_id: node for node in nodes}
        # Per document: every term of its chunks and of its file name ("2023 Q1 NVDA.pdf").
        self.doc_terms: dict[str, set[str]] = defaultdict(set)
        for node, c in zip(nodes, counts, strict=True):
            key = doc_of(node)
            if key not in self.doc_terms:
                self.doc_terms[key].update(tokenize(str(node.metadata.get("file_name") or key)))
            self.doc_terms[key].update(c)
        self.doc_df: Counter[str] = Counter(t for terms in self.doc_terms.values() for t in terms)
        self.doc_chunks: Counter[str] = Counter(doc_of(node) for node in nodes)

    def idf(self, term: str) -> float:
        """Inverse document frequency; a term found nowhere gets the highest value."""
        n = len(self.nodes)
        found = self.postings.get(term)
        df = len(found[0]) if found is not None else 0
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
        """The ``k`` best (node position, score) pairs, ties by position."""
        scores = np.zeros(len(self.nodes), dtype=np.float64)
        hit = False
        for term in sorted(set(tokenize(query))):
            found = self.postings.get(term)
            if found is not None:
                scores[found[0]] += found[1]
                hit = True
        if not hit:
            return []
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            top = np.argpartition(-scores[candidates], k - 1)[:k]
            # keep every candidate tied with the k-th score, so ties resolve by position as before
            kth = scores[candidates[top]].min()
            candidates = candidates[scores[candidates] >= kth]
        order = np.lexsort((candidates, -scores[candidates]))[:k]
        return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


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
