"""Periods as statements and sentences name them: "the three months ended July 30, 2023",
"the quarter", "six months ended", "first half", "nine months", "as of September 30, 2023",
"fiscal year 2024" — and whether two of them can be the same period.

A filing's income statement gives the quarter and the year to date side by side; a figure
read from the wrong column is the commonest wrong answer a small model gives with the right
page. A period here is its length in months (3, 6, 9, 12; 0 for a balance at a date) and,
when written, its end date or fiscal year.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from dataclasses import dataclass

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
MONTH_NAME = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
# "July 30, 2023", "Sep 30, 2023", "July 30," (a year on the next line), "30 June 2023"
DATE = re.compile(
    rf"\b(?P<month>{MONTH_NAME})\s+(?P<day>\d{{1,2}})\b(?:,?\s*(?P<year>(?:19|20)\d{{2}})\b)?"
    rf"|\b(?P<day2>\d{{1,2}})\s+(?P<month2>{MONTH_NAME})\s*,?\s*(?P<year2>(?:19|20)\d{{2}})\b"
    r"|\b(?P<y3>(?:19|20)\d{2})[-/](?P<m3>\d{1,2})[-/](?P<d3>\d{1,2})\b"
    r"|(?P<y4>(?:19|20)\d{2})年(?P<m4>\d{1,2})月(?:(?P<d4>\d{1,2})日)?",
    re.IGNORECASE,
)
_WORD_NUMBERS = {"three": 3, "six": 6, "nine": 9, "twelve": 12, "3": 3, "6": 6, "9": 9, "12": 12}
_WEEKS = {"thirteen": 3, "13": 3, "twenty-six": 6, "26": 6, "thirty-nine": 9, "39": 9}
_WEEKS |= {"fifty-two": 12, "52": 12, "fifty-three": 12, "53": 12}
# (pattern, months): the words that give a period's length
_LENGTHS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"\b(three|six|nine|twelve|3|6|9|12)[\s-]+months?\b", re.I), -1),
    (re.compile(r"\b(thirteen|twenty-six|thirty-nine|fifty-two|fifty-three|13|26|39|52|53)[\s-]+weeks?\b", re.I), -2),
    (
        re.compile(
            r"\b(?:first|1st)\s+(?:three|3)\s+quarters\b|\byear[\s-]to[\s-]date\s+through\s+the\s+third\b", re.I
        ),
        9,
    ),
    (
        re.compile(r"\b(?:first|second|1st|2nd)\s+half\b|\bhalf[\s-]year\b|\bsemi-?annual\b|\b[12]H\b|\bH[12]\b", re.I),
        6,
    ),
    (
        re.compile(
            r"\bquarters?\b|\bquarterly\b|\b[1-4]Q\b|\bQ[1-4]\b|(?:第?[一二三四1-4])季度|(?:第?[一二三四1-4])季", re.I
        ),
        3,
    ),
    (re.compile(r"上半年|下半年|半年度?", re.I), 6),
    (re.compile(r"前三季度", re.I), 9),
    (
        re.compile(
            r"\b(?:fiscal|financial|calendar)\s+years?\b|\bfull[\s-]year\b|\byears?\s+ended\b|\bannual(?:ly)?\b"
            r"|\bFY\s?'?\d{2,4}\b|\bfiscal\s+'?\d{2,4}\b|全年|年度",
            re.I,
        ),
        12,
    ),
    (re.compile(r"\bas\s+(?:of|at)\b|\bat\s+the\s+end\s+of\b|\bbalance\s+at\b|截至|末", re.I), 0),
]
_FISCAL_YEAR = re.compile(
    r"\b(?:fiscal|financial)(?:\s+years?)?\s+'?((?:19|20)?\d{2})\b|\bFY\s?'?((?:19|20)?\d{2})\b", re.I
)
# Words before a figure that say it is of another period than the one asked ("up from", "compared with")
RELATIVE = re.compile(
    r"\b(?:compared\s+(?:to|with)|versus|vs\.?|(?:up|down|increased?|decreased?|rose|fell|grew|declined?)\s+from|from)\s*$"
    r"|\b(?:a\s+year\s+(?:ago|earlier|before)|(?:the\s+)?(?:prior|previous|preceding|last)\s+(?:fiscal\s+)?"
    r"(?:year|quarter|period)|(?:the\s+)?same\s+(?:period|quarter)\s+(?:of\s+)?(?:last|the\s+prior|the\s+previous)"
    r"(?:\s+(?:fiscal\s+)?year)?)\b",
    re.IGNORECASE,
)
# Words after a figure that say so ("$656 million a year ago", "in the prior-year quarter")
AGO = re.compile(
    r"^\W*(?:\w+\s+){0,3}?(?:a\s+year\s+(?:ago|earlier|before)|(?:the\s+)?(?:prior|previous|preceding|last)[\s-]+"
    r"(?:fiscal\s+)?(?:year|quarter|period)|(?:the\s+)?same\s+(?:period|quarter))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Period:
    """A period: its length (months: 3, 6, 9, 12; 0 for a balance at a date; None unknown),
    its end date and its fiscal year when written."""

    months: int | None = None
    end: dt.date | None = None
    fiscal_year: int | None = None  # a quarter's year too ("Q3 2024", "Q3 FY24")
    quarter: int | None = None  # which quarter of its year, where named so (1-4)

    @property
    def known(self) -> bool:
        return self.months is not None or self.end is not None or self.fiscal_year is not None

    def describe(self) -> str:
        """In words, as a statement's column says it."""
        if self.quarter and not self.end:
            return f"Q{self.quarter} {self.fiscal_year}" if self.fiscal_year else f"Q{self.quarter}"
        when = f"{self.end:%B} {self.end.day}, {self.end.year}" if self.end else ""
        if self.months == 0:
            return f"as of {when}".strip() if when else "at a date"
        length = {3: "three months", 6: "six months", 9: "nine months", 12: "year"}.get(self.months or -1, "")
        if length and when:
            return f"{length} ended {when}"
        if length and self.fiscal_year:
            return f"{length} of fiscal {self.fiscal_year}"
        return length or (f"ended {when}" if when else (f"fiscal {self.fiscal_year}" if self.fiscal_year else ""))


