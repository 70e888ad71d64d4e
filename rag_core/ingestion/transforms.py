"""The ingestion pipeline's own steps, between LlamaIndex's sentence splitter and the vector
store: each PDF chunk's page context for the answering model, and the embedding in batches
that report progress and can be cancelled (``rag_core.ingestion.service`` builds the pipeline)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, TransformComponent

from rag_core.providers.answering import ANSWERING
from rag_core.text import is_header, is_title

__all__ = ["BatchedEmbedder", "ChunkContext", "chunk_context"]


class BatchedEmbedder(TransformComponent):
    """The embedding step, a batch of chunks at a time (the embedding model's own batch, at
    most ``batch``): progress within a long document, a cancel that takes effect between
    batches, and a wait before each while an answer is being written (``providers.answering``:
    an answer then waits for one batch at most)."""

    embed_model: BaseEmbedding
    step: Any  # (done, total) -> None; raises IngestCancelled
    batch: int = 64

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        size = max(1, min(self.batch, self.embed_model.embed_batch_size))
        for start in range(0, len(nodes), size):
            self.step(start, len(nodes))
            ANSWERING.wait_clear(functools.partial(self.step, start, len(nodes)))
            self.embed_model(nodes[start : start + size])
        self.step(len(nodes), len(nodes))
        return nodes


class ChunkContext(TransformComponent):
    """Each chunk of a PDF page carries, in its metadata ``context``, the title and the table
    header lines of its page that come before it ("CONDENSED CONSOLIDATED STATEMENTS OF
    OPERATIONS | (In millions) | Three Months Ended | June 25, | 2022 ..."): a chunk cut from the
    middle of a table keeps its statement and its period columns for the answering model.
    Not for search: in the embedding and the keyword index it cost the right page on precise
    questions (SEC shapes page recall 0.875 → 0.625, docs/evaluation.md)."""

    texts: dict[str, str]  # page Document id -> its text

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for node in nodes:
            text = self.texts.get(node.ref_doc_id or "")
            start = getattr(node, "start_char_idx", None)
            if not text or start is None or (node.metadata or {}).get("page") is None:
                continue
            own = set(node.get_content().splitlines())
            lines = [line.strip() for line in text[:start].splitlines() if line.strip()]
            context = chunk_context(lines, own)
            if context:
                node.metadata["context"] = context
                for keys in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
                    if "context" not in getattr(node, keys):  # new lists: nodes may share one
                        setattr(node, keys, [*getattr(node, keys), "context"])
        return nodes


def chunk_context(before: list[str], own: set[str], most: int = 8) -> str:
    """The page's title (its first line set in capitals) and the last run of table header
    lines before a chunk, those not already in it, joined by " | "."""
    title = next((line for line in before if is_title(line)), "")
    headers: list[str] = []
    for line in reversed(before):
        if is_header(line):
            headers.append(line)
        elif headers and len(headers) >= 2:
            break
    picked = [title] if title else []
    picked += [h for h in reversed(headers[:most]) if h != title]
    return " | ".join(line for line in picked if line and line not in own)
