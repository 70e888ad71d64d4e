"""The keyword index as the search sees it: chunks and pages with their tokens, postings,
and per-document term statistics, kept in a database and updated per document.

Before, every process built Okapi BM25 in its own memory from every chunk in Chroma (1.06 GB
and 16 s per process at 100,000 chunks). Here the index lives in a database: a process
asks it for the statistics and postings of the few terms of a question, and for the rows of
the few chunks that hold them; ``rag_core.retrieval.keywords`` scores them (Okapi BM25, the
same formula as before) and prunes what cannot reach the top (MaxScore), so that neither
memory nor time follows the size of the corpus.

What is indexed are the tokens of ``rag_core.text.tokenize`` (lower-cased Latin words with
the plural 's' dropped, stop words left out, CJK characters and character bigrams),
space-joined: a database tokeniser that splits on spaces alone then sees exactly Docent's
terms. A backend implements the methods of ``KeywordIndex``: SQLite FTS5 for the laptop
(``rag_core.storage.fts``); a server database (PostgreSQL full-text search with a GIN index
over the same space-joined tokens) is another implementation beside it.

A *position* is the integer id of a chunk (or page) row: ids are never reused, so a
position names one chunk for as long as it exists.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import VectorStoreQueryResult
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.chroma.base import MAX_CHUNK_SIZE
from pydantic import PrivateAttr

from rag_core.text import tokenize


def doc_of(node: Any) -> str:
    """The document a chunk belongs to (its name)."""
    meta = node.metadata or {}
    return str(meta.get("doc_key") or meta.get("file_name") or "")


def stem_of(name: str) -> str:
    """A file name without its extension ("2023 Q1 NVDA.pdf" → "2023 Q1 NVDA")."""
    return name.rsplit(".", 1)[0] if "." in name[-6:] else name


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk as the keyword index keeps it: its text and tokens for search, and the
    metadata dict the vector store holds, to give back the same node."""

    node_id: str
    ref_doc_id: str | None
    doc: str
    file_name: str
    page: int | None
    text: str
    meta: dict[str, Any]

    @property
    def tokens(self) -> list[str]:
        """What keyword search reads of a chunk: its own text. The title and table header its
        page gives it (``context``, see ``transforms.chunk_context``) are for the answering
        model only: searched too, they made the chunks of a statement page alike and cost the
        right page on precise questions (docs/evaluation.md)."""
        return tokenize(self.text)


def _bare(info: Any) -> Any:
    if isinstance(info, list):
        return [_bare(i) for i in info]
    return RelatedNodeInfo(node_id=info.node_id, node_type=info.node_type)


def stored_meta(node: BaseNode, flat: bool = True) -> dict[str, Any]:
    """The metadata dict both stores keep for ``node``: LlamaIndex's (``node_to_metadata_dict``),
    its relationships kept as the ids they name. LlamaIndex's also copies each related node's
    metadata and hash into them (~700 of a chunk's ~1,600 bytes), which nothing reads back
    (``ref_doc_id`` and the previous and next chunk are read by id) and which Chroma indexes
    with every other metadata string."""
    bare = node.model_copy(update={"relationships": {rel: _bare(i) for rel, i in node.relationships.items()}})
    return {k: ("" if v is None else v) for k, v in node_to_metadata_dict(bare, True, flat_metadata=flat).items()}


def chunk_record(node: BaseNode, meta: dict[str, Any] | None = None) -> ChunkRecord:
    """The record of a node about to be stored (``meta``: the metadata dict the vector store
    writes for it, when known)."""
    if meta is None:
        meta = stored_meta(node, flat=False)
    page = (node.metadata or {}).get("page")
    return ChunkRecord(
        node_id=node.node_id,
        ref_doc_id=node.ref_doc_id,
        doc=doc_of(node),
        file_name=str((node.metadata or {}).get("file_name") or ""),
        page=page if isinstance(page, int) and not isinstance(page, bool) else None,
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        meta=meta,
    )


