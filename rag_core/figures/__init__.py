"""Figures you can trust: every number of an answer checked against the passages it cites,
and statement tables read by their structure. Pure functions over text: no index, no model.

- ``numbers``: every number of a text with its value, sign, currency, percent, scale word and
  written precision, and what it is (a figure, or a year, date, quarter, citation...).
- ``periods``: periods as columns and sentences name them, and whether two can be one.
- ``labels``: line items by their words ("net sales" = "revenue"), and whether a row is the
  item a claim names.
- ``tables``: a page's tables: title, unit, period columns, rows of labelled cells; a
  paper's columns named by words (``named``), its row groups and captions (``papers``).
- ``cells``: ``find_cell`` — the cell a question asks for, by row label and column period.
- ``sources``/``claims``/``compute``/``check``: ``check_answer`` — each figure of an answer
  as a claim (item, period, entity) against what the cited passages say each figure is;
  ``naming``: which row and column of the sources a claim's words name.
- ``marks``: the answer with unsupported figures marked, and the one-line summary.
- ``verify``: ``verify_answer`` — the check, the cells found by structure and the marks in one
  call (what the answer path calls); ``cell_lines`` — the sure cells as the model reads them.
"""

from rag_core.figures.cells import CellMatch, Page, find_cell, find_cells, page_text, question_parts
from rag_core.figures.check import CheckReport, FigureCheck, check_answer
from rag_core.figures.marks import mark_answer, marks, summary, table_says
from rag_core.figures.numbers import Number, figures, read_numbers
from rag_core.figures.sources import Passage, document_entity
from rag_core.figures.tables import parse_tables
from rag_core.figures.verify import Verified, cell_lines, sure_cells, verify_answer

__all__ = [
    "CellMatch",
    "CheckReport",
    "FigureCheck",
    "Number",
    "Page",
    "Passage",
    "Verified",
    "cell_lines",
    "check_answer",
    "document_entity",
    "figures",
    "find_cell",
    "find_cells",
    "mark_answer",
    "marks",
    "page_text",
    "parse_tables",
    "question_parts",
    "read_numbers",
    "summary",
    "sure_cells",
    "table_says",
    "verify_answer",
]
