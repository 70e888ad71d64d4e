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


def test_a_line_item_an_analyst_abbreviates_is_searched_as_filings_write_it(ctx, tmp_path):
    """ "net PP&E" finds Galaxy Gaming's note row "Property and equipment, net" (its 10-K, tried
    as a user: before, the cash flows' depreciation row was read as the answer); "SG&A" finds 3M's
    and Kraft Heinz's "Selling, general and administrative expenses" row."""
    from rag_core.text import spelled_out

    folder = tmp_path / "filing"
    folder.mkdir()
    (folder / "notes.html").write_text(
        "<h2>NOTE 5. PROPERTY AND EQUIPMENT</h2><p>Property and equipment consisted of the following at"
        " December 31, 2021 and 2020:</p><table><tr><td>Furniture and fixtures</td><td>312,639</td></tr>"
        "<tr><td>Property and equipment, net</td><td>98,594</td><td>116,724</td></tr></table>"
        "<h2>NOTE 6. OPERATING EXPENSES</h2><p>Selling, general and administrative expenses were"
        " $10,646,524 in 2021.</p>"
        + "".join(
            f"<h2>NOTE {n}. OTHER</h2><p>Net revenues, net income and net loss per share at the end of 2021"
            f" were reported for segment {n} of the company's net assets.</p>"
            for n in range(7, 12)
        )
    )
    for plain in ("How much PPE did the hospital buy?", "How many cogs turn the gear?", "What does the MD&A say?"):
        assert spelled_out(plain) == plain  # protective equipment, a word, a section: nothing to spell out
    ctx.ingestion.ingest_paths([folder])
    retriever = ctx.chat.components.retriever(top_k=2)
    for question, row in (
        ("What was net PP&E at the end of 2021?", "Property and equipment, net"),
        ("How much were SG&A expenses in 2021?", "Selling, general and administrative"),
    ):
        assert spelled_out(question) != question
        hits = [h.node.get_content() for h in retriever.search(question).hits]
        assert any(row in text for text in hits), (question, hits)
