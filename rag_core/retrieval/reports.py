"""The one report a question names among a company's several: "Intel's Q2 2023 10-Q", "Apple's
most recent 10-Q".

A company's filings and releases hold the same words, the same line items and each other's
periods (this quarter's filing restates last year's quarter), so their passages rank side by
side; but a question that names one report asks what that report says, and a passage of
another is not evidence for it. Within the documents a question is about (``entity_scope``),
those the question names are kept, when any is:

- a report named by quarter and year ("the Q3 2022 10-Q", "Q2 2023 report"), or a quarter
  ("in Q3 2023", "the first quarter of 2023": the report of that quarter states it first), is
  the document whose file name says that quarter and year ("2022 Q3 INTC.pdf", "acme 10-Q Q3
  2022.pdf"), else whose first page names it alone ("Results for the Third Quarter of Fiscal
  2024"); a question naming several keeps each;
- "the latest", "the most recent" report is the document whose first page carries the latest
  date (a filing's cover states the period it covers; ``dates.covers_of``);
- a year ("FY2022", "fiscal 2022", "in 2022"), with no quarter named: a filing cannot report a
  year that ends after its own period, so a filing whose cover says it reports an earlier period
  is dropped (3M's 2018 10-K for "FY2022", Corning's 2020 10-K for "FY2021 and FY2022"). A 10-K
  reports the fiscal years up to the one its cover names; a 10-Q may already be of the next one
  (NVIDIA's "fiscal 2024" began in January 2023), so a 10-Q is kept from the year before. When
  filings that report every year named are there, only they are kept: a 10-K's statements give
  its year and the two before (3M's 2022 10-K gives 2020-2022, not FY2018; Corning's 2022 10-K
  gives both years of "between FY2021 and FY2022", its 2021 10-K one), a 10-Q kept beside it
  when of its year or the next (as a fiscal year may be named by the year it ends in). A 10-Q
  alone does not narrow so: its statements give quarters, not the years. Else the earliest
  year named counts ("between FY2018 and FY2022"). A question looking ahead ("expected",
  "guidance", "outlook", "will") is read in the filings before the year, and keeps them all; a
  document without such a cover is kept.

Nothing is narrowed when no document matches, or when every one does. A question naming no
company narrows the whole library the same way ("the Q2 2023 10-Q" of a library of one
company's filings).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rag_core.figures.periods import QUARTER, quarter_of, report_in_name, report_of
from rag_core.retrieval.dates import Cover, Covers, covers_of
from rag_core.retrieval.keywords import doc_of

# "the latest 10-Q", "Apple's most recent quarterly report", "the latest quarter" (not "the
# latest GPU architecture": a report, not the newest of anything)
_LATEST_REPORT = re.compile(
    r"\b(?:latest|most\s+recent|newest|most\s+current)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:10-?[QK]|8-?K|reports?|filings?|quarter|(?:earnings\s+)?release|results|statements?)\b",
    re.IGNORECASE,
)


# A year a question names: "FY2022", "FY22", "fiscal 2022", "fiscal year 2022", "in 2022"
_YEAR = re.compile(r"\b(?:FY\s?'?|fiscal\s+(?:year\s+)?'?)((?:19|20)?\d{2})\b|\b((?:19|20)\d{2})\b", re.IGNORECASE)
# A question looking ahead: what a filing of an earlier year expects of the year named
_AHEAD = re.compile(
    r"\b(?:expect(?:s|ed|ations?)?|guidance|outlook|forecasts?|anticipat\w*|projected|will)\b", re.IGNORECASE
)


def asked_years(question: str) -> set[int]:
    """The years ``question`` names as periods ("FY2022", "FY22", "fiscal 2022", "2022"); none
    when it looks ahead ("the capex 3M expects for 2019")."""
    if _AHEAD.search(question):
        return set()
    return {int(b) if b else int(a) if len(a) == 4 else 2000 + int(a) for a, b in _YEAR.findall(question)}


def reports_year(cover: Cover | None, year: int) -> bool:
    """Whether a filing whose cover says it reports ``cover`` may report fiscal ``year``
    (unknown: it may)."""
    if cover is None:
        return True
    kind, end = cover
    return end.year >= (year if kind == "year" else year - 1)


def reports_all(cover: Cover | None, years: set[int]) -> bool:
    """Whether a filing whose cover says it reports ``cover`` gives statements of every one of
    ``years`` (unknown: it may): a 10-K its year and the two before, a 10-Q its year, the one
    before and the one after."""
    if cover is None:
        return True
    kind, end = cover
    first, last = (end.year - 2, end.year) if kind == "year" else (end.year - 1, end.year + 1)
    return first <= min(years) and max(years) <= last


def asked_quarters(question: str) -> set[tuple[int, int]]:
    """The quarters (quarter, year) ``question`` names: its reports ("the Q3 2022 10-Q") and
    its quarters ("in Q3 2023", "the first quarter of 2023")."""
    named = {quarter_of(m) for m in QUARTER.finditer(question)}
    report = report_of(question)
    return named | {report} if report else named


def names_report(question: str) -> bool:
    """Whether ``question`` names one report of several (by quarter and year, or the latest)."""
    return bool(asked_quarters(question)) or bool(_LATEST_REPORT.search(question))


def named_reports(
    question: str, units: list[str], document: Callable[[str], str], covers: Callable[[], Covers]
) -> list[str]:
    """The ``units`` (documents, or sections of one: ``document`` gives a unit's document name)
    that are the report ``question`` names; ``units`` when it names none, or none matches.
    ``covers``: each document's first-page date and quarter (``dates.covers_of``), read only
    when a file name does not tell."""
    if len(units) < 2:
        return units
    asked = asked_quarters(question)
    if asked:
        kept = [u for u in units if report_in_name(document(u)) in asked]
        if not kept:
            quarters = covers()[1]
            kept = [u for u in units if quarters.get(document(u)) in asked]
    elif _LATEST_REPORT.search(question):
        known = covers()[0]
        dated = [u for u in units if document(u) in known]
        newest = max((known[document(u)] for u in dated), default=None)
        kept = [u for u in dated if known[document(u)] == newest]
    elif years := asked_years(question):
        covered = covers()[2]
        annual = [c for u in units if (c := covered.get(document(u))) is not None and c[0] == "year"]
        if any(reports_all(cover, years) for cover in annual):  # a 10-K gives them all: a 10-Q gives quarters
            kept = [u for u in units if reports_all(covered.get(document(u)), years)]
        else:  # no filing gives them all: those that may give the earliest
            kept = [u for u in units if reports_year(covered.get(document(u)), min(years))]
    else:
        return units
    return kept if 0 < len(kept) < len(units) else units


def within_reports(
    question: str, routes: list[tuple[str, list[str]]], document: Callable[[str], str], bm: Any
) -> list[tuple[str, list[str]]]:
    """Each route of an entity scope (a name → its documents) narrowed to the report the
    question names, or to the filings that may report the years it names."""
    if not names_report(question) and not asked_years(question):
        return routes
    return [(label, named_reports(question, units, document, lambda: covers_of(bm, doc_of))) for label, units in routes]


def library_report(question: str, bm: Any) -> list[str] | None:
    """The documents of the library (``bm``'s) that are the report a question naming no company
    names, when it names one the library holds among others (or the filings that may report
    the years it names); None otherwise."""
    if not names_report(question) and not asked_years(question):
        return None
    docs = sorted(bm.doc_chunks)
    kept = named_reports(question, docs, str, lambda: covers_of(bm, doc_of))
    return kept if kept != docs else None
