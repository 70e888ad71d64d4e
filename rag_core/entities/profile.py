"""What one document is about, read from its chunks: its subjects and the names it uses.

- **Subjects**: the company (or product, or person) the document is about, with the names a
  question may call it by. In order of strength: the registrant a filing's cover names
  ("NVIDIA CORPORATION / (Exact name of registrant as specified in its charter)"), with its
  trading symbol; a company named with its legal form or its ticker at the head of the
  document ("Walmart Inc. Reports Second Quarter Results", "Costco (Nasdaq: COST)"); else a
  name of the document's title that runs through the document (on most of its pages) or
  that its file name repeats ("Zephyr pump manual.pdf").
- **Names**: every word the document writes capitalised inside a sentence (not in a line set
  in capitals, not a sentence's first word), with the number of its parts (pages; chunks for
  a document without pages) that do so. "Target" the company is a name; "target" the word is
  not; a company named on one page of another's filing is mentioned in passing.

Read from the stored chunks, so a document indexed before this existed is read the same way
as a new one, without parsing or embedding it again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from rag_core.entities.covers import (
    LEGAL,
    NOT_SUBJECT_WORDS,
    Subject,
    filing_name,
    registrants,
    subject_of,
    trading_symbols,
)
from rag_core.text import is_title, tokenize

READER = 10  # bump when the reading changes: every document is read again (from its chunks)

HEAD_LINES = 12  # lines at the head of a document where its title and letterhead are
HEADING_WORDS = 5  # a heading line is this short and ends without a sentence's punctuation
TITLE_WORDS = 14  # a longer line is prose, not a title
RUN_SHARE = 0.5  # a title's name on at least this share of the parts runs through the document

_NAME_WORD = r"[A-Z][A-Za-z0-9.&'’\-]*"
_ORG = re.compile(rf"^\s*((?:The\s+)?{_NAME_WORD}(?:\s+(?:{_NAME_WORD}|&|and|of)){{0,4}}?),?\s+{LEGAL}")
_TICKER = re.compile(
    rf"((?:{_NAME_WORD}\s+(?:&\s+)?){{0,3}}{_NAME_WORD}),?(?:\s+{LEGAL})?\s*\(\s*(?i:NYSE American|NYSE|Nasdaq|TSX|LSE|OTC)"
    r"\s*:\s*([A-Z]{1,5}(?:\.[A-Z])?)\s*\)"
)
_CAPITALISED = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Za-z0-9&'’.\-]*")
_RUN = re.compile(r"[A-Z][A-Za-z0-9&'’.\-]*(?:[ \t]+[A-Z0-9][A-Za-z0-9&'’.\-]*)*")
_SENTENCE_END = (".", "?", "!", ":", ";", "•", "“", '"')
_LEADING = frozenset("today yesterday the a an and in on at by for from with as said announced".split())


@dataclass
class Profile:
    """What one document is about (``subjects``) and the names it uses (term → parts)."""

    subjects: list[Subject] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)
    parts: int = 0
    chunks: int = 0
    headings: list[str] = field(default_factory=list)  # terms its short heading lines write capitalised
    rows: list[str] = field(default_factory=list)  # terms its table rows' labels write capitalised
    stated: list[str] = field(default_factory=list)  # terms written capitalised in a sentence stating a figure
    # A document joining others' pages (a binder of filings): what each run of its pages is
    # about (``sections.read_sections``); empty for a document about one thing throughout.
    sections: list[Section] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Profile:
        subjects = [Subject(**s) for s in data.get("subjects") or []]
        names = {str(k): int(v) for k, v in (data.get("names") or {}).items()}
        headings = [str(t) for t in data.get("headings") or []]
        sections = [
            Section(int(s["first"]), int(s["last"]), Profile.from_json(s["profile"]))
            for s in data.get("sections") or []
        ]
        rows = [str(t) for t in data.get("rows") or []]
        stated = [str(t) for t in data.get("stated") or []]
        parts, chunks = int(data.get("parts") or 0), int(data.get("chunks") or 0)
        return cls(subjects, names, parts, chunks, headings, rows=rows, stated=stated, sections=sections)


@dataclass
class Section:
    """Pages ``first``..``last`` of a document, and what they are about, read as a document of their own."""

    first: int
    last: int
    profile: Profile


def read_profile(name: str, chunks: Iterable[tuple[Any, str]]) -> Profile:
    """The profile of the document ``name`` from its chunks ((page or None, text), in order)."""
    # A no-break space is a space: CVS Health's 2018 10-K sets every word of its cover apart with one
    # ("CVS\xa0HEALTH\xa0CORPORATION", "(Exact\xa0name\xa0of\xa0registrant…"), Corning's its "Trading Symbol(s)"
    chunks = [(page, (text or "").replace("\xa0", " ")) for page, text in chunks]
    parts: dict[Any, list[str]] = {}
    for i, (page, text) in enumerate(chunks):
        parts.setdefault(page if isinstance(page, int) else f"chunk{i:06d}", []).append(text or "")
    names: Counter[str] = Counter()
    for texts in parts.values():
        names.update(set().union(*(capitalised(t) for t in texts)))
    pages = sorted(parts, key=lambda p: (0, p, "") if isinstance(p, int) else (1, 0, p))
    head = _head_lines(parts[pages[0]]) if pages else []
    first = "\n".join(parts[pages[0]]) if pages else ""
    subjects = (
        registrants(first)
        or filing_name(first, parts)
        or _companies(head, first, names)
        or _title_names(head, name, names, len(parts))
    )
    symbols = trading_symbols(first)
    if len(subjects) == 1 and symbols:  # the cover's trading symbols are the one subject's
        subjects[0].tickers = sorted({*subjects[0].tickers, *(t.lower() for t in symbols)})
    whole = "\n".join(t for texts in parts.values() for t in texts)
    for subject in subjects:
        subject.name = _as_written(subject.name, whole)
    return Profile(
        subjects,
        dict(names),
        len(parts),
        len(chunks),
        sorted(headings(whole)),
        rows=sorted(headings(whole, rows=True)),
        stated=sorted(stated(whole)),
    )


def capitalised(text: str) -> set[str]:
    """The terms ``text`` writes capitalised inside a sentence, outside lines set in capitals."""
    out: set[str] = set()
    previous = "."  # the text's first word may start a sentence: not taken as a name
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if is_title(line) or not any(c.islower() for c in line):
            previous = "."
            continue
        for match in _CAPITALISED.finditer(line):
            # A line's first word continues the line above unless that one ended a sentence.
            before = line[: match.start()].rstrip() or previous
            if before.endswith(_SENTENCE_END):
                continue
            out.update(t for t in tokenize(match.group(0)) if len(t) > 1 and not t.isdigit())
        previous = line
    return out


def headings(text: str, rows: bool = False) -> set[str]:
    """The terms written capitalised in short heading lines ("Chapter 2: Capacity", "Data
    Center"): a question naming one ("the section on Capacity") names a part of the document,
    not a company the documents would have to be about. ``rows``: in the labels of table rows
    instead ("Embedded | 723 | 81", "Data Center $ 3,915"): items the document reports figures
    for ("What was Data Center revenue?")."""
    out: set[str] = set()
    for line in (text or "").splitlines():
        line = line.strip()
        if rows:
            label = _row_label(line)
            if label == line:
                continue
            line = label
        words = line.split()
        if not words or len(words) > HEADING_WORDS or line[-1] in ".,;?!" or not any(c.islower() for c in line):
            continue
        for match in _CAPITALISED.finditer(line):
            out.update(t for t in tokenize(match.group(0)) if len(t) > 1 and not t.isdigit())
    return out


def stated(text: str) -> set[str]:
    """The terms written capitalised in sentences that state a figure ("performed on a MacBook
    Pro with 2.2 GHz … and 2 GB RAM", "Caesars accounted for 12% of revenue"): a question may
    ask that figure of the name, though the document mentions it once. A year, a page range,
    a reference's volume or identifier states no figure."""
    out: set[str] = set()
    for sentence in _SENTENCE.split((text or "").replace("\n", " ")):
        if _STATED.search(sentence):
            out |= capitalised(sentence)
    return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_STATED = re.compile(
    r"(?<![\w.:/-])(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+(?:\.\d+)?\s?%)(?![\w/-])"
)
_FIGURE_TOKEN = re.compile(r"[$(]?-?\d[\d,.]*\)?%?|[$()%|—-]")


def _row_label(line: str) -> str:
    """A table row's label ("Embedded | 723 | 81" → "Embedded"); any other line as it is. The
    figures at the line's end are walked back over token by token (a pattern with nested
    repeats took minutes on a filing's long lines)."""
    tokens = line.replace("|", " | ").split()
    k = len(tokens)
    while k > 0 and _FIGURE_TOKEN.fullmatch(tokens[k - 1]):
        k -= 1
    if k == len(tokens) or k == 0 or not any(c.isdigit() for t in tokens[k:] for c in t):
        return line
    label = " ".join(tokens[:k]).strip(" |")
    label = label.split(" | ")[0] if " | " in label else label
    # a citation ending the label is not the item: "Single REALMNews (Guu et al., 2020) 40.4 …"
    cited = label.rfind(" (")
    if cited > 0 and ")" not in label[cited:]:
        return label[:cited]
    # a closed parenthesis ending it is a note on the item, not its name: "Single GraphRetriever
    # (Min et al., 2019b)", "Revenue (unaudited)"
    bare = re.sub(r"\s+\([^()]*\)$", "", label)
    return bare if re.search(r"[^\W\d_]", bare) else label


def _head_lines(texts: list[str]) -> list[str]:
    lines = [ln.strip() for ln in "\n".join(texts).splitlines() if ln.strip()]
    return lines[:HEAD_LINES]


def _as_written(name: str, text: str) -> str:
    """A name set in capitals ("AMAZON.COM, INC.") as the text writes it in a sentence, if it does."""
    if not name.isupper():
        return name
    for m in re.finditer(re.escape(name.rstrip(".")), text, re.IGNORECASE):
        if not m.group(0).isupper():
            return m.group(0) + ("." if name.endswith(".") else "")
    return name


def _companies(head: list[str], first: str, names: Counter[str]) -> list[Subject]:
    """Companies named at the head of a document with their legal form or their ticker; the one
    the document names most, and any named nearly as often."""
    found: dict[str, Subject] = {}
    for match in _TICKER.finditer(first):
        subject = subject_of(_strip_leading(match.group(1)), [match.group(2)])
        if subject:
            found.setdefault(subject.aliases[0][0], subject).tickers = sorted(
                {*found.get(subject.aliases[0][0], subject).tickers, match.group(2).lower()}
            )
    for line in head:
        if len(line.split()) > TITLE_WORDS:
            continue
        org = _ORG.match(line)
        if org:
            subject = subject_of(org.group(0))
            if subject and subject.aliases[0][0] not in found:
                found[subject.aliases[0][0]] = subject
    if not found:
        return []
    weight = {key: names.get(key, 0) for key in found}
    top = max(weight.values())
    return [s for key, s in found.items() if weight[key] >= top / 2]


def _strip_leading(name: str) -> str:
    """A name caught with the sentence's first words ("Today Walmart" → "Walmart")."""
    words = name.split()
    while len(words) > 1 and words[0].lower() in _LEADING:
        words = words[1:]
    return " ".join(words)


def _title_names(head: list[str], file_name: str, names: Counter[str], parts: int) -> list[Subject]:
    """A name of the document's title that runs through it, or that its file name repeats."""
    stem = set(tokenize(re.sub(r"\.[A-Za-z0-9]{1,5}$", "", file_name)))
    best: tuple[int, str] | None = None
    for line in head[:4]:
        if len(line.split()) > TITLE_WORDS:
            continue
        for match in _RUN.finditer(line):
            words = match.group(0).split()
            while words and set(tokenize(words[-1])) <= NOT_SUBJECT_WORDS:
                words.pop()
            while words and set(tokenize(words[0])) <= NOT_SUBJECT_WORDS | _LEADING:
                words.pop(0)
            terms = [t for t in tokenize(" ".join(words)) if len(t) > 2 and not t.isdigit()]
            if not terms:
                continue
            spread = max(names.get(t, 0) for t in terms)
            runs = parts >= 2 and spread >= max(2, RUN_SHARE * parts)
            if (runs or (stem & set(terms) and spread >= 1)) and (best is None or spread > best[0]):
                best = (spread, " ".join(words).strip(".,:;"))
    subject = subject_of(best[1]) if best else None
    return [subject] if subject else []
