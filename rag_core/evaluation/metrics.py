"""Figures of one evaluation: ranks of the gold file and page among the sources, and
their means per mode (see ``rag_core.evaluation`` for what each figure means). An answer's
own scoring builds on these, in ``answers``."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rag_core.evaluation.questions import EvalQuestion
from rag_core.payloads import Source
from rag_core.text import CJK_CHAR

SPAN_MAX = 100  # longer gold answers are prose, not spans: no answer_recall for them

_PUNCT = set(string.punctuation) | set("，。！？；：、“”‘’（）《》【】「」『』…—·")
_ARTICLES = {"a", "an", "the"}


def f1_tokens(text: str) -> list[str]:
    """SQuAD-style tokens: lower-cased words without punctuation or articles; CJK per character."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = CJK_CHAR.sub(lambda m: f" {m.group(0)} ", text)
    return [t for t in text.split() if t not in _ARTICLES]


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall (bag of tokens), as SQuAD scores answers."""
    pred, ref = f1_tokens(prediction), f1_tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def file_matches(source_file: str | None, gold: str) -> bool:
    """A source matches a gold file by its name in the corpus, or by its base name."""
    if not source_file:
        return False
    a = unicodedata.normalize("NFC", source_file).replace("\\", "/")
    b = unicodedata.normalize("NFC", gold).replace("\\", "/")
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


def squash(text: str) -> str:
    """``text`` without whitespace, case or compatibility forms: a span matches however it wraps."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text or "").lower())


def score_sources(q: EvalQuestion, sources: Sequence[Source], k: int) -> dict[str, Any]:
    """File/page hit ranks (1-based, None when absent from the top ``k``) for one search."""
    top = list(sources)[:k]
    file_rank = page_rank = None
    found: set[str] = set()
    for rank, src in enumerate(top, 1):
        for gold in q.gold_files:
            if file_matches(src.get("file"), gold):
                found.add(gold)
                file_rank = file_rank or rank
                if q.gold_pages and src.get("page") in q.gold_pages:
                    page_rank = page_rank or rank
    out: dict[str, Any] = {
        "file_rank": file_rank,
        "coverage": len(found) / len(set(q.gold_files)) if q.gold_files else None,
        "page_rank": page_rank if q.gold_pages else None,
        "refused": not top,
        "files": [s.get("file") for s in top],
    }
    if q.entity_files:
        foreign = [s for s in top if not any(file_matches(s.get("file"), f) for f in q.entity_files)]
        out["foreign"] = round(len(foreign) / len(top), 4) if top else 0.0
    if q.gold_answer and len(q.gold_answer) <= SPAN_MAX:
        text = squash(" ".join(str(s.get("text") or "") for s in top))
        out["answer_found"] = squash(q.gold_answer) in text
    return out


def summarise(rows: list[dict[str, Any]], questions: list[EvalQuestion]) -> dict[str, Any]:
    """Per-mode figures from per-question rows (see the module docstring)."""
    answerable = [(q, r) for q, r in zip(questions, rows, strict=False) if q.answerable]
    graded = [(q, r) for q, r in answerable if q.gold_files]
    off = [r for q, r in zip(questions, rows, strict=False) if not q.answerable]

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    out: dict[str, Any] = {"n": len(graded)}
    if graded:
        out["recall"] = mean([1.0 if r["file_rank"] else 0.0 for _, r in graded])
        out["mrr"] = mean([1.0 / r["file_rank"] if r["file_rank"] else 0.0 for _, r in graded])
        out["coverage"] = mean([r["coverage"] for _, r in graded])
    paged = [r for q, r in graded if q.gold_pages]
    if paged:
        out["page_recall"] = mean([1.0 if r["page_rank"] else 0.0 for r in paged])
        out["page_mrr"] = mean([1.0 / r["page_rank"] if r["page_rank"] else 0.0 for r in paged])
    spans = [r["answer_found"] for _, r in answerable if "answer_found" in r]
    if spans:
        out["answer_recall"] = mean([1.0 if s else 0.0 for s in spans])
        out["n_answers"] = len(spans)
    foreign = [r["foreign"] for r in rows if r.get("foreign") is not None]
    if foreign:  # sources from a document about another entity than the one the question is about
        out["foreign_sources"] = mean(foreign)
        out["foreign_questions"] = mean([1.0 if f > 0 else 0.0 for f in foreign])
    rewrites = [r["rewrite_f1"] for r in rows if r.get("rewrite_f1") is not None]
    if rewrites:
        out["rewrite_f1"] = mean(rewrites)
    errors = sum(1 for r in rows if r.get("condense_error"))
    if errors:
        out["condense_errors"] = errors
    if answerable:
        out["false_refusals"] = mean([1.0 if r["refused"] else 0.0 for _, r in answerable])
    if off:
        out["n_unanswerable"] = len(off)
        out["correct_refusals"] = mean([1.0 if r["refused"] else 0.0 for r in off])
    return out
