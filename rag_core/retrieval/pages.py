"""Pages by their structure: the row labels and titles of a page's tables.

A broad question about a filing ("How did Apple's operating expenses compare to its revenue in
Q1 2023?") names line items, not the words of any one passage: the page that answers it is the
statement whose rows are labelled "Total operating expenses" and "Total net sales". Searched as
text, every chunk of every statement looks alike (docs/evaluation.md, "Chunk context"); searched
as *labels* — the text before a row's figures, and the titles set in capitals — a page is
picked by the line items it holds. ``statement_list`` is that list, for the fusion: it is empty
unless the question names a line item or a statement some page holds, so precise questions and
non-financial folders are searched as before.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from llama_index.core.schema import NodeWithScore

from rag_core.retrieval.dates import ABOUT_SHARE, all_nodes, dates_in
from rag_core.text import STOP_WORDS, is_title

# A table row is a label, then only figures to the end of the line ("Total net sales 117,154
# 123,945", "Research and development $ 7,709 $ 6,306 22 %", "Net income $ (1,234)").
_FIGURE = re.compile(r"[$(]*-?\d[\d,.]*\)?%?|[$%()—–-]+")
_LABEL = re.compile(r"[A-Za-z][^\d$]*")
_AMOUNT = re.compile(r"\d{3}|\d[,.]\d|\$|%")
_WORD = re.compile(r"[a-z]+")
# A label's parenthesised qualifier ("Operating income (loss)", "provided by (used in)") says
# which sign the figure may take, not which line item it is.
_QUALIFIER = re.compile(r"\([^)]*\)")
# A word in the labels of more than this share of a document's labelled pages is its running
# header (the company's name, "Notes to ..."): it tells no page of it from another.
RUNNING_SHARE = 0.5
# Words of a label or title that say nothing about the line item.
_GENERIC = frozenset(
    "total condensed consolidated statement statements unaudited continued note notes inc corporation "
    "company subsidiaries million millions thousand thousands billion except per share amount amounts data "
    "ended month months three six nine twelve year years quarter period january february march april may june "
    "july august september october november december".split()
)
# Words of a question that name line items in other words (a filing writes "net sales" and
# "research and development"; a question says "revenue" and "R&D").
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "revenue": ("net", "sales", "revenue"),
    "sales": ("revenue",),
    "earnings": ("net", "income"),
    "profit": ("income", "margin"),
    "spending": ("expense", "cost"),
    "expenditure": ("expense", "cost"),
    "operational": ("operating",),
    "operations": ("operating", "operation"),
    "opex": ("operating", "expense"),
    "capex": ("purchase", "property", "equipment", "capital", "expenditure"),
    "buyback": ("repurchase", "common", "stock"),
    "repurchase": ("repurchase", "common", "stock"),
    "inventory": ("inventory", "inventories"),
    "tax": ("income", "tax", "provision", "effective"),
    "debt": ("debt", "borrowing", "note"),
    "cash": ("cash", "activity", "provided"),
}
_PHRASES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\br\s*&\s*d\b", re.IGNORECASE), ("research", "development")),
    (re.compile(r"\bcapital expenditures?\b", re.IGNORECASE), ("purchase", "property", "equipment")),
    (re.compile(r"\bincome statements?\b", re.IGNORECASE), ("operation", "income")),
    (re.compile(r"\bgross (?:profit|margin)\b", re.IGNORECASE), ("gross", "margin", "profit")),
]
MIN_LABEL_SCORE = 2.0  # the best page's label weight below which the question names no line item
PAGES = 3  # pages the list holds
CHUNKS_PER_PAGE = 2
# A statement (of operations, of cash flows, a balance sheet) is where a line item is reported;
# the discussion and the notes restate it or break it down: its page counts this much more.
STATEMENT_BOOST = 1.5
STATEMENT_TITLE = re.compile(r"\bstatements?\s+of\b|\bbalance\s+sheets?\b", re.IGNORECASE)


class Sections(Protocol):
    """Which section of its document a page is in (``rag_core.entities.Entities``)."""

    def section_of(self, doc: str, page: Any) -> tuple[str, int]: ...


def _norm(word: str) -> str:
    """Singular forms and a bare stem, so "inventories" meets "inventory", "expenses" meets
    "expense" and "operating" meets "operations" (Microsoft's "Net cash from operations")."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 6 and word.endswith(("ing", "ion")):
        word = word[:-3]
    return word


_SYNONYMS_NORM = {_norm(word): words for word, words in _SYNONYMS.items()}


def label_terms(text: str) -> frozenset[str]:
    """The words of a label or title that name its line item."""
    text = _QUALIFIER.sub(" ", text)
    return frozenset(_norm(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and _norm(w) not in _GENERIC)


def question_terms(question: str) -> set[str]:
    """The question's words, with the words filings use for the same line items."""
    terms = {_norm(w) for w in _WORD.findall(question.lower()) if w not in STOP_WORDS}
    for word in list(terms):
        terms.update(_norm(s) for s in _SYNONYMS_NORM.get(word, ()))
    for pattern, words in _PHRASES:
        if pattern.search(question):
            terms.update(_norm(w) for w in words)
    return terms


def row_label(line: str) -> str:
    """The label of a table row (the words before its figures), a title line itself, or ""."""
    if is_title(line):
        return line
    words = line.split()
    end = len(words)
    while end and _FIGURE.fullmatch(words[end - 1]):
        end -= 1
    # an amount, not a page number (a table of contents lists "Balance Sheets 5")
    if end == len(words) or not any(_AMOUNT.search(w) for w in words[end:]):
        return ""
    label = " ".join(words[:end])
    return label if _LABEL.fullmatch(label) and len(label) <= 80 else ""


def row_labels(text: str) -> list[frozenset[str]]:
    """The labels of a chunk's table rows and its titles, as word sets."""
    out = []
    for line in text.splitlines():
        terms = label_terms(row_label(line.strip()))
        if terms and len(terms) <= 8:
            out.append(terms)
    return out


@dataclass
class PageLabels:
    """Per page (document, page number): its chunks and the labels each chunk holds; the idf of
    label words over pages."""

    chunks: dict[tuple[str, int], list[tuple[int, list[frozenset[str]]]]] = field(default_factory=dict)
    idf: dict[str, float] = field(default_factory=dict)
    # Per unit (a document; a section of one that joins others' pages), the words of its first
    # page (its cover) and the dates on it.
    covers: dict[str, frozenset[str]] = field(default_factory=dict)
    cover_dates: dict[str, frozenset[date]] = field(default_factory=dict)
    statements: frozenset[tuple[str, int]] = frozenset()  # pages titled as a financial statement
    units: dict[tuple[str, int], str] = field(default_factory=dict)  # a sectioned document's pages → their section
    units_of: dict[str, frozenset[str]] = field(default_factory=dict)  # a sectioned document → its sections

    def unit(self, key: tuple[str, int]) -> str:
        return self.units.get(key, key[0])

    @classmethod
    def build(
        cls, nodes: Mapping[int, Any] | Sequence[Any], doc_of: Any, sections: Sections | None = None
    ) -> PageLabels:
        chunks: dict[tuple[str, int], list[tuple[int, list[frozenset[str]]]]] = defaultdict(list)
        covers: dict[str, set[str]] = defaultdict(set)
        cover_dates: dict[str, set[date]] = defaultdict(set)
        units: dict[tuple[str, int], str] = {}
        units_of: dict[str, set[str]] = defaultdict(set)
        statements = set()
        for i, node in nodes.items() if isinstance(nodes, Mapping) else enumerate(nodes):
            page = (node.metadata or {}).get("page")
            if not isinstance(page, int):
                continue
            text = node.get_content()
            doc = doc_of(node)
            unit, cover = sections.section_of(doc, page) if sections is not None else (doc, 1)
            if unit != doc:
                units[(doc, page)] = unit
                units_of[doc].add(unit)
            if page == cover:
                covers[unit].update(_WORD.findall(text.lower()))
                cover_dates[unit].update(dates_in(text))
            if any(is_title(line) and STATEMENT_TITLE.search(line) for line in text.splitlines()):
                statements.add((doc_of(node), page))
            labels = row_labels(text)
            if labels:
                chunks[(doc_of(node), page)].append((i, labels))
        _drop_running_words(chunks)
        df: dict[str, int] = defaultdict(int)
        for entries in chunks.values():
            for word in {w for _, labels in entries for label in labels for w in label}:
                df[word] += 1
        n = len(chunks)
        idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        return cls(
            dict(chunks),
            idf,
            {d: frozenset(words) for d, words in covers.items()},
            {d: frozenset(found) for d, found in cover_dates.items()},
            frozenset(statements),
            units,
            {d: frozenset(u) for d, u in units_of.items()},
        )

    def label_score(self, label: frozenset[str], terms: set[str]) -> tuple[float, frozenset[str]]:
        """How much of ``label`` the question names, and the words it names: the idf of the
        words the question holds times their share of the label's idf, when that share is at
        least two thirds ("net cash provided by investing activities" is not "net cash provided
        by operating activities": the word missing is the one that tells them apart)."""
        have = label & terms
        if not have:
            return 0.0, frozenset()
        got = sum(self.idf.get(w, 0.0) for w in have)
        share = got / (sum(self.idf.get(w, 0.0) for w in label) or 1.0)
        if share * 3 < 2:
            return 0.0, frozenset()
        return got * share, have

    def score_pages(self, terms: set[str]) -> dict[tuple[str, int], tuple[float, dict[int, float]]]:
        """Per page with a label the question's ``terms`` name: the page's score (the idf of
        the question's words its labels name, each word once: a page repeating one label per
        segment is not ahead of the statement that holds it once) and each chunk's."""
        out = {}
        for key, entries in self.chunks.items():
            named: set[str] = set()
            per_chunk: dict[int, float] = {}
            for i, labels in entries:
                chunk_score = 0.0
                for label in labels:
                    s, have = self.label_score(label, terms)
                    if s > 0:
                        chunk_score += s
                        named |= have
                if chunk_score > 0:
                    per_chunk[i] = chunk_score
            if named:
                out[key] = (sum(self.idf.get(w, 0.0) for w in named), per_chunk)
        return out


def _drop_running_words(chunks: dict[tuple[str, int], list[tuple[int, list[frozenset[str]]]]]) -> None:
    """Take out of each document's labels the words on most of its labelled pages (in place)."""
    pages_of: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for key in chunks:
        pages_of[key[0]].append(key)
    for keys in pages_of.values():
        if len(keys) < 4:
            continue
        df: dict[str, int] = defaultdict(int)
        for key in keys:
            for word in {w for _, labels in chunks[key] for label in labels for w in label}:
                df[word] += 1
        running = {w for w, c in df.items() if c > RUNNING_SHARE * len(keys)}
        if not running:
            continue
        for key in keys:
            kept = [(i, [lab - running for lab in labels if lab - running]) for i, labels in chunks[key]]
            chunks[key] = [(i, labels) for i, labels in kept if labels]


_CACHE: weakref.WeakKeyDictionary[Any, tuple[Any, PageLabels]] = weakref.WeakKeyDictionary()


def page_labels(bm: Any, doc_of: Any, sections: Sections | None = None) -> PageLabels:
    """The labels of the pages of a keyword index's nodes, built once per index object (and
    sections: both are of one version of the index)."""
    cached = _CACHE.get(bm)
    if cached is None or cached[0] is not sections:
        cached = (sections, PageLabels.build(all_nodes(bm), doc_of, sections))
        _CACHE[bm] = cached
    return cached[1]


def _named_pages(
    question: str, bm: Any, labels: PageLabels
) -> tuple[list[set[str]], dict[tuple[str, int], tuple[float, dict[int, float]]]]:
    """The question's names, and the pages whose labels name its other words. The names pick
    documents (the document scores, the routing), not pages: a cover page's "NVIDIA
    CORPORATION" is no line item."""
    names = [set(_WORD.findall(name.lower())) for name, _terms in bm.names_in(question)]
    return names, labels.score_pages(question_terms(question) - {_norm(w) for name in names for w in name})


def names_line_item(question: str, bm: Any, doc_of: Any, sections: Sections | None = None) -> bool:
    """Whether the question names a line item or a statement that some page's labels hold."""
    _, scored = _named_pages(question, bm, page_labels(bm, doc_of, sections))
    return bool(scored) and max(s for s, _ in scored.values()) >= MIN_LABEL_SCORE


def statement_list(
    question: str,
    bm: Any,
    doc_of: Any,
    doc_scores: Callable[[], Mapping[str, float]],
    pages: int = PAGES,
    *,
    sections: Sections | None = None,
    keep: Callable[[tuple[str, int]], bool] | None = None,
) -> list[NodeWithScore]:
    """The chunks of the pages whose row labels and titles the question names, best first:
    a page's label score times its document's share of the best document score (the
    statement of the filing the question is about, not a neighbour's). Empty when no page's
    labels reach ``MIN_LABEL_SCORE``: the question names no line item. ``sections``: where a
    document joins others' pages, each section's first page is its cover (what it is about,
    its date); ``keep``: the pages that may be listed (a search inside some sections)."""
    labels = page_labels(bm, doc_of, sections)
    names, scored = _named_pages(question, bm, labels)
    if not scored or max(s for s, _ in scored.values()) < MIN_LABEL_SCORE:
        return []
    # A filing, a release, a report names whom it is about on its first page: with a name in
    # the question, the statements are those of the documents whose first page holds it.
    # A date it states ("the quarter ended July 1, 2023") picks, among those, the ones whose
    # first page carries it (the period a filing or release covers is on its cover).
    scores = doc_scores()  # every document's: asked for only now that a line item is named
    best_doc = max(scores.values(), default=0.0) or 1.0
    about = {u for d, s in scores.items() if s >= ABOUT_SHARE * best_doc for u in labels.units_of.get(d, {d})}
    named = {d for d in about if any(name <= labels.covers.get(d, frozenset()) for name in names)}
    about = named or about
    stated = dates_in(question)
    dated = {d for d in about if stated & labels.cover_dates.get(d, frozenset())}
    about = dated or about
    ranked = sorted(
        (
            (
                score * scores.get(key[0], 0.0) / best_doc * (STATEMENT_BOOST if key in labels.statements else 1.0),
                key,
                chunks,
            )
            for key, (score, chunks) in scored.items()
            if labels.unit(key) in about and (keep is None or keep(key))
        ),
        key=lambda x: (-x[0], x[1]),
    )
    out: list[NodeWithScore] = []
    for score, _key, chunks in ranked[:pages]:
        if score <= 0:
            break
        for i in sorted(chunks, key=lambda i: (-chunks[i], i))[:CHUNKS_PER_PAGE]:
            out.append(NodeWithScore(node=bm.nodes[i], score=round(score, 4)))
    return out
