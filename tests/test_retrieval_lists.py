"""The ranked lists one query contributes to a hybrid search (rag_core.retrieval.lists)."""

from __future__ import annotations

import threading

from rag_core.retrieval.lists import QueryLists


def test_the_keyword_search_runs_beside_the_vector_search_and_ranks_the_same(ctx, three_docs, monkeypatch):
    """The keyword search of a hybrid search runs on a thread of its own while the question is
    embedded and Chroma searched (a search then costs the longer of the two, not their sum:
    docs/performance.md), within the view the search began with; the ranking is the one the
    two searches give one after the other."""
    ctx.ingestion.ingest_paths([three_docs])
    retriever = ctx.chat.components.retriever(top_k=3)
    question = "How many litres per minute does the Zephyr pump deliver?"
    beside = [h.node.node_id for h in retriever.search(question).hits]
    threads = []
    keyword = QueryLists.keyword

    def spy(self, query, k):
        threads.append(threading.current_thread())
        return keyword(self, query, k)

    monkeypatch.setattr(QueryLists, "keyword", spy)
    retriever.search(question)
    assert threads and all(t is not threading.current_thread() for t in threads)

    def one_after_the_other(self, query, weight, pool):
        return [
            ("vector_score", weight, self.vector(query, pool)),
            ("keyword_score", weight, self.keyword(query, pool)),
        ]

    monkeypatch.setattr(QueryLists, "of", one_after_the_other)
    assert [h.node.node_id for h in retriever.search(question).hits] == beside
