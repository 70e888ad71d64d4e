"""Documents by their dates: "the latest 10-Q", "the quarter ended July 1, 2023".

A filing, a release, a report carries on its first page the period it covers (and the date of
its share count, its release): the dates there tell which of a company's documents a question
about "the most recent report" or a stated period means, where the words of the documents,
each holding the same comparative periods, do not.
"""

from __future__ import annotations

import re
import weakref
from datetime import date
from typing import Any

from rag_core.figures.periods import QUARTER, quarter_of

ABOUT_SHARE = 0.8  # documents within this share of the best document score are "what the question is about"
_LATEST = re.compile(r"\b(?:latest|most recent|newest|most current)\b", re.IGNORECASE)
_MONTH_NAMES = "january february march april may june july august september october november december".split()
_DATE = re.compile(r"\b(" + "|".join(_MONTH_NAMES) + r")\s+(\d{1,2}),\s*((?:19|20)\d{2})\b", re.IGNORECASE)


def dates_in(text: str) -> set[date]:
    """The dates written out in ``text`` ("July 1, 2023")."""
    out = set()
    for month, day, year in _DATE.findall(text):
        try:
            out.add(date(int(year), _MONTH_NAMES.index(month.lower()) + 1, int(day)))
        except ValueError:
            continue
    return out


def all_nodes(bm: Any) -> Any:
    """Position → node for every chunk of a page (the keyword index reads nodes lazily: its
    ``nodes`` iterate only those read so far)."""
    index = getattr(bm.nodes, "index", None)
    if index is None:
        return bm.nodes
    return index.nodes([i for key in index.page_keys() for i in index.page_chunks(*key)])


def asks_latest(question: str) -> bool:
    return bool(_LATEST.search(question))


def first_pages(bm: Any) -> list[Any]:
    """The chunks of every document's first page."""
    index = getattr(bm.nodes, "index", None)
    if index is None:
        return [n for n in bm.nodes.values() if (n.metadata or {}).get("page") in (1, None)]
    return list(
        index.nodes([i for doc, page in index.page_keys() if page == 1 for i in index.page_chunks(doc, 1)]).values()
    )


# What a filing's cover says it reports, in the SEC form's own words: "For the fiscal year ended
# December 31, 2022" (every 10-K of the FinanceBench set: 3M, Corning, CVS Health, Walmart's
# "January 31, 2020", …), "For the quarterly period ended June 25, 2022" (the SEC set's 10-Qs of
# Apple, Intel, NVIDIA, …); JPMorgan's cover sets its file number between the two ("For the
# quarterly period ended Commission file March 31, 2021").
_PERIOD_ENDED = re.compile(
    r"\b(fiscal\s+year|quarterly\s+period)\s+ended:?\s*(?:[A-Za-z]+\s+){0,3}?"
    r"((?:" + "|".join(_MONTH_NAMES) + r")\s+\d{1,2},\s*(?:19|20)\d{2})",
    re.IGNORECASE,
)

Cover = tuple[str, date]  # what a filing's cover says it reports: ("year" or "quarter", the period's end)
Covers = tuple[dict[str, date], dict[str, tuple[int, int]], dict[str, Cover]]


def reported(cover: str) -> Cover | None:
    """The period a filing's cover says it reports ("For the fiscal year ended December 31,
    2022" → ("year", 2022-12-31)); None when it says none."""
    ended = _PERIOD_ENDED.search(" ".join(cover[:4000].split()))
    end = next(iter(dates_in(ended.group(2))), None) if ended else None
    if not ended or end is None:
        return None
    return ("year" if ended.group(1).lower().startswith("fiscal") else "quarter", end)


def covers_of(bm: Any, doc_of: Any) -> Covers:
    """Per document, what its first page says it covers, read once per keyword view: its latest
    date; the one quarter it names near its top ("Results for the Third Quarter of Fiscal
    2024" → (3, 2024); none when it names several); and the period a filing's cover says it
    reports ("For the fiscal year ended December 31, 2022" → ("year", 2022-12-31))."""
    cached = _COVERS.get(bm)
    if cached is not None:
        return cached
    dates: dict[str, date] = {}
    quarters: dict[str, set[tuple[int, int]]] = {}
    reports: dict[str, Cover] = {}
    for node in first_pages(bm):
        key, text = doc_of(node), node.get_content()
        for d in dates_in(text[:4000]):
            if key not in dates or d > dates[key]:
                dates[key] = d
        if (node.metadata or {}).get("page") == 1:
            quarters.setdefault(key, set()).update(quarter_of(m) for m in QUARTER.finditer(text[:1500]))
            cover = reported(text)
            if cover is not None and key not in reports:
                reports[key] = cover
    one = {key: next(iter(named)) for key, named in quarters.items() if len(named) == 1}
    _COVERS[bm] = (dates, one, reports)
    return dates, one, reports


def dates_of(bm: Any, doc_of: Any) -> dict[str, date]:
    """Per document, the latest date written on its first page (a filing's cover: the period
    it covers and the date of its share count; a release's date line)."""
    return covers_of(bm, doc_of)[0]


def latest_documents(
    question: str, bm: Any, doc_of: Any, doc_scores: dict[str, float], bonus: float
) -> dict[str, float]:
    """``doc_scores`` with ``bonus`` added to the latest-dated document among those the
    question is about (within ``ABOUT_SHARE`` of the best score), when it asks for the
    latest or most recent one; unchanged otherwise."""
    if not asks_latest(question) or not doc_scores or bonus <= 0:
        return doc_scores
    best = max(doc_scores.values())
    if best <= 0:
        return doc_scores
    dates = dates_of(bm, doc_of)
    about = [d for d, s in doc_scores.items() if s >= ABOUT_SHARE * best and d in dates]
    if len(about) < 2:
        return doc_scores
    latest = max(about, key=lambda d: (dates[d], doc_scores[d]))
    return {**doc_scores, latest: doc_scores[latest] + bonus}


_COVERS: weakref.WeakKeyDictionary[Any, Covers] = weakref.WeakKeyDictionary()
