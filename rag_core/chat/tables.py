"""Table rows written out with their column headers, for a small model to read.

A financial statement's row as PDF text is "More Personal Computing 13,666 13,332": which
figure is this quarter's, which last year's, and in what unit, is said only in header
lines above ("(In millions)", "Three Months Ended September 30,", "2023 2022"). A 1.5B model
reading the bare row answers "13.666%". So a row kept as evidence is written out:

    More Personal Computing: Three Months Ended September 30, 2023: 13,666; Three Months
    Ended September 30, 2022: 13,332 (in millions)

Columns are read off the header lines: the period groups ("Three Months Ended", "Six Months
Ended", "As of"), the dates ("June 25,") and the years, matched to the row's count of
figures. An earnings release's columns named by quarter or fiscal year ("Q3 FY24 Q2 FY24 Q3
FY23 Q/Q Y/Y") are written as the header writes them, change columns too. When the counts do
not fit together the row is left as it was.

A grid (an HTML, Word or Markdown table whose columns a header row of words names:
"Assortment | Yield point | Tensile strength") has its rows written out cell by cell with
their columns' names and units (``grid_row``, read by ``figures.grids``).
"""

from __future__ import annotations

import re

from rag_core.figures import grids, keyed, named
from rag_core.figures.headers import column_names, columns_of, described_once
from rag_core.figures.headers import is_quarter_header as quarter_header
from rag_core.figures.tables import row_cells, unpipe

