"""The column headers of a statement table, as PDFium writes them on separate lines.

    Three Months Ended Six Months Ended          Three Months Ended        Three Months Ended Nine Months Ended
    July 30, July 31, July 30, July 31,          June 30,                  July 1,
    2023 2022 2023 2022                          Six Months Ended          2023
                                                 June 30,                  June 25,
                                                 2022 2023 2022 2023       2022 ...

A header is read as a sequence of tokens — period groups ("Three Months Ended", "As of"),
dates with or without their year, bare years, change columns ("$ Change", "% Change") — and
its columns are the years and change columns in the order written, each year given its day
and its group. The unit line ("(In millions, except per share data)") says what the row
figures count.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from rag_core.figures.periods import DATE, QUARTER, Period, parse_date, quarter_of

_GROUP = re.compile(
    r"\b(?P<n>three|six|nine|twelve|thirteen|twenty-six|thirty-nine|fifty-two|fifty-three|3|6|9|12|13|26|39|52|53)"
    r"[\s-]+(?:months?|weeks?)(?:\s+periods?)?\s+ended\b|\b(?P<q>quarters?|(?:fiscal\s+)?years?|periods?)\s+ended\b"
    r"|\b(?P<asof>as\s+of|as\s+at|balance\s+at)\b",
    re.IGNORECASE,
)
_LENGTH = {"three": 3, "3": 3, "thirteen": 3, "13": 3, "six": 6, "6": 6, "twenty-six": 6, "26": 6, "nine": 9, "9": 9}
_LENGTH |= {"thirty-nine": 9, "39": 9, "twelve": 12, "12": 12, "fifty-two": 12, "52": 12, "fifty-three": 12, "53": 12}
_YEAR = re.compile(r"(?<![\d,.$])\b(?:19|20)\d{2}\b(?![\d,.%])")
_CHANGE = re.compile(
    r"(?P<kind>[$%]|percent(?:age)?|quarter[\s-]+over[\s-]+quarter|year[\s-]+over[\s-]+year)?\s*\bchange\b"
    r"|\bincrease\s*/?\s*\(?decrease\)?|\bvariance\b|\b[QY]\s?/\s?[QY]\b",
    re.IGNORECASE,
)
# A change column named by the years it compares ("2022 vs. 2021": American Express, Coca-Cola; "22 vs.
# 21": Corning): one column, not two years'
_VERSUS = re.compile(r"(?<![\d,.$])'?(?:19|20)?\d{2}\s+(?:vs\.?|versus)\s+'?(?:19|20)?\d{2}(?![\d,.%])", re.IGNORECASE)
_DATE_ONE_LINE = DATE.pattern.replace(r",?\s*(?P<year>", r",?[ \t]*(?P<year>")  # "July 31,\n2023": two tokens


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


# A column named by its quarter or fiscal year ("Q3 2024", "Q3 FY24", "3Q23", "FY2024", "Fiscal 2023")
FISCAL = re.compile(r"\b(?:FY\s?|fiscal\s+(?:year\s+)?)'?(?P<fy>(?:19|20)\d{2}|\d{2})\b", re.IGNORECASE)
_HEADER_TOKEN = re.compile(
    rf"(?:{_VERSUS.pattern})|(?:{_unnamed(QUARTER.pattern)})|(?:{_unnamed(FISCAL.pattern)})|(?:{_GROUP.pattern})|(?:{_DATE_ONE_LINE})|{_YEAR.pattern}"
    rf"|(?:{_CHANGE.pattern})",
    re.IGNORECASE,
)
UNIT = re.compile(
    r"\bin\s+(?P<word>thousands|millions|billions)\b|(?P<cjk>单位\s*[:：]?\s*(?:人民币)?\s*(?P<cjkw>万元|千元|百万元|亿元|元))",
    re.IGNORECASE,
)
UNIT_SCALE = {"thousands": 1e3, "millions": 1e6, "billions": 1e9, "千元": 1e3, "万元": 1e4, "百万元": 1e6}
UNIT_SCALE |= {"亿元": 1e8, "元": 1.0}
_NOISE = re.compile(r"[$%()\s,:;.\-–—/]|\bchange\b|\bunaudited\b|\bended\b|\bpts\b", re.IGNORECASE)
_BALANCE = re.compile(r"balance\s+sheets?|financial\s+position|financial\s+condition", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    """One column of a table: a period, a change between two ("$ Change", "% Change"), or a
    column named by words ("TREC", "Top-20 NQ": ``figures.named``)."""

    period: Period
    change: str = ""
    name: str = ""
    unit: str = ""  # a column named with its unit ("Corrosion rate (mm/year)": ``figures.keyed``)

    def parts(self) -> tuple[str, ...]:
        """The name's parts, read from its end: the dataset, then the group above it ("Top-20
        NQ"); a name written with its unit is one part ("Corrosion rate")."""
        return (self.name,) if self.unit else tuple(self.name.split())

    def describe(self) -> str:
        if self.name:
            return f"{self.name} ({self.unit})" if self.unit else self.name
        if self.change:
            return self.change
        return self.period.describe()


