"""The plain dicts that cross layers (pages, the CLI's ``--json``, SQLite), typed.

They stay dicts, because they are stored as JSON and printed as the CLI's contract
(fields are only ever added); these types say which keys they carry.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Source(TypedDict, total=False):
    """One passage an answer was based on (``ChatTurn.sources``, ``Message.sources``)."""

    file: str | None  # the document's name
    page: int | None  # 1-based page of a PDF; None for other formats
    score: float  # the fused retrieval score (rank 1 in every list is 1.0), or the rerank score
    text: str  # the passage
    page_label: str  # the PDF's own label of the page, when it differs from its number
    heading: str  # the heading path of a section (Markdown, DOCX, HTML)
    vector_score: float  # cosine similarity in the vector search, when it found the passage
    keyword_score: float  # BM25 score in the keyword search, when it found the passage
    document_score: float  # how much of the question the passage's whole document holds
    chunk_id: str  # the passage's id in the index
    sha256: str  # of the passage text: an exported conversation can tell a changed document


class EvalResult(TypedDict):
    """What ``run_eval`` returns (and ``eval --json`` prints)."""

    n: int  # questions evaluated
    k: int  # sources per search
    modes: dict[str, dict[str, Any]]  # mode -> figures (recall, mrr, ...; see rag_core.evaluation)
    settings: dict[str, Any]  # the retrieval settings in force
    seconds: float
    timings: dict[str, float]  # condense_s, retrieve_s