def with_text(meta: dict[str, Any], text: str) -> dict[str, Any]:
    """``meta`` (``stored_meta``'s) with the chunk's text inside its node envelope: what Chroma
    keeps of a chunk, given no document. Chroma indexes every document for a full-text search
    of its own (SQLite FTS5, trigrams) that Docent never asks, the keyword index being its own:
    that was ~30% of a write to Chroma at 100,000 chunks (docs/performance.md)."""
    envelope = json.loads(meta["_node_content"])
    envelope["text"] = text
    return {**meta, "_node_content": json.dumps(envelope, ensure_ascii=False)}


def without_text(meta: dict[str, Any]) -> dict[str, Any]:
    """A metadata dict read from Chroma as the keyword index keeps it: its envelope without
    the text, which the index holds in its own column."""
    try:
        envelope = json.loads(meta["_node_content"])
    except (KeyError, TypeError, ValueError):
        return meta
    if not isinstance(envelope, dict) or not envelope.get("text"):
        return meta
    return {**meta, "_node_content": json.dumps({**envelope, "text": ""}, ensure_ascii=False)}


def stored_record(node_id: str, meta: dict[str, Any] | None, text: str | None) -> ChunkRecord:
    """The record of a chunk read back from the vector store (its id, metadata dict, and its
    document: None for a chunk whose text is in its envelope, ``with_text``)."""
    return chunk_record(to_node(node_id, meta or {}, text), without_text(dict(meta or {})))


def to_node(node_id: str, meta: dict[str, Any], text: str | None) -> TextNode:
    """The node a stored metadata dict and document stand for, as the vector store gives it
    back; ``text`` None: the text in the envelope (chunks written since ``with_text``)."""
    try:
        node = metadata_dict_to_node(meta, text=text)
        node.id_ = node_id
        return node  # type: ignore[return-value]
    except Exception:
        return TextNode(id_=node_id, text=text or "", metadata=dict(meta))


@dataclass(frozen=True)
class Scope:
    """The searched set's size: chunks and their summed length in tokens; the same for pages."""

    chunks: int = 0
    length: int = 0
    pages: int = 0
    page_length: int = 0


@dataclass(frozen=True)
class Row:
    """A chunk or page for scoring: its position, document, length in tokens and tokens."""

    id: int
    doc: str
    length: int
    tokens: str  # space-joined
    page: int | None = None


class KeywordIndex(ABC):
    """Chunks, pages and term statistics, updated per document. ``names`` restricts a read to
    those documents (None: every document)."""

    # ------------------------------------------------------------------ writing
    @abstractmethod
    def add(self, records: Sequence[ChunkRecord]) -> None:
        """Index chunks (a chunk id already indexed is left as it is, as Chroma does)."""

    @abstractmethod
    def delete_refs(self, ref_doc_ids: Iterable[str]) -> None:
        """Remove the chunks of some parts (pages, sections) of documents."""

    @abstractmethod
    def delete_docs(self, names: Iterable[str]) -> None:
        """Remove every chunk of these documents."""

    @abstractmethod
    def clear(self) -> None:
        """Remove everything."""

    # ------------------------------------------------------------------ documents
    @abstractmethod
    def docs(self, names: Sequence[str] | None = None) -> dict[str, int]:
        """Document → its chunks, for the documents that have any."""

    @abstractmethod
    def scope(self, names: Sequence[str] | None = None) -> Scope:
        """How many chunks and pages, and how long, in all."""

    @abstractmethod
    def doc_terms(self, doc: str) -> set[str]:
        """Every term of a document's chunks and of its file name."""

    @abstractmethod
    def doc_hits(self, terms: Iterable[str], names: Sequence[str] | None = None) -> list[tuple[str, str, bool, bool]]:
        """(document, term, in its text or file name, in its name's stem) for every document
        that holds one of ``terms`` either way."""

    # ------------------------------------------------------------------ terms
    @abstractmethod
    def term_stats(
        self, terms: Iterable[str], names: Sequence[str] | None = None, *, docs: bool = False
    ) -> dict[str, tuple[int, int, int, int]]:
        """Term → (chunks holding it, pages holding it, documents holding it in their text
        or file name, documents whose name's stem holds it); the last two only with ``docs``
        (else 0). Terms found nowhere are left out."""

    @abstractmethod
    def rows_with(
        self, term: str, names: Sequence[str] | None = None, *, pages: bool = False, limit: int | None = None
    ) -> list[Row]:
        """The chunks (pages) that hold ``term``, newest first, at most ``limit``."""

    # ------------------------------------------------------------------ rows
    @abstractmethod
    def rows(self, ids: Iterable[int], *, pages: bool = False) -> list[Row]:
        """The chunks (pages) at these positions that still exist."""

    @abstractmethod
    def nodes(self, ids: Iterable[int]) -> dict[int, TextNode]:
        """The nodes at these positions, as the vector store gives them back."""

    @abstractmethod
    def doc_nodes(self, doc: str) -> list[TextNode]:
        """Every chunk of one document, as the vector store gives it back (in the order written)."""

    @abstractmethod
    def nodes_by_id(self, node_ids: Iterable[str]) -> dict[str, tuple[int, TextNode]]:
        """Node id → (position, node), for the ids that exist."""

    @abstractmethod
    def page_chunks(self, doc: str, page: int) -> list[int]:
        """Positions of the chunks of one page, in order."""

    @abstractmethod
    def page_keys(self, names: Sequence[str] | None = None, limit: int | None = None) -> list[tuple[str, int]]:
        """(document, page) of the pages, in the order they were indexed."""


