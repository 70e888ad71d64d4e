"""The figure check: each figure of an answer against what the cited passages say it is;
the cells a question asks for; the marks in the answer."""

from __future__ import annotations

from rag_core.figures import (
    Page,
    Passage,
    check_answer,
    find_cell,
    find_cells,
    mark_answer,
    marks,
    page_text,
    summary,
    table_says,
)
from rag_core.figures.cells import question_parts
from tests.test_figures_tables import GROUPS_THEN_YEARS, ROWS_BY_LINE, WITH_CHANGES

ACME = "Acme Corporation"
BOLT = "Bolt Inc."
QUARTER = "What was Acme's net income for the quarter ended July 30, 2023?"


def passages() -> list[Passage]:
    return [
        Passage(1, ROWS_BY_LINE, "2023 Q2 ACME.pdf", 3, ACME),
        Passage(2, WITH_CHANGES, "2023 Q2 ACME.pdf", 30, ACME),
        Passage(3, GROUPS_THEN_YEARS, "2023 Q2 BOLT.pdf", 4, BOLT),
    ]


def statuses(answer: str, question: str = QUARTER, **kw) -> list[tuple[str, str]]:
    return [(f.text, f.status) for f in check_answer(answer, question, passages(), **kw).figures]


def test_the_right_figure_is_found_where_it_stands():
    report = check_answer(
        "Acme's net income for the quarter ended July 30, 2023 was $618 million [1].", QUARTER, passages()
    )
    (fig,) = report.figures
    assert (fig.status, fig.passage) == ("found", 1)
    assert fig.source == "[1] Net income, three months ended July 30, 2023"
    assert (report.figures_checked, report.figures_unsupported) == (1, 0)


def test_the_neighbouring_row_is_marked_with_what_it_is():
    report = check_answer(
        "Acme's net income for the quarter ended July 30, 2023 was $672 million [1].", QUARTER, passages()
    )
    (fig,) = report.figures
    assert fig.status == "mismatch" and report.figures_unsupported == 1
    assert fig.source.startswith("[2] Compute & Networking (Operating income by Reportable Segments)")
    assert "three months ended July 30, 2023" in fig.source


def test_the_six_months_for_the_quarter_is_marked():
    (fig,) = check_answer("Acme's net income was $823 million [1].", QUARTER, passages()).figures
    assert fig.status == "mismatch"
    assert fig.source == "[1] Net income, six months ended July 30, 2023"


def test_the_other_companys_figure_is_marked():
    question = "How did Acme's revenue for the quarter ended July 30, 2023 compare with Bolt's total net sales for the quarter ended June 30, 2023?"
    got = statuses(
        "Acme's revenue was $1,350 million [1], while Bolt's total net sales were $1,343 million [3].", question
    )
    assert got == [("$1,350 million", "found"), ("$1,343 million", "found")]
    got = statuses(
        "Acme's revenue was $1,350 million [1], while Bolt's total net sales were $2,617 million [3].", question
    )
    assert got[1] == ("$2,617 million", "mismatch")  # the six months
    got = statuses("Bolt's total net sales were $1,350 million [1].", question)
    assert got == [("$1,350 million", "mismatch")]  # Acme's revenue, not Bolt's


def test_scale_and_rounding_normalised():
    got = statuses("Acme's revenue for the quarter was $1.35 billion, and $1,350,000,000 written out.")
    assert got == [("$1.35 billion", "normalised"), ("$1,350,000,000", "normalised")]
    assert statuses("Diluted earnings per share were $2.48 for the quarter.") == [("$2.48", "found")]


def test_computed_figures_are_recomputed_from_related_cells():
    report = check_answer(
        "Acme's net income rose to $618 million from $65 million a year ago, an increase of 851%; "
        "gross profit was 70.1% of revenue.",
        QUARTER,
        passages(),
    )
    got = {f.text: (f.status, f.computed) for f in report.figures}
    assert got["$618 million"][0] == "found"
    assert got["$65 million"][0] == "found"  # the year-ago column, said to be so
    assert got["851%"] == ("computed", "851% = ($618 million − $65 million) / $65 million")
    assert got["70.1%"] == ("computed", "70.1% = 946 / $1,350")


def test_a_negative_figure_is_no_ratio_of_two_positive_ones():
    """3M's 2022 10-K (the tune half's segment question): the model wrote "a negative growth rate
    of -181%" beside a fair-value table's $181 and $99, and 181 / 99 (183% within their
    rounding) was taken for its arithmetic, so a wrong figure showed as computed. Of two
    positive figures, a minus sign written is the result's: only a result of that sign computes
    it. A fall written negative still computes (3M's segment table writes Consumer's as
    "(3.9)"); so does a fall in an outflow written in parentheses, read either way round (3M's
    2018 cash-flow row "Purchases of property, plant and equipment (PP&E) (1,577) (1,373)")."""
    table = (
        "Sales and operating income (loss) by business segment:\n"
        "(Dollars in millions) 2022 2021\n"
        "Consumer $ 5,298 $ 5,513\n"
        "Growth equities $ 181 $ 99\n"
    )
    sources = [Passage(1, table, "3M_2022_10K.pdf", 25, "3M Company")]
    question = "Which segment has dragged down 3M's overall growth in 2022?"
    wrong = check_answer(
        "Growth equities had a negative growth rate of -181% in 2022 ($181 and $99) [1].", question, sources
    )
    assert {f.text: f.status for f in wrong.figures}["-181%"] == "unsupported"
    right = check_answer(
        "Consumer sales were $5,298 million against $5,513 million, a change of -3.9% [1].", question, sources
    )
    assert {f.text: f.status for f in right.figures}["-3.9%"] == "computed"
    flows = "(Millions) 2018 2017\nPurchases of property, plant and equipment (PP&E) (1,577) (1,373)\n"
    spent = check_answer(
        "3M's purchases of property, plant and equipment in 2017 were -12.9% below those of 2018 [1].",
        "How did 3M's purchases of PP&E change?",
        [Passage(1, flows, "3M_2018_10K.pdf", 60, "3M Company")],
    )
    assert {f.text: f.status for f in spent.figures}["-12.9%"] == "computed"


def test_no_coincidences_from_unrelated_figures():
    # 13.5% is 182 / 1,350 (R&D a year ago over revenue now): unrelated cells, not a computation.
    got = statuses("Acme's net income margin was 13.5% for the quarter.")
    assert got == [("13.5%", "unsupported")]


def test_a_figure_in_no_passage_is_unsupported():
    report = check_answer("Acme's net income was $700 million [1].", QUARTER, passages())
    assert [f.status for f in report.figures] == ["unsupported"]
    assert summary(report) == "1 figure not found in the sources"


