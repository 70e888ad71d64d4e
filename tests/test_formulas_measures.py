"""More textbook measures a question names without stating them (rag_core.figures.formulas):
SG&A and R&D as a % of revenue, the dividend payout and retention ratios, revenue growth over
the year before, and one line item of one fiscal year ("the FY2020 total current assets").
Fakes for the arithmetic, then the real statements of FinanceBench's tune-half filings (3M,
AMD, American Water Works, Coca-Cola, Corning) for the rows read."""

from __future__ import annotations

import pytest

from rag_core.figures.formulas import Figure, compute, formula_of, show
from rag_core.figures.items import LABEL_PATTERNS
from rag_core.figures.statement_titles import ITEM_STATEMENT
from rag_core.figures.statements import find_row, statement_rows, value_in
from rag_core.loaders.layout import page_rows


def _lookup(values: dict[tuple[str, int], float]):
    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        if (item, year) not in values:
            return None
        return Figure(item, year, values[(item, year)] * 1e6, f"{values[(item, year)]:,.0f}", "x.pdf, page 1")

    return lookup


def test_payout_and_retention_ratios_read_the_shareholders_net_income_or_the_only_one():
    payout = "What is the FY2021 dividend payout ratio (using total cash dividends paid and net income) for Vega?"
    values = {("dividends", 2021): -389, ("net_income_common", 2021): 709, ("net_income", 2021): 720}
    result = compute(payout, _lookup(values))
    assert result is not None and show(result.value, result.kind, payout) == "0.55"  # 389 / 709, not / 720
    del values[("net_income_common", 2021)]  # a company without noncontrolling interests writes "Net income" only
    result = compute(payout, _lookup(values))
    assert result is not None and show(result.value, result.kind, payout) == "0.54"
    retention = "What is Vega's FY2021 retention ratio?"
    result = compute(retention, _lookup({("dividends", 2021): -932, ("net_income_common", 2021): 1316}))
    assert result is not None and show(result.value, result.kind, retention) == "0.29"


def test_revenue_growth_is_of_the_later_year_named_over_the_one_before():
    question = "What is the year-over-year change in revenue from FY2016 to FY2017 (in units of percents)?"
    asked = formula_of(question)
    assert asked is not None and asked[3] == [2017]
    result = compute(question, _lookup({("revenue", 2017): 14082, ("revenue", 2016): 11303}))
    assert result is not None and show(result.value, result.kind, question) == "24.59%"
    assert "(14,082 - 11,303) / 11,303 * 100" in result.arithmetic
    growth = "What was Vega's revenue growth in FY2019?"
    result = compute(growth, _lookup({("revenue", 2019): 6489, ("revenue", 2018): 7500}))
    assert result is not None and show(result.value, result.kind, growth) == "-13.48%"
    assert compute(growth, _lookup({("revenue", 2019): 6489})) is None  # the year before not found


@pytest.mark.parametrize(
    ("question", "item"),
    [
        ("What is Vega's FY2020 total current assets? Answer in USD millions.", "current_assets"),
        ("What is the year end FY2019 total assets for Vega?", "total_assets"),
        ("What is the FY2019 COGS for Vega?", "cogs"),
        ("What is the FY2019 cost of goods sold for Vega?", "cogs"),
        ("What was the total equity for FY2021 of Vega?", "equity"),
        ("What is the FY2019 net income attributable to shareholders for Vega?", "net_income_common"),
        # what follows the item narrows it to another row, or asks something else: nothing is computed
        ("What is the FY2022 net income attributable to noncontrolling interests for Vega?", None),
        ("What is the FY2022 revenue by segment for Vega?", None),
        ("What is the FY2022 sales and marketing expense for Vega?", None),
        ("What is the FY2022 revenue of the iPhone for Vega?", None),  # a product's, not the total
        ("What is the FY2022 revenue for the Americas segment?", None),
        ("What is the FY2022 revenue for Vega's Services?", None),  # something of the company's
        ("What is the FY2022 revenue in Europe for Vega?", None),
        ("What is the FY2022 total revenue of the Coca-Cola Company?", "revenue"),
        ("What is the FY2019 COGS for AMD (in USD millions)?", "cogs"),
        ("What is the FY2018 total revenue for 3M?", "revenue"),
        ("What was Vega's COGS in FY2019?", "cogs"),
        ("What was the iPhone revenue for FY2022?", None),
        ("Who is Vega's auditor in FY2022?", None),
    ],
)
def test_one_line_item_of_one_year_is_read_from_its_statement(question, item):
    asked = formula_of(question)
    assert (asked[1] if asked else None) == item


