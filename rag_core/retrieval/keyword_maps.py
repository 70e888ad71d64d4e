"""The mappings a ``BM25`` view offers, read from the keyword index on demand.

Before the index moved to the database they were dicts of every chunk held by each
process; these read what is asked for and keep a bounded memo, so that the retriever,
the routing and the neighbour windows keep their ``bm.nodes[i]``, ``bm.by_id.get(id)``,
``bm.page_nodes[(doc, page)]`` and ``bm.doc_terms[doc]`` without any of them holding
the corpus.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from llama_index.core.schema import TextNode

from rag_core.storage.keyword_index import KeywordIndex

MEMO = 4096  # nodes (or other entries) remembered per view


class _Memo:
    def __init__(self) -> None:
        self._memo: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def _remember(self, found: dict[Any, Any]) -> None:
        with self._lock:
            if len(self._memo) + len(found) > MEMO:
                self._memo.clear()
            self._memo.update(found)


class Nodes(_Memo, Mapping[int, TextNode]):
    """Position → node."""

    def __init__(self, index: KeywordIndex) -> None:
        super().__init__()
        self.index = index

    def prefetch(self, ids: Iterable[int]) -> None:
        missing = [i for i in ids if i not in self._memo]
        if missing:
            self._remember(self.index.nodes(missing))

    def __getitem__(self, position: int) -> TextNode:
        node = self._memo.get(position)
        if node is None:
            self.prefetch([position])
            node = self._memo.get(position)
        if node is None:
            raise KeyError(position)
        return node

    def __iter__(self) -> Iterator[int]:
        return iter(list(self._memo))  # what was read: every chunk would be the corpus

    def __len__(self) -> int:
        return len(self._memo)


class NodesById(_Memo, Mapping[str, TextNode]):
    """Node id → node (the neighbour windows look chunks up by the ids of their neighbours)."""

    def __init__(self, index: KeywordIndex) -> None:
        super().__init__()
        self.index = index

    def __getitem__(self, node_id: str) -> TextNode:
        if node_id not in self._memo:
            found = self.index.nodes_by_id([node_id])
            self._remember({key: node for key, (_, node) in found.items()} or {node_id: None})
        node = self._memo.get(node_id)
        if node is None:
            raise KeyError(node_id)
        return node

    def __contains__(self, node_id: object) -> bool:
        try:
            self[str(node_id)]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, v in self._memo.items() if v is not None])

    def __len__(self) -> int:
        return sum(v is not None for v in self._memo.values())


class PageNodes(_Memo, Mapping[tuple[str, int], list[int]]):
    """(document, page) → the positions of its chunks, in order."""

    def __init__(self, index: KeywordIndex) -> None:
        super().__init__()
        self.index = index

    def prefetch(self, keys: Iterable[tuple[str, int]], nodes: Nodes | None = None) -> None:
        missing = [key for key in keys if key not in self._memo]
        self._remember({key: self.index.page_chunks(*key) for key in missing})
        if nodes is not None:
            nodes.prefetch([i for key in keys for i in self._memo.get(key, [])])

    def __getitem__(self, key: tuple[str, int]) -> list[int]:
        if key not in self._memo:
            self.prefetch([key])
        found = self._memo.get(key)
        if not found:
            raise KeyError(key)
        return list(found)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter([k for k, v in self._memo.items() if v])

    def __len__(self) -> int:
        return sum(bool(v) for v in self._memo.values())


class PageKeys(Sequence[tuple[str, int]]):
    """The (document, page) keys of the pages searched: true when there are any, read whole
    only when iterated."""

    def __init__(self, index: KeywordIndex, names: list[str] | None, count: int) -> None:
        self._index, self._names, self._count = index, names, count

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __getitem__(self, i: Any) -> Any:
        return self._index.page_keys(self._names)[i]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self._index.page_keys(self._names))


class DocTerms(_Memo, Mapping[str, set[str]]):
    """Document → every term of its chunks and of its file name; iterating gives the documents."""

    def __init__(self, index: KeywordIndex, docs: Mapping[str, int]) -> None:
        super().__init__()
        self.index, self.docs = index, docs

    def __getitem__(self, doc: str) -> set[str]:
        if doc not in self.docs:
            raise KeyError(doc)
        terms = self._memo.get(doc)
        if terms is None:
            terms = self.index.doc_terms(doc)
            self._remember({doc: terms})
        return terms

    def __contains__(self, doc: object) -> bool:
        return doc in self.docs

    def __iter__(self) -> Iterator[str]:
        return iter(self.docs)

    def __len__(self) -> int:
        return len(self.docs)