def parse_date(match: re.Match[str], default_year: int | None = None) -> dt.date | None:
    """The date a ``DATE`` match writes (None when it has no year and none is given)."""
    g = match.groupdict()
    try:
        if g.get("y3"):
            return dt.date(int(g["y3"]), int(g["m3"]), int(g["d3"]))
        if g.get("y4"):
            return dt.date(int(g["y4"]), int(g["m4"]), int(g.get("d4") or 1))
        month = _MONTHS[(g.get("month") or g.get("month2") or "")[:3].lower()]
        day = int(g.get("day") or g.get("day2") or 0)
        year = g.get("year") or g.get("year2")
        year_n = int(year) if year else default_year
        return dt.date(year_n, month, day) if year_n else None
    except (ValueError, KeyError):
        return None


# A period written as the two dates it runs between: "From October 30, 2023 through November 17,
# 2023, we repurchased 0.8 million shares for $366 million" (NVIDIA's 10-Qs, after the quarter
# ended), "From November 28, 2018 to December 31, 2018, the Company's insurance and HMO
# subsidiaries paid $909 million" (CVS Health's 10-K, the month after it bought Aetna), "the
# changes ... from December 29, 2018 to December 28, 2019" (Kraft Heinz's), "between January 1,
# 2018 and March 31, 2021" (JPMorgan's 10-Qs)
_SPAN_FROM = re.compile(r"\b(?:from|between)\s+$", re.IGNORECASE)
_SPAN_TO = re.compile(r"^\s*(?:through|to|until|and|[-–])\s*$", re.IGNORECASE)


def date_span(text: str) -> tuple[dt.date, dt.date] | None:
    """The first two dates ``text`` names a period by ("from July 1, 2023 through September 30,
    2023"), earlier first; None when it names none so."""
    found = list(DATE.finditer(text))
    for a, b in itertools.pairwise(found):
        if _SPAN_FROM.search(text[max(0, a.start() - 10) : a.start()]) and _SPAN_TO.match(text[a.end() : b.start()]):
            first, second = parse_date(a), parse_date(b)
            if first and second and first != second:
                return (min(first, second), max(first, second))
    return None


def span_months(start: dt.date, end: dt.date) -> int:
    """The length in months of the period from ``start`` to ``end`` (at least one: 18 days are
    no balance at a date)."""
    return max(1, round((end - start).days / 30.44))


# "the Q3 2022 10-Q", "the latest quarterly report": a document, not a period
_DOCUMENT = re.compile(
    r"\b(?:Q[1-4]|[1-4]Q|(?:first|second|third|fourth)[\s-]quarter)\s*(?:fiscal\s+)?'?(?:(?:19|20)?\d{2})?\s*"
    r"(?:form\s+)?(?:10-?Q|10-?K|8-?K|report|filing|earnings\s+release)\b|\bquarterly\s+(?:report|filing)\b"
    r"|\b(?:report|filing|earnings\s+release)\s+(?:for|on|of)\s+(?:the\s+)?(?:Q[1-4]|[1-4]Q|(?:first|second|third|fourth)"
    r"[\s-]quarter)(?:\s+of)?\s*(?:fiscal\s+)?'?(?:(?:19|20)?\d{2})?",  # "the Report for the third quarter of 2024"
    re.IGNORECASE,
)


