"""A financial statement's rows read by where their words stand, and one line item's figure
for one year found in them.

A filing's statements are tables whose label and figures PDFium's text stream often gives on
separate lines ("Purchases of property, plant and equipment (PP&E)" then "(1,577)", "(1,373)",
"(1,420)": 3M's and Corning's 10-Ks). ``rag_core.pdfium.page_rows`` lays a page's lines out by
position first, so that a row is one line again: "Purchases of property, plant and equipment
(PP&E) (1,577) (1,373) (1,420)". Here a row's figures are its columns in order, and the years
of the header above them ("(Millions) 2018 2017 2016", "At December 31, 2019 At December 31,
2018") name the columns: the figure of a year is the one standing in that year's place. A row
with as many figures as the header has years is read; any other is not (a note's prose, a
per-share row with one figure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_YEAR = re.compile(r"(?<![\d,.$])((?:19|20)\d{2})(?![\d,.%])")
_FIGURE = re.compile(r"(?<![\w.])\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?%?(?![\w.])|(?<!\w)[—–-](?!\w)")
_SCALE = re.compile(r"\b(?:in\s+)?(millions|thousands|billions)\b", re.IGNORECASE)
_SCALES = {"thousands": 1e3, "millions": 1e6, "billions": 1e9}


@dataclass(frozen=True)
class StatementRow:
    """A row: its label, its figures (None for a dash), the years of its columns, its scale."""

    label: str
    values: tuple[float | None, ...]
    written: tuple[str, ...]
    years: tuple[int, ...]
    scale: float
    line: int
    stated: bool = True  # the page wrote its scale ("(Millions)", "in thousands") above the row


def _number(text: str) -> float | None:
    t = text.strip().replace("$", "").replace(" ", "")
    if t in ("—", "–", "-"):
        return None
    negative = t.startswith("(") or t.startswith("-")
    t = t.strip("()-%")
    try:
        value = float(t.replace(",", ""))
    except ValueError:
        return None
    return -value if negative else value


def header_years(line: str) -> tuple[int, ...] | None:
    """The years a column header names, in order, when the line is a header: two or more years
    and little else ("(Millions) 2018 2017 2016"; not a sentence that names two years)."""
    years = [int(y) for y in _YEAR.findall(line)]
    if len(years) < 2:
        return None
    rest = _YEAR.sub(" ", line)
    words = re.findall(r"[A-Za-z]+", rest)
    if len(words) > 6 * len(years) or re.search(r"[$%]|\d{1,3},\d{3}", rest):
        return None
    return tuple(years)


def statement_rows(text: str) -> list[StatementRow]:
    """Every row of the page's statements that has one figure per year of the header above it."""
    rows: list[StatementRow] = []
    years: tuple[int, ...] | None = None
    scale, stated = 1.0, False
    for no, raw in enumerate((text or "").splitlines()):
        line = raw.strip()
        if not line:
            continue
        found = _SCALE.search(line)
        if found and len(line) < 120:
            scale, stated = _SCALES[found.group(1).lower()], True
        head = header_years(line)
        if head:
            years = head
            continue
        if not years:
            continue
        figures = list(_FIGURE.finditer(line))
        if len(figures) < len(years):
            continue
        tail = figures[-len(years) :]
        label = line[: tail[0].start()].strip(" .:$")
        if not re.search(r"[A-Za-z]{3}", label) or any(
            _number(f.group(0)) is None
            and "—" not in f.group(0)
            and "–" not in f.group(0)
            and f.group(0).strip() != "-"
            for f in tail
        ):
            continue
        values = tuple(_number(f.group(0)) for f in tail)
        written = tuple(f.group(0).strip() for f in tail)
        rows.append(StatementRow(label, values, written, years, scale, no, stated))
    return rows


def normal(label: str) -> str:
    """A label as compared: lower case, "&" as "and", no punctuation, notes or dashes."""
    text = label.lower().replace("&", " and ")
    text = re.sub(r"\([^)]*\)", " ", text)  # "(PP&E)", "(Note 7)"
    text = re.sub(r"[^a-z0-9 ]+", " ", text)
    return " ".join(text.split())


def find_row(
    rows: list[StatementRow], labels: tuple[str, ...], year: int, pattern: re.Pattern[str] | None = None
) -> StatementRow | None:
    """The first row whose label is one of ``labels`` (normalised, in order of preference: the
    first label that any row has wins) and whose header has ``year``; failing those, the first
    whose normalised label ``pattern`` matches."""
    wanted = [normal(x) for x in labels]
    for want in wanted:
        for row in rows:
            if year in row.years and normal(row.label) == want:
                return row
    for want in wanted:  # a label with a note or a qualifier after it ("Total assets (a)")
        for row in rows:
            if (
                year in row.years
                and normal(row.label).startswith(want + " ")
                and len(normal(row.label)) < 2 * len(want)
            ):
                return row
    for want in wanted:  # a label with its allowance or depreciation after it ("…, net of allowances of $132")
        for row in rows:
            rest = normal(row.label)[len(want) :] if normal(row.label).startswith(want + " ") else ""
            if year in row.years and re.match(r" (?:net of|less) ", rest):
                return row
    if pattern is not None:
        return next((row for row in rows if year in row.years and pattern.search(normal(row.label))), None)
    return None


def value_in(row: StatementRow, year: int) -> tuple[float, str] | None:
    """The figure of ``year`` in ``row`` (in units, the scale applied) and as written."""
    i = row.years.index(year)
    value = row.values[i]
    if value is None:
        return None
    return value * row.scale, row.written[i]
