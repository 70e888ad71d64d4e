"""Numbers of a text: values, spans, scale words, precision, and what is not a figure."""

from __future__ import annotations

import datetime as dt

import pytest

from rag_core.figures.numbers import figures, read_numbers
from rag_core.figures.periods import Period, agree, period_of


def one(text: str):
    found = [n for n in read_numbers(text) if n.kind == "figure"]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("text", "value", "step", "written"),
    [
        ("$82.96 billion", 82.96e9, 1e7, "$82.96 billion"),
        ("82,959", 82959.0, 1.0, "82,959"),
        ("US$1.2bn", 1.2e9, 1e8, "US$1.2bn"),
        ("(2,028)", -2028.0, 1.0, "(2,028)"),
        ("$ (2,028)", -2028.0, 1.0, "$ (2,028)"),
        ("(260 )", -260.0, 1.0, "(260 )"),
        ("$(10.5)B", -10.5e9, 1e8, "$(10.5)B"),
        ("-5.2%", -5.2, 0.1, "-5.2%"),
        ("3.5万", 35000.0, 1000.0, "3.5万"),
        ("12亿", 1.2e9, 1e8, "12亿"),
        ("5.39E-05", 5.39e-05, 1e-07, "5.39E-05"),  # a table's scientific notation: the power is a scale
        ("1.5e+06", 1.5e6, 1e5, "1.5e+06"),
        ("１２，３４５", 12345.0, 1.0, "１２，３４５"),  # full-width digits, span kept
    ],
)
def test_values_scales_and_precision(text, value, step, written):
    n = one(text)
    assert n.value == pytest.approx(value)
    assert n.step == pytest.approx(step)
    assert text[n.start : n.end] == written


def test_percent_and_sign_and_currency():
    n = one("gross margin was 70.1 % this quarter")
    assert n.percent and n.magnitude == pytest.approx(70.1) and not n.currency
    n = one("Interest expense (65) for the quarter")
    assert n.negative and n.value == -65
    assert one("revenue of €4.5 million").currency == "€"


def test_a_bare_letter_is_a_scale_only_after_a_currency():
    assert one("$1.2b").scale == 1e9
    assert one("5 m of cable").scale == 1.0


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("the quarter ended July 30, 2023", ["date", "year"]),
        ("in Q3 2023", ["period", "year"]),
        ("fiscal 2024", ["period"]),
        ("FY2024", ["period"]),
        ("as reported [1] and [2, 3]", ["citation", "citation", "citation"]),
        ("1. Revenue rose", ["list"]),
        ("see page 12 and Note 5", ["reference", "reference"]),
        ("the 10-Q and the H100", ["name", "name"]),
        ("the 3rd quarter", ["ordinal"]),
        ("2019年7月", ["year", "date"]),
        ("7/30/2023", ["date", "date", "date"]),
    ],
)
def test_what_is_not_a_figure(text, kind):
    assert [n.kind for n in read_numbers(text)] == kind


def test_figures_leave_out_the_questions_own_numbers_and_small_counts():
    answer = "Revenue for the quarter ended July 30, 2023 was $13,507 million across 3 segments, above $10 billion."
    got = [n.text for n in figures(answer, "Was revenue above $10 billion in the quarter ended July 30, 2023?")]
    assert got == ["$13,507 million"]


def test_chinese_text_does_not_crash_and_keeps_its_units():
    got = figures("2019年营收达3.5万元，同比增长12%，员工1,200人。")
    assert [(n.text, n.percent) for n in got] == [("3.5万", False), ("12%", True), ("1,200", False)]


def test_significant_digits():
    assert one("$7 billion").significant == 1
    assert one("$13.5 billion").significant == 3
    assert one("13,507").significant == 5


@pytest.mark.parametrize(
    ("text", "months", "end"),
    [
        ("for the quarter ended July 30, 2023", 3, "2023-07-30"),
        ("the six months ended June 30, 2023", 6, "2023-06-30"),
        ("Nine Months Ended Sep 30, 2023", 9, "2023-09-30"),
        ("as of September 30, 2023", 0, "2023-09-30"),
        ("in the second quarter of fiscal year 2024", 3, None),
        ("in the first half of 2023", 6, None),
        ("as reported in the Q3 2022 10-Q", None, None),  # a report, not a period
        ("according to the Report for the third quarter of 2024", None, None),  # the report again
    ],
)
def test_periods_named(text, months, end):
    p = period_of(text)
    assert p.months == months
    assert (p.end.isoformat() if p.end else None) == end


