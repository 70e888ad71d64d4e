"""Ratios computed as the question defines them: the formula read from the question, each
operand found in the statements by where its figures stand, the arithmetic shown with each
operand's page.

The statements' shapes are those of real 10-Ks of different companies (FinanceBench's tune
half): 3M's cash-flow statement ("(Millions) 2018 2017 2016", outflows in parentheses, its
PDF writing labels and figures apart), Activision Blizzard's balance sheet ("At December 31,
2019 At December 31, 2018"), Corning's ("Inventories, net (Note 6)"), American Water Works'
income statement. The company here is made up, so no rule can be keyed to one."""

from __future__ import annotations

import pytest

from rag_core import build_context
from rag_core.figures.formulas import Figure, compute, formula_of, show
from rag_core.figures.statements import find_row, header_years, statement_rows, value_in
from rag_core.loaders.layout import page_rows
from tests.pdfgen import make_columns_pdf

CASH_FLOWS = """Consolidated Statement of Cash Flows
Years ended December 31
(Millions) 2018 2017 2016
Net income including noncontrolling interest $ 5,363 $ 4,869 $ 5,058
Depreciation and amortization 1,488 1,544 1,474
Purchases of property, plant and equipment (PP&E) (1,577) (1,373) (1,420)
Other — net 9 (6) (4)"""

BALANCE = """CONSOLIDATED BALANCE SHEETS
(Amounts in millions, except share data)
At December 31, 2019 At December 31, 2018
Property and equipment, net 253 282
Inventories, net (Note 6) 32 43
Total assets $ 19,845 $ 17,890"""


def test_a_statement_row_is_read_by_the_years_of_its_header():
    rows = statement_rows(CASH_FLOWS)
    capex = find_row(rows, ("Purchases of property, plant and equipment",), 2017)
    assert capex is not None and value_in(capex, 2017) == (-1_373_000_000.0, "(1,373)")
    assert header_years("(Millions) 2018 2017 2016") == (2018, 2017, 2016)
    assert header_years("In 2018 we sold 3,000 units, up from 2,100 in 2017.") is None  # a sentence
    balance = statement_rows(BALANCE)
    ppe = find_row(balance, ("Property and equipment, net",), 2018)
    assert ppe is not None and value_in(ppe, 2018) == (282_000_000.0, "282")
    inventory = find_row(balance, ("Inventories",), 2019)  # "Inventories, net (Note 6)"
    assert inventory is not None and value_in(inventory, 2019) == (32_000_000.0, "32")
    assert find_row(balance, ("Total liabilities",), 2019) is None


def _lookup(values: dict[tuple[str, int], float]):
    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        if (item, year) not in values:
            return None
        return Figure(item, year, values[(item, year)] * 1e6, f"{values[(item, year)]:,.0f}", f"x.pdf, page {year}")

    return lookup


def test_a_formula_the_question_states_is_computed_and_shown():
    question = (
        "What is the FY2019 fixed asset turnover ratio for Vega? Fixed asset turnover ratio is defined as: "
        "FY2019 revenue / (average PP&E between FY2018 and FY2019). Round your answer to two decimal places."
    )
    result = compute(question, _lookup({("revenue", 2019): 6489, ("ppe", 2019): 253, ("ppe", 2018): 282}))
    assert result is not None and round(result.value, 2) == 24.26
    text = result.describe(question)
    assert "24.26 = 6,489 / ((282 + 253) / 2)" in text and "page 2018" in text
    dpo = (
        "What is FY2020 days payable outstanding (DPO) for Vega? DPO is defined as: 365 * (average accounts "
        "payable between FY2019 and FY2020) / (FY2020 COGS + change in inventory between FY2019 and FY2020). "
        "Round your answer to two decimal places."
    )
    values = {
        ("accounts_payable", 2019): 1587,
        ("accounts_payable", 2020): 1174,
        ("cogs", 2020): 7772,
        ("inventory", 2020): 2438,
        ("inventory", 2019): 2320,
    }
    result = compute(dpo, _lookup(values))
    assert result is not None and show(result.value, result.kind, dpo) == "63.86"
    del values[("inventory", 2019)]
    assert compute(dpo, _lookup(values)) is None  # an operand not found: nothing computed


