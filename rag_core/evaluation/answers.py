"""Scoring answers: is the gold figure (or short span) in the answer, is a gold page cited,
did the answer refuse? (``score_answer`` per question, ``summarise_answers`` per run.)

Figures are compared as numbers, not strings: "82,959", "82959", "$82,959 million" and
"$82.96 billion" are one figure. A number in a filing's table carries no unit ("82,959" in a
table headed "in millions"), so a gold figure without a unit matches an answer's figure at
any of the usual scales (units, thousands, millions, billions), within the precision the
answer wrote it with ("$82.96 billion" is 82,955–82,965 million).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_core.evaluation.metrics import file_matches, squash, summarise
from rag_core.evaluation.questions import EvalQuestion
from rag_core.payloads import Source

_SCALES = {
    "thousand": 1e3,
    "thousands": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
}
_NUMBER = re.compile(
    r"(?P<neg>[-−(])?\s*(?P<cur>[$€£¥])?\s*(?<![\w.,])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?!\d|-[A-Za-z])"
    r"(?:\s*(?P<pct>%|percent\b|percentage\s+points?\b|pp\b))?(?:\s*(?P<unit>thousands?|millions?|billions?|trillion|mn|bn|[kmb])\b)?",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+$", re.IGNORECASE
)  # "September 30" : a day, not a figure
# Phrases an answer uses to say the documents do not answer (the prompt asks for the first).
REFUSALS = (
    "documents don't say",
    "documents do not say",
    "documents don't cover",
    "documents do not cover",
    "documents don't mention",
    "documents do not mention",
    "documents don't contain",
    "documents do not contain",
    "not mentioned in the",
    "no information",
    "not provided in the",
    "cannot find",
    "can't find",
    "does not say",
    "doesn't say",
    "don't say",
)


@dataclass(frozen=True)
class Figure:
    """A number as written: its value with the scale its words give, and how precise it is."""

    value: float  # with the written scale applied ("$82.96 billion" → 8.296e10)
    step: float  # the last written digit's place value, scaled (0.01e9 for "82.96 billion")
    scaled: bool  # a scale word was written (million, billion, ...)
    percent: bool
    text: str


def figures(text: str) -> list[Figure]:
    """The figures in ``text`` (years and one-digit counts are figures too; callers filter)."""
    text = unicodedata.normalize("NFKC", text or "")
    out = []
    for m in _NUMBER.finditer(text):
        if _MONTH_DAY.search(text[max(0, m.start("num") - 12) : m.start("num")]):
            continue
        raw = m.group("num").replace(",", "")
        try:
            number = float(raw)
        except ValueError:
            continue
        decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
        unit = (m.group("unit") or "").lower()
        # a bare "m"/"b"/"k" counts only right after a currency sign ("$1.2b"), not "5 m of cable"
        if unit in ("m", "b", "k") and not m.group("cur"):
            unit = ""
        scale = _SCALES.get(unit, 1.0)
        negative = bool(m.group("neg")) and m.group("neg") in "-−("
        value = -number if negative else number
        out.append(Figure(value * scale, 10.0**-decimals * scale, bool(unit), bool(m.group("pct")), m.group(0)))
    return out


def is_year(figure: Figure) -> bool:
    return not figure.scaled and not figure.percent and figure.value.is_integer() and 1900 <= figure.value <= 2100


def figure_matches(gold: Figure, candidate: Figure) -> bool:
    """Whether ``candidate`` says ``gold``: the same number, the unitless one of the two read at
    whichever usual scale makes them meet, within the precision of the coarser one — which
    must keep at least three significant digits ("$82.96 billion" says 82,959 million;
    "$83 billion" is too rough to say it)."""
    free = (1.0, 1e3, 1e6, 1e9)
    gold_free = not (gold.scaled or gold.percent)
    cand_free = not (candidate.scaled or candidate.percent)
    pairs = [(1.0, 1.0)]
    if gold_free and not cand_free:
        pairs = [(s, 1.0) for s in free]
    elif cand_free and not gold_free:
        pairs = [(1.0, s) for s in free]
    for gs, cs in pairs:
        g, c = abs(gold.value) * gs, abs(candidate.value) * cs
        if g == c:
            return True
        step = max(gold.step * gs, candidate.step * cs)
        if step > 0.01 * g:  # fewer than three significant digits
            continue
        if abs(g - c) <= step / 2 + 1e-9 * g:
            return True
    return False


def gold_figures(text: str) -> list[Figure]:
    """The figures of a gold answer worth checking: amounts (a currency sign, a scale word or
    at least four digits) and percentages; not years, counts or page and item numbers."""
    return [
        f
        for f in figures(text)
        if not is_year(f) and (f.percent or f.scaled or abs(f.value) >= 1000 or f.text.strip()[:1] in "$€£¥")
    ]


def answer_correct(answer: str, gold: str) -> bool:
    """The gold answer is in ``answer``: every gold figure as a number (any format), or, for a
    gold answer without figures, the gold text itself (whitespace and case ignored)."""
    wanted = gold_figures(gold)
    if not wanted:
        return bool(gold.strip()) and squash(gold) in squash(answer)
    said = figures(answer)
    return all(any(figure_matches(g, c) for c in said) for g in wanted)


def refused(answer: str) -> bool:
    """The answer says the documents do not answer the question."""
    text = unicodedata.normalize("NFKC", answer or "").lower().replace("’", "'")
    return any(phrase in text for phrase in REFUSALS)


_CITATION = re.compile(r"\[(\d{1,2})\]")


def cited_sources(answer: str, sources: Sequence[Source]) -> list[Source]:
    """The sources the answer cites with [n] markers; all of them when it cites none."""
    marks = [int(n) for n in _CITATION.findall(answer or "")]
    chosen = [sources[n - 1] for n in dict.fromkeys(marks) if 1 <= n <= len(sources)]
    return chosen or list(sources)


def cites_page(answer: str, sources: Sequence[Source], gold_files: Sequence[str], gold_pages: Sequence[int]) -> bool:
    """A cited source is a gold page of a gold file."""
    return any(
        src.get("page") in gold_pages and any(file_matches(src.get("file"), g) for g in gold_files)
        for src in cited_sources(answer, sources)
    )


def score_answer(q: EvalQuestion, answer: str, sources: Sequence[Source]) -> dict[str, Any]:
    """An answer against the gold: ``correct`` (gold figures or span in it), ``cited_page`` (a
    cited source is a gold page), ``refused_answer`` (it says the documents don't answer)."""
    out: dict[str, Any] = {"refused_answer": refused(answer)}
    if q.gold_answer:
        out["correct"] = answer_correct(answer, q.gold_answer)
    if q.gold_pages and q.gold_files:
        out["cited_page"] = cites_page(answer, sources, q.gold_files, q.gold_pages)
    return out


def summarise_answers(rows: list[dict[str, Any]], questions: list[EvalQuestion]) -> dict[str, Any]:
    """The answer mode's figures, besides the retrieval ones of its sources (``summarise``):
    ``answer_accuracy`` (answerable questions with a gold answer), the same where a gold page
    was among the sources (``answer_accuracy_page_retrieved``: the model's share, retrieval
    aside), ``citation_page``, ``refusal_rate`` (unanswerable questions the answer refused),
    ``false_refusal_rate`` (answerable ones it refused) and the figure check's
    (``summarise_figures``)."""
    out = summarise(rows, questions)
    pairs = list(zip(questions, rows, strict=False))

    def share(values: list[bool]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    graded = [r for q, r in pairs if q.answerable and "correct" in r]
    if graded:
        out["answer_accuracy"] = share([r["correct"] for r in graded])
        out["n_graded"] = len(graded)
    found = [r for r in graded if r.get("page_rank")]
    if found:
        out["answer_accuracy_page_retrieved"] = share([r["correct"] for r in found])
        out["n_page_retrieved"] = len(found)
    cited = [r["cited_page"] for q, r in pairs if q.answerable and "cited_page" in r]
    if cited:
        out["citation_page"] = share(cited)
    off = [r["refused_answer"] for q, r in pairs if not q.answerable]
    if off:
        out["refusal_rate"] = share(off)
    on = [r["refused_answer"] for q, r in pairs if q.answerable]
    if on:
        out["false_refusal_rate"] = share(on)
    out.update(summarise_figures([r for _, r in pairs]))
    return out


def summarise_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figure check over the answers (``chat.checking``): ``figures_checked`` and
    ``figures_unsupported`` in all; of the graded answers with a figure checked, the share of
    the wrong ones it marked (``wrong_answers_marked``, the higher the better) and of the right
    ones (``right_answers_marked``, the lower the better)."""
    rows = [r for r in rows if "figures_checked" in r]
    if not rows:
        return {}
    out: dict[str, Any] = {
        "figures_checked": sum(int(r["figures_checked"]) for r in rows),
        "figures_unsupported": sum(int(r["figures_unsupported"]) for r in rows),
    }
    checked = [r for r in rows if r["figures_checked"] and "correct" in r and not r.get("refused_answer")]
    for name, correct in (("wrong_answers_marked", False), ("right_answers_marked", True)):
        group = [bool(r["figures_unsupported"]) for r in checked if bool(r["correct"]) is correct]
        if group:
            out[name] = round(sum(group) / len(group), 4)
    return out
