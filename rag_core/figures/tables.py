"""A statement page read as tables: a title, a unit, period columns, and rows of a label and
one figure per column.

PDFium writes a statement's header on separate lines, in one of a few orders:

    Three Months Ended Six Months Ended          Three Months Ended        Three Months Ended Nine Months Ended
    July 30, July 31, July 30, July 31,          June 30,                  July 1,
    2023 2022 2023 2022                          Six Months Ended          2023
                                                 June 30,                  June 25,
                                                 2022 2023 2022 2023       2022 ...

so a header is read as a sequence of tokens — period groups ("Three Months Ended", "As of"),
dates with or without their year, bare years, change columns ("$ Change", "% Change") — and
its columns are the years and change columns in the order written, each year given its day
and its group. A row ("Net income $ 6,188 $ 656 $ 8,232 $ 2,274") is a label and the figures
ending its line; a label alone on its line is a section heading ("Operating expenses:",
"North America") or, before a line starting in lower case, the first half of a long label.
The unit ("(In millions, except per share data)") scales the row figures, except per-share
amounts and percentages.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache

from rag_core.figures.labels import Item
from rag_core.figures.numbers import Number, read_numbers
from rag_core.figures.periods import DATE, Period, parse_date

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
    r"|\bincrease\s*/?\s*\(?decrease\)?|\bvariance\b",
    re.IGNORECASE,
)
_DATE_ONE_LINE = DATE.pattern.replace(r",?\s*(?P<year>", r",?[ \t]*(?P<year>")  # "July 31,\n2023": two tokens
_HEADER_TOKEN = re.compile(
    rf"(?:{_GROUP.pattern})|(?:{_DATE_ONE_LINE})|{_YEAR.pattern}|(?:{_CHANGE.pattern})",
    re.IGNORECASE,
)
_UNIT = re.compile(
    r"\bin\s+(?P<word>thousands|millions|billions)\b|(?P<cjk>单位\s*[:：]?\s*(?:人民币)?\s*(?P<cjkw>万元|千元|百万元|亿元|元))",
    re.IGNORECASE,
)
_UNIT_SCALE = {"thousands": 1e3, "millions": 1e6, "billions": 1e9, "千元": 1e3, "万元": 1e4, "百万元": 1e6}
_UNIT_SCALE |= {"亿元": 1e8, "元": 1.0}
_CELL = re.compile(
    r"(?<![\w.,])(?:\$\s?)?(?:\(\s?\d[\d,]*(?:\.\d+)?\s?\)|-?\d[\d,]*(?:\.\d+)?|[—–-](?!\w))(?:\s?(?:%|pts?\b))?",
)
_BOILERPLATE = re.compile(
    r"^\(?unaudited\)?$|^table of contents$|^part\s+[ivx]+\b|^item\s+\d|^see accompanying|^refer to accompanying"
    r"|^\d+$|^page\s+\d+",
    re.IGNORECASE,
)
_NOISE = re.compile(r"[$%()\s,:;.\-–—/]|\bchange\b|\bunaudited\b|\bended\b|\bpts\b", re.IGNORECASE)
_BALANCE = re.compile(r"balance\s+sheets?|financial\s+position|financial\s+condition", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    """One column of a table: a period, or a change between two ("$ Change", "% Change")."""

    period: Period
    change: str = ""

    def describe(self) -> str:
        if self.change:
            return self.change
        return self.period.describe()


@dataclass(frozen=True)
class Cell:
    number: Number | None  # None for a dash ("—": nothing)
    column: Column | None  # None when the row's figures do not fit the columns
    scale: float  # the table's unit, applying to this cell (1.0 for per-share amounts, percentages)


@dataclass
class Row:
    item: Item
    cells: list[Cell]
    start: int  # span of the row's line(s) in the page text
    end: int
    table: int  # index of its table on the page


@dataclass
class Table:
    title: str
    unit: str  # "millions", "thousands", "" (the header names none)
    scale: float
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    share_scale: float = 0.0  # counts of shares ("... number of shares which are reflected in thousands")

    def __post_init__(self) -> None:
        self.share_scale = self.share_scale or self.scale


def unit_of(text: str) -> tuple[str, float]:
    """The unit a header line names: ("millions", 1e6); ("", 1.0) when none."""
    m = _UNIT.search(text)
    if not m:
        return "", 1.0
    word = (m.group("word") or m.group("cjkw") or "").lower()
    return word, _UNIT_SCALE.get(word, 1.0)


_HEADER_PART = re.compile(
    r"^\s*(?:\$|%|quarter[\s-]+over[\s-]+quarter|year[\s-]+over[\s-]+year|percent(?:age)?)\s*$", re.I
)


def is_header_line(line: str) -> bool:
    """A line that only names columns: groups, dates, years, change columns, a unit."""
    if _HEADER_PART.match(line):
        return True
    if not _HEADER_TOKEN.search(line) and not _UNIT.search(line):
        return False
    rest = _UNIT.sub(" ", re.sub(r"\((?:[^()]*\bin\s+(?:thousands|millions|billions)[^()]*)\)", " ", line, flags=re.I))
    rest = _NOISE.sub(" ", _HEADER_TOKEN.sub(" ", rest))
    return len(re.findall(r"[^\W\d_]{2,}", rest)) <= 1


def columns_of(header: str, title: str = "") -> list[Column]:
    """The columns a table's header lines (joined by newlines) name, left to right."""
    groups: list[int] = []
    slots: list[tuple[str, dt.date | int | str]] = []  # ("date", date), ("year", 2023), ("change", "$ change")
    days: list[tuple[int, int]] = []  # (month, day) of dates written without their year
    for token in _HEADER_TOKEN.finditer(header):
        text = token.group(0).strip()
        if grp := _GROUP.fullmatch(text):
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
            slots.append(("change", {"$": "$ change", "%": "% change"}.get(kind, f"{kind} change".strip())))
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


