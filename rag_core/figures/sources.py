"""What the cited passages say each of their figures is: every number of a passage with its
value (the table's unit applied), its item (the row's label, section and title, or in prose
the line item named nearest before it), its period (the column's, or the one period its
sentence names) and its document's entity.

A passage is the text the answer cites with its page's header context in front (the table
title, unit and period lines above a chunk cut from the middle of a statement), so that a row
keeps its columns and its unit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from rag_core.figures.labels import Item, spans
from rag_core.figures.numbers import Number, read_numbers
from rag_core.figures.periods import DATE, Period, _all_lengths, date_span, parse_date, span_months
from rag_core.figures.tables import Row, parse_tables
from rag_core.text_injection import blank_instructions

_GENERIC = frozenset(
    "inc incorporated corporation corp company co com ltd limited plc llc lp group holdings holding the and of "
    "subsidiaries sa ag nv se pdf form fy annual quarterly report filing docx txt md html htm".split()
)
_SENTENCE = re.compile(r"(?<=[.!?。！？;；])(?:\[\d{1,3}\])*\s+|\n\s*\n")  # "… £300,000.[19][30] Neil …" ends there


@dataclass
class Passage:
    """One cited source: ``number`` as the answer cites it ([1]), its text with the page's header
    context lines in front, and what names its document's entity (the company's name, the file
    name: "NVIDIA Corporation, 2023 Q2 NVDA.pdf")."""

    number: int
    text: str
    file: str = ""
    page: int | None = None
    entity: str = ""
    cited: str = ""  # the passage itself when ``text`` is its whole page ("": ``text`` is the passage)

    @property
    def own_text(self) -> str:
        """What was cited: the passage, not the page around it."""
        return self.cited or self.text

    def entity_words(self) -> frozenset[str]:
        return entity_keys(f"{self.entity} {self.file}")

    def where(self) -> str:
        return f"[{self.number}]"


@lru_cache(maxsize=1024)
def entity_keys(entity: str) -> frozenset[str]:
    """The words that name an entity ("NVIDIA Corporation, 2023 Q2 NVDA.pdf" → nvidia, nvda);
    initials also joined with the word they stand before, and a hyphened word also whole, as
    ``entities.names.name_matches`` compares names ("J.P. Morgan", "JP Morgan" → jpmorgan;
    "Wal-Mart" → walmart)."""
    out = set()
    initials = ""
    for written in re.findall(r"[^\W\d_][\w-]*", entity or ""):
        w = written.lower()
        for key in (w, w.replace("-", ""), initials + w if initials else ""):
            if (
                len(key) >= 2
                and key not in _GENERIC
                and not re.fullmatch(r"q[1-4]|h[12]|fy\d*|10-?[qk]|8-?k|20-?f", key)
            ):
                out.add(key)
        initials = initials + w if len(w) <= 2 and written.isalpha() and written.isupper() else ""
    return frozenset(out)


# A company's name before its legal form; its words may be joined by "&" and start with a number
# ("THE PROCTER & GAMBLE COMPANY", "3M COMPANY": both read as one name, not "GAMBLE COMPANY").
_COMPANY = re.compile(
    r"\b(?:[A-Z]|\d+[A-Z])[\w.&'’-]*(?:\s+(?:&\s+)?[A-Z][\w.&'’-]*){0,4},?\s+(?:Inc\.?|INC\.?|Incorporated|Corporation|CORPORATION|Corp\.|"
    r"Company|COMPANY|Ltd\.?|LTD\.?|Limited|plc|PLC|N\.V\.|AG|S\.A\.|SE|Co\.,\s+Ltd\.)(?![\w])"
)


def document_entity(text: str) -> str:
    """The company a document is about, as its first page names it ("NVIDIA CORPORATION",
    "Apple Inc."); "" when it names none."""
    m = _COMPANY.search((text or "")[:5000])
    return m.group(0) if m else ""


def named_entities(text: str, known: set[str]) -> set[str]:
    """The entity words of ``known`` that ``text`` names, capitalised as names are ("Apple",
    "NVIDIA's"; not "apple" nor "target")."""
    found = set()
    for m in re.finditer(r"\b[A-Z][\w&.-]*", text or ""):
        word = m.group(0).rstrip(".").lower()
        word = re.sub(r"['’]s$", "", word)
        if word in known:
            found.add(word)
        elif "." in word and word.split(".")[0] in known:  # "Amazon.com"
            found.add(word.split(".")[0])
    return found


@dataclass(frozen=True)
class Occurrence:
    """A number of a passage and what the passage says it is."""

    passage: Passage
    number: Number
    scale: float  # the unit of its table (1.0 in prose, for per-share amounts and percentages)
    unit_known: bool  # a table unit or a written scale word says what the digits count
    item: Item | None  # its row; None in prose
    concept: str | None  # the line item it is (a row's, or the one named nearest before it in prose)
    period: Period
    column: str = ""  # the column's words, in a table
    row: Row | None = None
    cell: int = -1  # its index in the row
    sentence: int = -1  # in prose: the index of its sentence in the passage
    label: str = ""  # what it is, in the source's words
    said: str = ""  # in prose: its sentence

    @property
    def value(self) -> float:
        """Signed, in units when the unit is known (else as written)."""
        n = self.number
        return n.value if n.scaled else (-1 if n.negative else 1) * n.magnitude * self.scale

    @property
    def step(self) -> float:
        return self.number.step if self.number.scaled else 10.0**-self.number.decimals * self.scale

    def describe(self) -> str:
        """What the source says the figure is: "6,728 is Compute & Networking (Operating income by Reportable Segments), three
        months ended July 30, 2023 in [2]"."""
        what = self.label or "a figure"
        if self.item is None:  # prose: the sentence says it
            return f"{self.number.clean} is in {what} in {self._where()}"
        when = self.column or (self.period.describe() if self.period.known else "")
        return f"{self.number.clean} is {what}" + (f", {when}" if when else "") + f" in {self._where()}"

    def _where(self) -> str:
        where = self.passage.where()
        if self.passage.file:
            where += f" ({self.passage.file}" + (f", page {self.passage.page}" if self.passage.page else "") + ")"
        return where


