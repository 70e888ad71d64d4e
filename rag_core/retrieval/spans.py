"""Searching some pages of a document: the sections of one that joins others' pages (a binder
of filings), which ``rag_core.entities.Entities`` tells apart as units of their own.

A search inside sections filters Chroma by document and page range, and keyword search by
(document, page); a document listed without ranges is searched whole.
"""

from __future__ import annotations

from collections.abc import Callable

from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

# Per document searched, the page ranges searched (none: the whole document): a search inside
# some sections of a document that joins others' pages (``Entities`` units).
Spans = dict[str, list[tuple[int, int]]]


def doc_filter(names: list[str] | None, spans: Spans | None = None) -> MetadataFilters | None:
    """Chroma's filter for the documents ``names``; with ``spans``, for those pages of them."""
    if not names:
        return None
    whole = [n for n in names if not (spans or {}).get(n)]
    parts: list[MetadataFilter | MetadataFilters] = []
    if whole:
        parts.append(MetadataFilter(key="doc_key", value=whole, operator=FilterOperator.IN))
    for name in names:
        for first, last in (spans or {}).get(name) or []:
            span: list[MetadataFilter | MetadataFilters] = [
                MetadataFilter(key="doc_key", value=name, operator=FilterOperator.EQ),
                MetadataFilter(key="page", value=first, operator=FilterOperator.GTE),
                MetadataFilter(key="page", value=last, operator=FilterOperator.LTE),
            ]
            parts.append(MetadataFilters(filters=span, condition=FilterCondition.AND))
    if len(parts) == 1 and isinstance(parts[0], MetadataFilter):
        return MetadataFilters(filters=parts)
    return MetadataFilters(filters=parts, condition=FilterCondition.OR)


def keep_of(spans: Spans | None) -> Callable[[tuple[str, int]], bool] | None:
    """Whether a (document, page) is searched, when only some pages of a document are."""
    if not spans or not any(spans.values()):
        return None
    return lambda key: not spans.get(key[0]) or any(f <= key[1] <= t for f, t in spans[key[0]])
