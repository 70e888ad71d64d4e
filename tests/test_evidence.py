"""What the answering model reads (rag_core.chat.evidence, rag_core.chat.tables)."""

from __future__ import annotations

import pytest

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
    # a ZIP code or a file number is not a cell: an address under a header naming a year stays as written
    assert (
        label_row("6480 Cameron Street – Las Vegas, NV 89118", ["1934"], "")
        == "6480 Cameron Street – Las Vegas, NV 89118"
    )
    assert label_row("Interest income 89,118", ["2023"], "") == "Interest income: 2023: 89,118"


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


COVER = """Nevada | | 20-8143439
(State or other jurisdiction of incorporation or organization) | | (IRS Employer Identification No.)
6480 Cameron Street Ste. 305 – Las Vegas, NV 89118
(Address of principal executive offices)
(702) 939-3254
(Registrant’s telephone number)
Indicate by check mark whether the registrant is a shell company (as defined in Rule 12b-2 of the Exchange Act). Yes ☐ No ☑
State the aggregate market value of the voting and non-voting common equity held by non-affiliates computed by reference to the price at which the common equity was last sold.
$70,923,698.
Indicate the number of shares outstanding of each of the registrant’s classes of common stock: 23,718,968 common shares as of March 28, 2022."""


def test_a_line_item_an_analyst_abbreviates_is_read_on_the_line_that_spells_it_out():
    """Galaxy Gaming's 10-K, tried as a user: asked "How much did SG&A grow that year?", the model
    was shown its cover's "State the aggregate market value …" and not its MD&A's SG&A line
    (3M's and Kraft Heinz's 10-Ks write the row "Selling, general and administrative" too)."""
    mdna = (
        "This increase was due to the 2021 employee bonus accrual being included in the current year.\n"
        "Selling, general and administrative expenses were $10,646,524 in 2021 compared to $8,964,930 in"
        " 2020, representing an increase of $1,681,594, or 18.8%.\n"
        "Research and development expenses were $520,449 in 2021."
    )
    evidence = select_evidence(
        "How much did SG&A grow that year?",
        [(COVER, "example-10k.html", None, None), (mdna, "example-10k.html", None, None)],
        budget=60,
        count_tokens=lambda text: len(text.split()),
    )
    shown = [line for ev in evidence for line in ev.lines]
    assert any(line.startswith("Selling, general and administrative expenses were $10,646,524") for line in shown)


def test_a_label_line_without_a_figure_brings_the_value_on_the_line_beside_it():
    """A form writes a label and its value on two lines (the value above or below): the label holds
    the question's words, the value none of them; the model must read both."""

    def lines_for(question: str) -> list[str]:
        (ev,) = select_evidence(question, [(COVER, "10-K.html", None, None)], 60, lambda t: len(t.split()))
        return ev.lines

    market = lines_for("What was the market value of the common equity held by non-affiliates?")
    assert market[market.index(next(x for x in market if x.startswith("State the aggregate"))) + 1] == "$70,923,698."
    office = lines_for("Where is the principal executive office?")
    at = office.index("(Address of principal executive offices)")
    assert office[at - 1] == "6480 Cameron Street Ste. 305 – Las Vegas, NV 89118"
    # a line that states its figure brings nothing: the shares line is kept alone
    shares = lines_for("How many shares were outstanding at the latest practicable date?")
    assert "$70,923,698." not in shares and any("23,718,968" in x for x in shares)
    # the budget still holds: a value that does not fit is left out, the label kept
    (tight,) = select_evidence(
        "principal executive office address", [(COVER, "f", None, None)], 4, lambda t: len(t.split())
    )
    assert tight.lines == ["(Address of principal executive offices)"]


def test_a_grids_row_is_found_by_its_columns_names_and_read_with_them():
    """An HTML datasheet's "Bars | 890 | 1000 | 12" holds none of the question's words: its
    header row does. The row is scored with its columns' names and written out with them."""
    from tests.test_figures_tables import DATASHEET

    def idf(term: str) -> float:  # the grade is named in every passage of its page
        return 0.1 if term in ("snb22", "3") else 1.0

    (ev,) = select_evidence(
        "What is the tensile strength of SNB22-3?",
        [(DATASHEET, "steel.html", None, None)],
        40,
        lambda t: len(t.split()),
        idf,
    )
    assert (
        "Bars: Yield point or Proof stress: 890 N/mm 2; Tensile strength: 1000 N/mm 2; Elongation: 12 %; "
        "Reduction of area: 40 %"
    ) in ev.lines
    (hard,) = select_evidence(
        "Brinell hardness of SNB22-3", [(DATASHEET, "s", None, None)], 20, lambda t: len(t.split()), idf
    )
    assert "SNB22-3: Brinell HBW / HB: 293-375" in hard.lines