_FIGURE = r"\(?-?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\)?(?:\s?%)?(?:\s?(?:pts|bps))?|—|-"  # "1,0": a row cut short, no figure
_ONE_FIGURE = re.compile(rf"(?:\$\s?)?(?:{_FIGURE})")
_LABEL = re.compile(r".*[A-Za-z)][^\d$()—]*")  # a row's label ends in words, not in figures
_GROUP = re.compile(
    r"(?:(?:three|six|nine|twelve|thirteen|twenty-six|thirty-nine|fifty-two)\s+(?:months|weeks)|quarters?|years?|periods?)"
    r"\s+ended|as of",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{1,2}",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_CODE = re.compile(r"\d{5,}")  # five digits or more with no separator: a code (a ZIP, a file number), not a cell
_UNITS = re.compile(r"\bin (millions|thousands|billions)\b", re.IGNORECASE)


def is_quarter_header(line: str) -> bool:
    """A header line that names its columns by quarter or fiscal year ("| Q3 2024 | Q3 2023 |
    % Change", "Q3 FY24 Q2 FY24 Q/Q"): nothing else on it."""
    return quarter_header(unpipe(line))


def columns(headers: list[str]) -> list[str] | None:
    """Column labels read off a table's header lines, left to right, or None."""
    if any(is_quarter_header(h) for h in headers):  # each column as its header names it, changes too
        header = "\n".join(unpipe(h) for h in headers if is_quarter_header(h))
        names = column_names(header)
        return names if len(names) >= 2 and len(names) == len(columns_of(header)) else None  # one: a chart's label
    text = " ".join(described_once(headers))
    groups = [m.group(0) for m in _GROUP.finditer(text)]
    days = [m.group(0) for m in _MONTH_DAY.finditer(text)]
    years = [m.group(0) for m in _YEAR.finditer(text)]
    if not years:
        return None
    groups = groups or [""]
    n = len(years)
    if n % len(groups):
        return None
    per_group = n // len(groups)
    if len(days) == n:
        dates = [f"{d}, {y}" for d, y in zip(days, years, strict=True)]
    elif len(days) == len(groups):
        dates = [f"{days[i // per_group]}, {y}" for i, y in enumerate(years)]
    elif len(days) == 1:
        dates = [f"{days[0]}, {y}" for y in years]
    else:
        dates = years
    labels = []
    for i, date in enumerate(dates):
        group = groups[i // per_group].strip()
        labels.append(f"{group[:1].upper() + group[1:]} {date}".strip())
    return labels


def units(headers: list[str]) -> str:
    m = _UNITS.search(" ".join(headers))
    return f" (in {m.group(1).lower()})" if m else ""


def label_row(row: str, labels: list[str] | None, unit: str) -> str:
    """``row`` written out with ``labels``, when its figures are as many as the labels."""
    if not labels:
        return row
    split = _label_and_figures(unpipe(row).strip())
    if split is None:
        return row
    name, figures = split
    if len(figures) != len(labels) or any(_CODE.fullmatch(f) for f in figures):
        return row
    cells = "; ".join(f"{label}: {figure}" for label, figure in zip(labels, figures, strict=True))
    shares = all(f.endswith(("%", "pts", "bps")) for f in figures)  # a margin's row: no amount to scale
    return f"{name}: {cells}{'' if shares else unit}"


def _label_and_figures(row: str) -> tuple[str, list[str]] | None:
    """A row's label and the figures that end it ("Gross margin 53.6 % 43.5 %" → "Gross margin",
    ["53.6%", "43.5%"]), or None. Read token by token from the end: a pattern with nested repeats
    took seconds on a line of twenty figures that ends in a word."""
    tokens = row.split()
    figures: list[str] = []
    k = len(tokens)
    while k > 0:
        token, take = tokens[k - 1], 1
        if token in ("%", "pts", "bps") and k >= 2:  # "53.6 %", "3.9 pts": the unit a token of its own
            token, take = tokens[k - 2] + token, 2
        elif token == "$" and figures and not figures[0].startswith("$"):
            figures[0] = "$" + figures[0]
            k -= 1
            continue
        if not _ONE_FIGURE.fullmatch(token):
            break
        figures.insert(0, token)
        k -= take
    label = " ".join(tokens[:k])
    if not figures or not _LABEL.fullmatch(label):
        return None
    return label, figures


def named_row(row: str, above: list[str], question: str = "") -> str | None:
    """``row`` written out with its columns' names when its table's header is a line of names
    (a paper's "Training Model NQ TriviaQA WQ TREC SQuAD": "REALMNews (Guu et al., 2020): NQ:
    40.4; TriviaQA: -; ..."; ``figures.named``), found above the rows and the lone group lines
    ("Single") between it and ``row`` (``above``: nearest last); None when it has no such header.
    A column the ``question`` names otherwise is written its way too ("TREC (CuratedTREC)")."""
    split = row_cells(row)
    if split is None:
        return None
    k = len(above)
    while k > 0 and (row_cells(above[k - 1]) is not None or len(above[k - 1].split()) == 1):
        k -= 1
    found = named.columns(above[max(0, k - 2) : k], len(split[1])) if k else None
    if found is None:
        return None
    names = []
    for name in found[0]:
        other = named.asked_as(question, name)  # "TREC (CuratedTREC)": as the question says it
        names.append(f"{name} ({other})" if other else name)
    return f"{split[0]}: " + "; ".join(f"{name}: {cell}" for name, cell in zip(names, split[1], strict=True))


def keyed_row(row: str, above: list[str]) -> str | None:
    """``row`` written out with its key and its columns' names and units when it is a row of
    figures under a header of names with units ("Inhibitor concentration 6 g: bc (V/dec):
    0.3233; …; Corrosion rate (mm/year): 0.4318"; ``figures.keyed``), found above the rows
    (``above``: nearest last); None when it is not."""
    figures = keyed.figures(row.strip())
    if figures is None:
        return None
    k = len(above)
    while k > 0 and keyed.figures(above[k - 1].strip()) is not None:
        k -= 1
    names = keyed.header(above[:k], len(figures)) if k else None
    if names is None:
        return None
    key = keyed.Key(*names[0])
    cells = "; ".join(f"{name} ({unit}): {cell}" for (name, unit), cell in zip(names[1:], figures[1:], strict=True))
    return f"{key.label(figures[0])}: {cells}"


def grid_row(row: str, above: list[str]) -> tuple[str, int] | None:
    """``row`` written out cell by cell with its grid's column names and units ("Bars: Yield
    point: 890 N/mm 2; Tensile strength: 1000 N/mm 2"; ``figures.grids``), and how many lines
    above it its header row is; None when it is not a grid's row of figures."""
    read = grids.read_row(row, above)
    if read is None:
        return None
    parts = "; ".join(f"{c.column or read.label}: {c.value}{' ' + c.unit if c.unit else ''}" for c in read.cells)
    return f"{read.label}: " * bool(read.label) + parts + units(above), read.header
