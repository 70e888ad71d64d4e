"""The cell a question asks for, found by the table's structure: the row whose label is the
line item the question names, the column whose period is the period it names, on a page of
the document of the entity it names.

"What was NVIDIA's net income for the quarter ended July 30, 2023?" → the row "Net income"
(not "Operating income", not "Compute & Networking" under "Operating income by Reportable
Segments"), the column "Three Months Ended July 30, 2023" (not the six months beside it).
A comparison of two companies is two such questions, each with its own entity and period
(``question_parts``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rag_core.figures import keyed, named
from rag_core.figures.labels import agreement, concepts, content, where_not_what, words
from rag_core.figures.numbers import Number
from rag_core.figures.periods import DATE, Period, agree, parse_date, period_named
from rag_core.figures.sources import entity_keys, named_entities
from rag_core.figures.tables import Column, Row, Table, parse_tables

_STATEMENT = re.compile(
    r"statements?\s+of|income\s+statements?|balance\s+sheets?|cash\s+flows?|financial\s+position", re.IGNORECASE
)


@dataclass
class Page:
    """A retrieved page: its whole text, its file and page number, its document's entity."""

    text: str
    file: str = ""
    page: int | None = None
    entity: str = ""

    def entity_words(self) -> frozenset[str]:
        return entity_keys(f"{self.entity} {self.file}")


def page_text(chunks: Sequence[tuple[int | None, str]]) -> str:
    """A page's text again from its chunks ((start offset in the page or None, text)), the
    splitter's overlap removed: chunks with offsets are laid at them, the others appended."""
    placed = sorted((start, text) for start, text in chunks if start is not None)
    out, end = "", 0
    for start, text in placed:
        if start + len(text) <= end:
            continue
        out += text[max(0, end - start) :] if start < end else ("\n" if out and start > end else "") + text
        end = start + len(text)
    rest = [text for start, text in chunks if start is None]
    return "\n".join([out, *rest]) if out else "\n".join(rest)


@dataclass
class CellMatch:
    """The cell found: its figure, row, column and page, and how sure the match is (0–1)."""

    number: Number
    scale: float
    unit: str
    row: Row
    column: Column
    page: Page
    confidence: float

    @property
    def value(self) -> float:
        n = self.number
        return n.value if n.scaled else (-1 if n.negative else 1) * n.magnitude * self.scale

    def describe(self) -> str:
        """The cell in words: "Net income, three months ended July 30, 2023: $6,188 (in millions; 2023 Q2 NVDA.pdf, page 3)"."""
        unit = f"in {self.unit}; " if self.unit and not self.number.percent and self.scale != 1.0 else ""
        where = f"{self.page.file}" + (f", page {self.page.page}" if self.page.page else "")
        return f"{self.row.item.describe()}, {self.column.describe()}: {self.number.clean} ({unit}{where})"


@dataclass
class Ask:
    """One figure a question asks for: the words naming its item, its period, its entity."""

    text: str
    terms: set[str]
    period: Period
    entities: set[str]


def question_parts(question: str, known: set[str] | None = None) -> list[Ask]:
    """The figures ``question`` asks for: one per entity it names (each with the item and the
    period its part of the question names, or the other part's when it names none)."""
    known = known or set()
    found = [(m.start(), m.group(0)) for m in re.finditer(r"\b[A-Z][\w&.-]*(?:['’]s)?", question)]
    mentions: list[tuple[int, str]] = []
    for pos, word in found:
        for key in named_entities(word, known):
            if not any(k == key for _, k in mentions):
                mentions.append((pos, key))
    dates = [(m.start(), m) for m in DATE.finditer(question) if parse_date(m)]
    if len(mentions) < 2:
        return _by_item(
            [Ask(question, content(where_not_what(question)), period_named(question), {k for _, k in mentions})]
        )
    cuts = [0] + [pos for pos, _ in mentions[1:]] + [len(question)]
    parts = [question[cuts[i] : cuts[i + 1]] for i in range(len(mentions))]
    asks = [
        Ask(p, content(where_not_what(p)), period_named(p), {key}) for p, (_, key) in zip(parts, mentions, strict=True)
    ]
    whole = period_named(question)
    for i, ask in enumerate(asks):
        if len(dates) == len(asks):  # "Apple's and NVIDIA's ... ended July 1, 2023 and July 30, 2023"
            ask.period = Period(ask.period.months, parse_date(dates[i][1]), ask.period.fiscal_year, ask.period.quarter)
        if ask.period.months is None:
            ask.period = Period(whole.months, ask.period.end, ask.period.fiscal_year, ask.period.quarter)
        if not _names_item(ask.terms):
            donor = next((a for a in asks if _names_item(a.terms)), None)
            if donor:
                ask.terms |= donor.terms - {k for a in asks for k in a.entities}
    return _by_item(asks)


def _by_item(asks: list[Ask]) -> list[Ask]:
    """Each ask naming two line items ("Apple's operating expenses ... compared to its
    revenue") as one ask per item, in the order named."""
    out = []
    for ask in asks:
        named = [w for w in words(ask.text) if w.startswith("§")]
        named = list(dict.fromkeys(named))
        if len(named) < 2:
            out.append(ask)
            continue
        for concept in named:
            out.append(Ask(ask.text, ask.terms - (set(named) - {concept}), ask.period, set(ask.entities)))
    return out


def _names_item(terms: set[str]) -> bool:
    return bool(concepts(terms))


