"""A statement page read as tables: a title, a unit, period columns (``headers``), and rows of
a label and one figure per column.

A row ("Net income $ 6,188 $ 656 $ 8,232 $ 2,274") is a label and the figures ending its line;
a label alone on its line is a section heading ("Operating expenses:", "North America") or,
before a line starting in lower case, the first half of a long label. The unit scales the row
figures, except per-share amounts and percentages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache

from rag_core.figures import grids, keyed, named, papers
from rag_core.figures.headers import UNIT, UNIT_SCALE, Column, columns_of, is_header_line, unit_of
from rag_core.figures.labels import Item
from rag_core.figures.numbers import Number, read_numbers
from rag_core.figures.periods import Period

_CELL = re.compile(  # a figure, a dash or "N/A" (nothing); "5.39E-05" in scientific notation
    r"(?<![\w.,])(?<![^\W\d_]-)(?:\$\s?)?(?:\(\s?\d[\d,]*(?:\.\d+)?\s?\)|-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]\d{1,3})?"
    r"|[—–-](?!\w)|(?:N/A|n/a|n\.a\.)(?![\w/]))(?:\s?(?:%|pts?\b))?",
)
_BOILERPLATE = re.compile(
    r"^\(?unaudited\)?$|^table of contents$|^part\s+[ivx]+\b|^item\s+\d|^see accompanying|^refer to accompanying"
    r"|^\d+$|^page\s+\d+",
    re.IGNORECASE,
)


_OPEN = re.compile(r"^(?:\$|\(|\$\s?\()$")  # a cell that only opens the next one: "$", "(", "$ ("
_CLOSE = re.compile(r"^(?:\)|%|\)\s?%|pts?)$")  # a cell that only closes the one before: ")", "%"


def unpipe(line: str) -> str:
    """A table row as an HTML or Word table writes it ("Net income | | $ | 2,111,812 | | | $ |
    (2,208,887 | )", cells joined by " | ", the "$" and the ")" cells of their own) as a PDF's
    text writes it ("Net income $2,111,812 $(2,208,887)"): empty cells dropped, a "$" or "("
    joined to the figure after it, a ")" or "%" to the figure before it. A line with no " | " is
    returned as it is."""
    if " | " not in line and not line.rstrip().endswith(" |"):
        return line
    cells: list[str] = []
    opening = ""
    for cell in (c.strip() for c in line.split("|")):
        if not cell:
            continue
        if _OPEN.match(cell):
            opening += cell.replace(" ", "")
            continue
        if _CLOSE.match(cell) and cells and not opening:
            cells[-1] += cell
            continue
        cells.append(opening + cell)
        opening = ""
    if opening:
        cells.append(opening)
    return " ".join(cells)


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
    key: float | None = None  # a table keyed by a number: the row's key (``figures.keyed``)


@dataclass
class Table:
    title: str
    unit: str  # "millions", "thousands", "" (the header names none)
    scale: float
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    share_scale: float = 0.0  # counts of shares ("... number of shares which are reflected in thousands")
    label_headers: int = 0  # named columns: how many names head the row labels ("Training Model": 2)
    caption: str = ""  # "Table 3: … on Natural Questions (development set)", right under or above it
    key: keyed.Key | None = None  # rows keyed by a number, its column's name and unit ("Inhibitor concentration", "g")

    def __post_init__(self) -> None:
        self.share_scale = self.share_scale or self.scale


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


def row_cells(line: str) -> tuple[str, list[str]] | None:
    """A row line's label and the figures that end it, as written ("Single REALMNews (Guu et
    al., 2020) 40.4 - 40.7" → the label, ["40.4", "-", "40.7"]), or None: no row."""
    label, cells = _cells(unpipe(line))
    return (label, [m.group(0).strip() for m in cells]) if cells else None


def _continues(first: str, line: str) -> bool:
    """Whether ``line`` is the rest of a label cut by the page ("... marketable debt" /
    "securities (282) ..."): it starts with a lower-case word, and the first part is no heading
    ("Net sales by category:" / "iPhone ...")."""
    word = line.split(maxsplit=1)[0] if line.split() else ""
    return bool(word) and word.islower() and not first.rstrip().endswith(":")


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
    periods = [c for c in table.columns if not c.change and not c.name]
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


def _grid_rows(read: grids.GridRow, table: Table, start: int, end: int, index: int) -> list[Row]:
    """A grid's row as one row per figure: its column is its item, the row's label its section
    ("Tensile strength" of "Bars"); a range's two ends ("0.75 - 1.2") both."""
    out = []
    for cell in read.cells:
        at = start + cell.offset
        numbers = [
            Number(**{**n.__dict__, "start": at + n.start, "end": at + n.end, "kind": "figure"})
            for n in read_numbers(cell.value)
        ]
        if cell.unit == "%":
            numbers = [replace(n, percent=True) for n in numbers]
        if numbers:
            item = Item(cell.column or read.label, read.label if cell.column else "", table.title)
            cells = [Cell(n, None, 1.0 if n.percent or _is_per_share(item) else table.scale) for n in numbers]
            out.append(Row(item, cells, start, end, index))
    return out