def test_numbers_inside_a_rows_label_are_held_by_the_source():
    """A form's address line reads as a row ("… Las Vegas, NV" then 89118): the numbers before
    its last are the source's too; a changed one is still not found."""
    cover = "Galaxy Gaming, Inc.\n6480 Cameron Street Ste. 305 – Las Vegas, NV 89118\n(Address of principal executive offices)"
    where = [Passage(1, cover, "10-K.html", None, "Galaxy Gaming, Inc.")]
    asked = "Where is Galaxy Gaming's principal executive office?"
    right = check_answer("It is at 6480 Cameron Street Ste. 305, Las Vegas, NV 89118 [1].", asked, where)
    assert [(f.text, f.status) for f in right.figures] == [("6480", "found"), ("305", "found"), ("89118", "found")]
    wrong = check_answer("It is at 6481 Cameron Street Ste. 305, Las Vegas, NV 89118 [1].", asked, where)
    assert [f.status for f in wrong.figures] == ["unsupported", "found", "found"]


def test_a_count_of_other_things_is_marked_with_what_it_counts():
    """In prose no row label says what a figure is; the words right after a count do: "96
    league appearances" from "scored 96 goals in 306 games" is another count."""
    text = "Overall, Roberts scored 96 goals in 306 games for Norwich.\nHe made 647 league appearances in all."
    where = [Passage(1, text, "roberts.txt", None, "Iwan Roberts")]
    asked = "How many league appearances did Iwan Roberts make for Norwich?"
    (wrong,) = check_answer("Roberts made 96 league appearances for Norwich [1].", asked, where).figures
    assert wrong.status == "mismatch" and "96 goals" in wrong.explanation
    report = check_answer("Roberts made 96 league appearances for Norwich [1].", asked, where)
    assert mark_answer("Roberts made 96 league appearances for Norwich [1].", report).startswith(
        "Roberts made 96 league appearances ⚠ (not as stated in the sources: 96 is “Overall, Roberts scored 96 goals”"
    )
    assert [f.status for f in check_answer("He scored 96 goals for Norwich [1].", asked, where).figures] == ["found"]
    assert [f.status for f in check_answer("He made 647 appearances [1].", asked, where).figures] == ["found"]
    # a scale or a preposition after the figure says nothing of what it counts
    assert [f.status for f in check_answer("It was 306 in all [1].", asked, where).figures] == ["found"]


def test_cited_only_leaves_out_the_passages_not_cited():
    answer = "Acme's Compute & Networking operating income was $672 million [1]."
    assert statuses(answer) == [("$672 million", "found")]
    assert statuses(answer, cited_only=True) == [("$672 million", "unsupported")]


def test_marks_stand_after_their_figures_and_quote_no_markup():
    answer = "Acme's net income was $672 million [1], up 851% from $65 million."
    report = check_answer(answer, QUARTER, passages())
    marked = mark_answer(answer, report)
    assert marked.startswith("Acme's net income was $672 million ⚠ (not as stated in the sources: $672 is Compute")
    assert "[2])" in marked and marked.endswith("from $65 million.")
    assert [m.kind for m in marks(report)] == ["mismatch", "computed"]
    assert summary(report) == "1 figure not found in the sources; 1 computed"
    hostile = [Passage(1, "Revenue **[click](javascript:alert(1))** was $5 million in the quarter.", "x.pdf", 1)]
    bad = check_answer("Net income was $5 million [1].", "What was net income?", hostile)
    note = mark_answer("Net income was $5 million [1].", bad).split("⚠", 1)[1]
    assert "click" in note  # the source's words are quoted...
    assert "](" not in note and "**" not in note and "[click" not in note  # ...with no Markdown left in them


def test_no_figures_no_summary():
    report = check_answer("The documents don't say.", QUARTER, passages())
    assert (report.figures_checked, summary(report)) == (0, "")
    assert report.to_dict() == {"figures_checked": 0, "figures_unsupported": 0, "figures": []}


def test_chinese_answers_are_checked_without_crashing():
    source = [Passage(1, "2019年，公司营业收入达3.5万元，同比增长12%。", "cmrc.txt")]
    report = check_answer("公司2019年营业收入为3.5万元，增长12%。", "公司2019年营业收入是多少？", source)
    assert [(f.text, f.status) for f in report.figures] == [("3.5万", "found"), ("12%", "found")]


def pages() -> list[Page]:
    return [
        Page(ROWS_BY_LINE, "2023 Q2 ACME.pdf", 3, ACME),
        Page(WITH_CHANGES, "2023 Q2 ACME.pdf", 30, ACME),
        Page(GROUPS_THEN_YEARS, "2023 Q2 BOLT.pdf", 4, BOLT),
    ]


def test_find_cell_by_row_and_period():
    cell = find_cell(QUARTER, pages())
    assert cell is not None and cell.number.clean == "$618"
    assert (
        cell.describe() == "Net income, three months ended July 30, 2023: $618 (in millions; 2023 Q2 ACME.pdf, page 3)"
    )
    six = find_cell("What was Acme's revenue for the six months ended July 30, 2023?", pages())
    assert six is not None and six.number.clean == "$2,070"
    rd = find_cell("How much did Acme spend on R&D in the quarter ended July 30, 2023?", pages())
    assert rd is not None and rd.number.clean == "204"
    segment = find_cell("What was Acme's Compute & Networking operating income for the six months?", pages())
    assert segment is not None and segment.number.clean == "$888"


def test_find_cell_the_latest_period_when_only_its_length_is_named():
    cell = find_cell("What were Bolt's total net sales for the quarter?", pages())
    assert cell is not None and cell.number.clean == "1,343"  # June 30, 2023, not 2022


def test_find_cell_none_when_no_row_is_the_item():
    assert find_cell("What was Acme's headcount for the quarter ended July 30, 2023?", pages()) is None


def test_find_cells_one_per_company_each_with_its_period():
    question = "How did Acme's revenue for the quarter ended July 30, 2023 compare with Bolt's total net sales for the quarter ended June 30, 2023?"
    got = find_cells(question, pages())
    assert [(c.number.clean, c.page.file) for c in got if c] == [
        ("$1,350", "2023 Q2 ACME.pdf"),
        ("1,343", "2023 Q2 BOLT.pdf"),
    ]
    follow = find_cells(
        "And Bolt's for the six months ended June 30, 2023?",
        pages(),
        previous=QUARTER.replace("net income", "total net sales"),
    )
    assert [c.number.clean for c in follow if c] == ["2,617"]


def test_question_parts_pair_names_and_dates_in_order():
    parts = question_parts(
        "What were Acme's and Bolt's net incomes for their quarters ended July 30, 2023 and June 30, 2023?",
        {"acme", "bolt"},
    )
    assert [(sorted(p.entities), p.period.end.isoformat() if p.period.end else None) for p in parts] == [
        (["acme"], "2023-07-30"),
        (["bolt"], "2023-06-30"),
    ]
    assert all("§net_income" in p.terms for p in parts)


