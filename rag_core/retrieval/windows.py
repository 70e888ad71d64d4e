"""Neighbour windows (``neighbor_window``): a passage widened by the chunks around it on the
same page or section, so that a figure split from its label by the splitter comes back
whole. The chunks are linked previous/next by the splitter; the overlap it repeats between
two chunks is dropped when they are joined."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from llama_index.core.schema import NodeRelationship, NodeWithScore, TextNode


def widen(
    ranked: list[tuple[str, float]],
    by_id: dict[str, NodeWithScore],
    chunks: Mapping[str, TextNode],
    window: int,
    top_k: int,
) -> list[NodeWithScore]:
    """The ``top_k`` best passages of ``ranked``, each widened by up to ``window`` chunks
    before and after it (``chunks``: every chunk by id); a passage already inside an earlier
    one's window is skipped."""
    covered: set[str] = set()
    out: list[NodeWithScore] = []
    for nid, score in ranked:
        if len(out) >= top_k:
            break
        if nid in covered:
            continue
        nodes = neighbours(by_id[nid].node, chunks, window)
        covered.update(n.node_id for n in nodes)
        node = cast(TextNode, by_id[nid].node.model_copy())
        node.text = merge_texts([n.get_content() for n in nodes])
        out.append(NodeWithScore(node=node, score=round(score, 4)))
    return out


def neighbours(node: Any, by_id: Mapping[str, TextNode], window: int) -> list[TextNode]:
    """``node`` with up to ``window`` chunks before and after it from the same page/section,
    in reading order (the splitter links a page's chunks as previous/next)."""
    before: list[TextNode] = []
    after: list[TextNode] = []
    for rel, acc in ((NodeRelationship.PREVIOUS, before), (NodeRelationship.NEXT, after)):
        current = node
        for _ in range(window):
            info = current.relationships.get(rel)
            nxt = by_id.get(info.node_id) if info is not None else None
            if nxt is None:
                break
            acc.append(nxt)
            current = nxt
    return [*reversed(before), node, *after]


def merge_texts(texts: list[str]) -> str:
    """Join consecutive chunks, dropping the overlap the splitter repeats between them."""
    out = ""
    for text in texts:
        if not out:
            out = text
            continue
        overlap = 0
        for size in range(min(len(out), len(text), 2000), 15, -1):
            if out.endswith(text[:size]):
                overlap = size
                break
        out = out + (text[overlap:] if overlap else ("\n" + text))
    return out