def _new_table(
    tables: list[Table], title: str, unit: tuple[str, float], unit_line: str, columns: list[Column]
) -> Table:
    shares = re.search(r"shares[^)]*?\bin\s+(thousands|millions)", unit_line, re.I)
    table = Table(title, unit[0], unit[1], columns, share_scale=UNIT_SCALE[shares.group(1).lower()] if shares else 0.0)
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
        if any(c.name for c in table.columns) and sum(len(r.cells) == len(table.columns) for r in table.rows) < 2:
            _unname(table)  # one row under a line of names ("FORM 10-Q" over a date) is no table of them
        if table.label_headers >= 2:
            papers.regroup(table.rows)
        if table.rows and any(c.name for c in table.columns):
            table.caption = papers.caption(text, table.rows[0].start, table.rows[-1].end)
            if table.caption:  # its title is "Table 3", not the prose line above its header
                numbered = papers.NUMBER.match(table.caption)
                table.title = numbered.group(0) if numbered else table.caption.split(":")[0].strip()
                for row in table.rows:
                    row.item = replace(row.item, title=table.title)
        if not table.columns:
            papers.named_by_number(table.rows)
        seen = Counter(_key(row.item.label) for row in table.rows)
        for row in table.rows:
            if seen[_key(row.item.label)] > 1 and row.item.section:
                row.item = replace(row.item, shared=True)
    return tuple(tables)


def _keyed_row(table: Table, index: int, figures: list[str], line: str, start: int) -> Row:
    """A keyed table's row: its key the first figure (the label "Inhibitor concentration 6
    g"), the rest its named columns' cells."""
    assert table.key is not None
    spans, at = [], 0
    for text in figures:
        at = line.index(text, at)
        spans.append((text, start + at))
        at += len(text)
    row = _row(table, index, table.key.label(figures[0]), "", spans[1:], start, start + len(line))
    key = read_numbers(figures[0])
    row.key = key[0].value if key else None
    return row


def _unname(table: Table) -> None:
    table.columns, table.label_headers = [], 0
    for row in table.rows:
        row.cells = [replace(cell, column=None) for cell in row.cells]


def _key(label: str) -> str:
    return papers.key(label)


def _read(text: str) -> list[Table]:
    tables: list[Table] = []
    header: list[str] = []
    title, section, unit, unit_line = "", "", ("", 1.0), ""
    pending_label: tuple[str, int] | None = None
    table: Table | None = None
    offset = 0
    above: list[str] = []  # the lines just above, as written (a grid's header and unit rows)
    grid: Table | None = None
    recent: list[str] = []  # the last lines read, stripped, none of them a row of figures
    was_row = False
    title_before = ""  # the title before the last one (a line of column names is no title)
    for raw in (text or "").splitlines(keepends=True):
        start, written = offset, raw.rstrip("\r\n")
        offset += len(raw)
        above = [*above[-grids.ABOVE :], written]
        in_grid = grids.read_row(written, above[:-1])
        if in_grid is not None:  # a grid's row: each figure an item of its own (row and column)
            grid = grid or _new_table(tables, title, unit, unit_line, [])  # "(In millions)" above holds
            grid.rows.extend(_grid_rows(in_grid, grid, start, start + len(written), len(tables) - 1))
            continue
        grid = grid if grids.cells(written) else None
        line = unpipe(written)  # an HTML or Word table's row read as a PDF's
        stripped = line.strip()
        if not stripped:
            continue
        if UNIT.search(stripped):
            unit, unit_line = unit_of(stripped), stripped
        if is_header_line(stripped):
            if table is not None and table.rows:
                table = None
            header.append(stripped)
            pending_label = None
            continue
        label, cells = _cells(line) if not _BOILERPLATE.search(stripped) else (stripped, [])
        bare = keyed.figures(stripped) if not cells else None  # "6 0.3233 0.0540 … 0.4318": a keyed row?
        if bare is not None:
            if table is None or table.key is None or len(bare) != len(table.columns) + 1:
                names = keyed.header([unpipe(a) for a in above[:-1]], len(bare))
                if names is not None:
                    table = _new_table(tables, title, unit, unit_line, [])
                    table.key, table.label_headers = keyed.Key(*names[0]), 1
                    table.columns = [Column(Period(), name=name, unit=u) for name, u in names[1:]]
                    header, section, pending_label = [], "", None
            if table is not None and table.key is not None:
                table.rows.append(_keyed_row(table, len(tables) - 1, bare, line, start))
                was_row = True
                continue
        by_name = named.columns(recent[-2:], len(cells)) if cells and not was_row and not header else None
        was_row = bool(cells)
        if not cells:
            recent = [*recent[-2:], stripped]
        if by_name is not None:  # a header of names: a table of its own, whatever came before
            table = _new_table(tables, title_before if title == recent[-1] else title, unit, unit_line, [])
            table.columns = [Column(Period(), name=name) for name in by_name[0]]
            table.label_headers, section = by_name[1], ""
        if cells:
            if header or table is None:
                table = _new_table(tables, title, unit, unit_line, columns_of("\n".join(header), title))
                header, section = [], ""
            row_start = start
            if pending_label and _continues(pending_label[0], label):
                label, row_start = f"{pending_label[0]} {label}", pending_label[1]
                section = table.rows[-1].item.section if table.rows else section
            elif pending_label:
                section = pending_label[0]
            pending_label = None
            spans = [(m.group(0), start + m.start()) for m in cells]
            own = section
            if re.match(r"\s*(?:%|percent(?:age)?\s+of|as\s+a\s+(?:%|percent))", label, re.I) and table.rows:
                own = table.rows[-1].item.label  # "% of net revenue": of the row above
            table.rows.append(_row(table, len(tables) - 1, label, own, spans, row_start, start + len(written)))
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
                title_before, title = title, stripped
            continue
        if pending_label and not _continues(pending_label[0], stripped):
            section = pending_label[0]
        pending_label = (
            (f"{pending_label[0]} {stripped}", pending_label[1])
            if pending_label and _continues(pending_label[0], stripped)
            else (stripped, start)
        )
    return tables