def test_the_tables_reading_is_offered_where_the_answer_differs():
    answer = "Acme's net income for the quarter ended July 30, 2023 was $672 million [1]."
    report = check_answer(answer, QUARTER, passages())
    cells = find_cells(QUARTER, pages())
    assert table_says(report, cells) == [
        "Net income, three months ended July 30, 2023: $618 (in millions; 2023 Q2 ACME.pdf, page 3)"
    ]
    right = check_answer("Acme's net income for the quarter was $618 million [1].", QUARTER, passages())
    assert table_says(right, cells) == []


def test_a_less_specific_row_is_not_the_one_named():
    text = """BALANCE SHEETS
(In millions)
As of
July 30, 2023
Total liabilities 170
Total shareholders' equity 275
Total liabilities and shareholders' equity 445
"""
    source = [Passage(1, text, "acme.pdf", 5, ACME)]
    question = "What were Acme's total liabilities and shareholders' equity as of July 30, 2023?"
    ok = check_answer("Acme's total liabilities and shareholders' equity were $445 million [1].", question, source)
    assert [f.status for f in ok.figures] == ["found"]
    wrong = check_answer("Acme's total liabilities and shareholders' equity were $275 million [1].", question, source)
    assert [f.status for f in wrong.figures] == ["mismatch"]


def test_a_claim_naming_a_row_does_not_take_another_rows_figure():
    answer = "Acme's Graphics operating income for the quarter was $672 million."
    (fig,) = check_answer(answer, QUARTER, passages()).figures
    assert fig.status == "mismatch" and "Compute & Networking" in fig.source


def test_a_source_ordinal_or_year_matches_a_bare_number_only():
    source = [Passage(1, "文周王（）百济第22代国王。英土战争发生于1807－1809年间。", "x.txt")]
    report = check_answer("他是第22代国王，即22代。", "文周王是百济第多少代国王？", source)
    assert [(f.text, f.status) for f in report.figures] == [("22", "found")]
    money = check_answer("It cost $22 million.", "What did it cost?", source)
    assert [f.status for f in money.figures] == ["unsupported"]


def test_a_figure_from_another_report_than_the_one_asked_is_marked():
    sources = [
        Passage(1, ROWS_BY_LINE, "2023 Q2 ACME.pdf", 3, ACME),
        Passage(2, ROWS_BY_LINE.replace("$ 618", "$ 700"), "2022 Q2 ACME.pdf", 3, ACME),
    ]
    question = "What was Acme's net income as reported in the Q2 2022 10-Q?"
    (fig,) = check_answer("Acme's net income was $618 million [1].", question, sources).figures
    assert fig.status == "mismatch" and fig.source.startswith("[1]")
    (fig,) = check_answer("Acme's net income was $700 million [2].", question, sources).figures
    assert fig.status == "found"


def test_a_page_again_from_its_overlapping_chunks():
    page = "Revenue $ 1,350\nCost of revenue 404\nGross profit 946\n"
    chunks = [(16, page[16:]), (0, page[:30]), (None, "a chunk without offset")]
    assert page_text(chunks) == page + "\na chunk without offset"


def test_a_grids_figure_from_the_neighbouring_column_is_marked_with_its_column():
    from tests.test_figures_tables import DATASHEET

    sheet = [Passage(1, DATASHEET, "steel.html", None, "SNB22-3")]

    def check(answer: str, question: str) -> list[tuple[str, str]]:
        return [(f.text, f.status) for f in check_answer(answer, question, sheet).figures]

    tensile = "What is the tensile strength of SNB22-3?"
    assert check("The tensile strength of SNB22-3 is 1000 N/mm² [1].", tensile) == [("1000", "found")]
    assert check("The tensile strength of SNB22-3 is 890 N/mm² [1].", tensile) == [("890", "mismatch")]  # yield point
    elongation = "And its elongation?"
    assert check("Its elongation is 40% [1].", elongation) == [("40%", "mismatch")]  # the reduction of area
    assert check("Its elongation is 12% [1].", elongation) == [("12%", "found")]
    hardness = "What is the Brinell hardness of SNB22-3?"
    assert check("Its Brinell hardness is 293-375 HBW / HB [1].", hardness) == [("293", "found")]
    # a range's unit is written once, after its second end
    chromium = "What is the chromium content of SNB22-3?"
    assert check("The chromium content is 0.75 - 1.2% [1].", chromium) == [("0.75", "found"), ("1.2%", "found")]
    assert check("The chromium content is 12.5% [1].", chromium) == [("12.5%", "unsupported")]


def test_a_figure_of_another_row_of_a_grid_is_marked_with_its_row():
    stock = "Item | Price | # In stock\n---|---|---\nJuicy Apples | 1.99 | 739\nBananas | 1.89 | 6"
    table = [Passage(1, stock, "simple-table.md")]

    def check(answer: str, question: str) -> list[tuple[str, str, str]]:
        return [(f.text, f.status, f.source) for f in check_answer(answer, question, table).figures]

    assert check("Bananas cost 1.89 [1].", "What do bananas cost?") == [("1.89", "found", "[1] Price (Bananas)")]
    assert check("Bananas cost 1.99 [1].", "What do bananas cost?") == [
        ("1.99", "mismatch", "[1] Price (Juicy Apples)")
    ]
    assert check("739 juicy apples are in stock [1].", "How many apples?") == [
        ("739", "found", "[1] # In stock (Juicy Apples)")
    ]


def test_a_segment_grid_of_an_earnings_release_keeps_its_unit_and_its_rows():
    from rag_core.chat.tables import grid_row

    release = "Segment results\n(In millions)\nSegment | Net sales | Operating income\nAmericas | 1,250 | 310\nEurope | 980 | 205"
    lines = release.splitlines()
    assert grid_row(lines[4], lines[:4]) == ("Europe: Net sales: 980; Operating income: 205 (in millions)", 2)
    sources = [Passage(1, release, "acme-q3.html", None, ACME)]
    question = "What were Acme's net sales in Europe?"

    def check(answer: str) -> list[tuple[str, str, str]]:
        return [(f.text, f.status, f.source) for f in check_answer(answer, question, sources).figures]

    assert check("Europe net sales were $980 million [1].") == [("$980 million", "found", "[1] Net sales (Europe)")]
    assert check("Europe net sales were $0.98 billion [1].") == [
        ("$0.98 billion", "normalised", "[1] Net sales (Europe)")
    ]
    assert check("Europe net sales were $1.25 billion [1].") == [
        ("$1.25 billion", "mismatch", "[1] Net sales (Americas)")
    ]
    assert check("Europe net sales were $205 million [1].") == [
        ("$205 million", "mismatch", "[1] Operating income (Europe)")
    ]


# An earnings release's tables name their columns by quarter, not by the date a quarter ends.
RELEASE = """Acme Corp. Third Quarter 2024 Results
(in millions, except per share data)
 | Q3 2024 | Q3 2023 | % Change
Revenue | $ | 4,812 | $ | 4,450 | 8 | %
Net income | $ | 512 | $ | 480 | 7 | %"""