_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_REPORT = re.compile(
    r"\b(?:Q(?P<q>[1-4])|(?P<q2>[1-4])Q|(?P<qw>first|second|third|fourth)[\s-]quarter)\s*(?:of\s+)?(?:fiscal\s+)?'?"
    r"(?P<y>(?:19|20)\d{2})\s*(?:form\s+)?(?:10-?Q|10-?K|8-?K|report|filing|earnings\s+release)\b"
    r"|\b(?P<y2>(?:19|20)\d{2})\s*Q(?P<q3>[1-4])\s*(?:form\s+)?(?:10-?Q|report|filing)\b",
    re.IGNORECASE,
)
_NAME_QUARTER = re.compile(r"(?<![a-z])q([1-4])(?![0-9])|(?<![0-9])([1-4])q(?![a-z0-9])", re.IGNORECASE)
_NAME_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")


def report_of(text: str) -> tuple[int, int] | None:
    """The report a text names by its quarter and year ("the Q3 2022 10-Q" → (3, 2022))."""
    m = _REPORT.search(text or "")
    if not m:
        return None
    digit = m.group("q") or m.group("q2") or m.group("q3")
    quarter = int(digit) if digit else _QUARTER_WORDS[(m.group("qw") or "").lower()]
    return quarter, int(m.group("y") or m.group("y2"))


def report_in_name(name: str) -> tuple[int, int] | None:
    """The quarter and year a file name gives ("2023 Q2 NVDA.pdf" → (2, 2023)), when it gives both."""
    q, y = _NAME_QUARTER.search(name or ""), _NAME_YEAR.findall(name or "")
    if not q or len(set(y)) != 1:
        return None
    return int(q.group(1) or q.group(2)), int(y[0])


# A quarter named with its year: "Q3 2024", "3Q24", "Q3 FY24", "Q3'24", "Q3 of fiscal 2024",
# "third quarter of 2024", "third quarter of fiscal 2024", "fiscal 2024 third quarter",
# "fiscal 2024's first quarter", "2024's third quarter"
QUARTER = re.compile(
    r"\b(?:Q(?P<q>[1-4])|(?P<q2>[1-4])Q)\s*(?:of\s+(?=(?:fiscal|FY|19|20)))?(?:FY\s?|fiscal\s+(?:year\s+)?)?'?"
    r"(?P<y>(?:19|20)\d{2}|\d{2})\b"
    r"|\b(?P<qw>first|second|third|fourth)[\s-]+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?|FY\s?)?'?"
    r"(?P<y2>(?:19|20)\d{2})\b"
    r"|\b(?:(?:fiscal\s+(?:year\s+)?|FY\s?)'?(?P<y3>(?:19|20)?\d{2})|(?P<y4>(?:19|20)\d{2})(?=['’]s))(?:['’]s)?\s+"
    r"(?P<qw3>first|second|third|fourth)[\s-]+(?:fiscal\s+)?quarter\b",
    re.IGNORECASE,
)


def quarter_of(match: re.Match[str]) -> tuple[int, int]:
    """The quarter and its year a ``QUARTER`` match names ("Q3 FY24" → (3, 2024))."""
    digit = match.group("q") or match.group("q2")
    word = (match.group("qw") or match.group("qw3") or "").lower()
    quarter = int(digit) if digit else _QUARTER_WORDS[word]
    year = int(match.group("y") or match.group("y2") or match.group("y3") or match.group("y4"))
    return quarter, year + 2000 if year < 100 else year


