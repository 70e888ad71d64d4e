"""Finding the passages for a question: keyword search (``keywords``), more searches per
question (``queries``), and the hybrid retriever that fuses them (``hybrid``)."""

from rag_core.retrieval.hybrid import HybridRetriever, doc_filter, merge_texts, neighbours, relevance_score
from rag_core.retrieval.keywords import BM25, KeywordCache, doc_of
from rag_core.retrieval.queries import ConversationQueries, parse_queries, query_variants

__all__ = [
    "BM25",
    "ConversationQueries",
    "HybridRetriever",
    "KeywordCache",
    "doc_filter",
    "doc_of",
    "merge_texts",
    "neighbours",
    "parse_queries",
    "query_variants",
    "relevance_score",
]
