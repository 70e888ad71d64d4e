"""Neighbour windows (``neighbor_window``): a passage widened by the chunks around it on the
same page or section, so that a figure split from its label by the splitter comes back
whole. The chunks are linked previous/next by the splitter; the overlap it repeats between
two chunks is dropped when they are joined.

And always (``finish_lines``): a passage ends where its last line ends. The splitter cuts at
a token count, so a chunk may stop inside a table row, even inside a figure ("Total revenue |
19,984,378 | 10,230," for 10,230,316): the model would read a figure that is not the
source's, and the figure check would not find the right one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode


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


REST_OF_LINE = 400  # characters taken from the next chunk at most
_ENDS = (".", "!", "?", "\n", "。", "！", "？", "”", '"')  # a chunk ending so ends a sentence: no lookup


def _whole(text: str) -> bool:
    return text.rstrip(" ").endswith(_ENDS)


def finish_lines(
    selected: list[NodeWithScore], fetch: Callable[[Iterable[str]], Mapping[str, Any]]
) -> list[NodeWithScore]:
    """``selected``, each passage cut inside a line completed with the rest of that line from
    the chunk after it (``fetch``: node id → node, or (position, node), for a batch of ids)."""
    wanted: dict[str, str] = {}
    for hit in selected:
        info = hit.node.relationships.get(NodeRelationship.NEXT)
        if isinstance(info, RelatedNodeInfo) and not _whole(hit.node.get_content()):
            wanted[hit.node.node_id] = info.node_id
    if not wanted:
        return selected
    found = {k: (v[1] if isinstance(v, tuple) else v) for k, v in fetch(sorted(set(wanted.values()))).items()}
    out: list[NodeWithScore] = []
    for hit in selected:
        following = found.get(wanted.get(hit.node.node_id, ""))
        rest = rest_of_line(hit.node.get_content(), following.get_content()) if following is not None else ""
        if rest:
            node = cast(TextNode, hit.node.model_copy())
            node.text = hit.node.get_content() + rest
            hit = NodeWithScore(node=node, score=hit.score)
        out.append(hit)
    return out


def rest_of_line(text: str, following: str) -> str:
    """What ``following`` (the next chunk, which repeats the end of ``text``) adds to ``text``'s
    last line, up to that line's end; "" when the last line was whole or no overlap is found."""
    merged = merge_texts([text, following])
    if len(merged) <= len(text) or not merged.startswith(text) or merged[len(text)] == "\n":
        return ""
    rest = merged[len(text) :].split("\n", 1)[0]
    return rest if len(rest) <= REST_OF_LINE else ""
