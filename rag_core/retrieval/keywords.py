"""Keyword search: Okapi BM25 over the keyword index in the database (``KeywordIndex``).

A ``BM25`` is a view of the index for one set of documents (all, or a session's or a
route's): nothing of the corpus is copied into the process. A search asks the database for
the statistics of the question's few terms and scores only the chunks that can reach the
top k (MaxScore: terms taken rarest first; once the k-th best score so far is above what
every chunk holding none of the terms taken so far could still score, the rest is not
looked at). The score is the same Okapi BM25 as before the index moved to the database
(k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + 0.5) / (df + 0.5)), statistics over the
searched set), so the rankings are the same.

At most ``CANDIDATES`` chunks are scored per search: below that many chunks (every
evaluation corpus) every search is exact; above it, a question of words found in most of a
very large corpus ranks the chunks that hold its rarer words (and the newest of the
others) instead of all of them.

Besides chunk search the view knows, per document, every term of its chunks and of its
file name: the document list of the fusion (``doc_scores``) and the relevance signals use
that; and BM25 over whole pages (``search_pages``).
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from rag_core.index import VectorIndex
from rag_core.retrieval.keyword_maps import DocTerms, Nodes, NodesById, PageKeys, PageNodes
from rag_core.storage.keyword_index import KeywordIndex, Row, doc_of, stem_of
from rag_core.text import is_measure, is_name_word, period_aliases, query_terms, tokenize

__all__ = ["BM25", "CANDIDATES", "KeywordCache", "doc_of", "search_text"]

CANDIDATES = 5000  # chunks scored per search at most (see above)
Keep = Callable[[tuple[str, int]], bool]  # (document, page) → searched or not


def search_text(node: Any) -> str:
    """What keyword search reads of a chunk: its own text (``ChunkRecord.tokens`` says why)."""
    return node.get_content()


class BM25:
    """Okapi BM25 over the chunks of ``names`` (None: every document) in ``index``."""

    def __init__(self, index: KeywordIndex, names: list[str] | None = None, k1: float = 1.2, b: float = 0.75) -> None:
        self.index = index
        self.names = sorted(set(names)) if names else None
        self.k1, self.b = k1, b
        self.scope = index.scope(self.names)
        self.doc_chunks: Counter[str] = Counter(index.docs(self.names))  # documents, not chunks: small
        self.doc_terms = DocTerms(index, self.doc_chunks)
        self.nodes = Nodes(index)
        self.by_id = NodesById(index)
        self.page_nodes = PageNodes(index)
        self.page_keys = PageKeys(index, self.names, self.scope.pages)
        self._stats: dict[str, tuple[int, int, int, int] | None] = {}
        self._doc_stats: dict[str, tuple[int, int, int, int] | None] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ statistics
    def _term_stats(self, terms: set[str], docs: bool = False) -> dict[str, tuple[int, int, int, int]]:
        memo = self._doc_stats if docs else self._stats
        missing = [t for t in terms if t not in memo]
        if missing:
            found = self.index.term_stats(missing, self.names, docs=docs)
            with self._lock:
                for t in missing:
                    memo[t] = found.get(t)
        return {t: s for t in terms if (s := memo.get(t)) is not None}

    @staticmethod
    def _idf(n: int, df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def idf(self, term: str) -> float:
        """Inverse document frequency; a term found nowhere gets the highest value."""
        stats = self._term_stats({term}).get(term)
        return self._idf(self.scope.chunks, stats[0] if stats else 0)

    def coverage(self, query: str, text: str) -> float:
        """Share of the query's terms, weighted by idf, that ``text`` contains."""
        terms = query_terms(query)
        if not terms:
            return 0.0
        have = set(tokenize(text))
        self._term_stats(terms)
        weights = {t: self.idf(t) for t in terms}
        total = sum(weights.values()) or 1.0
        return sum(w for t, w in weights.items() if t in have) / total

    # ------------------------------------------------------------------ documents
    def doc_scores(self, query: str, name_weight: float = 0.0, *, docs: Any = None) -> dict[str, float]:
        """Per document, the idf-weighted share (idf over documents) of the query's terms
        found anywhere in it or in its file name: which documents the question is about. With
        ``name_weight``, plus that weight times the share of the query's terms that are in
        file names found in this one's ("the Q3 2022 10-Q" picks "2022 Q3 AAPL.pdf" out of
        four Apple filings that all mention both words). ``docs``: score only these (the
        candidates' documents) instead of every document searched."""
        terms = query_terms(query) | period_aliases(query)
        n = len(self.doc_chunks)
        if not terms or not n:
            return {}
        stats = self._term_stats(terms, docs=True)
        ddf = {t: stats[t][2] if t in stats else 0 for t in terms}
        weights = {t: self._idf(n, ddf[t]) for t in sorted(terms)}
        total = sum(weights.values()) or 1.0
        ndf = {t: stats[t][3] for t in sorted(terms) if t in stats and stats[t][3]}
        named = {t: self._idf(n, df) for t, df in ndf.items()}
        wanted = self.names if docs is None else sorted(d for d in set(docs) if d in self.doc_chunks)
        have: dict[str, set[str]] = {}
        in_name: dict[str, set[str]] = {}
        for doc, term, text, name in self.index.doc_hits(terms, wanted):
            if doc in self.doc_chunks:
                if text:
                    have.setdefault(doc, set()).add(term)
                if name:
                    in_name.setdefault(doc, set()).add(term)
        scores = {
            doc: sum(w for t, w in weights.items() if t in have.get(doc, ())) / total
            for doc in (self.doc_chunks if wanted is None else wanted)
        }
        if name_weight > 0 and named:
            total_named = sum(named.values())
            for doc in scores:
                scores[doc] += name_weight * sum(w for t, w in named.items() if t in in_name.get(doc, ())) / total_named
        return scores

    def names_in(self, query: str) -> list[tuple[str, list[str]]]:
        """The names in ``query`` — capitalised words inside the sentence (not its first word):
        "Tesla", "Tesla's", "Johnson Controls", "COP26" — each with its search terms."""
        out = []
        for match in _NAME.finditer(query):
            start = match.start()
            if start == 0 or query[:start].rstrip().endswith((".", "?", "!", ":", '"')) or is_measure(match.group(0)):
                continue
            terms = [
                t
                for t in tokenize(match.group(0))
                if not t.isdigit() and len(t) > 1 and t not in _NOT_NAMES and is_name_word(t)
            ]
            if terms:
                out.append((match.group(0).removesuffix("'s").removesuffix("’s"), terms))
        return out

    def docs_mentioning(self, terms: list[str]) -> set[str]:
        """The documents searched that hold one of ``terms``, in their text or file name."""
        return {doc for doc, *_ in self.index.doc_hits(terms, self.names) if doc in self.doc_chunks}

    def mentions(self, docs: set[str], terms: list[str]) -> bool:
        """Whether any of ``docs`` (document keys) holds one of ``terms``, in its text or file name."""
        wanted = sorted(d for d in docs if d in self.doc_chunks)
        return bool(wanted) and bool(self.index.doc_hits(terms, wanted))

    @property
    def name_terms(self) -> dict[str, set[str]]:
        """Per document, the words of its name ("2023 Q1 NVDA.pdf" → 2023, q1, nvda)."""
        return {doc: set(tokenize(stem_of(doc))) for doc in self.doc_chunks}

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int, keep: Keep | None = None) -> list[tuple[int, float]]:
        """The ``k`` best (position, score) pairs, ties by position; ``keep``: only chunks of
        the (document, page)s it keeps (a search inside some sections of a document)."""
        hits = self._top(tokenize(query), k, pages=False, keep=keep)
        self.nodes.prefetch([i for i, _ in hits])
        return hits

    def search_pages(self, query: str, k: int, keep: Keep | None = None) -> list[tuple[tuple[str, int], float]]:
        """The ``k`` best pages ((document, page), score) by BM25 over whole pages."""
        rows: dict[int, Row] = {}
        hits = self._top(tokenize(query), k, pages=True, seen=rows, keep=keep)
        keys = [((rows[i].doc, int(rows[i].page or 0)), score) for i, score in hits]
        self.page_nodes.prefetch([key for key, _ in keys], self.nodes)
        return keys

    def _top(
        self, tokens: list[str], k: int, *, pages: bool, seen: dict[int, Row] | None = None, keep: Keep | None = None
    ) -> list[tuple[int, float]]:
        n, total = (self.scope.pages, self.scope.page_length) if pages else (self.scope.chunks, self.scope.length)
        stats = self._term_stats(set(tokens))
        df = {t: s[1 if pages else 0] for t, s in stats.items() if s[1 if pages else 0]}
        if not df or not n or k <= 0:
            return []
        terms = sorted(df)
        idf = {t: self._idf(n, df[t]) for t in terms}
        norm_k = self.k1 * (1 - self.b)
        norm_l = self.k1 * self.b / (total / n or 1.0)
        k1 = self.k1

        needles = [(f" {t} ", idf[t]) for t in terms]

        def score(row: Row) -> float:
            # Each token between its own spaces, so that repeats next to each other all count;
            # counting the query's few terms in C beats counting every token of the row.
            padded = " " + row.tokens.replace(" ", "  ") + " "
            norm = norm_k + norm_l * row.length
            return sum(w * tf * (k1 + 1) / (tf + norm) for needle, w in needles if (tf := padded.count(needle)))

        scored: dict[int, float] = {}
        order = sorted(terms, key=lambda t: (-idf[t], t))  # rarest first
        rest = [sum(idf[t] * (k1 + 1) for t in order[j:]) for j in range(len(order))]
        for j, term in enumerate(order):
            if len(scored) >= k and heapq.nlargest(k, scored.values())[-1] >= rest[j]:
                break  # a chunk not scored yet holds only terms worth less, in all, than the k-th score
            room = CANDIDATES - len(scored)
            if room <= 0:
                break
            for row in self.index.rows_with(term, self.names, pages=pages, limit=room + len(scored)):
                if row.id not in scored and room > 0 and (keep is None or keep((row.doc, int(row.page or 0)))):
                    scored[row.id] = score(row)
                    room -= 1
                    if seen is not None:
                        seen[row.id] = row
        best = heapq.nsmallest(k, scored.items(), key=lambda item: (-item[1], item[0]))
        return [(i, s) for i, s in best if s > 0]


# A capitalised word (or run of them) of letters: "Tesla", "Tesla's", "Johnson Controls".
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9&-]{2,}(?:['’]s)?(?:\s+[A-Z][A-Za-z0-9&-]{2,})*")


# Capitalised words that are dates, not names.
_NOT_NAMES = frozenset(
    "january february march april may june july august september october november december jan feb mar apr "
    "jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)


class KeywordCache:
    """BM25 views keyed by the index version and the document filter: a view keeps only what
    it read for earlier searches of the same version (statistics, a few nodes)."""

    KEEP = 8

    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._cache: OrderedDict[Any, BM25] = OrderedDict()

    def get(self, names: list[str] | None) -> BM25:
        key = (self.index.version, tuple(sorted(names)) if names else None)
        with self._lock:
            bm = self._cache.get(key)
            if bm is None:
                self._cache = OrderedDict((k, v) for k, v in self._cache.items() if k[0] == key[0])
                bm = BM25(self.index.keywords, names)
                self._cache[key] = bm
                while len(self._cache) > self.KEEP:
                    self._cache.popitem(last=False)
            self._cache.move_to_end(key)
            return bm
