"""Tables keyed by a number, their columns named with their units (rag_core.figures.keyed):
read by structure, checked by row and column, found for a question, written out for the model.
The text is the corrosion table of a Data in Brief paper as PDFium writes it (header wrapped
over seven lines, scientific notation); the shared corpus's copy is read in test_corpus."""

from __future__ import annotations

import pytest

from rag_core.chat.tables import keyed_row
from rag_core.figures import Page, Passage, check_answer, find_cells
from rag_core.figures.keyed import Key, asked, figures, header
from rag_core.figures.tables import parse_tables

PAGE = """an evidence of ES present on the metal surface as shown in Fig. 8.
Table 1
Potentiodynamic polarization data for stainless steel in the absence and presence of ES in 0.5 M H2SO4 solution.
Inhibitor
concentration (g)
bc (V/dec) ba (V/dec) Ecorr (V) icorr (A/cm2
) Polarization
resistance (Ω)
Corrosion
rate (mm/year)
0 0.0335 0.0409 0.9393 0.0003 24.0910 2.8163
2 1.9460 0.0596 0.8276 0.0002 121.440 1.5054
6 0.3233 0.0540 0.8027 5.39E-05 373.180 0.4318
10 0.0382 0.0086 0.5356 1.24E-05 246.080 0.0919
Fig. 4. Anodic and cathodic polarization curve of stainless steel.
2 4 6 8 10
"""
RATE = "What is the corrosion rate of stainless steel with 6 g of inhibitor?"


def test_a_header_of_names_with_units_names_the_figures_of_rows_keyed_by_their_first():
    (table,) = [t for t in parse_tables(PAGE) if t.rows and t.key]
    assert table.key == Key("Inhibitor concentration", "g")
    assert table.title == "Table 1" and "Potentiodynamic" in table.caption
    assert [c.describe() for c in table.columns] == [
        "bc (V/dec)",
        "ba (V/dec)",
        "Ecorr (V)",
        "icorr (A/cm2)",
        "Polarization resistance (Ω)",
        "Corrosion rate (mm/year)",
    ]
    rows = {r.key: r for r in table.rows}
    assert sorted(rows) == [0, 2, 6, 10]
    six = rows[6]
    assert six.item.label == "Inhibitor concentration 6 g"
    assert [(c.number.text if c.number else None, c.column.name if c.column else None) for c in six.cells][-2:] == [
        ("373.180", "Polarization resistance"),
        ("0.4318", "Corrosion rate"),
    ]
    assert six.cells[3].number is not None and six.cells[3].number.value == pytest.approx(5.39e-05)
    # a chart's axis under the table, figures only, is no row of it
    assert all(r.key != 2 or r.cells[0].number.text == "1.9460" for r in table.rows if r.cells[0].number)


def test_no_header_of_units_no_keyed_table():
    assert header(["Revenue by year", "2023 2022 2021"], 3) is None
    assert header(["(In millions)"], 3) is None  # a unit with no name is no column
    assert header(["Table 1 Concentration (g) Rate (mm/y) Loss (g)"], 3) is None  # a title's number
    assert figures("2 4 6 8 10") == ["2", "4", "6", "8", "10"]
    assert figures("230, 234, 244") is None  # an index's page numbers, not a row
    assert figures("Net income 1 2 3") is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the corrosion rate without inhibitor", 0.0),
        ("in the absence of inhibitor", 0.0),
        ("with 6 g of egg shell inhibitor", 6.0),
        ("at a concentration of 10", 10.0),
        ("What is the corrosion rate?", None),
        ("the rate is 0.4318 mm/year", None),
    ],
)
def test_a_question_names_a_row_by_its_key(text, value):
    assert asked(text, Key("Inhibitor concentration", "g")) == value


def _statuses(answer: str, question: str) -> list[tuple[str, str]]:
    report = check_answer(answer, question, [Passage(1, PAGE, "corrosion.pdf", 4)])
    return [(f.text, f.status) for f in report.figures]


def test_a_figure_of_another_column_or_another_key_is_marked():
    assert _statuses("The corrosion rate with 6 g is 0.4318 mm/year [1].", RATE) == [("0.4318", "found")]
    # the first figure of the row is its cathodic slope, not its corrosion rate
    assert _statuses("The corrosion rate without inhibitor is 0.0335 mm/year [1].", RATE) == [("0.0335", "mismatch")]
    # the right column, the row of another concentration than the one asked
    assert _statuses("The corrosion rate at 6 g of inhibitor is 0.0919 mm/year [1].", RATE) == [("0.0919", "mismatch")]
    # a concentration the table has no row of
    assert ("0.0919", "mismatch") in _statuses("At 12 g of inhibitor the corrosion rate is 0.0919 mm/year [1].", RATE)
    note = check_answer("The corrosion rate without inhibitor is 0.0335 mm/year [1].", RATE, [Passage(1, PAGE)])
    assert "Inhibitor concentration 0 g (Table 1), bc (V/dec)" in note.figures[0].explanation


def test_the_table_says_the_cell_of_the_key_and_column_asked():
    (cell,) = find_cells(RATE, [Page(PAGE, "corrosion.pdf", 4)])
    assert cell is not None and cell.number.text == "0.4318" and cell.column.name == "Corrosion rate"
    (control,) = find_cells("What is the polarization resistance without inhibitor?", [Page(PAGE)])
    assert control is not None and control.number.text == "24.0910"
    assert find_cells("What is the corrosion rate at 12 g?", [Page(PAGE)]) == [None]  # no such row
    assert find_cells("What is the corrosion rate?", [Page(PAGE)]) == [None]  # which row is not said


def test_the_evidence_writes_a_keyed_row_with_its_key_and_columns():
    lines = PAGE.splitlines()
    at = lines.index("6 0.3233 0.0540 0.8027 5.39E-05 373.180 0.4318")
    written = keyed_row(lines[at], lines[max(0, at - 16) : at])
    assert written == (
        "Inhibitor concentration 6 g: bc (V/dec): 0.3233; ba (V/dec): 0.0540; Ecorr (V): 0.8027; "
        "icorr (A/cm2): 5.39E-05; Polarization resistance (Ω): 373.180; Corrosion rate (mm/year): 0.4318"
    )
    assert keyed_row("2 4 6 8 10", ["Fig. 4. Anodic and cathodic polarization curve of stainless steel."]) is None