def test_columns_named_by_quarter_are_periods_last_years_quarter_is_marked():
    from rag_core.figures.tables import parse_tables

    (table,) = parse_tables(RELEASE)
    assert [c.describe() for c in table.columns] == ["Q3 2024", "Q3 2023", "% change"]
    sources = [Passage(1, RELEASE, "acme-q3-2024.html", None, ACME)]
    this_year = "What was Acme's revenue in the third quarter of 2024?"

    def check(answer: str, question: str = this_year) -> list[tuple[str, str, str]]:
        return [(f.text, f.status, f.source) for f in check_answer(answer, question, sources).figures]

    assert check("Revenue in Q3 2024 was $4.81 billion [1].") == [
        ("$4.81 billion", "normalised", "[1] Revenue, Q3 2024")
    ]
    assert check("Revenue in the quarter was $4,450 million [1].") == [
        ("$4,450 million", "mismatch", "[1] Revenue, Q3 2023")
    ]
    assert check("Revenue was $4,450 million [1].", "And in Q3 2023?") == [
        ("$4,450 million", "found", "[1] Revenue, Q3 2023")
    ]
    assert check("Net income grew 7% [1].") == [("7%", "found", "[1] Net income, % change")]


TWO = "What were Acme's revenue and Bolt's total net sales for their quarters ended July 30, 2023 and June 30, 2023?"


def test_a_clause_naming_only_the_date_of_the_other_company_asked_is_that_companys():
    answer = "Acme's revenue for the quarter ended July 30, 2023 was $1,350 million, and total net sales for the quarter ended June 30, 2023 were {} million [3]."
    assert statuses(answer.format("$1,343"), TWO) == [("$1,350 million", "found"), ("$1,343 million", "found")]
    assert statuses(answer.format("$2,617"), TWO)[1] == ("$2,617 million", "mismatch")  # Bolt's six months
    own = "Acme's revenue for the quarter ended July 30, 2023 was $1,350 million, and for the quarter ended July 31, 2022 was $670 million."
    assert statuses(own, TWO) == [("$1,350 million", "found"), ("$670 million", "found")]  # no part asks that date
    assert statuses(own.replace("$670", "$1,343"), TWO)[1] == ("$1,343 million", "mismatch")  # Bolt's, not Acme's


def test_a_clause_listing_both_dates_asked_claims_its_companys_own():
    answer = "Acme's revenue for the quarters ended July 30, 2023 and June 30, 2023 was {} million [1]."
    assert statuses(answer.format("$1,350"), TWO) == [("$1,350 million", "found")]
    assert statuses(answer.format("$2,070"), TWO) == [("$2,070 million", "mismatch")]  # the six months


# An annual statement of a company no question below names but one ("Galaxy"), as a web page
# gives it: no page numbers, the page's own "17" left on a line of its own.
ANNUAL = (
    "GALAXY GAMING, INC.\nCONSOLIDATED STATEMENTS OF OPERATIONS\nYEARS ENDED DECEMBER 31, 2021 AND 2020\n"
    "2021 | | | 2020 |\nRevenue: | | | |\nTotal revenue | | | 19,984,378 | | | | 10,230,316 |\n"
    "Research and development | | | 520,449 | | | | 487,679 |\n17\nThe accompanying notes are an integral part."
)


