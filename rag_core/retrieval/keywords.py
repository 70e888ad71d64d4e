"""Keyword search: a small Okapi BM25 over the chunks stored in Chroma.

The BM25 index is built from the chunks Chroma holds and rebuilt only when the index
changes (``KeywordCache``, keyed by the index version and the document filter). Besides
chunk search it knows, per document, every term of its chunks and of its file name: the
document list of the fusion (``doc_scores``) and the relevance signals use that.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from llama_index.core.schema import TextNode

from rag_core.index import VectorIndex
from rag_core.text import period_aliases, query_terms, tokenize


def search_text(node: Any) -> str:
    """What keyword search reads of a chunk: its own text. The title and table header its page
    gives it (``context``, see ``transforms.chunk_context``) are for the answering model only:
    searched too, they made the chunks of a statement page alike and cost the right page on
    precise questions (docs/evaluation.md)."""
    return node.get_content()


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
        counts = [Counter(tokenize(search_text(node))) for node in nodes]
        self._chunks = _Postings(counts, k1, b)
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
        # The terms of each document's file name ("2023 Q1 NVDA.pdf" → 2023, q1, nvda): they name it.
        self.name_terms = {doc: set(tokenize(_stem_of(str(doc)))) for doc in self.doc_terms}
        self.name_df: Counter[str] = Counter(t for terms in self.name_terms.values() for t in terms)
        # Pages (of PDFs): the chunks of each, and BM25 over whole pages.
        self.page_nodes: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, node in enumerate(nodes):
            page = (node.metadata or {}).get("page")
            if isinstance(page, int):
                self.page_nodes[(doc_of(node), page)].append(i)
        self.page_keys = list(self.page_nodes)
        self._pages = _Postings(
            [sum((counts[i] for i in self.page_nodes[key]), Counter()) for key in self.page_keys], k1, b
        )

    def idf(self, term: str) -> float:
        """Inverse document frequency; a term found nowhere gets the highest value."""
        return self._chunks.idf(term)

    def coverage(self, query: str, text: str) -> float:
        """Share of the query's terms, weighted by idf, that ``text`` contains."""
        terms = query_terms(query)
        if not terms:
            return 0.0
        have = set(tokenize(text))
        weights = {t: self.idf(t) for t in terms}
        total = sum(weights.values()) or 1.0
        return sum(w for t, w in weights.items() if t in have) / total

    def doc_scores(self, query: str, name_weight: float = 0.0) -> dict[str, float]:
        """Per document, the idf-weighted share (idf over documents) of the query's terms
        found anywhere in it or in its file name: which documents the question is about. With
        ``name_weight``, plus that weight times the share of the query's terms that are in
        file names found in this one's ("the Q3 2022 10-Q" picks "2022 Q3 AAPL.pdf" out of
        four Apple filings that all mention both words)."""
        terms = query_terms(query) | period_aliases(query)
        n = len(self.doc_terms)
        if not terms or not n:
            return {}
        weights = {t: math.log(1 + (n - self.doc_df[t] + 0.5) / (self.doc_df[t] + 0.5)) for t in terms}
        total = sum(weights.values()) or 1.0
        scores = {doc: sum(w for t, w in weights.items() if t in have) / total for doc, have in self.doc_terms.items()}
        named = {
            t: math.log(1 + (n - self.name_df[t] + 0.5) / (self.name_df[t] + 0.5)) for t in terms if self.name_df[t]
        }
        if name_weight > 0 and named:
            total_named = sum(named.values())
            for doc, have in self.name_terms.items():
                scores[doc] += name_weight * sum(w for t, w in named.items() if t in have) / total_named
        return scores

    def names_in(self, query: str) -> list[tuple[str, list[str]]]:
        """The names in ``query`` — capitalised words inside the sentence (not its first word):
        "Tesla", "Tesla's", "Johnson Controls", "COP26" — each with its search terms."""
        out = []
        for match in _NAME.finditer(query):
            start = match.start()
            if start == 0 or query[:start].rstrip().endswith((".", "?", "!", ":", '"')):
                continue
            terms = [t for t in tokenize(match.group(0)) if not t.isdigit() and len(t) > 1 and t not in _NOT_NAMES]
            if terms:
                out.append((match.group(0).removesuffix("'s").removesuffix("’s"), terms))
        return out

    def mentions(self, docs: set[str], terms: list[str]) -> bool:
        """Whether any of ``docs`` (document keys) holds one of ``terms``, in its text or file name."""
        return any(t in self.doc_terms.get(d, ()) or t in self.name_terms.get(d, ()) for d in docs for t in terms)

    def search_pages(self, query: str, k: int) -> list[tuple[tuple[str, int], float]]:
        """The ``k`` best pages ((document, page), score) by BM25 over whole pages."""
        return [(self.page_keys[i], score) for i, score in self._pages.search(tokenize(query), k)]

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best (node position, score) pairs, ties by position."""
        return self._chunks.search(tokenize(query), k)


class _Postings:
    """BM25 over a list of term counts, postings as numpy arrays: a search adds one weight
    array per query term, so it stays fast at 100,000 chunks."""

    def __init__(self, counts: list[Counter[str]], k1: float, b: float) -> None:
        self.n = len(counts)
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        avg = float(lengths.mean()) if self.n else 0.0
        collected: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i, c in enumerate(counts):
            for term, count in c.items():
                docs, tfs = collected[term]
                docs.append(i)
                tfs.append(count)
        norm = k1 * (1 - b + b * lengths / (avg or 1))
        # term -> (positions, BM25 weight of the term at each): idf * tf (k1 + 1) / (tf + norm)
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, (docs, tfs) in collected.items():
            idx = np.array(docs, dtype=np.int32)
            tf = np.array(tfs, dtype=np.float64)
            self.postings[term] = (idx, self.idf(term, len(docs)) * tf * (k1 + 1) / (tf + norm[idx]))

    def idf(self, term: str, df: int | None = None) -> float:
        if df is None:
            found = self.postings.get(term)
            df = len(found[0]) if found is not None else 0
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def search(self, tokens: list[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best (position, score) pairs, ties by position."""
        scores = np.zeros(self.n, dtype=np.float64)
        hit = False
        for term in sorted(set(tokens)):
            found = self.postings.get(term)
            if found is not None:
                scores[found[0]] += found[1]
                hit = True
        if not hit:
            return []
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            top = np.argpartition(-scores[candidates], k - 1)[:k]
            # keep every candidate tied with the k-th score, so ties resolve by position
            kth = scores[candidates[top]].min()
            candidates = candidates[scores[candidates] >= kth]
        order = np.lexsort((candidates, -scores[candidates]))[:k]
        return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


# A capitalised word (or run of them) of letters: "Tesla", "Tesla's", "Johnson Controls".
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9&-]{2,}(?:['’]s)?(?:\s+[A-Z][A-Za-z0-9&-]{2,})*")


# Capitalised words that are dates, not names.
_NOT_NAMES = frozenset(
    "january february march april may june july august september october november december jan feb mar apr "
    "jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)


def _stem_of(name: str) -> str:
    """A file name without its extension ("2023 Q1 NVDA.pdf" → "2023 Q1 NVDA")."""
    return name.rsplit(".", 1)[0] if "." in name[-6:] else name


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