def period_of(text: str, last: bool = False) -> Period:
    """The period ``text`` names ("for the quarter ended July 30, 2023" → 3 months to
    2023-07-30): the first one named, or the ``last``; a quarter or half of a fiscal year is
    the quarter or half; "the Q3 2022 10-Q" names a report, not a period's length; two dates
    it runs between are one period, to the second (``date_span``)."""
    plain = _DOCUMENT.sub(" ", text)
    lengths = _all_lengths(plain)
    quarters = list(QUARTER.finditer(plain))
    if quarters and not DATE.search(plain):  # "the third quarter of 2024": a quarter of a year
        quarter, year = quarter_of(quarters[-1] if last else quarters[0])
        return Period(3, None, year, quarter)
    months = None
    if lengths:
        short = [n for n in lengths if n != 12] or lengths
        months = short[-1] if last else short[0]
    dates = [d for d in (parse_date(m) for m in DATE.finditer(text)) if d]
    span = date_span(text)
    if span is not None:  # "from October 30, 2023 through November 17, 2023": to its end
        months = span_months(*span) if months is None else months
        dates = [d for d in dates if d != span[0]]
    fiscal = None
    years = list(_FISCAL_YEAR.finditer(text))
    if years:
        fm = years[-1] if last else years[0]
        y = int(fm.group(1) or fm.group(2))
        fiscal = y + 2000 if y < 100 else y
    return Period(months, (dates[-1] if last else dates[0]) if dates else None, fiscal)


# A year named bare after a word that places a figure in it ("revenue in 2021", "for 2020",
# "during 2019"); "fiscal 2021" is ``_FISCAL_YEAR``'s, a date's year ("May 5, 2021") ``DATE``'s.
_BARE_YEAR = re.compile(r"\b(?:in|for|during|of|year)\s+((?:19|20)\d{2})\b(?!\s*[-/–]\s*\d)", re.IGNORECASE)


def period_named(text: str, last: bool = False) -> Period:
    """``period_of``, and where it finds none, the year ``text`` names bare ("Galaxy's revenue
    in 2021 was …"): the year's figures, of whatever length (``Period.months`` unknown), end in
    it. Annual reports and their questions name years this way."""
    period = period_of(text, last)
    if period.known:
        return period
    years = list(_BARE_YEAR.finditer(text))
    if not years:
        return period
    return Period(None, None, int((years[-1] if last else years[0]).group(1)))


def _all_lengths(text: str) -> list[int]:
    found: list[tuple[int, int]] = []
    for pattern, months in _LENGTHS:
        for m in pattern.finditer(text):
            n = months
            if months == -1:
                n = _WORD_NUMBERS[m.group(1).lower()]
            elif months == -2:
                n = _WEEKS[m.group(1).lower()]
            found.append((m.start(), n))
    if any(n == 0 for _, n in found) and not DATE.search(text):
        found = [(p, n) for p, n in found if n != 0]  # "at the end of the quarter": a quarter
    return [n for _, n in sorted(found)]


def _either_year(end: dt.date, fiscal_year: int) -> bool:
    """A year ending in January or early February is named by either calendar year it spans:
    companies call the year ended January 31, 2023 "fiscal 2023" and others the year ended
    January 28, 2023 "fiscal 2022", and analysts write either. Unsure, so never a mismatch."""
    return (end.month == 1 or (end.month == 2 and end.day <= 7)) and fiscal_year == end.year - 1


def agree(claim: Period, source: Period, tolerance_days: int = 7) -> bool | None:
    """True when ``source`` is the period ``claim`` names, False when it cannot be, None when
    ``claim`` names nothing to compare. Dates a few days apart are one period end (one
    company's quarter ends on July 1, another's on June 30)."""
    verdicts: list[bool] = []
    if claim.quarter and source.quarter:  # "Q3 2024" and "Q3 2023" are two quarters
        verdicts.append(claim.quarter == source.quarter)
        if claim.fiscal_year and source.fiscal_year:
            verdicts.append(claim.fiscal_year == source.fiscal_year)
    elif claim.fiscal_year and source.fiscal_year and claim.months == source.months == 12:
        verdicts.append(claim.fiscal_year == source.fiscal_year)  # "fiscal 2024" and "FY23"
    if claim.months is not None and source.months is not None and 0 not in (claim.months, source.months):
        verdicts.append(claim.months == source.months)  # a balance "at the end of Q3" has no length
    if claim.end and source.end:
        verdicts.append(abs((claim.end - source.end).days) <= tolerance_days)
    elif claim.fiscal_year and source.end and claim.months in (12, None) and source.months == 12:
        # a 52-week year ending on the first days of the next ("January 1, 2023") is the year before's
        same = (source.end - dt.timedelta(days=tolerance_days)).year == claim.fiscal_year
        if not same and _either_year(source.end, claim.fiscal_year):
            return None  # one year, two names: not a period's mismatch
        verdicts.append(same)
    elif claim.fiscal_year and source.end and claim.months is None and not claim.quarter:
        # a bare year ("in 2021"): a period of any length ending in another year is not in it
        verdicts.append((source.end - dt.timedelta(days=tolerance_days)).year == claim.fiscal_year)
    if not verdicts:
        return None
    return all(verdicts)