def test_a_loss_is_shown_with_its_sign():
    question = "What is the FY2015 net income for Vega?"
    result = compute(question, _lookup({("net_income", 2015): -660}))
    assert result is not None and show(result.value, result.kind, question) == "-$660 million"


def _real_lookup(pages: dict[str, int], path):
    """Each item read from its own statement's page, as the chat reads it (labels, then the pattern)."""

    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        if ITEM_STATEMENT[item] not in pages:
            return None
        page = pages[ITEM_STATEMENT[item]]
        row = find_row(statement_rows(page_rows(path, page) or ""), labels, year, LABEL_PATTERNS.get(item))
        got = value_in(row, year) if row is not None else None
        return Figure(item, year, got[0], got[1], f"{path.name}, page {page}") if got is not None else None

    return lookup


@pytest.mark.parametrize(
    ("filing", "pages", "question", "shown"),
    [
        # 3M: dividends paid 3,369 (cash flows, page 52) of "Net income attributable to 3M" 5,777 (page 48), not
        # its "Net income including noncontrolling interest" 5,791
        ("3M_2022_10K.pdf", {"income": 48, "cash": 52}, "What is the FY2022 dividend payout ratio for 3M?", "0.58"),
        # Corning: "Net income attributable to Corning Incorporated" 1,316, dividends 932
        ("CORNING_2022_10K.pdf", {"income": 58, "cash": 61}, "What is the FY2022 retention ratio for Corning?", "0.29"),
        # American Water Works: "Net income attributable to common shareholders" 709, dividends 389
        (
            "AMERICANWATERWORKS_2020_10K.pdf",
            {"income": 84, "cash": 86},
            "What is the FY2020 dividend payout ratio for American Water Works?",
            "0.55",
        ),
        # AMD's 2015 income statement writes "Net loss" (660)
        ("AMD_2015_10K.pdf", {"income": 56}, "What is the FY2015 net income for AMD?", "-$660 million"),
        # American Water Works' operating revenues 3,792 in 2022, 3,930 in 2021
        (
            "AMERICANWATERWORKS_2022_10K.pdf",
            {"income": 83},
            "What is the year-over-year change in revenue from FY2021 to FY2022 for American Water Works?",
            "-3.51%",
        ),
        ("CORNING_2022_10K.pdf", {"balance": 60}, "What is the FY2022 accounts payable for Corning?", "$1,804 million"),
        # a cost line's share of revenue: 3M's "Selling, general and administrative expenses" 9,049 of 34,229;
        # AMD's "Marketing, general and administrative" 482 and "Research and development" 947 of 3,991;
        # Corning's "Research, development and engineering expenses" 1,047 of 14,189
        ("3M_2022_10K.pdf", {"income": 48}, "What is the FY2022 SG&A as a % of revenue for 3M?", "26.44%"),
        ("AMD_2015_10K.pdf", {"income": 56}, "What is the FY2015 SG&A % margin for AMD?", "12.08%"),
        ("AMD_2015_10K.pdf", {"income": 56}, "What is the FY2015 R&D as a % of revenue for AMD?", "23.73%"),
        ("CORNING_2022_10K.pdf", {"income": 58}, "What is the FY2022 R&D as a % of sales for Corning?", "7.38%"),
    ],
)
def test_the_measures_are_computed_from_real_statements(shared_data, filing, pages, question, shown):
    path = shared_data / "eval" / "financebench" / "pdfs" / filing
    result = compute(question, _real_lookup(pages, path))
    assert result is not None and show(result.value, result.kind, question) == shown


def test_the_shareholders_net_income_is_named_as_analysts_name_it():
    question = "What is the FY2022 dividend payout ratio for Vega?"
    result = compute(question, _lookup({("dividends", 2022): -3369, ("net_income_common", 2022): 5777}))
    assert result is not None
    assert "net income attributable to shareholders FY2022: 5,777" in result.describe(question)