def annual(answer: str, question: str, owners: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    report = check_answer(
        answer, question, [Passage(1, ANNUAL, "galaxy-10k.html", None, "Galaxy Gaming, Inc.")], owners=owners
    )
    return [(f.text, f.status, f.source) for f in report.figures]


def test_a_year_named_bare_is_the_period_the_figure_must_be_of():
    question = "What was Galaxy Gaming's revenue in 2018?"
    got = annual("Galaxy Gaming's total revenue in 2018 was $10,230,316.", question)
    assert got[0][:2] == ("$10,230,316", "mismatch") and "year ended December 31, 2020" in got[0][2]
    assert annual("In 2020, Galaxy Gaming's total revenue was $10,230,316.", question)[0][1] == "found"
    assert annual("Galaxy Gaming's total revenue for 2021 was $19,984,378.", question)[0][1] == "found"
    # the question's year where the answer names none
    assert (
        annual("Galaxy Gaming's total revenue was $19,984,378.", "What was its total revenue in 2020?")[0][1]
        == "mismatch"
    )


def test_a_money_figure_is_not_found_in_a_bare_number_of_two_digits():
    question = "How much did Galaxy Gaming spend on research and development in 2020?"
    got = annual("Galaxy Gaming spent $17 million on research and development in 2020.", question)
    assert got == [("$17 million", "unsupported", "")]  # "17" is the page's number
    index = "INDEX TO FINANCIAL STATEMENTS\nConsolidated Balance Sheets as of December 31, 2021 and 2020 | | 17\n"
    report = check_answer(
        "Galaxy Gaming spent $17 million on research and development in 2020.",
        question,
        [Passage(1, index + ANNUAL, "galaxy-10k.html", None, "Galaxy Gaming, Inc.")],
    )
    assert [f.status for f in report.figures] == ["unsupported"]  # nor is an index's page number
    assert annual("Galaxy Gaming spent $487,679 on research and development in 2020.", question)[0][1] == "found"


def test_a_figure_asked_of_a_company_no_source_is_about_is_marked_with_whose_it_is():
    question = "What was Apple's total revenue in 2021?"
    written = "Apple's total revenue in 2021 was $19,984,378 [1]."
    got = annual(written, question, owners=("Apple",))
    assert got[0][:2] == ("$19,984,378", "mismatch") and got[0][2].startswith("[1] Galaxy Gaming, Inc.’s Total revenue")
    assert "19,984,378 is Galaxy Gaming, Inc.’s Total revenue, year ended December 31, 2021 [1])" in mark_answer(
        written,
        check_answer(
            written, question, [Passage(1, ANNUAL, "galaxy-10k.html", None, "Galaxy Gaming, Inc.")], owners=("Apple",)
        ),
    )
    # an answer that names no company is still the question's company's
    assert annual("Total revenue in 2021 was $19,984,378.", question, owners=("Apple",))[0][1] == "mismatch"
    # the company the sources are about, asked as such, and a passage that names the one asked
    assert (
        annual(
            "Galaxy Gaming's total revenue in 2021 was $19,984,378.",
            "What was Galaxy Gaming's total revenue?",
            owners=("Galaxy Gaming",),
        )[0][1]
        == "found"
    )
    named = Passage(
        1, "Revenue from Caesars Entertainment was $1,204,000 in 2021.", "galaxy-10k.html", None, "Galaxy Gaming, Inc."
    )
    report = check_answer(
        "Caesars Entertainment's revenue was $1,204,000.",
        "What was Caesars Entertainment's revenue?",
        [named],
        owners=("Caesars Entertainment",),
    )
    assert [f.status for f in report.figures] == ["found"]
    # a source of no company (a note): nothing says whose its figures are
    note = Passage(1, ANNUAL.replace("GALAXY GAMING, INC.\n", ""), "notes.md", None, "")
    report = check_answer(written, question, [note], owners=("Apple",))
    assert [f.status for f in report.figures] == ["found"]


def test_a_lead_in_naming_the_statement_says_where_the_figure_is_not_what_it_is():
    statement = ANNUAL.replace(
        "17\n",
        "Net income (loss) | | | 2,111,812 | | | | (3,451,014 | )\n"
        "Comprehensive income (loss) | | | 1,964,619 | | | | (3,413,323 | )\n17\n",
    )
    sources = [Passage(1, statement, "galaxy-10k.html", None, "Galaxy Gaming, Inc.")]
    question = "What was Galaxy Gaming's net income in 2021?"
    lead = "According to the consolidated statements of operations and comprehensive income for the years ended December 31, 2021 and 2020, "
    report = check_answer(lead + "Galaxy Gaming's net income for 2021 was $2,111,812.", question, sources)
    assert [f.status for f in report.figures] == ["found"]
    report = check_answer(lead + "Galaxy Gaming's comprehensive income for 2021 was $2,111,812.", question, sources)
    assert [f.status for f in report.figures] == ["mismatch"]


def test_a_computed_figure_holds_only_within_what_its_operands_rounding_allows():
    """A table of accuracies: "76.4%" is no ratio of 50.0 and 65.8 (75.9% to 76.1%), and no
    other pair of the column gives it; "76.0%" is that ratio, as written."""
    table = "Top-5 accuracy on Natural Questions (%)\nType Top-5\nBM25 50.0\nG.+BM25(1) 65.8\n"
    sources = [Passage(1, table, "dpr-paper.pdf", 6)]
    question = "What top-5 accuracy does BM25 training reach as a share of G.+BM25(1)?"
    wrong = check_answer("BM25's top-5 accuracy is 76.4% of G.+BM25(1)'s [1].", question, sources)
    assert [f.status for f in wrong.figures] == ["unsupported"]
    right = check_answer("BM25's top-5 accuracy is 76.0% of G.+BM25(1)'s [1].", question, sources)
    assert [(f.status, f.computed) for f in right.figures] == [("computed", "76.0% = 50.0 / 65.8")]


def test_a_price_on_a_copyright_line_is_no_revenue_of_the_company_the_page_names():
    """A paper's first page names Google's products and ends its copyright line with the
    article's price: "Google's revenue in 2009 was $5.00" holds the value, but the sentence
    says nothing of revenue. The sentence that names the item still supports it."""
    page = (  # as PDFium reads the page: the copyright block's lines between the columns' text
        "They are used for\nsmall scripts as well as for complex applications. Web applications such as Google Mail\n"
        "and Google Docs use JavaScript.\nPermission to make digital or hard copies of all or part of this work is\n"
        "granted without fee.\nPLDI’09, June 15–20, 2009, Dublin, Ireland.\nCopyright\n"
        "c 2009 ACM 978-1-60558-392-1/09/06. . . $5.00\nand is used for the application logic"
    )
    sources = [Passage(1, page, "tracemonkey.pdf", 1, "Mozilla Corporation")]
    question = "What was Google's revenue in 2009?"
    answer = "Google's revenue in 2009 was $5.00 [1]."
    assert [f.status for f in check_answer(answer, question, sources, owners=["Google"]).figures] == ["mismatch"]
    named = [
        Passage(
            1, page + "\n\nIn 2009 Google's revenue was $5.00 per user.", "tracemonkey.pdf", 1, "Mozilla Corporation"
        )
    ]
    assert [f.status for f in check_answer(answer, question, named, owners=["Google"]).figures] == ["found"]


def test_a_name_no_document_mentions_beside_one_they_do_is_not_the_passages():
    """ "The top-20 accuracy of DPR on MS MARCO is 78.4%": the paper names DPR but not MS MARCO
    (the search found no document to mention it); its 78.4% is on Natural Questions."""
    prose = (
        "DPR is better than BM25, especially when k is small (78.4% vs. 59.1% top-20 accuracy on Natural Questions)."
    )
    sources = [Passage(1, prose, "dpr-paper.pdf", 5, "Dense Passage Retrieval")]
    question = "What is the top-20 accuracy of DPR on MS MARCO?"
    answer = "The top-20 accuracy of DPR on MS MARCO is 78.4% [1]."
    assert [f.status for f in check_answer(answer, question, sources, owners=["DPR"]).figures] == ["found"]
    marked = check_answer(answer, question, sources, owners=["DPR", "MS MARCO"])
    assert [f.status for f in marked.figures] == ["mismatch"]
    on_nq = check_answer(
        "The top-20 accuracy of DPR on Natural Questions is 78.4% [1].", question, sources, owners=["DPR"]
    )
    assert [f.status for f in on_nq.figures] == ["found"]


def test_current_liabilities_are_a_line_item_of_their_own():
    """ "Total current liabilities … were $30,574,594": that is the balance sheet's last row,
    total liabilities and stockholders' deficit; the current liabilities row is found as it is."""
    sheet = (
        "CONSOLIDATED BALANCE SHEETS\nDecember 31, | 2021 | 2020\n"
        "Total current liabilities | 4,401,071 | 4,247,794\n"
        "Total stockholders’ deficit | (17,286,423) | (24,796,965)\n"
        "Total liabilities and stockholders’ deficit | $ 40,452,705 | $ 30,574,594\n"
    )
    last = [Passage(1, sheet.split("Total current liabilities")[0] + sheet.split("\n", 4)[4], "galaxy-10k.html")]
    question = "What were Galaxy Gaming's total current liabilities at the end of 2020?"
    wrong = "Galaxy Gaming's total current liabilities as of December 31, 2020 were $30,574,594 [1]."
    assert [f.status for f in check_answer(wrong, question, last).figures] == ["mismatch"]
    right = "Galaxy Gaming's total current liabilities as of December 31, 2020 were $4,247,794 [1]."
    assert [f.status for f in check_answer(right, question, [Passage(1, sheet, "galaxy-10k.html")]).figures] == [
        "found"
    ]


def test_a_cell_of_another_named_column_is_marked_with_its_column():
    """A paper's results table names its columns by words ("KQ LoreQA WBQ FACT SPaRC"): the
    row's cell under another column than the one the answer (or the question it answers)
    names is another figure, said with its column; the column's full name ("CuratedFACT",
    "Knowledge Questions") names its short one."""
    from tests.test_figures_tables import BENCHMARKS

    papers = [Passage(1, BENCHMARKS, "paper.pdf", 8, "")]

    def check(answer: str, question: str) -> list[tuple[str, str, str]]:
        return [(f.text, f.status, f.source) for f in check_answer(answer, question, papers).figures]

    ask = "What does HEDGE score on FACT?"
    assert check("HEDGE scores 35.3 on FACT [1].", ask) == [
        ("35.3", "mismatch", "[1] HEDGE (Ng et al., 2019) (Solo), KQ")
    ]
    assert check("HEDGE scores 31.1 on FACT [1].", ask)[0][1] == "found"
    assert check("HEDGE scores 35.3 [1].", "And HEDGE on CuratedFACT?")[0][1] == "mismatch"  # the question names it
    assert check("HEDGE scores 31.1 [1].", "And HEDGE on CuratedFACT?")[0][1] == "found"
    assert check("HEDGE scores 35.3 on Knowledge Questions [1].", ask)[0][1] == "found"  # KQ, as the answer says
    assert check("HEDGE scores 38.4 on WonderBase Questions [1].", ask)[0][1] == "found"  # WBQ
    # the group column: the second Okapi+Dense row is the Joint one
    joint = "What does Okapi+Dense score on WBQ in the Joint setting?"
    assert check("Okapi+Dense scores 40.1 on WBQ in the Joint setting [1].", joint)[0][1] == "found"
    assert check("Okapi+Dense scores 36.2 on WBQ in the Joint setting [1].", joint)[0][:2] == ("36.2", "mismatch")


def test_a_grouped_column_is_told_by_the_part_the_claim_names_and_a_bare_accuracy_is_a_percentage():
    """Columns named in two parts ("Top-5 WBQ"): naming the dataset alone, the other
    dataset's cell is another figure, the same dataset's cell under either group is not
    contradicted. A paper's accuracy table writes no "%": "80.5%" is its "80.5", and no
    ratio of two accuracies stands in for it."""
    from tests.test_figures_tables import RETRIEVAL

    papers = [Passage(1, RETRIEVAL, "paper.pdf", 5, "")]

    def status(answer: str, question: str) -> list[str]:
        return [f.status for f in check_answer(answer, question, papers).figures]

    ask = "What does Okapi + Dense trained jointly reach on WonderBase Questions?"
    assert status("Okapi + Dense in the Joint setting reaches 74.7/82.3 on WonderBase Questions.", ask) == [
        "found",
        "found",
    ]
    assert status("Okapi + Dense in the Joint setting reaches 74.7/78.0.", ask) == ["found", "mismatch"]
    assert status("Okapi + Dense in the Joint setting reaches 71.0 on WBQ.", ask) == ["mismatch"]  # the Solo row
    top50 = "What is the top-50 accuracy of Okapi + Dense in the Solo setting on WBQ?"
    assert status("It is 80.5%.", top50) == ["found"]
    assert status("It is 71.0%.", top50) == ["mismatch"]  # Top-5's
    assert status("It is 94.9%.", top50) == ["unsupported"]  # 76.6 / 80.7 of no cell pair it names


def test_a_figure_starting_its_sentence_is_quoted_with_what_follows_it():
    """Nothing before the figure to quote (a table's row cut from its label): the mark quotes
    the figure and what follows, never an empty "a figure"."""
    sources = [Passage(1, "59.1 66.9 55.0 70.9 68.8 73.7 76.7 71.1 84.1 80.0 accuracy on the test sets.", "p.pdf", 5)]
    (fig,) = check_answer(
        "REALMNews reaches 59.1 exact matches on CuratedTREC [1].", "REALMNews on CuratedTREC?", sources
    ).figures
    assert fig.source.startswith("[1] “59.1 66.9 55.0") and fig.source.endswith("…”"), fig.source


def test_the_cell_a_question_asks_of_a_table_of_named_columns_is_the_named_ones_alone():
    """ "The table says" of a paper's table: the row's cell under the column the question
    names, never the row's first cell; a question naming none of its columns gets none."""
    from tests.test_figures_tables import BENCHMARKS, RETRIEVAL

    paper = [Page(BENCHMARKS, "paper.pdf", 8), Page(RETRIEVAL, "paper.pdf", 5)]
    cell = find_cell("What exact match does HEDGE reach on FACT?", paper)
    assert cell is not None and (cell.number.clean, cell.column.describe()) == ("31.1", "FACT")
    cell = find_cell("What top-50 accuracy does Dense in the Joint setting reach on WonderBase Questions?", paper)
    assert cell is not None and (cell.number.clean, cell.column.describe()) == ("82.9", "Top-50 WBQ")
    assert find_cell("What exact match does HEDGE reach?", paper) is None


def test_a_comparison_keeps_each_figure_to_the_row_its_own_words_name():
    """ "How much better is Dense than Okapi?": the question names both rows, and the answer's
    words before each figure say whose it is. Right, each is its row's; swapped, neither is."""
    from tests.test_figures_tables import BENCHMARKS, RETRIEVAL

    papers = [Passage(1, RETRIEVAL, "paper.pdf", 5), Passage(2, BENCHMARKS, "paper.pdf", 8)]
    ask = "How much better is Dense than Okapi in top-5 accuracy on KQ?"

    def status(answer: str) -> list[str]:
        return [f.status for f in check_answer(answer, ask, papers).figures]

    assert status("Dense reaches 78.4% against Okapi's 59.1% [1].") == ["found", "found"]
    assert status("Dense reaches 59.1% against Okapi's 78.4% [1].") == ["mismatch", "mismatch"]


def test_a_column_only_another_table_has_is_not_this_tables_unless_its_caption_says_so():
    """A table of top-k accuracies on LoreQA alone (its caption says so) beside one with a
    column per dataset: "top-5 accuracy on KQ" is no cell of the first, "on LoreQA" is."""
    from tests.test_figures_tables import RETRIEVAL, TRAINING

    papers = [Passage(1, RETRIEVAL, "paper.pdf", 5), Passage(2, TRAINING, "paper.pdf", 6)]

    def status(answer: str, question: str) -> list[str]:
        return [f.status for f in check_answer(answer, question, papers).figures]

    assert status("Gold reaches 55.8% top-5 accuracy on KQ [2].", "What top-5 accuracy does Gold reach on KQ?") == [
        "mismatch"
    ]
    assert status("Gold reaches 55.8% top-5 accuracy on LoreQA [2].", "What top-5 accuracy does Gold reach?") == [
        "found"
    ]


def test_the_table_says_nothing_of_a_dataset_another_table_holds_and_its_caption_does_not_name():
    from tests.test_figures_tables import RETRIEVAL, TRAINING

    paper = [Page(TRAINING, "paper.pdf", 6), Page(RETRIEVAL, "paper.pdf", 5)]
    cell = find_cell("What top-5 accuracy does Okapi reach on KQ?", paper)
    assert cell is not None and (cell.number.clean, cell.column.describe(), cell.page.page) == ("59.1", "Top-5 KQ", 5)
    cell = find_cell("What top-5 accuracy does Okapi reach on LoreQA?", paper)
    assert cell is not None and (cell.number.clean, cell.page.page) == ("50.0", 6)  # the caption says LoreQA


def test_the_table_says_nothing_of_a_row_that_names_less_than_the_question():
    """ "Okapi + Dense" asked, its group left unsaid: the row "Okapi" agrees with the words, but
    says less than the question names; no cell is better than its."""
    from tests.test_figures_tables import RETRIEVAL

    paper = [Page(RETRIEVAL, "paper.pdf", 5)]
    assert find_cell("What top-5 accuracy does Okapi + Dense reach on KQ?", paper) is None
    cell = find_cell("What top-5 accuracy does Okapi + Dense reach on KQ in the Joint setting?", paper)
    assert cell is not None and cell.number.clean == "78.0"
    cell = find_cell("What top-5 accuracy does Okapi reach on KQ?", paper)
    assert cell is not None and cell.number.clean == "59.1"


def test_the_table_marks_a_figure_of_a_method_the_paper_names_but_is_not_about():
    """ "What does HEDGE score on FACT?" over a paper about something else: HEDGE is a name no
    document is about (an owner the search found only mentioned), but the page names it, so
    the figure the answer gives is the paper's, and the table's cell marks a wrong one."""
    from rag_core.figures import verify_answer
    from tests.test_figures_tables import BENCHMARKS

    page = Page(BENCHMARKS, "paper.pdf", 8, "Open-Domain Question Answering")
    question = "What exact match does HEDGE reach on FACT?"
    cells = [find_cell(question, [page])]
    sources = [Passage(1, BENCHMARKS, "paper.pdf", 8, "Open-Domain Question Answering")]
    verified = verify_answer("HEDGE reaches 35.3 on FACT [1].", question, sources, cells, owners=["HEDGE"])
    assert [f.status for f in verified.report.figures] == ["table"] and "31.1" in verified.answer


def test_a_name_no_document_is_about_must_be_named_by_the_passage_cited_not_its_page():
    """Passages are read within their whole page, but a figure asked of a name no document is
    about ("Okapi's exact match") is its only where the passage cited names it: the page naming
    Okapi in another paragraph does not make "the same 39.8 exact match" of a joint model Okapi's."""
    chunk = "Training jointly follows the usual pipeline, resulting in the same 39.8 exact match."
    page = "Okapi scores are in Table 5.\n" + chunk + "\nOther results follow."
    question = "What exact match does Okapi reach on LoreQA?"
    answer = "Okapi reaches 39.8 exact match on LoreQA [1]."
    cited = [Passage(1, page, "paper.pdf", 13, "Open-Domain Question Answering", cited=chunk)]
    whole = [Passage(1, page, "paper.pdf", 13, "Open-Domain Question Answering")]
    assert [f.status for f in check_answer(answer, question, cited, owners=["Okapi"]).figures] == ["mismatch"]
    assert [f.status for f in check_answer(answer, question, whole, owners=["Okapi"]).figures] == ["found"]


def test_a_number_the_question_and_a_row_label_share_tells_the_row():
    """ "with 127 gold negatives": rows "Gold 7 ✗", "Gold 127 ✓" agree alike by their words; the
    number tells them apart (never a column name's "5" of "Top-5")."""
    table = (
        "Type #N IB Top-5 Top-20 Top-100\nGold 7 ✗ 42.6 63.1 78.3\nGold 31 ✓ 52.1 70.8 82.1\n"
        "Gold 127 ✓ 55.8 73.0 83.1\nTable 3: Training schemes on LoreQA (development set).\n"
    )
    cell = find_cell("What top-5 accuracy does in-batch training with 127 Gold negatives reach?", [Page(table)])
    assert cell is not None and (cell.number.clean, cell.row.item.label) == ("55.8", "Gold 127 ✓")
    assert cell.confidence >= 0.6


def test_an_answer_stating_the_cell_as_a_percentage_gets_no_note_of_it():
    from rag_core.figures import verify_answer
    from tests.test_figures_tables import BENCHMARKS

    page = Page(BENCHMARKS, "paper.pdf", 8)
    question = "What exact match does HEDGE reach on FACT?"
    verified = verify_answer(
        "HEDGE reaches 31.1% on FACT [1].",
        question,
        [Passage(1, BENCHMARKS, "paper.pdf", 8)],
        [find_cell(question, [page])],
    )
    assert verified.table_says == [] and [f.status for f in verified.report.figures] == ["found"]


def test_a_rows_name_with_another_number_is_another_row():
    """ "Base 1024" where the figure is the row "Base 512"'s: marked; "Base 512" itself is found."""
    from tests.test_figures_tables import OCR_TABLE

    question = "How many total chunks does Base 1024 produce?"
    sources = [Passage(1, OCR_TABLE, "table.pdf", 1)]
    wrong = check_answer("Base 1024 produces 16,046 total chunks [1].", question, sources)
    assert [(f.text, f.status) for f in wrong.figures] == [("16,046", "mismatch")]
    right = check_answer(
        "Base 512 produces 16,046 total chunks [1].", "How many total chunks does Base 512 produce?", sources
    )
    assert [(f.text, f.status) for f in right.figures if f.text == "16,046"] == [("16,046", "found")]


def test_a_figure_in_prose_is_the_figure_of_the_names_its_sentence_names():
    """ "Huddersfield Town paid £300,000" where the sentence holding £300,000 says Leicester City
    did: marked; a claim naming nobody else, or the same name shortened, stays found."""
    text = (
        "Roberts moved from Watford to Huddersfield Town for £275,000 in 1990.[19][20] In 1993 he was "
        "signed by Leicester City for £300,000.[30] Amazon Web Services revenue grew to $22.1 billion."
    )
    sources = [Passage(1, text, "roberts.txt", None, "Iwan Roberts")]

    def status(answer: str) -> list[tuple[str, str]]:
        return [(f.text, f.status) for f in check_answer(answer, "How much was paid for him?", sources).figures]

    assert status("Huddersfield Town paid £300,000 for Iwan Roberts [1].") == [("£300,000", "mismatch")]
    assert status("Huddersfield Town paid £275,000 for Iwan Roberts [1].") == [("£275,000", "found")]
    assert status("Leicester City paid £300,000 for him [1].") == [("£300,000", "found")]
    assert status("Roberts cost £300,000 [1].") == [("£300,000", "found")]  # the document's own name: no other
    assert status("AWS revenue was $22.1 billion [1].") == [("$22.1 billion", "found")]


def test_a_heading_run_into_its_sentence_is_no_one_s_name():
    """A section heading the PDF runs into the sentence ("Index Gross Margin In the year …",
    Corning's 10-K; "Depreciation and Amortization In 2022, …", American Water Works') is the
    sentence's subject written again, not a name the figure belongs to: the right figure stays
    found, and a figure another's name owns is still marked."""
    text = (
        "Index Gross Margin In the year ended December 31, 2020, gross margin decreased by $504 million, or 12%, "
        "when compared to 2019. Depreciation and Amortization In 2022, as compared to 2021, depreciation and "
        "amortization increased $32 million. In 2022, Hoya Corporation sold glass for $90 million."
    )
    sources = [Passage(1, text, "CORNING_2020_10K.pdf", 43, "Corning Incorporated")]

    def status(answer: str) -> list[tuple[str, str]]:
        return [(f.text, f.status) for f in check_answer(answer, "What drove the margin?", sources).figures]

    segments = "due to lower volumes in Display Technologies and Optical Communications"
    assert status(f"The gross margin decreased by $504 million, or 12%, {segments} [1].") == [
        ("$504 million", "found"),
        ("12%", "found"),
    ]
    assert status("Depreciation and amortization at Regulated Businesses increased $32 million [1].") == [
        ("$32 million", "found")
    ]
    assert status("Display Technologies sold glass for $90 million [1].") == [("$90 million", "mismatch")]


# NVIDIA's 10-Q (2023 Q3): its balance sheet, and a note's warranty table on another page
ORION_POSITION = """ORION CORPORATION AND SUBSIDIARIES
CONDENSED CONSOLIDATED BALANCE SHEETS
(In millions)
(Unaudited)
October 29, January 29,
2023 2023
LIABILITIES AND SHAREHOLDERS' EQUITY
Current liabilities:
Accounts payable $ 2,380 $ 1,193
Accrued and other current liabilities 5,472 4,120
Short-term debt 1,249 1,250
Total current liabilities 9,101 6,563
Long-term debt 8,457 9,703"""
ORION_WARRANTY = """The estimated product returns and estimated product warranty activity consisted of the following:
Three Months Ended Nine Months Ended
October 29, 2023 October 30, 2022 October 29, 2023 October 30, 2022
(In millions)
Balance at beginning of period $ 115 $ 168 $ 82 $ 46
Additions 50 3 105 141
Utilization (23) (67) (45) (83)
Balance at end of period $ 142 $ 104 $ 142 $ 104"""


def test_a_statement_the_question_names_is_where_to_look_not_a_row():
    # FinanceBench's analysts write "using the balance sheet", "the P&L statement" (3M's, Coca-Cola's and
    # Corning's questions): "balance" and "end" once made the warranty note's "Balance at end of period" the
    # row a right total current liabilities was marked against
    orion = "Orion Corporation"
    sources = [
        Passage(1, ORION_POSITION, "2023 Q3 ORION.pdf", 5, orion),
        Passage(2, ORION_WARRANTY, "2023 Q3 ORION.pdf", 20, orion),
    ]
    answer = "Orion's total current liabilities at the end of its third quarter of fiscal 2024 were $9,101 million."
    for question in (
        "Using the balance sheet, what were Orion's total current liabilities at the end of its third quarter of "
        "fiscal 2024?",
        "What were Orion's total current liabilities at the end of its third quarter of fiscal 2024, as shown in "
        "the Consolidated Balance Sheets?",
    ):
        (fig,) = check_answer(answer, question, sources).figures
        assert fig.status == "found" and fig.passage == 1
    # the row is still told apart when it is what the answer names
    (fig,) = check_answer(
        "Orion's warranty balance at the end of the period was $9,101 million.",
        "Using the balance sheet, what was Orion's warranty balance at the end of the period?",
        sources,
    ).figures
    assert fig.status != "found"


def test_pp_and_e_is_a_line_item_and_buying_it_is_capex():
    """Asked Galaxy Gaming's "net PP&E at the end of 2021" (trying its 10-K as a user), the model
    answered the cash-flow statement's "Depreciation and amortization" figure, and the check
    found it: "net PP&E" named no line item. 3M's 10-K has both rows too, and its right capex
    ("Purchases of property, plant and equipment (PP&E)", as Coca-Cola's 10-K writes it) was
    marked as another row's."""
    galaxy = [
        Passage(
            1,
            "GALAXY GAMING, INC.\nCONSOLIDATED STATEMENTS OF CASH FLOWS\nYEARS ENDED December 31, 2021 AND 2020\n"
            "2021 | 2020\nNet income (loss) | $ 2,111,812 | $ (2,208,887)\n"
            "Depreciation and amortization | 2,858,991 | 2,222,042\n",
            "galaxy-10k.html",
        ),
        Passage(
            2,
            "GALAXY GAMING, INC.\nCONSOLIDATED BALANCE SHEETS\nDecember 31, | 2021 | 2020\n"
            "Property and equipment, net | 98,594 | 116,724\n"
            "Operating lease right-of-use assets | 1,167,903 | 1,367,821\n",
            "galaxy-10k.html",
        ),
    ]
    asked = "What was Galaxy Gaming's net PP&E at the end of 2021?"

    def status(answer: str, question: str, sources: list[Passage]) -> list[str]:
        return [f.status for f in check_answer(answer, question, sources).figures]

    assert status("Galaxy Gaming's net PP&E at the end of 2021 was $2,858,991 [1].", asked, galaxy) == ["mismatch"]
    assert status("Galaxy Gaming's net PP&E at the end of 2021 was $98,594 [2].", asked, galaxy) == ["found"]
    assert status("Its depreciation and amortization in 2021 was $2,858,991 [1].", asked, galaxy) == ["found"]
    three_m = [
        Passage(
            1,
            "3M Company and Subsidiaries\nConsolidated Statement of Cash Flows\nYears ended December 31 | 2018 | 2017\n"
            "Depreciation and amortization | 1,488 | 1,544\n"
            "Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373)\n",
            "3M_2018_10K.pdf",
            60,
            "3M Company",
        ),
        Passage(
            2,
            "3M Company and Subsidiaries\nConsolidated Balance Sheet\nAt December 31 | 2018 | 2017\n"
            "Property, plant and equipment — net | 8,738 | 8,866\nGoodwill | 10,051 | 10,513\n",
            "3M_2018_10K.pdf",
            58,
            "3M Company",
        ),
    ]
    asked = "What is the year end FY2018 net PP&E for 3M?"
    assert status("3M's net PP&E at the end of 2018 was $1,488 million [1].", asked, three_m) == ["mismatch"]
    assert status("3M's net PP&E at the end of 2018 was $8,738 million [2].", asked, three_m) == ["found"]
    capex = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"
    assert status("3M's capital expenditure in 2018 was $1,577 million [1].", capex, three_m) == ["found"]
    # spending on PP&E is no claim against the row that buys it (3M's, Apple's "Payments for
    # acquisition of property, plant and equipment"), nor the balance read as the purchases
    from rag_core.figures.labels import Item, agreement, content

    spent = content("spent on property, plant and equipment")
    for label in (
        "Purchases of property, plant and equipment (PP&E)",
        "Payments for acquisition of property, plant and equipment",
    ):
        assert agreement(spent, Item(label, "Investing activities:")) == "neutral", label
    assert agreement(content("net PP&E"), Item("Property, plant and equipment — net", "Assets")) == "agree"
