"""What each run of pages of one document is about, when the document joins others' pages.

A binder of filings (several companies' 10-Qs saved as one PDF), a compiled set of reports,
is one document to the index, but no one company's: its Microsoft pages are Microsoft's and
its Apple pages Apple's. What a document is about is read from its first page
(``profile.read_profile``); here the same reading is done per section, a section starting
at each page that declares a subject the way a first page does:

- a filing's cover: the registrant it names ("MICROSOFT CORPORATION … (Exact name of
  registrant as specified in its charter)") or the trading symbols it lists. A cover always
  starts a section, even one of the same company (its next filing: another period);
- a company named with its legal form or its ticker at the head of a page ("Walmart Inc.
  Reports …", "Costco (Nasdaq: COST)"), when it is another than the section's so far and
  either its ticker is given or the next pages' heads name it again (its letterhead, a
  running header). A company named once at the head of one page of another's filing (a
  lawsuit's party, a customer) or of a book's chapter is mentioned, not declared.

Each section is then read as a document of its own (its first page is its cover). A
document is split only when two of its sections are about different subjects: a single
filing, a manual, a book keep no sections and are read as before.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rag_core.entities.covers import Subject, registrants, trading_symbols
from rag_core.entities.profile import Profile, Section, _companies, _head_lines, capitalised, read_profile

REPEAT = 2  # pages after a letterhead that may name the company again (its running header)


def read_sections(name: str, chunks: list[tuple[Any, str]]) -> list[Section]:
    """The sections of the document ``name`` from its chunks ((page, text), in page order);
    empty unless two sections are about different subjects."""
    pages: dict[int, list[tuple[Any, str]]] = {}
    for page, text in chunks:
        if not isinstance(page, int):
            return []  # a document without pages is read whole
        pages.setdefault(page, []).append((page, text))
    order = sorted(pages)
    if len(order) < 2:
        return []
    declared = {p: _declared("\n".join(t for _, t in pages[p])) for p in order}
    starts = [order[0]]
    head = declared[order[0]]
    current = _key(head[0]) if head else None
    for i, page in enumerate(order[1:], start=1):
        found = declared[page]
        if not found:
            continue
        subject, cover = found
        key = _key(subject)
        if cover or (key != current and (subject.tickers or _repeated(key, order[i + 1 : i + 1 + REPEAT], declared))):
            starts.append(page)
            current = key
    if len(starts) < 2:
        return []
    sections = []
    for first, nxt in zip(starts, [*starts[1:], None], strict=True):
        span = [p for p in order if p >= first and (nxt is None or p < nxt)]
        profile = read_profile(name, [c for p in span for c in pages[p]])
        sections.append(Section(first, span[-1], profile))
    subjects = {tuple(_key(s) for s in section.profile.subjects) for section in sections if section.profile.subjects}
    return sections if len(subjects) >= 2 else []


def _declared(text: str) -> tuple[Subject, bool] | None:
    """The subject a page declares, and whether the page is a filing's cover."""
    registrant = registrants(text)
    if registrant:
        return registrant[0], True
    found = _companies(_head_lines([text]), text, Counter(capitalised(text)))
    if len(found) != 1:
        return None
    return found[0], bool(trading_symbols(text))


def _key(subject: Subject) -> tuple[str, ...]:
    return tuple(subject.aliases[0]) if subject.aliases else (subject.name.lower(),)


def _repeated(key: tuple[str, ...], following: list[int], declared: dict[int, tuple[Subject, bool] | None]) -> bool:
    return any((found := declared[p]) is not None and _key(found[0]) == key for p in following)


def with_sections(profile: Profile, name: str, chunks: list[tuple[Any, str]]) -> Profile:
    """``profile`` with its document's sections (``read_sections``)."""
    profile.sections = read_sections(name, chunks)
    return profile
