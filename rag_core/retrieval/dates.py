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


def document_dates(bm: Any, doc_of: Any) -> dict[str, date]:
    """Per document, the latest date written on its first page (a filing's cover: the period
    it covers and the date of its share count; a release's date line)."""
    dates: dict[str, date] = {}
    for node in all_nodes(bm).values():
        meta = node.metadata or {}
        if meta.get("page") not in (1, None):
            continue
        for d in dates_in(node.get_content()[:4000]):
            key = doc_of(node)
            if key not in dates or d > dates[key]:
                dates[key] = d
    return dates


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
    dates = _DATES.get(bm)
    if dates is None:
        dates = document_dates(bm, doc_of)
        _DATES[bm] = dates
    about = [d for d, s in doc_scores.items() if s >= ABOUT_SHARE * best and d in dates]
    if len(about) < 2:
        return doc_scores
    latest = max(about, key=lambda d: (dates[d], doc_scores[d]))
    return {**doc_scores, latest: doc_scores[latest] + bonus}


_DATES: weakref.WeakKeyDictionary[Any, dict[str, date]] = weakref.WeakKeyDictionary()
