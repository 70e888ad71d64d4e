"""An answer as the user gets it once its figures are checked: the one call the answer path
makes (``verify_answer``), and the cells found by structure as the model reads them first
(``cell_lines``).

A cell found by the table's structure for the line item and period the question names is
preferred over the model's own reading of the table: when the answer does not state it, the
answer's figure of that line item is marked as not what the table says, and the cell is
shown under the answer with its page ("The table on p. 3 says: …"). Only a cell found
without a rival of nearly the same score (``CellMatch.confidence``) speaks for the table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_core.figures.cells import CellMatch
from rag_core.figures.check import CheckReport, check_answer, foreign_names, names_strangers
from rag_core.figures.claims import read_claims
from rag_core.figures.labels import agreement
from rag_core.figures.marks import mark_answer, quoted, summary
from rag_core.figures.numbers import Number, figures
from rag_core.figures.periods import agree
from rag_core.figures.sources import Passage

SURE = 0.6  # a cell less sure than this (a rival row or column nearly as good) is not used
_REFUSED = re.compile(r"\bdocuments?\s+(?:don['’]t|do\s+not|doesn['’]t|does\s+not)\s+say\b", re.IGNORECASE)
# A figure written as the change of its line item, not its level: "net sales grew by $107 million"
# (asked how much Corning's net sales grew; its table's 14,189 is the level), "decreased $2,766
# million" (Coca-Cola's SG&A), "a net increase of $107 million" (Corning's MD&A)
_CHANGED_BY = re.compile(
    r"\b(?:gr[eo]w(?:n|th)?|rose|risen|rise|increase[ds]?|decrease[ds]?|decline[ds]?|fell|drop(?:ped|s)?|change[ds]?"
    r"|(?:went|was|were)\s+(?:up|down))\b[^.;!?]*$|(?:,|\b(?:was|were|is|are))\s+(?:up|down)\s+(?:by\s+)?$",
    re.IGNORECASE,
)
# "increased to $14,189 million", "from $14,082 million": the figure is a level, whatever the clause says
_A_LEVEL = re.compile(r"\b(?:to|from|at|reached|totall?ed|of\s+total)\s+(?:approximately\s+|about\s+)?$", re.IGNORECASE)


def _a_change(answer: str, start: int) -> bool:
    """Whether the figure at ``start`` is given as a change of its line item: a change word before
    it in its clause ("grew by", "Net sales growth in FY2022:", "an increase of"), not a level
    it moved to or from."""
    before = answer[max(0, start - 80) : start]
    before = re.split(r"[.;!?]\s|\n", before)[-1]
    return bool(_CHANGED_BY.search(before)) and not _A_LEVEL.search(before)


@dataclass
class Verified:
    """The answer with its marks, the check behind them and the line for the timing line."""

    answer: str
    report: CheckReport
    line: str  # "1 figure not found in the sources"; "" when there was no figure to check
    table_says: list[str] = field(default_factory=list)

    @property
    def figures_checked(self) -> int:
        return self.report.figures_checked

    @property
    def figures_unsupported(self) -> int:
        return self.report.figures_unsupported


def sure_cells(cells: Sequence[CellMatch | None], least: float = SURE) -> list[CellMatch]:
    """The cells sure enough to be preferred over the model's reading."""
    return [c for c in cells if c is not None and c.confidence >= least]


def cell_lines(cells: Sequence[CellMatch | None], least: float = SURE) -> list[str]:
    """The sure cells as lines for the prompt ("Net income, three months ended July 30, 2023:
    $6,188 (in millions; 2023 Q2 NVDA.pdf, page 3)")."""
    return [c.describe() for c in sure_cells(cells, least)]


def _stated(numbers: Sequence[Number], cell: CellMatch) -> bool:
    """Whether the answer writes the cell's figure: its digits ("94,836"), or its value at the
    answer's scale and rounding ("$94.8 billion")."""
    bare_share = not cell.unit and cell.number.decimals > 0 and cell.number.magnitude <= 100  # a paper's "42.9"
    for n in numbers:
        if n.percent != cell.number.percent and not (n.percent and bare_share):
            continue
        if abs(n.magnitude - cell.number.magnitude) <= 1e-9 * max(1.0, cell.number.magnitude):
            return True
        if n.scaled and abs(abs(n.value) - abs(cell.value)) <= n.step / 2 + 1e-9 * abs(cell.value):
            return True
    return False


def _table_note(cell: CellMatch) -> str:
    where = f"p. {cell.page.page}" if cell.page.page else quoted(cell.page.file, 60)
    return f"The table on {where} says: {quoted(cell.describe(), 200)}"


def verify_answer(
    answer: str,
    question: str,
    passages: Sequence[Passage],
    cells: Sequence[CellMatch | None] = (),
    least: float = SURE,
    owners: Sequence[str] = (),
) -> Verified:
    """``answer`` with each figure checked against ``passages`` (the sources as numbered for
    it) and the ``cells`` found by structure for ``question``: unsupported figures marked where
    they stand, computed ones shown as computed, and each sure cell the answer does not state
    said under it, the answer's figure of the cell's line item marked as not what it says."""
    report = check_answer(answer, question, passages, owners=owners)
    if not report.figures:
        # a refusal where a table holds the cell asked: the cell under it, with its page (the model
        # said "The documents don't say" of Corning's R&D, its row on the first source's page)
        said = [_table_note(c) for c in sure_cells(cells, least)] if _REFUSED.search(answer) else []
        shown = answer.rstrip() + "\n\n" + "\n".join(f"- {n}" for n in said) if said else answer
        return Verified(shown, report, "", said)
    notes: list[str] = []
    unstated = [c for c in sure_cells(cells, least) if not _stated(figures(answer, question), c)]
    if unstated:
        known = {k for p in passages for k in p.entity_words()}
        claims = {c.number.start: c for c in read_claims(answer, question, known, foreign_names(owners, known))}
        for cell in unstated:
            for fig in report.figures:
                claim = claims.get(fig.start)
                if claim is None or claim.number.percent != cell.number.percent or fig.status == "computed":
                    continue
                if _a_change(answer, fig.start):
                    continue  # the change of the line item the cell is the level of
                if agreement(claim.terms, cell.row.item) != "agree":
                    continue
                if not claim.relative and cell.column is not None and agree(claim.period, cell.column.period) is False:
                    continue  # the figure of another period the answer names ("to 22.9% in FY2022" beside 2021's)
                if (
                    claim.entities
                    and cell.page.entity_words()
                    and not (claim.entities & cell.page.entity_words())
                    and not names_strangers(claim, cell.page.text)  # a method the paper names, not a company
                ):
                    continue  # another company's figure (a comparison's other part)
                fig.status, fig.passage = "table", None
                fig.source = f"the table on p. {cell.page.page}" if cell.page.page else "the table"
                fig.source_value = f"{cell.number.clean} ({cell.row.item.describe()}, {cell.column.describe()})"
                fig.explanation = f"the table says {cell.describe()}"
            notes.append(_table_note(cell))
    marked = mark_answer(answer, report)
    if notes:
        marked = marked.rstrip() + "\n\n" + "\n".join(f"- {n}" for n in notes)
    return Verified(marked, report, summary(report), notes)