@dataclass
class Evidence:
    """All the figures of the cited passages."""

    passages: list[Passage]
    found: list[Occurrence] = field(default_factory=list)

    def entity_keys(self) -> set[str]:
        return {k for p in self.passages for k in p.entity_words()}


def read_passages(passages: Sequence[Passage]) -> Evidence:
    """The figures of ``passages``: table cells with their rows and columns, prose figures with
    the item and period of their sentence."""
    evidence = Evidence(list(passages))
    for passage in passages:
        evidence.found.extend(_occurrences(passage))
    return evidence


def _occurrences(passage: Passage) -> list[Occurrence]:
    text = blank_instructions(passage.text or "")  # a figure dictated to an assistant is no evidence
    out: list[Occurrence] = []
    covered = [False] * len(text)
    for table in parse_tables(text):
        for row in table.rows:
            for i in range(row.start, min(row.end, len(text))):
                covered[i] = True
            label = row.item.describe()
            for j, cell in enumerate(row.cells):
                if cell.number is None:
                    continue
                unit = bool(table.unit) or (cell.scale == 1.0 and (cell.number.percent or "share" in label.lower()))
                column = cell.column
                out.append(
                    Occurrence(
                        passage=passage,
                        number=cell.number,
                        scale=cell.scale,
                        unit_known=unit or cell.number.scaled,
                        item=row.item,
                        concept=row.item.concept,
                        period=column.period if column and not column.change else Period(),
                        column=column.describe() if column else "",
                        row=row,
                        cell=j,
                        label=label,
                    )
                )
            out.extend(_in_label(passage, row, text, -2 - len(out)))
    prose = "".join(" " if covered[i] or ch == "\n" else ch for i, ch in enumerate(text))
    start = 0
    for k, piece in enumerate(_SENTENCE.split(prose)):
        pos = prose.find(piece, start)
        start = pos + len(piece)
        numbers = [n for n in read_numbers(piece) if n.kind not in ("citation", "list")]
        if not numbers:
            continue
        period = sentence_period(piece)
        words = spans(piece)
        for n in numbers:
            concept, _ = _nearest_concept(piece, words, n)
            label = _snippet(piece, n)
            shifted = Number(**{**n.__dict__, "start": n.start + pos, "end": n.end + pos})
            out.append(
                Occurrence(
                    passage=passage,
                    number=shifted,
                    scale=1.0,
                    unit_known=n.scaled or n.percent,
                    item=None,
                    concept=concept,
                    period=period,
                    sentence=k,
                    label=label,
                    said=piece,
                )
            )
    return out