def test_a_measure_named_without_its_formula_takes_the_textbook_one():
    ebitda = "What is Vega's FY2021 unadjusted operating income + depreciation and amortization (unadjusted EBITDA) in USD millions?"
    result = compute(ebitda, _lookup({("operating_income", 2021): 1196, ("da", 2021): 636}))
    assert result is not None and show(result.value, result.kind, ebitda) == "$1,832.00 million"
    average = "What is the FY2019 - FY2021 3 year average unadjusted operating income % margin for Vega? Round to one decimal place."
    values = {("operating_income", y): v for y, v in ((2019, 1306), (2020, 509), (2021, 2112))}
    values |= {("revenue", y): v for y, v in ((2019, 11503), (2020, 11303), (2021, 14082))}
    result = compute(average, _lookup(values))
    assert result is not None and show(result.value, result.kind, average) == "10.3%"
    capex = "What is the FY2018 capital expenditure amount (in USD millions) for Vega?"
    result = compute(capex, _lookup({("capex", 2018): -1577}))  # an outflow: its size
    assert result is not None and show(result.value, result.kind, capex) == "$1,577.00 million"
    assert formula_of("What drove Vega's revenue growth?") is None  # no year, no measure
    assert formula_of("Who is Vega's auditor in FY2022?") is None


# A 10-K of a made-up company whose PDF writes each statement column by column.
INCOME = (
    [
        "Larkspur Holdings, Inc.",
        "Consolidated Statements of Operations",
        "(in millions) 2019 2018",
        "Total net revenues",
        "Cost of revenues",
        "Operating income",
    ],
    [["", "", "", "$ 6,489", "2,518", "1,607"], ["", "", "", "$ 7,500", "2,517", "1,988"]],
)
POSITION = (
    [
        "Larkspur Holdings, Inc.",
        "Consolidated Balance Sheets",
        "At December 31, 2019 At December 31, 2018",
        "Cash and cash equivalents",
        "Property and equipment, net",
        "Total assets",
    ],
    [["", "", "", "$ 5,794", "253", "$ 19,845"], ["", "", "", "$ 4,225", "282", "$ 17,890"]],
)


def test_a_column_by_column_page_is_read_by_position(tmp_path):
    path = tmp_path / "larkspur.pdf"
    make_columns_pdf([INCOME, POSITION], path)
    laid = page_rows(path, 2) or ""
    assert "Property and equipment, net 253 282" in laid
    assert page_rows(path, 9) is None


@pytest.fixture
def filing(make_settings, llm, tmp_path):
    ctx = build_context(make_settings(), llm=llm)
    cover = (
        ["FORM 10-K", "LARKSPUR HOLDINGS, INC.", "(Exact name of registrant as specified in its charter)"]
        + [f"Larkspur Holdings sells games in region {i}." for i in range(5)],
        [],
    )
    make_columns_pdf([cover, INCOME, POSITION], tmp_path / "larkspur-10k.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "larkspur-10k.pdf"])
    return ctx


def test_the_chat_computes_what_the_question_defines_and_cites_each_page(filing, llm):
    question = (
        "What is the FY2019 fixed asset turnover ratio for Larkspur? Fixed asset turnover ratio is defined as: "
        "FY2019 revenue / (average PP&E between FY2018 and FY2019). Round your answer to two decimal places."
    )
    llm.script(answers=["The ratio is 23.10 [1]."])  # a small model's arithmetic
    turn = filing.chat.ask(question)
    assert "🧮 Computed from the statements:" in turn.answer and "24.26 = 6,489 / ((282 + 253) / 2)" in turn.answer
    assert {2, 3} <= {s["page"] for s in turn.sources}  # each operand's page is a source
    prompt = str(llm.chats[-1][-1].content)
    assert "24.26" in prompt  # the model read the computation first
    llm.script(answers=["The ratio is 24.26 [1]."])
    again = filing.chat.ask(question)
    assert "🧮" not in again.answer  # stated right: nothing added
    assert again.figures_unsupported == 0  # the computation counts as its first operand's source
    assert "table on p." not in again.answer  # its operands' cells are not what the question asks


def test_a_question_that_defines_nothing_computes_nothing(filing, llm):
    llm.script(answers=["Larkspur sells games [1]."])
    turn = filing.chat.ask("What does Larkspur sell?")
    assert "🧮" not in turn.answer
