"""A filing's cover and its pages: the registrant it is about, and its trading symbols.

A 10-K's or 10-Q's cover names the registrant above "(Exact name of registrant as specified in
its charter)" and lists its trading symbols under "Trading Symbol(s)"; some covers do neither in
text (Coca-Cola's name is a logo; 3M's cover writes "3M COMPANY" under the file number), and the
registrant is then the name written with its legal form on the most pages ("The Coca-Cola
Company", "3M Company"). Read by ``profile.read_profile``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rag_core.entities.names import NOT_NAMES, terms_of
from rag_core.text import is_period_token, tokenize

_REGISTRANT = re.compile(r"\(\s*exact name of (?:the )?registrant", re.IGNORECASE)
LEGAL = r"(?i:Inc|Incorporated|Corporation|Corp|Company|Co|Ltd|Limited|LLC|L\.?P|PLC|N\.V|S\.A|AG|SE|GmbH)\b\.?"
_SYMBOL = re.compile(r"\b([A-Z]{1,5}(?:\.[A-Z])?)\s+(?:The\s+)?(?i:Nasdaq|New York Stock Exchange|NYSE)\b(?!\s*:)")
# Words a title is made of that name no subject.
NOT_SUBJECT_WORDS = frozenset(
    "report reports annual quarterly results result press release news form table contents page financial "
    "statements statement securities exchange commission united states washington company corporation inc "
    "section part item note notes summary overview introduction chapter appendix manual guide user handbook "
    "edition version draft final content".split()
)


@dataclass
class Subject:
    """What a document is about: its name as written, the names that call it (terms), its tickers."""

    name: str
    aliases: list[list[str]] = field(default_factory=list)
    tickers: list[str] = field(default_factory=list)


def subject_of(name: str, tickers: Iterable[str] = ()) -> Subject | None:
    name = re.sub(r"\s+", " ", name).strip(" ,;:")
    full = list(tokenize(name))
    core = list(terms_of(name))
    if not core or all(t.isdigit() or t in NOT_NAMES or is_period_token(t) for t in core):
        return None  # a date or a period ("June 2023", "Fiscal 2023") is nobody's name
    aliases = [core] + ([full] if full != core else [])
    return Subject(name, aliases, sorted({t.lower() for t in tickers}))


def trading_symbols(text: str) -> list[str]:
    """Trading symbols of a filing's cover ("Common Stock … NVDA The Nasdaq Global Select Market")."""
    # Covers write the header with a no-break space as often as a space (Corning's 10-Ks).
    found = re.search(r"trading\s+symbol", text, re.IGNORECASE)
    if not found:
        return []
    at = found.start()
    return [m.group(1) for m in _SYMBOL.finditer(text[at : at + 800]) if m.group(1).isupper()]


def registrants(first: str) -> list[Subject]:
    """The registrant a filing's cover names: the line above "(Exact name of registrant…)"."""
    lines = first.splitlines()
    for i, line in enumerate(lines):
        if _REGISTRANT.search(line):
            above = [ln.strip() for ln in lines[:i] if ln.strip() and not set(ln.strip()) <= set("_-–— ")]
            head = line[: _REGISTRANT.search(line).start()].strip()  # type: ignore[union-attr]
            written = head or (above[-1] if above else "")
            if _COVER_LINE.search(written):  # the name is a logo (Coca-Cola's cover): no name here
                return []
            subject = subject_of(written)
            return [subject] if subject else []
    return []


# Lines of a filing's cover that are never its registrant's name: the line above "(Exact name
# of registrant…)" is one of these where the name is an image (Coca-Cola's 10-K) or set
# elsewhere (3M's: "Commission file number 1-3285" then "3M COMPANY").
_COVER_LINE = re.compile(
    r"commission\s+file|file\s+number|transition\s+period|fiscal\s+year\s+ended|quarterly\s+period|"
    r"securities\s+exchange\s+act|^\W*$|^[\d\s()-]+$",
    re.IGNORECASE,
)
# A filing (its cover says so) names its registrant with its legal form throughout: "The
# Coca-Cola Company" and "3M Company" on most pages of their 10-Ks whose covers don't say it.
_FILING = re.compile(r"exact\s+name\s+of\s+(?:the\s+)?registrant|commission\s+file\s+number", re.IGNORECASE)
_LEGAL_NAME = re.compile(
    rf"(?<![A-Za-z0-9])((?:The\s+)?[A-Z0-9][A-Za-z0-9.&'’\-]*(?:[ \t]+(?:[A-Z][A-Za-z0-9.&'’\-]*|&)){{0,3}})"
    rf",?[ \t]+{LEGAL}"
)
FILING_NAME_SHARE = 0.1  # of a filing's pages that write its registrant's legal name (3M's 2018 10-K: 30 of 160)
# Words before a legal form that name no registrant ("Total Company", "New York Stock Exchange, Inc.")
_GENERIC_NAMES = frozenset("total parent combined consolidated new york stock exchange nasdaq state".split())


def filing_name(first: str, parts: dict[Any, list[str]]) -> list[Subject]:
    """A filing's registrant where its cover does not name it: the name written with a legal
    form ("The Coca-Cola Company", "3M Company") on the most pages, if on enough of them."""
    if not _FILING.search(first):
        return []
    count: Counter[tuple[str, ...]] = Counter()
    written: dict[tuple[str, ...], Counter[str]] = {}
    for texts in parts.values():
        seen = set()
        for m in _LEGAL_NAME.finditer("\n".join(texts)):
            core = terms_of(m.group(0))
            if core and not set(core) <= NOT_SUBJECT_WORDS | _GENERIC_NAMES:
                seen.add(core)
                written.setdefault(core, Counter())[re.sub(r"\s+", " ", m.group(0)).strip()] += 1
        count.update(seen)
    if not count:
        return []
    core, pages = count.most_common(1)[0]
    if pages < max(3, FILING_NAME_SHARE * len(parts)):
        return []
    forms = written[core].most_common()
    subject = subject_of(next((f for f, _ in forms if not f.isupper()), forms[0][0]))
    return [subject] if subject else []