def test_rows_under_columns_named_by_quarter_are_written_out_with_them():
    """An earnings release names its columns "Q3 FY24 Q2 FY24 Q3 FY23 Q/Q Y/Y": the model reads each
    figure with its column as written, the change columns too, and a margin's points unscaled."""
    release = (
        "Q3 FY24 summary\n($ in millions, except earnings per share)\nQ3 FY24 Q2 FY24 Q3 FY23 Q/Q Y/Y\n"
        "Revenue $18,120 $13,507 $5,931 34% 206%\nGross margin 74.0% 70.1% 53.6% 3.9 pts 20.4 pts"
    )
    (ev,) = select_evidence(
        "What was revenue in Q2 FY24?", [(release, "r.pdf", None, None)], 60, lambda t: len(t.split())
    )
    assert "Revenue: Q3 FY24: $18,120; Q2 FY24: $13,507; Q3 FY23: $5,931; Q/Q: 34%; Y/Y: 206% (in millions)" in ev.lines
    (margin,) = select_evidence(
        "gross margin in Q2 FY24", [(release, "r.pdf", None, None)], 60, lambda t: len(t.split())
    )
    assert "Gross margin: Q3 FY24: 74.0%; Q2 FY24: 70.1%; Q3 FY23: 53.6%; Q/Q: 3.9pts; Y/Y: 20.4pts" in margin.lines
    # the same in an HTML table's cells, its "$" and "%" cells of their own
    html = " | Q3 2024 | Q3 2023 | % Change\nRevenue | $ | 4,812 | $ | 4,450 | 8 | %"
    (cells,) = select_evidence("revenue in Q3 2024", [(html, "r.html", None, None)], 60, lambda t: len(t.split()))
    assert "Revenue: Q3 2024: $4,812; Q3 2023: $4,450; % Change: 8%" in cells.lines


@pytest.mark.timeout(60)  # a hang guard: with the old pattern 200 figures would not end in a lifetime
def test_a_long_line_of_figures_that_ends_in_a_word_is_read_at_once():
    """The row pattern had nested repeats: twenty figures then a word took seconds, each more
    figure doubling it; the evidence reads every line of every passage under a header."""
    from rag_core.entities.profile import _row_label

    line = "Revenue " + " ".join(["1,234 %"] * 200) + " x"
    assert label_row(line, ["a"] * 200, "") == line  # not a row: left as it is
    assert _row_label("Segment A " + " ".join(["(1,234) |"] * 5000)) == "Segment A"
    assert label_row("Gross margin 53.6 % 43.5 %", ["2023", "2022"], " (in millions)") == (
        "Gross margin: 2023: 53.6%; 2022: 43.5%"
    )


def test_rows_under_a_header_of_names_are_written_out_with_them():
    """A paper's results table: "Solo HEDGE (Ng et al., 2019) 35.3 47.0 38.4 31.1 19.2" says
    nothing of which figure is FACT's; written out with the names of the line of names above
    it (through a group's line of its own), it does, its label's parenthesis kept whole."""
    from tests.test_figures_tables import BENCHMARKS

    (ev,) = select_evidence("HEDGE and Okapi on FACT", [(BENCHMARKS, "paper.pdf", 8, None)], 0, lambda t: 1)
    assert "Solo HEDGE (Ng et al., 2019) 35.3 47.0 38.4 31.1 19.2" in ev.lines  # budget 0: every line as it is
    (ev,) = select_evidence(
        "HEDGE and Okapi on FACT", [(BENCHMARKS, "paper.pdf", 8, None)], 200, lambda t: len(t.split())
    )
    assert "Solo HEDGE (Ng et al., 2019): KQ: 35.3; LoreQA: 47.0; WBQ: 38.4; FACT: 31.1; SPaRC: 19.2" in ev.lines
    assert "Okapi: KQ: 30.6; LoreQA: 50.4; WBQ: 27.9; FACT: 23.9; SPaRC: 37.1" in ev.lines


def test_a_column_the_question_names_otherwise_is_written_its_way_too():
    """ "CuratedFACT" in the question, "FACT" in the header: the row says both, so that a
    small model reading it sees the figure the question asks for."""
    from tests.test_figures_tables import BENCHMARKS

    (ev,) = select_evidence(
        "What does HEDGE score on CuratedFACT?", [(BENCHMARKS, "paper.pdf", 8, None)], 200, lambda t: len(t.split())
    )
    assert "Solo HEDGE (Ng et al., 2019): KQ: 35.3; LoreQA: 47.0; WBQ: 38.4; FACT (CuratedFACT): 31.1; SPaRC: 19.2" in (
        ev.lines
    )
