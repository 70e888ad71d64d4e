"""Grids: HTML or Word tables whose columns are named by a header row of words, not periods.

    Assortment | Yield point or Proof stress | Tensile strength | Elongation
    - | N/mm 2 | N/mm 2 | %
    Bars | 890 | 1000 | 12

A row's figures belong to the columns the header row names, in the units of the row under it
(if there is one). Read bare ("Bars 890 1000 12"), a figure's column is lost: a small model
takes one from the wrong column, and the figure check reads "Bars" as the item of all four.
So a grid's row is read cell by cell: each figure with its row's label, its column's name and
its unit. The evidence writes the row out that way (``chat.tables.grid_row``) and the check
reads each cell as an item of its own ("Bars Tensile strength").

A row of period columns ("2023 | 2022") is no grid: its header holds figures, and
``figures.tables`` reads it by its periods.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ABOVE = 8  # rows of the same table looked through upwards for its header
_DIGIT = re.compile(r"\d")
_VALUE = re.compile(r"(?:(?:max|min|ca)\.?|[≤≥<>~±])?\s*[^A-Za-z]*\d[^A-Za-z]*", re.I)
_RULE = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*")
_PERCENT = re.compile(r"(?:^|\s|\()%(?:\s|\)|$)|\bin percent\b", re.I)
_UNIT = re.compile(r"-|—|[%$€£]|[A-Za-z°µ/]{1,6}(?:\s?[A-Za-z/]{1,4})?(?:\s?\d)?")


@dataclass(frozen=True)
class GridCell:
    column: str  # the column's name in the header row ("" where the header cell is empty)
    value: str  # the cell as written ("1000", "0.75 - 1.2", "max 0.025")
    unit: str  # from the unit row under the header ("N/mm 2", "%"), or ""
    offset: int  # where the cell starts in the row's line


@dataclass(frozen=True)
class GridRow:
    label: str  # the row's first cell when it is words ("Bars", "SNB22-3"), else ""
    cells: list[GridCell]
    header: int  # how many lines above the row its header row is


def cells(line: str) -> list[str] | None:
    """A table row's cells as an HTML or Word table writes them (joined by " | "), or None."""
    if " | " not in line and not line.rstrip().endswith(" |"):
        return None
    return [c.strip() for c in line.split("|")]


def _header(row: list[str]) -> bool:
    named = [c for c in row if c]
    return (
        len(named) >= 2
        and not any(_DIGIT.search(c) for c in row)
        and all(len(c) <= 48 for c in named)
        and sum(bool(re.search(r"[A-Za-z]", c)) for c in named) >= 2
    )


def _units(row: list[str]) -> bool:
    named = [c for c in row if c]
    return bool(named) and all(_UNIT.fullmatch(c) for c in named) and any(c not in "-—" for c in named)


def read_row(line: str, above: list[str]) -> GridRow | None:
    """``line`` read as a grid's row of figures under the lines ``above`` it (nearest last), or
    None: not a row of figures, or no header row of words above it in the same table."""
    row = cells(line)
    if not row:
        return None
    label = row[0] if re.search(r"[A-Za-z]{2}", row[0]) else ""
    values = [(i, c) for i, c in enumerate(row) if c and (i > 0 or not label)]
    if not values or not all(len(c) <= 24 and _VALUE.fullmatch(c) for _, c in values):
        return None
    unit_row: list[str] = []
    near = above[-ABOVE:]
    for k in range(len(near) - 1, -1, -1):
        if _RULE.fullmatch(near[k]):
            continue  # a Markdown table's rule under its header ("---|---|---")
        over = cells(near[k])
        if over is None:
            return None
        if _header(over):
            if len(over) < values[-1][0] + 1:
                return None
            title = near[k - 1] if k > 0 and cells(near[k - 1]) is None else ""
            every = "%" if _PERCENT.search(title) else ""  # "Chemical composition, % of weight"
            units = [u or every for u in unit_row + [""] * (len(over) - len(unit_row))]
            starts = _starts(line)
            return GridRow(
                label,
                [
                    GridCell(over[i], value, units[i] if units[i] not in ("-", "—") else "", starts[i])
                    for i, value in values
                ],
                len(near) - k,
            )
        if not unit_row and _units(over):
            unit_row = over
    return None


def _starts(line: str) -> list[int]:
    """Where each cell's text starts in ``line``."""
    out, at = [], 0
    for part in line.split("|"):
        out.append(at + len(part) - len(part.lstrip()))
        at += len(part) + 1
    return out