def test_periods_agree_only_when_they_can_be_one():
    quarter = period_of("the quarter ended July 30, 2023")
    assert agree(quarter, period_of("three months ended July 30, 2023")) is True
    assert agree(quarter, period_of("six months ended July 30, 2023")) is False
    assert agree(quarter, period_of("three months ended July 31, 2022")) is False
    assert agree(quarter, period_of("three months ended July 29, 2023")) is True  # a calendar's few days
    assert agree(Period(), quarter) is None
    assert agree(period_of("at the end of Q3"), period_of("as of July 30, 2023")) is None


def test_reports_named_by_quarter_and_year():
    from rag_core.figures.periods import report_in_name, report_of

    assert report_of("What did Apple report in the Q3 2022 10-Q?") == (3, 2022)
    assert report_of("the second quarter of fiscal 2024 report") == (2, 2024)
    assert report_of("in the quarter ended July 1, 2023") is None
    assert report_in_name("2023 Q2 NVDA.pdf") == (2, 2023)
    assert report_in_name("AAPL_10Q_2023Q2.pdf") == (2, 2023)
    assert report_in_name("annual report.pdf") is None


def test_a_ranges_unit_is_written_after_its_second_end():
    from rag_core.figures.numbers import read_numbers

    def read(text: str) -> list[tuple[str, bool, float]]:
        return [(n.text, n.percent, n.scale) for n in read_numbers(text) if n.kind == "figure"]

    assert read("0.75 - 1.2%") == [("0.75", True, 1.0), ("1.2%", True, 1.0)]
    assert read("rose 5 to 7%") == [("5", True, 1.0), ("7%", True, 1.0)]
    assert read("$5 to $7 billion") == [("$5", False, 1e9), ("$7 billion", False, 1e9)]
    assert read("5 stores and 7%") == [("5", False, 1.0), ("7%", True, 1.0)]  # no range: its own unit


@pytest.mark.parametrize(
    ("text", "quarter", "year"),
    [
        ("What was revenue in the third quarter of 2024?", 3, 2024),
        ("Q3 FY24 revenue", 3, 2024),
        ("in Q2 2023", 2, 2023),
        ("3Q23 results", 3, 2023),
        ("in the second quarter of fiscal year 2024", 2, 2024),
        ("in fiscal 2024's first quarter", 1, 2024),
        ("2023’s fourth quarter", 4, 2023),
        ("in Q3 of fiscal 2024", 3, 2024),
        ("Q2 of 2023", 2, 2023),
        ("fiscal 2024's revenue", None, 2024),  # a possessive year, no quarter
        ("in Q3 of its results", None, None),
        ("for the quarter ended July 30, 2023", None, None),  # a date says it
        ("as reported in the Q3 2022 10-Q", None, None),  # a report, not a period
        ("according to the Report for the third quarter of 2024", None, None),  # the report again
    ],
)
def test_quarters_named_with_their_year(text, quarter, year):
    p = period_of(text)
    assert (p.quarter, p.fiscal_year) == (quarter, year)
    if quarter:
        assert p.months == 3


def test_a_quarter_agrees_only_with_the_same_quarter_of_the_same_year():
    q3_24, q3_23, q2_24 = Period(3, None, 2024, 3), Period(3, None, 2023, 3), Period(3, None, 2024, 2)
    assert agree(q3_24, q3_24) is True
    assert agree(q3_24, q3_23) is False and agree(q3_24, q2_24) is False
    assert agree(Period(3), q3_23) is True  # "the quarter": either
    assert agree(q3_24, Period(3, dt.date(2024, 9, 30))) is True  # a date's quarter is not named: no conflict
    assert agree(Period(12, None, 2024), Period(12, None, 2023)) is False  # "fiscal 2024" and "FY23"
