"""The ranked lists one query contributes to a hybrid search: the chunks nearest to it in
Chroma and the best by BM25 over the keyword index.

The keyword search runs on a thread beside the query's embedding and vector search: the
database (SQLite or PostgreSQL) and Chroma let go of the GIL while they read, so a hybrid
search costs about the longer of the two, not their sum (docs/performance.md, "The million
chunks on the final code"). The thread reads within the view of the index its search began
with (``VectorIndex.one_view``): one look at other processes' writes a search.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from llama_index.core.schema import NodeWithScore
from llama_index.core.vector_stores.types import VectorStoreQuery

from rag_core.index import VectorIndex
from rag_core.retrieval.fusion import RankedList
from rag_core.retrieval.keywords import KeywordCache
from rag_core.retrieval.spans import Spans, doc_filter, keep_of
from rag_core.settings import RetrievalSettings
from rag_core.text import is_cjk

# made when first used: one thread per search under way at once, four at most
_BESIDE = ThreadPoolExecutor(max_workers=4, thread_name_prefix="docent-keywords")


@dataclass
class QueryLists:
    """A search's two single searches over ``names`` (None: every document), ``spans`` their pages."""

    index: VectorIndex
    keywords: KeywordCache
    settings: RetrievalSettings
    names: list[str] | None
    spans: Spans | None
    cjk_vector_weight: float  # the vectors' vote on a CJK question (1.0 with a multilingual embedding)

    def of(self, query: str, weight: float, pool: int) -> list[RankedList]:
        """The ranked lists ``query`` contributes to the fusion, each with its weight."""
        hybrid = self.settings.retrieval_mode != "vector"
        cjk = hybrid and is_cjk(query)  # vectors alone: nothing to shift to
        vec_weight = weight * (self.cjk_vector_weight if cjk else 1.0)
        if not hybrid:
            return [("vector_score", vec_weight, self.vector(query, pool))]
        keyword = _BESIDE.submit(self._keyword_beside, query, pool)
        vector = self.vector(query, pool)
        return [("vector_score", vec_weight, vector), ("keyword_score", weight, keyword.result())]

    def vector(self, query: str, k: int) -> list[NodeWithScore]:
        if self.index.is_empty():
            return []
        embedding = self.index.embed_model.get_query_embedding(query)
        result = self.index.vector_store.query(
            VectorStoreQuery(query_embedding=embedding, similarity_top_k=k, filters=doc_filter(self.names, self.spans))
        )
        cutoff = self.settings.similarity_cutoff
        hits = []
        for node, score in zip(result.nodes or [], result.similarities or [], strict=False):
            if cutoff and score < cutoff:
                continue
            hits.append(NodeWithScore(node=node, score=float(score)))
        return hits

    def keyword(self, query: str, k: int) -> list[NodeWithScore]:
        bm = self.keywords.get(self.names)
        return [NodeWithScore(node=bm.nodes[i], score=s) for i, s in bm.search(query, k, self.keep())]

    def keep(self) -> Callable[[tuple[str, int]], bool] | None:
        return keep_of(self.spans)

    def _keyword_beside(self, query: str, k: int) -> list[NodeWithScore]:
        with self.index.one_view(look=False):
            return self.keyword(query, k)