def find_cell(question: str, pages: Sequence[Page], ask: Ask | None = None) -> CellMatch | None:
    """The cell of ``pages`` that ``question`` (or one part of it, ``ask``) asks for, or None
    when no row's label is the item it names or no column's period can be the one it names."""
    known = {k for p in pages for k in p.entity_words()}
    ask = ask or question_parts(question, known)[0]
    best: tuple[float, CellMatch] | None = None
    seen: dict[float, float] = {}
    tables = [(page, table) for page in pages for table in parse_tables(page.text)]
    parts = {id(t): {p for c in t.columns if c.name for p in c.parts()} for _, t in tables}
    spoken = named.said(ask.text)
    for page, table in tables:
        if ask.entities and page.entity_words() and not (ask.entities & page.entity_words()):
            continue  # another company's page
        elsewhere = set().union(*parts.values()) - parts[id(table)]
        if parts[id(table)] and named.another_tables(spoken, elsewhere, table.caption):
            continue  # "on SQuAD" of a table on Natural Questions alone
        labels = {frozenset(replace(r.item, shared=False).qualifiers()) for r in table.rows}
        key = keyed.asked(ask.text, table.key) if table.key is not None else None
        for row in table.rows:
            if table.key is not None:  # a table keyed by a number: the row of the key asked, else none
                if key is None or row.key is None or abs(row.key - key) > 1e-9 * max(1.0, abs(key)):
                    continue
            elif agreement(ask.terms, row.item) != "agree":
                continue
            if named.another_number(named.numbered(row.item.label), named.numbered(ask.text)):
                continue  # "Base 1024" asked: not the row "Base 512"
            own = frozenset(replace(row.item, shared=False).qualifiers())
            if own and any(own < other <= ask.terms for other in labels):
                continue  # "BM25 + DPR" asked: the row "BM25" says less than the question names
            for match, score in _columns(ask, table, row, page):
                seen[match.value] = max(seen.get(match.value, 0.0), score)
                if best is None or score > best[0]:
                    best = (score, match)
    if best is None:
        return None
    score, match = best
    rivals = [s for v, s in seen.items() if v != match.value and s >= score - 0.05]
    match.confidence = round(max(0.05, min(1.0, score) - (0.3 if rivals else 0.0)), 2)
    return match


def find_cells(question: str, pages: Sequence[Page], previous: str = "") -> list[CellMatch | None]:
    """One cell per figure ``question`` asks for (two for a comparison of two companies); a
    follow-up that names no line item ("And Apple's for the quarter ended July 1, 2023?") asks
    for the item of the ``previous`` question."""
    known = {k for p in pages for k in p.entity_words()}
    asks = question_parts(question, known)
    if previous and not any(_names_item(a.terms) for a in asks):
        before = question_parts(previous, known)
        borrowed = {t for a in before for t in a.terms} - {k for a in before for k in a.entities}
        for ask in asks:
            ask.terms |= borrowed
    return [find_cell(ask.text, pages, ask) for ask in asks]


# a whole number a row's label and a question may share ("127"; not the 5 of "Top-5", nor a figure's digits)
_WHOLE = re.compile(r"(?<![\w.,-])\d{1,4}(?![\w.,-])")


def _columns(ask: Ask, table: Table, row: Row, page: Page) -> list[tuple[CellMatch, float]]:
    """The cells of ``row`` whose period can be the asked one, each with its score."""
    out = []
    label_words = content(row.item.label) | content(row.item.section)
    asked_items = {t for t in ask.terms if t.startswith("§")} | (ask.terms & label_words)
    cover = len(asked_items & label_words) / max(1, len(label_words))
    base = 0.55 + 0.15 * cover + (0.1 if _STATEMENT.search(table.title) else 0.0)
    base += 0.15 * len(row.item.qualifiers() & ask.terms)  # the more of the question a row names, the better
    asked_numbers, label_numbers = set(_WHOLE.findall(ask.text)), set(_WHOLE.findall(row.item.label))
    if asked_numbers and label_numbers:  # "with 127 gold negatives": the row "Gold 127 ✓", not "Gold 7 ✗"
        base += 0.1 if asked_numbers & label_numbers else -0.1
    percent = bool(re.search(r"percent|%|\brate\b|\bratio\b|\bshare of\b", ask.text, re.I))
    dated = [c.column.period.end for c in row.cells if c.column and c.column.period.end]
    latest = max(dated) if dated else None
    spoken = named.said(ask.text)
    names = {c.column.parts() for c in row.cells if c.column and c.column.name}
    for cell in row.cells:
        if cell.number is None or cell.column is None or cell.column.change or (cell.number.percent and not percent):
            continue
        if cell.column.name:  # a column named by words: only the one the question names ("on TREC")
            mine = list(cell.column.parts())
            if not named.column_said(spoken, mine, names - {tuple(mine)}) or not named.names(spoken, mine[-1]):
                continue
        period = cell.column.period
        verdict = agree(ask.period, period)
        if verdict is False:
            continue
        score = base + (0.05 if cell.number.percent == percent else 0.0)
        if cell.column.name:  # "top-50 ... on WBQ": "Top-50 WBQ" says more of it than another table's "WBQ"
            score += 0.05 * sum(named.names(spoken, part) for part in cell.column.parts())
        if ask.period.end is not None and verdict:
            score += 0.2
        elif ask.period.months is not None and period.months == ask.period.months:
            score += 0.1 + (0.05 if period.end == latest else 0.0)  # "the quarter": the latest
        elif ask.period.months is not None and period.months is None:
            score -= 0.2
        else:  # no length asked: the latest period, the quarter before the year to date
            score -= 0.1 - (0.05 if period.end == latest else 0.0) - (0.02 if period.months == 3 else 0.0)
        out.append((CellMatch(cell.number, cell.scale, table.unit, row, cell.column, page, 0.0), score))
    return out
