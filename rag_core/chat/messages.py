"""What the chat passes around: a history as (role, text) pairs, passages as sources, token
counts, and the keys to keep out of what it shows."""

from __future__ import annotations

import hashlib

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore
from llama_index.core.utils import get_tokenizer

from rag_core.payloads import Source
from rag_core.settings import DocentSettings

__all__ = ["History", "as_chat_messages", "count_tokens", "secrets_of", "to_source"]

History = list[tuple[str, str]]  # (role, text) pairs, oldest first


def count_tokens(text: str) -> int:
    """Tokens of ``text`` as LlamaIndex's memory buffer counts them (near the local model's count)."""
    return len(get_tokenizer()(text))


def secrets_of(settings: DocentSettings) -> tuple[str, ...]:
    """The keys in force, to be kept out of error messages and answers."""
    return tuple(k.get_secret_value() for k in (settings.openai_api_key, settings.cohere_api_key) if k)


def to_source(hit: NodeWithScore, extras: dict[str, float] | None = None) -> Source:
    """A passage as the pages, the CLI and SQLite show it."""
    meta = hit.node.metadata
    text = hit.node.get_content()
    src: Source = {
        "file": meta.get("file_name") or meta.get("doc_key"),
        "page": meta.get("page"),
        "score": round(float(hit.score or 0.0), 4),
        "text": text,
        "chunk_id": hit.node.node_id,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }
    if meta.get("page_label") and str(meta.get("page_label")) != str(meta.get("page")):
        src["page_label"] = meta["page_label"]
    if meta.get("heading"):
        src["heading"] = meta["heading"]
    if extras:
        src.update(extras)  # type: ignore[typeddict-item]
    return src


def as_chat_messages(history: History) -> list[ChatMessage]:
    """(role, text) pairs as LlamaIndex chat messages."""
    return [ChatMessage(role=MessageRole(role), content=text) for role, text in history]
