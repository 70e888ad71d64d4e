"""The answer as the user reads it after the check: each figure the sources do not hold
marked where it stands, each computed one shown as computed, and a one-line summary for the
timing line ("1 figure not found in the sources").

The result is plain text: the UI renders answers with ``inert_markdown``, which keeps an
answer's own formatting but nothing active. The notes quote row labels from the documents,
so those quotes lose every character Markdown could read as formatting or a link.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag_core.figures.cells import CellMatch
from rag_core.figures.check import CheckReport, FigureCheck
from rag_core.figures.sources import counted_words

WARNING = "⚠"
_MARKUP = re.compile(r"[*_`\[\]<>#|~\\!]")


@dataclass(frozen=True)
class Mark:
    """A note to show after a figure of the answer (``start``/``end``: the figure's span)."""

    start: int
    end: int
    kind: str  # "unsupported" | "mismatch" | "computed"
    note: str


def quoted(text: str, most: int = 80) -> str:
    """Document text made inert for a note: no Markdown characters, one line, at most ``most``."""
    text = re.sub(r"\s+", " ", _MARKUP.sub("", text or "")).strip()
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def _note(fig: FigureCheck) -> str:
    if fig.status == "computed":
        formula = fig.computed.split(" = ", 1)[-1] if fig.computed else ""
        return f"(computed: {quoted(formula, 120)})" if formula else "(computed)"
    if fig.status == "table":  # a cell found by structure says otherwise (``verify``)
        return f"{WARNING} ({quoted(fig.source, 40)} says {quoted(fig.source_value, 140)})"
    if fig.status == "mismatch" and fig.source:
        source = re.sub(r"^\[\d+\]\s*", "", fig.source)
        cite = f" [{fig.passage}]" if fig.passage is not None else ""
        return (
            f"{WARNING} (not as stated in the sources: {quoted(fig.source_value, 30)} is {quoted(source, 100)}{cite})"
        )
    return f"{WARNING} (not found in the sources)"


def marks(report: CheckReport) -> list[Mark]:
    """The notes for ``report``'s unsupported and computed figures, in the answer's order."""
    out = [
        Mark(f.start, f.end, f.status if f.status != "normalised" else "found", _note(f))
        for f in report.figures
        if f.status in ("unsupported", "mismatch", "computed", "table")
    ]
    return sorted(out, key=lambda m: m.start)


_UNIT_WORD = re.compile(r"[ \t]+([A-Za-z]{1,12})\b")
_NOT_UNITS = frozenset(
    "a an and as at by for from in is of on or per than that the to was were while with compared "
    "which who versus vs respectively".split()
)


def _after_unit(answer: str, end: int) -> int:
    """Where a note after the figure ending at ``end`` goes: after the unit word that follows
    it ("16 A", "42 litres", "3,050 shares") or the two words of what it counts ("96 league
    appearances"), so the note does not come between them."""
    words = counted_words(answer[end : end + 60])
    if len(words) > 1:  # what it counts, in two words: "96 league appearances ⚠"
        two = re.match(r"\s+" + r"\s+".join(map(re.escape, words)), answer[end:])
        if two:
            return end + two.end()
    m = _UNIT_WORD.match(answer, end)
    return m.end() if m and m.group(1).lower() not in _NOT_UNITS else end


def mark_answer(answer: str, report: CheckReport) -> str:
    """``answer`` with each note after its figure ("$6,728 million ⚠ (not as stated in the
    sources: …)", "36% (computed: 1,100 / 3,050)")."""
    out, pos = [], 0
    for mark in marks(report):
        if mark.end < pos or mark.end > len(answer):
            continue
        end = _after_unit(answer, mark.end)
        out.append(answer[pos:end])
        out.append(" " + mark.note)
        pos = end
    out.append(answer[pos:])
    return "".join(out)


def summary(report: CheckReport) -> str:
    """One line for the timing line: "1 figure not found in the sources", "3 figures checked
    against the sources; 1 computed"; "" when the answer has no figure to check."""
    checked, missing = report.figures_checked, report.figures_unsupported
    if not checked:
        return ""
    if missing:
        line = f"{missing} figure{'s' if missing != 1 else ''} not found in the sources"
    else:
        line = f"{checked} figure{'s' if checked != 1 else ''} checked against the sources"
    computed = sum(f.status == "computed" for f in report.figures)
    return line + (f"; {computed} computed" if computed else "")


def table_says(report: CheckReport, cells: Sequence[CellMatch | None], least: float = 0.6) -> list[str]:
    """The cells found by structure (``cells.find_cells``) that the answer does not state,
    each as a line to show under it ("Net income, three months ended July 30, 2023: $6,188
    (in millions; 2023 Q2 NVDA.pdf, page 3)"): where the model read the table otherwise,
    the table's reading is preferred. Cells less sure than ``least`` are left out."""
    stated = {round(f.value, 6) for f in report.figures if f.supported and f.value is not None}
    out = []
    for cell in cells:
        if cell is None or cell.confidence < least:
            continue
        if round(cell.value, 6) not in stated and round(-cell.value, 6) not in stated:
            out.append(quoted(cell.describe(), 200))
    return out