class MirroredChroma(ChromaVectorStore):
    """Chroma, with every chunk it adds or deletes added to or deleted from the keyword index.

    A vector query asks Chroma for the nearest ids and their distances only, and takes the
    chunks' text and metadata from the keyword index, which holds the very same: Chroma's
    read of them was a third of a hybrid search at 100,000 chunks (docs/performance.md). An
    id the keyword index lacks is read from Chroma, as before."""

    _keywords: KeywordIndex = PrivateAttr()

    def __init__(self, collection: Any, keywords: KeywordIndex) -> None:
        super().__init__(chroma_collection=collection)
        self._keywords = keywords

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """As ``ChromaVectorStore.add``, with each chunk's metadata as ``stored_meta`` gives it,
        and its text in that envelope for Chroma (``with_text``), not as a document."""
        nodes = list(nodes)
        metas = [stored_meta(node, self.flat_metadata) for node in nodes]
        for lo in range(0, len(nodes), MAX_CHUNK_SIZE):
            part = nodes[lo : lo + MAX_CHUNK_SIZE]
            self._collection.add(
                ids=[node.node_id for node in part],
                embeddings=[node.get_embedding() for node in part],  # type: ignore[arg-type]
                metadatas=[
                    with_text(meta, node.get_content(metadata_mode=MetadataMode.NONE))
                    for node, meta in zip(part, metas[lo : lo + MAX_CHUNK_SIZE], strict=True)
                ],
            )
        self._keywords.add([chunk_record(node, meta) for node, meta in zip(nodes, metas, strict=True)])
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        super().delete(ref_doc_id, **delete_kwargs)
        self._keywords.delete_refs([ref_doc_id])

    def _query(
        self, query_embeddings: list[float], n_results: int, where: dict, **kwargs: Any
    ) -> VectorStoreQueryResult:
        if "include" in kwargs:  # the caller chose what Chroma returns: LlamaIndex's own path
            return super()._query(query_embeddings, n_results, where, **kwargs)
        if where:
            kwargs["where"] = where
        got = self._collection.query(
            query_embeddings=query_embeddings, n_results=n_results, include=["distances"], **kwargs
        )
        ids, distances = got["ids"][0], (got["distances"] or [[]])[0]
        nodes: dict[str, BaseNode] = {key: node for key, (_, node) in self._keywords.nodes_by_id(ids).items()}
        missing = [i for i in ids if i not in nodes]
        if missing:
            rest = self._collection.get(ids=missing, include=["documents", "metadatas"])
            for node_id, meta, text in zip(rest["ids"], rest["metadatas"] or [], rest["documents"] or [], strict=True):
                nodes[node_id] = to_node(node_id, dict(meta or {}), text)
        found = [(i, d) for i, d in zip(ids, distances, strict=True) if i in nodes]
        return VectorStoreQueryResult(
            nodes=[nodes[i] for i, _ in found],
            similarities=[math.exp(-d) for _, d in found],  # as LlamaIndex's ChromaVectorStore scores
            ids=[i for i, _ in found],
        )
