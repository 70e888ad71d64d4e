"""Routing by name (``name_gate``): the names in a question decide which documents answer it.

A question about two names ("NVIDIA's revenue compared with Amazon's") is searched once per
name, in the documents that name it, the results interleaved; a name no passage found is
searched for in the documents that name it; a name no document holds at all means there is
nothing to answer from. A knowledge base of filings answers "Tesla's revenue" from Tesla's
filing or not at all, never with a neighbour's figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.schema import NodeWithScore

from rag_core.retrieval.keywords import BM25, doc_of
from rag_core.retrieval.result import Retrieval

ROUTE_MIN_CHUNKS = 3  # chunks per document, on average, for a name to route a search to its documents


def route_by_name(
    query: str,
    hits: list[NodeWithScore],
    bm: BM25,
    top_k: int,
    search_in: Callable[[list[str]], Retrieval],
) -> tuple[dict[str, Any], Retrieval | None]:
    """What routing adds to the search's stats, and the routed retrieval (None: keep ``hits``).

    ``search_in(names)`` searches ``query`` in those documents alone. Every name missing
    from every document: an empty retrieval, with ``gated`` and ``missing_names`` in the
    stats; some missing: ``unmentioned_names``, whether or not the search is routed."""
    names = bm.names_in(query)
    if not names:
        return {}, None
    found = {doc_of(h.node) for h in hits}
    every = set(bm.doc_terms)
    homes = {name: bm.docs_mentioning(terms) for name, terms in names}
    nowhere = [name for name, docs in homes.items() if not docs]
    if len(nowhere) == len(names):
        return {"gated": True, "missing_names": nowhere}, Retrieval()
    said: dict[str, Any] = {"unmentioned_names": nowhere} if nowhere else {}
    # Names that pick documents out: not every document holds them, and those that do are
    # long (a one-chunk document says nothing its chunk doesn't: passages are searched as such).
    routes = [
        (name, docs)
        for name, docs in homes.items()
        if docs and docs != every and sum(bm.doc_chunks[d] for d in docs) >= ROUTE_MIN_CHUNKS * len(docs)
    ]
    unmet = [(name, docs) for name, docs in routes if not docs & found]
    if len(routes) < 2 and not unmet:
        return said, None
    chosen = routes if len(routes) >= 2 else unmet
    per_name: list[list[NodeWithScore]] = []
    extras: dict[str, dict[str, float]] = {}
    for _name, docs in chosen:
        sub = search_in(sorted(docs))
        per_name.append(sub.hits)
        extras.update(sub.extras)
    said["routed"] = [name for name, _ in chosen]
    return said, Retrieval(interleave(per_name, top_k), extras)


def interleave(per_name: list[list[NodeWithScore]], top_k: int) -> list[NodeWithScore]:
    """Rank 1 of every list, then rank 2 of every list..., each passage once, ``top_k`` in all."""
    merged: list[NodeWithScore] = []
    seen: set[str] = set()
    for rank in range(top_k):
        for results in per_name:
            if rank < len(results) and results[rank].node.node_id not in seen and len(merged) < top_k:
                seen.add(results[rank].node.node_id)
                merged.append(results[rank])
    return merged
