"""Reciprocal-rank fusion: several ranked lists (vectors, keywords, pages, documents, and the
same for each extra query) made into one ranking.

Each list votes 1 / (RRF_K + rank) times its weight, so a passage near the top of several
lists beats one at the top of a single list, whatever each list's own score scale. The
fused score is scaled so that rank 1 in every list is 1.0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from llama_index.core.schema import NodeWithScore

RRF_K = 60
RankedList = tuple[str, float, list[NodeWithScore]]  # (score name, weight, hits)


class Fused(NamedTuple):
    """``ranked``: (node id, fused score), best first; ``by_id``: the passages; ``extras``:
    each passage's score in every list it was found in."""

    ranked: list[tuple[str, float]]
    by_id: dict[str, NodeWithScore]
    extras: dict[str, dict[str, float]]


def fuse(lists: list[RankedList]) -> Fused:
    """Weighted reciprocal-rank fusion; ties (rank 1 + rank 2 vs rank 2 + rank 1) broken
    by relative score."""
    fused: dict[str, float] = defaultdict(float)
    by_id: dict[str, NodeWithScore] = {}
    extras: dict[str, dict[str, float]] = defaultdict(dict)
    for name, weight, hits in lists:
        if weight <= 0:
            continue
        top = max((float(h.score or 0.0) for h in hits), default=0.0) or 1.0
        for rank, hit in enumerate(hits):
            nid = hit.node.node_id
            fused[nid] += weight * (1.0 / (RRF_K + rank + 1) + 1e-5 * float(hit.score or 0.0) / top)
            extras[nid].setdefault(name, round(float(hit.score or 0.0), 4))
            by_id.setdefault(nid, hit)
    best = sum(w for _, w, _ in lists if w > 0) / (RRF_K + 1) or 1.0
    ranked = [(nid, score / best) for nid, score in sorted(fused.items(), key=lambda x: (-x[1], x[0]))]
    return Fused(ranked, by_id, extras)


def by_document(
    fused: Fused, doc_score: Mapping[str, float], doc_of: Callable[[Any], str], doc_chunks: Mapping[str, int]
) -> list[NodeWithScore]:
    """The candidates ordered by how much of the question their whole document holds
    (``doc_score``, by document), chunks of one document in fused order: a chunk that says
    "the Company" ranks up when its file is Apple's 10-Q and the question names Apple.

    A one-chunk document says nothing its chunk doesn't: such chunks keep their place, and
    only the places held by chunks of longer documents are reordered."""
    nodes = [fused.by_id[nid].node for nid, _ in fused.ranked]
    scores = [doc_score.get(doc_of(node), 0.0) for node in nodes]
    movable = [i for i, node in enumerate(nodes) if doc_chunks[doc_of(node)] > 1]
    order = list(range(len(nodes)))
    for slot, i in zip(movable, sorted(movable, key=lambda i: (-scores[i], i)), strict=True):
        order[slot] = i
    return [NodeWithScore(node=nodes[i], score=scores[i]) for i in order]
