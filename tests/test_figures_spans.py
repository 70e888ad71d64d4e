"""The figure check on shapes of real filings and analysts' answers: a period written as the two
dates it runs between, a cash-flow row that pays for what it names, a fiscal year written "FY2021"
(rag_core.figures.periods, rag_core.figures.labels, rag_core.figures.naming)."""

from __future__ import annotations

from datetime import date

from rag_core.figures import Passage, check_answer
from rag_core.figures.labels import Item, agreement, content
from rag_core.figures.periods import Period, agree, date_span, period_of
from rag_core.figures.sources import sentence_period

ORION = "Orion Corporation"
# Shaped like NVIDIA's 10-Q for its third quarter of fiscal 2024: the cash-flow statement (page 8)
# and the repurchases after the quarter ended (page 22)
CASH_FLOWS = """ORION CORPORATION AND SUBSIDIARIES
CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS
(In millions)
(Unaudited)
Nine Months Ended
October 29, 2023 October 30, 2022
Cash flows from financing activities:
Proceeds related to employee stock plans 403 355
Payments related to repurchases of common stock (6,874) (8,345)
Payments related to tax on restricted stock units (1,735) (1,475)
Repayment of debt (1,250) —
Dividends paid (296) (299)
Net cash used in financing activities (9,752) (9,762)
"""
AFTER_THE_QUARTER = """Share Repurchase Program
During the first nine months of fiscal year 2024, we repurchased 21.3 million shares of our common
stock for $8.3 billion. From October 30, 2023 through November 17, 2023, we repurchased 0.8 million
shares for $366 million pursuant to a Rule 10b5-1 trading plan. As of October 29, 2023, we were
authorized to repurchase an additional amount of our common stock.
"""
QUESTION = "How much did Orion spend on repurchases of common stock in the nine months ended October 29, 2023?"


def sources() -> list[Passage]:
    return [
        Passage(1, CASH_FLOWS, "2023 Q3 ORION.pdf", 8, ORION),
        Passage(2, AFTER_THE_QUARTER, "2023 Q3 ORION.pdf", 22, ORION),
    ]


def test_two_dates_a_period_runs_between_are_one_period_to_the_second():
    # NVIDIA's 10-Qs ("From October 30, 2023 through November 17, 2023, we repurchased …"), CVS
    # Health's 10-K ("From November 28, 2018 to December 31, 2018, the Company's insurance and HMO
    # subsidiaries paid $909 million …"), Kraft Heinz's ("from December 29, 2018 to December 28,
    # 2019"), JPMorgan's 10-Qs ("between January 1, 2018 and March 31, 2021")
    nvidia = "From October 30, 2023 through November 17, 2023, we repurchased 0.8 million shares for $366 million"
    assert date_span(nvidia) == (date(2023, 10, 30), date(2023, 11, 17))
    assert sentence_period(nvidia) == Period(1, date(2023, 11, 17))
    cvs = "From November 28, 2018 to December 31, 2018, the Company's subsidiaries paid $909 million of dividends"
    assert sentence_period(cvs) == Period(1, date(2018, 12, 31))
    assert period_of("the changes from December 29, 2018 to December 28, 2019") == Period(12, date(2019, 12, 28))
    assert period_of("changes between January 1, 2018 and March 31, 2021").months == 39
    assert agree(period_of("the nine months ended October 29, 2023"), sentence_period(nvidia)) is False
    assert agree(period_of("in fiscal 2018"), sentence_period(cvs)) is False  # a month, not the year
    # two dates that are not one period: a balance at each, a comparison
    assert date_span("as of October 29, 2023 and January 29, 2023") is None
    assert period_of("as of October 29, 2023 and January 29, 2023").end == date(2023, 10, 29)


def test_a_figure_of_the_days_after_the_period_is_not_the_periods():
    (fig,) = check_answer(
        "Orion spent $366 million on repurchases of common stock in those nine months [2].", QUESTION, sources()
    ).figures
    assert fig.status == "mismatch" and "November 17, 2023" in fig.explanation
    said = "From October 30, 2023 through November 17, 2023, Orion repurchased 0.8 million shares for $366 million."
    assert [f.status for f in check_answer(said, QUESTION, sources()).figures] == ["found", "found"]


def test_a_payment_row_is_what_it_pays_for():
    # NVIDIA's "Payments related to repurchases of common stock", Apple's "Payments for acquisition of
    # property, plant and equipment", Walmart's "Payments for property and equipment", American
    # Express's "Payments of long-term debt", Intel's "Payment of dividends to stockholders"
    (fig,) = check_answer(
        "Orion spent $6,874 million on repurchases of common stock in the nine months ended October 29, 2023.",
        QUESTION,
        sources(),
    ).figures
    assert fig.status == "found" and fig.passage == 1
    pays = Item("Payments related to repurchases of common stock", "Cash flows from financing activities:")
    assert pays.qualifiers() == set()
    assert agreement(content("repurchases of common stock"), pays) == "agree"
    assert agreement(content("proceeds from repurchases of common stock"), pays) == "conflict"  # cash in
    apple = Item("Payments for acquisition of property, plant and equipment", "Investing activities:")
    assert apple.qualifiers() == {"acquisition"} and apple.concept == "§ppe"  # what is bought, and its item
    # the row of the other direction is still another row
    (fig,) = check_answer(
        "Orion received $403 million from repurchases of common stock in the nine months ended October 29, 2023.",
        QUESTION,
        sources(),
    ).figures
    assert fig.status != "found"


def test_a_fiscal_year_as_analysts_write_it_is_no_ones_name():
    # American Express's 10-K (page 49) and FinanceBench's "between FY2021 and FY2022" (its questions on
    # American Express and Corning): "FY2021" was read as a name the 10-K's sentence does not write, so
    # a right "24.6% in FY2021" was marked as another one's figure
    amex = "American Express Company"
    taxes = (
        "INCOME TAXES\nThe effective tax rate was 21.6 percent and 24.6 percent for 2022 and 2021, respectively. "
        "The reduction in the effective tax rate primarily reflected discrete tax benefits in the current year."
    )
    question = "How much has the effective tax rate of American Express changed between FY2021 and FY2022?"
    sources = [Passage(1, taxes, "AMERICANEXPRESS_2022_10K.pdf", 49, amex)]
    for written in ("FY2021", "2021", "fiscal 2021"):
        answer = f"The effective tax rate of American Express changed from 24.6% in {written} to 21.6% in FY2022."
        assert [f.status for f in check_answer(answer, question, sources).figures] == ["found", "found"], written
    # a name the sentence does not write is still another one's ("Huddersfield Town paid …")
    other = "The effective tax rate of Discover Financial was 24.6% in FY2021."
    assert check_answer(other, question, sources).figures[0].status != "found"
