"""Finding the passages for a question: keyword search (``keywords``), more searches per
question (``queries``), their fusion (``fusion``), routing by name (``routing``), neighbour
windows (``windows``), and the hybrid retriever that composes them (``hybrid``), which returns
a ``Retrieval`` (``result``)."""

from rag_core.retrieval.fusion import fuse
from rag_core.retrieval.hybrid import HybridRetriever, relevance_score
from rag_core.retrieval.keywords import BM25, KeywordCache, doc_of
from rag_core.retrieval.queries import ConversationQueries, parse_queries, query_variants
from rag_core.retrieval.result import Retrieval
from rag_core.retrieval.routing import route_by_name
from rag_core.retrieval.spans import doc_filter
from rag_core.retrieval.windows import merge_texts, neighbours

__all__ = [
    "BM25",
    "ConversationQueries",
    "HybridRetriever",
    "KeywordCache",
    "Retrieval",
    "doc_filter",
    "doc_of",
    "fuse",
    "merge_texts",
    "neighbours",
    "parse_queries",
    "query_variants",
    "relevance_score",
    "route_by_name",
]
