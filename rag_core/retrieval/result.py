"""What one search returns: the passages, with the figures the search measured on the way.

The figures travel with the passages rather than in attributes of the retriever read after
the call, so that one retriever can serve several searches (a routed search runs one per
name) and a caller never reads another search's figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import NodeWithScore


@dataclass
class Retrieval:
    """``hits``: the passages, best first. ``extras``: each passage's score in every ranked
    list it was found in (``vector_score``, ``keyword_score``...), by node id, for the sources
    display. ``stats``: what the search did and measured (relevance signals, variants, retry,
    conversation, gate, routing by name)."""

    hits: list[NodeWithScore] = field(default_factory=list)
    extras: dict[str, dict[str, float]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
