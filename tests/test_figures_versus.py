"""A change column named by the years it compares ("2022 vs. 2021", "22 vs. 21"), and a figure
an answer gives as a change, checked against a table's level (rag_core.figures.headers,
rag_core.figures.verify). The tables are shaped as Corning's 2022 10-K (page 24: "% change" on
the line above "2022 2021 22 vs. 21") and Coca-Cola's 2017 10-K (page 49: "Percent Change" above
"Year Ended December 31, 2017 2016 2015 2017 vs. 2016 2016 vs. 2015") write them; the real
pages are read too when ../shared is there."""

from __future__ import annotations

from rag_core.figures import Page, Passage, find_cell, verify_answer
from rag_core.figures.headers import columns_of
from rag_core.figures.tables import parse_tables

HIGHLIGHTS = """RESULTS OF OPERATIONS
The following table presents selected highlights from our operations (in millions):
Year ended December 31, % change
2022 2021 22 vs. 21
Net sales $ 14,189 $ 14,082 1%
Selling, general and administrative expenses $ 1,898 $ 1,827 4%
Research, development and engineering expenses $ 1,047 $ 995 5%
"""

ANALYSIS = """Analysis of Consolidated Statements of Income
Percent Change
Year Ended December 31, 2017 2016 2015 2017 vs. 2016 2016 vs. 2015
(In millions except percentages and per share data)
NET OPERATING REVENUES $ 35,410 $ 41,863 $ 44,294 (15)% (5)%
Cost of goods sold 13,256 16,465 17,482 (19) (6)
"""


def _cells(text: str, label: str) -> list[tuple[str, str]]:
    for table in parse_tables(text):
        for row in table.rows:
            if row.item.label.lower() == label.lower():
                return [
                    (c.number.clean if c.number else "—", c.column.describe() if c.column else "") for c in row.cells
                ]
    raise AssertionError(f"no row {label!r}")


def test_the_years_compared_are_one_change_column_where_they_stand():
    assert [c.describe() for c in columns_of("Year ended December 31, % change\n2022 2021 22 vs. 21")] == [
        "year ended December 31, 2022",
        "year ended December 31, 2021",
        "change",
    ]
    assert _cells(HIGHLIGHTS, "Net sales") == [
        ("$14,189", "year ended December 31, 2022"),  # had been read as the "% change" column
        ("$14,082", "year ended December 31, 2021"),  # had been read as 2022's
        ("1%", "change"),
    ]
    revenues = _cells(ANALYSIS, "NET OPERATING REVENUES")  # had been left unread: 2017 vs. 2016 as two more years
    assert revenues[:3] == [
        ("$35,410", "year ended December 31, 2017"),
        ("$41,863", "year ended December 31, 2016"),
        ("$44,294", "year ended December 31, 2015"),
    ]
    assert [c for _, c in revenues[3:]] == ["change", "change"]


def test_a_change_the_answer_gives_is_not_marked_by_the_level_cell():
    question = "How much did Corning's net sales grow in FY2022?"
    page = Page(HIGHLIGHTS, "CORNING_2022_10K.pdf", 24)
    cells = [find_cell(question, [page])]
    assert cells[0] is not None and cells[0].number.clean == "$14,189"
    sources = [Passage(1, HIGHLIGHTS, "CORNING_2022_10K.pdf", 24)]
    grew = verify_answer("Corning's net sales grew by $107 million, or 1%, in FY2022 [1].", question, sources, cells)
    assert not [f for f in grew.report.figures if f.status == "table"]
    level = verify_answer("Corning's net sales were $14,082 million in FY2022 [1].", question, sources, cells)
    assert [f.status for f in level.report.figures if f.text.startswith("$14,082")] == ["table"]  # still marked
    # the model's words in the user try: "Net sales growth in FY2022: $107 million …"; a level it moved to is a level
    for answer in ("Net sales growth in FY2022: $107 million, or 1% [1].", "Net sales were up $107 million [1]."):
        assert not [f for f in verify_answer(answer, question, sources, cells).report.figures if f.status == "table"]
    moved = verify_answer("Corning's net sales increased to $14,082 million in FY2022 [1].", question, sources, cells)
    assert [f.status for f in moved.report.figures if f.text.startswith("$14,082")] == ["table"]


def test_the_real_pages_read_their_change_columns(shared_data):
    from rag_core.loaders.layout import page_rows

    pdfs = shared_data / "eval" / "financebench" / "pdfs"
    corning = page_rows(pdfs / "CORNING_2022_10K.pdf", 24) or ""
    assert _cells(corning, "Net sales")[:2] == [
        ("$14,189", "year ended December 31, 2022"),
        ("$14,082", "year ended December 31, 2021"),
    ]
    coca_cola = page_rows(pdfs / "COCACOLA_2017_10K.pdf", 49) or ""
    assert _cells(coca_cola, "Cost of goods sold")[0] == ("13,256", "year ended December 31, 2017")


def test_a_refusal_gets_the_cell_a_table_holds_for_the_question():
    question = "What were Corning's research, development and engineering expenses in FY2022?"
    page = Page(HIGHLIGHTS, "CORNING_2022_10K.pdf", 24)
    cells = [find_cell(question, [page])]
    sources = [Passage(1, HIGHLIGHTS, "CORNING_2022_10K.pdf", 24)]
    refused = verify_answer("The documents don't say.", question, sources, cells)
    assert refused.answer.startswith("The documents don't say.")
    assert "The table on p. 24 says: Research, development and engineering expenses" in refused.answer
    assert "$1,047" in refused.answer and refused.table_says
    words = verify_answer("Corning spent more on research in 2022.", question, sources, cells)
    assert words.answer == "Corning spent more on research in 2022." and not words.table_says  # not a refusal


def test_the_models_words_do_not_pose_as_docents_arithmetic(tmp_path):
    """In the user try the model, having read two computed answers in the conversation, began its
    own with "🧮 Computed from the statements:": the lead says Docent did the arithmetic, so only
    Docent's own answer keeps it."""
    from rag_core.chat.computed import COMPUTED_LEAD, Computation

    question = "How much did Corning's net sales grow in FY2022?"
    computation = Computation(question, [], None, tmp_path)  # type: ignore[arg-type]
    written = f"{COMPUTED_LEAD} Net sales growth in FY2022: $107 million, or 1%."
    assert computation.completed(written, question) == "Net sales growth in FY2022: $107 million, or 1%."
