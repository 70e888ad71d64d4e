"""What the answering model reads (rag_core.chat.evidence, rag_core.chat.tables)."""

from __future__ import annotations

from rag_core.chat.evidence import select_evidence
from rag_core.chat.tables import columns, label_row, units

APPLE = """CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)
(In millions)
Three Months Ended Nine Months Ended
June 25,
2022
June 26,
2021
June 25,
2022
June 26,
2021
Total net sales 82,959 81,434 304,182 282,457
Research and development 6,797 5,717 19,490 16,142
Net income $ 19,442 $ 21,744 $ 79,082 $ 74,129"""


def test_a_table_row_is_written_out_with_its_columns_and_unit():
    headers = APPLE.splitlines()[:11]
    labels = columns(headers)
    assert labels == [
        "Three Months Ended June 25, 2022",
        "Three Months Ended June 26, 2021",
        "Nine Months Ended June 25, 2022",
        "Nine Months Ended June 26, 2021",
    ]
    assert label_row("Total net sales 82,959 81,434 304,182 282,457", labels, units(headers)) == (
        "Total net sales: Three Months Ended June 25, 2022: 82,959; Three Months Ended June 26, 2021: 81,434; "
        "Nine Months Ended June 25, 2022: 304,182; Nine Months Ended June 26, 2021: 282,457 (in millions)"
    )
    # years in one line, the later year first (as Amazon writes them)
    amazon = columns(["Three Months Ended", "June 30,", "Six Months Ended", "June 30,", "2022 2023 2022 2023"])
    assert amazon and amazon[1] == "Three Months Ended June 30, 2023" and amazon[3] == "Six Months Ended June 30, 2023"
    # figures that do not fit the columns are left alone
    assert label_row("Total net sales 82,959 81,434", labels, "") == "Total net sales 82,959 81,434"
    assert columns(["Revenue by segment"]) is None
    # a row a chunk boundary cut inside a figure is not a row of figures: never labelled
    two = columns(["Three Months Ended", "June 25,", "2022", "June 26,", "2021"])
    assert two and len(two) == 2
    assert label_row("Line item 40 1,0", two, "") == "Line item 40 1,0"
    assert label_row("Line item 40 1,040 2,040", two, "") == "Line item 40 1,040 2,040"  # three figures
    assert label_row("Line item 1,040 2,040", two, "").startswith("Line item: Three Months Ended June 25, 2022: 1,040")


def test_evidence_keeps_the_lines_that_answer_within_the_budget_and_numbers_the_sources():
    prose = "The Company sells phones. " * 40
    passages = [(APPLE, "10-Q.pdf", 4, None), (prose, "memo.txt", None, "Intro")]
    evidence = select_evidence(
        "What were total net sales for the three months ended June 25, 2022?",
        passages,
        budget=120,
        count_tokens=lambda text: len(text.split()),
    )
    first = evidence[0]
    assert first.number == 1 and first.render().startswith("[1] 10-Q.pdf, page 4\n")
    assert any(line.startswith("Total net sales: Three Months Ended June 25, 2022: 82,959") for line in first.lines)
    assert "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)" in first.lines  # the title travels along
    assert "June 26," not in first.lines  # bare dates dropped: the row carries them
    assert sum(len(line.split()) for ev in evidence for line in ev.lines) <= 120 + 10
    everything = select_evidence("anything", passages, budget=0, count_tokens=len)
    assert [len(ev.lines) for ev in everything] == [14, 40]  # 0: every line (prose cut into sentences)