def unit_of(text: str) -> tuple[str, float]:
    """The unit a header line names: ("millions", 1e6); ("", 1.0) when none."""
    m = UNIT.search(text)
    if not m:
        return "", 1.0
    word = (m.group("word") or m.group("cjkw") or "").lower()
    return word, UNIT_SCALE.get(word, 1.0)


_HEADER_PART = re.compile(
    r"^\s*(?:\$|%|quarter[\s-]+over[\s-]+quarter|year[\s-]+over[\s-]+year|percent(?:age)?)\s*$", re.I
)


def is_header_line(line: str) -> bool:
    """A line that only names columns: groups, dates, years, change columns, a unit."""
    if _HEADER_PART.match(line):
        return True
    if not _HEADER_TOKEN.search(line) and not UNIT.search(line):
        return False
    rest = UNIT.sub(" ", re.sub(r"\((?:[^()]*\bin\s+(?:thousands|millions|billions)[^()]*)\)", " ", line, flags=re.I))
    rest = _NOISE.sub(" ", _HEADER_TOKEN.sub(" ", rest))
    # "Q3 FY24 summary" is a title, "Q3 2021" alone a chart's label, "Q3 FY24 Q2 FY24" a header
    named = len(QUARTER.findall(line)) + len(FISCAL.findall(line))
    if named == 1 and not _CHANGE.search(line):
        return False
    return len(re.findall(r"[^\W\d_]{2,}", rest)) <= (0 if named else 1)


_DESCRIBED = re.compile(r"\b(?:19|20)\d{2}\s*,?\s+and\s+(?:19|20)\d{2}\b", re.I)
_A_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")


def described_once(lines: list[str]) -> list[str]:
    """Header lines with the years of a title that names the periods ("YEARS ENDED December 31,
    2021 AND 2020") left out when another line names the columns ("2021 | 2020"): the same
    periods, not four columns. The title keeps its other words (its day: "December 31")."""
    if not any(len(_A_YEAR.findall(line)) >= 2 and not _DESCRIBED.search(line) for line in lines):
        return lines
    return [_A_YEAR.sub(" ", line) if _DESCRIBED.search(line) else line for line in lines]


def is_quarter_header(line: str) -> bool:
    """A header line that names its columns by quarter or fiscal year and nothing else ("Q3
    2024 Q3 2023 % Change", "Q3 FY24 Q2 FY24 Q/Q Y/Y")."""
    return bool(QUARTER.search(line) or FISCAL.search(line)) and is_header_line(line)


def column_names(header: str) -> list[str]:
    """The columns of a header of quarters or fiscal years as it writes them ("Q3 FY24", "Q/Q"),
    one for each column ``columns_of`` reads from it."""
    return [t.group(0).strip() for t in _HEADER_TOKEN.finditer(header) if not _GROUP.fullmatch(t.group(0).strip())]