def _cells(line: str) -> tuple[str, list[re.Match[str]]]:
    """A row line's label and the figures that end it ([] when it is no row)."""
    matches = list(_CELL.finditer(line))
    run: list[re.Match[str]] = []
    end = len(line.rstrip())
    for m in reversed(matches):
        if line[m.end() : end].strip():
            break
        run.insert(0, m)
        end = m.start()
    label = line[:end].strip() if run else line.strip()
    if not run or len(re.findall(r"[^\W\d_]", label)) < 2 or len(label.split()) > 18 or " | " in label:
        return line.strip(), []
    if re.search(r"\b(?:19|20)\d{2}$|[,;]$", line.strip()) and len(run) == 1:
        return line.strip(), []  # "... as of July 30, 2023": prose ending in a year
    return label, run


def _is_per_share(item: Item) -> bool:
    words = f"{item.label} {item.section}".lower()
    if re.search(r"\bshares\b", words):
        return False  # "Weighted average shares used in per share computation": a count of shares
    return "per share" in words or "per diluted share" in words or bool(re.search(r"\beps\b", words))


def _is_title(line: str) -> bool:
    """A short line that can title a table (not a page's boilerplate)."""
    s = line.strip()
    return 0 < len(s) <= 100 and not _BOILERPLATE.search(s) and not s.endswith(".") and len(s.split()) <= 12


def _row(table: Table, index: int, label: str, section: str, cells: list[tuple[str, int]], start: int, end: int) -> Row:
    periods = [c for c in table.columns if not c.change]
    extra = len(cells) - len(table.columns)
    if table.columns and 0 < extra <= 2 and re.search(r"\b(?:of|and)\s*$", label):
        label = f"{label} {' '.join(t for t, _ in cells[:extra])}"  # "... allowance of $512 and $650 36,953 48,688"
        cells = cells[extra:]
    item = Item(label, section, table.title)
    per_share = _is_per_share(item)
    shares = not per_share and bool(re.search(r"\bshares\b", f"{label} {section}", re.I))
    scale = 1.0 if per_share else (table.share_scale if shares else table.scale)
    if len(cells) == len(table.columns):
        cols: list[Column | None] = list(table.columns)
    elif len(cells) == len(periods):
        cols = list(periods)
    elif len(table.columns) == 1 and periods and periods[0].period.months and periods[0].period.end:
        cols = [periods[0]] * len(cells)  # one period, its columns named otherwise (segments)
    else:
        cols = [None] * len(cells)
    out: list[Cell] = []
    for (text, offset), col in zip(cells, cols, strict=True):
        numbers = read_numbers(text)
        number = numbers[0] if numbers else None
        if number is not None:
            number = Number(
                **{**number.__dict__, "start": offset + number.start, "end": offset + number.end, "kind": "figure"}
            )
        out.append(Cell(number, col, 1.0 if number is not None and number.percent else scale))
    return Row(item, out, start, end, index)