def _in_label(passage: Passage, row: Row, text: str, key: int) -> list[Occurrence]:
    """The numbers a row's label writes ("6480 Cameron Street Ste. 305 – Las Vegas, NV 89118":
    6480 and 305 before the cell 89118): held by the source as written, of no line item or period."""
    label = row.item.label
    at = text.find(label, row.start, row.end) if label else -1
    if at < 0:
        return []
    return [
        Occurrence(
            passage=passage,
            number=Number(**{**n.__dict__, "start": n.start + at, "end": n.end + at}),
            scale=1.0,
            unit_known=n.scaled or n.percent,
            item=None,
            concept=None,
            period=Period(),
            sentence=key,  # the label is a clause of its own: its numbers are computed with none else's
            label=_snippet(label, n) if n.start else f"“{' '.join(label.split()[:8])}”",
        )
        for n in read_numbers(label)
        if n.kind not in ("citation", "list")
    ]


_COUNTED = re.compile(r"\s+([a-z][a-z-]+)(?:\s+([a-z][a-z-]+))?")
_NOT_COUNTED = frozenset(
    "a an the in of for to as at by on with from and or but than was were is are be been its their his her "
    "this that per each million millions billion billions thousand thousands trillion percent dollars "
    "more less over under about nearly around".split()
)


def counted_words(after: str) -> list[str]:
    """The words that say what a count counts, right after it ("96 goals in 306 games" →
    [goals]; "278 league appearances" → [league, appearances]); none when a scale, a
    preposition or a punctuation mark follows ("$6,728 million in …", "24,000,")."""
    m = _COUNTED.match(after)
    out: list[str] = []
    for word in m.groups() if m else ():
        if not word or word in _NOT_COUNTED:
            break
        out.append(word)
    return out


def counted(after: str) -> set[str]:
    """``counted_words``, singular ({goal}; {league, appearance})."""
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in counted_words(after)}


def sentence_period(sentence: str) -> Period:
    """The one period a sentence names (a sentence naming two — "the second quarter and first
    half" — names none for sure); two dates it runs between are one period (``date_span``)."""
    lengths = set(_all_lengths(sentence))
    dates = {d for d in (parse_date(m) for m in DATE.finditer(sentence)) if d}
    span = date_span(sentence)
    if span is not None:  # "from October 30, 2023 through November 17, 2023": 1 month to November 17
        lengths.add(span_months(*span))
        dates.discard(span[0])
    return Period(
        lengths.pop() if len(lengths) == 1 else None,
        dates.pop() if len(dates) == 1 else None,
    )


_NEAR = 100  # characters: a line item named further before a figure is another clause's


def _snippet(sentence: str, n: Number, most: int = 70) -> str:
    """The words of a sentence that lead to a figure, quoted ("“… Data Center revenue was up”")."""
    head = " ".join(sentence[max(0, n.start - most) : n.start].split())
    if n.start > most and " " in head:
        head = "… " + head.split(" ", 1)[1]
    what = "".join(f" {w}" for w in counted_words(sentence[n.end : n.end + 60]))  # "96 goals"
    if head:
        return f"“{head} {n.clean}{what}”"
    tail = " ".join(sentence[n.end : n.end + 40].split())  # nothing before it: what follows ("“59.1 66.9 55.0 …”")
    if len(sentence) > n.end + 40 and " " in tail:
        tail = tail.rsplit(" ", 1)[0] + " …"
    return f"“{n.clean} {tail}”" if tail else f"“{n.clean}”"


def _nearest_concept(sentence: str, words: list[tuple[int, int, str]], n: Number) -> tuple[str | None, str]:
    """The line item named nearest before ``n`` in its sentence (else just after it), and the
    words that name it."""
    before = [(s, e, w) for s, e, w in words if e <= n.start and w.startswith("§") and n.start - e <= _NEAR]
    if before:
        s, e, w = before[-1]
        return w, sentence[s:e]
    after = [(s, e, w) for s, e, w in words if s >= n.end and w.startswith("§")]
    if after and not any(m.start > n.end and m.start < after[0][0] for m in read_numbers(sentence)):
        s, e, w = after[0]
        return w, sentence[s:e]
    return None, ""