def columns_of(header: str, title: str = "") -> list[Column]:
    """The columns a table's header lines (joined by newlines) name, left to right."""
    header = "\n".join(described_once(header.split("\n")))
    groups: list[int] = []
    # ("date", date), ("year", 2023), ("quarter", (3, 2024)), ("fiscal", 2024), ("change", "$ change")
    slots: list[tuple[str, dt.date | int | str | tuple[int, int]]] = []
    days: list[tuple[int, int]] = []  # (month, day) of dates written without their year
    for token in _HEADER_TOKEN.finditer(header):
        text = token.group(0).strip()
        if _VERSUS.fullmatch(text):
            slots.append(("versus", "change"))
        elif q := QUARTER.fullmatch(text):
            slots.append(("quarter", quarter_of(q)))
        elif fy := FISCAL.fullmatch(text):
            written = int(fy.group("fy"))
            slots.append(("fiscal", written + 2000 if written < 100 else written))
        elif grp := _GROUP.fullmatch(text):
            quarter = (grp.group("q") or "").lower().startswith("quarter")
            groups.append(0 if grp.group("asof") else _LENGTH.get((grp.group("n") or "").lower(), 3 if quarter else 12))
        elif d := DATE.fullmatch(text):
            date = parse_date(d)
            probe = parse_date(d, default_year=2000)
            if date:
                slots.append(("date", date))
            elif probe:
                days.append((probe.month, probe.day))
        elif _YEAR.fullmatch(text):
            slots.append(("year", int(text)))
        elif c := _CHANGE.match(text):
            kind = (c.group("kind") or "").lower()
            named = {"$": "$ change", "%": "% change"}.get(kind, f"{kind} change".strip())
            slots.append(("change", f"{text.upper().replace(' ', '')} change" if "/" in text else named))
    if any(k == "versus" for k, _ in slots):  # the change columns are where the years compared stand; a
        # "% change" on a line above names them, it adds none ("% change" over Corning's "22 vs. 21")
        slots = [("change", v) if k == "versus" else (k, v) for k, v in slots if k != "change"]
    periods = [i for i, (k, _) in enumerate(slots) if k != "change"]
    if not periods:
        return []
    bare = [i for i in periods if slots[i][0] == "year"]
    n_periods, g = len(periods), len(groups)
    per_group = n_periods // g if g and n_periods % g == 0 else 0
    twin = next((v for k, v in slots if k == "date"), None)  # "September 30, 2023 2022": its neighbour's day
    ends: dict[int, dt.date | None] = {}
    for j, i in enumerate(bare):
        day: tuple[int, int] | None = None
        if len(days) == len(bare):
            day = days[j]
        elif g and len(days) == g and per_group:
            day = days[periods.index(i) // per_group]
        elif len(days) == 1:
            day = days[0]
        elif isinstance(twin, dt.date):
            day = (twin.month, twin.day)
        year = slots[i][1]
        ends[i] = _date(year, *day) if day and isinstance(year, int) else None
    columns: list[Column] = []
    default: int | None = 0 if _BALANCE.search(title) or not groups else None  # a date alone: a balance
    months: int | None = None
    for i, (kind, value) in enumerate(slots):
        if kind == "change":
            columns.append(Column(Period(months), str(value)))
            continue
        if kind == "quarter" and isinstance(value, tuple):
            columns.append(Column(Period(3, None, value[1], value[0])))
            continue
        if kind == "fiscal" and isinstance(value, int):
            columns.append(Column(Period(12, None, value)))
            continue
        k = periods.index(i)
        months = groups[k // per_group] if per_group else (groups[0] if g == 1 else default)
        end = value if isinstance(value, dt.date) else ends.get(i)
        columns.append(Column(Period(months, end)))
    return columns


def _date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