def _new_table(
    tables: list[Table], title: str, unit: tuple[str, float], unit_line: str, columns: list[Column]
) -> Table:
    shares = re.search(r"shares[^)]*?\bin\s+(thousands|millions)", unit_line, re.I)
    table = Table(title, unit[0], unit[1], columns, share_scale=_UNIT_SCALE[shares.group(1).lower()] if shares else 0.0)
    tables.append(table)
    return table


def parse_tables(text: str) -> list[Table]:
    """The tables of a page's text, in order (a table may have no columns: rows found with no
    header above them). Read once per text: a question looks at the same pages many times."""
    return list(_parse(text or ""))


@lru_cache(maxsize=2048)
def _parse(text: str) -> tuple[Table, ...]:
    tables = _read(text)
    for table in tables:
        seen = Counter(_key(row.item.label) for row in table.rows)
        for row in table.rows:
            if seen[_key(row.item.label)] > 1 and row.item.section:
                row.item = replace(row.item, shared=True)
    return tuple(tables)


def _key(label: str) -> str:
    return re.sub(r"\W+", " ", label.lower()).strip()


def _read(text: str) -> list[Table]:
    tables: list[Table] = []
    header: list[str] = []
    title, section, unit, unit_line = "", "", ("", 1.0), ""
    pending_label: tuple[str, int] | None = None
    table: Table | None = None
    offset = 0
    for raw in (text or "").splitlines(keepends=True):
        start, line = offset, raw.rstrip("\r\n")
        offset += len(raw)
        stripped = line.strip()
        if not stripped:
            continue
        if _UNIT.search(stripped):
            unit, unit_line = unit_of(stripped), stripped
        if is_header_line(stripped):
            if table is not None and table.rows:
                table = None
            header.append(stripped)
            pending_label = None
            continue
        label, cells = _cells(line) if not _BOILERPLATE.search(stripped) else (stripped, [])
        if cells:
            if header or table is None:
                table = _new_table(tables, title, unit, unit_line, columns_of("\n".join(header), title))
                header, section = [], ""
            row_start = start
            if pending_label and label[:1].islower():
                label, row_start = f"{pending_label[0]} {label}", pending_label[1]
                section = table.rows[-1].item.section if table.rows else section
            elif pending_label:
                section = pending_label[0]
            pending_label = None
            spans = [(m.group(0), start + m.start()) for m in cells]
            own = section
            if re.match(r"\s*(?:%|percent(?:age)?\s+of|as\s+a\s+(?:%|percent))", label, re.I) and table.rows:
                own = table.rows[-1].item.label  # "% of net revenue": of the row above
            table.rows.append(_row(table, len(tables) - 1, label, own, spans, row_start, start + len(line)))
            if re.match(r"total\b", label, re.I):
                section = ""
            continue
        if _BOILERPLATE.search(stripped):
            continue
        if header:
            columns = columns_of("\n".join(header), title)
            if not columns:  # a title between a unit line and the period lines
                title = stripped if _is_title(stripped) else title
                continue
            table = _new_table(tables, title, unit, unit_line, columns)
            header, section = [], ""
        n_words = len(stripped.split())
        if n_words > 24 or (n_words > 14 and not stripped.endswith(":")) or (stripped.endswith(".") and n_words > 8):
            table, pending_label, section = None, None, ""  # prose: the table has ended
            continue
        if table is None:
            if _is_title(stripped):
                title = stripped
            continue
        if pending_label and not stripped[:1].islower():
            section = pending_label[0]
        pending_label = (
            (stripped, start)
            if not pending_label or not stripped[:1].islower()
            else (f"{pending_label[0]} {stripped}", pending_label[1])
        )
    return tables
