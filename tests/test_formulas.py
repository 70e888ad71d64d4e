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
from llama_index.core.schema import NodeWithScore, TextNode

from rag_core import build_context
from rag_core.chat.computed import COMPUTED_BY, Computation
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
    intensive = "Is Vega a capital-intensive business based on FY2022 data?"  # capex against revenue
    result = compute(intensive, _lookup({("capex", 2022): -1749, ("revenue", 2022): 34229}))
    assert result is not None and show(result.value, result.kind, intensive) == "5.11%"
    assert result.name.lower().startswith("capital intensity (capex as a % of revenue)")
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
        "Consolidated Balance Sheets (in millions)",
        "At December 31, 2019 At December 31, 2018",
        "Cash and cash equivalents",
        "Total current assets",
        "Property and equipment, net",
        "Total assets",
        "Total current liabilities",
    ],
    [
        ["", "", "", "$ 5,794", "7,001", "253", "$ 19,845", "2,100"],
        ["", "", "", "$ 4,225", "5,500", "282", "$ 17,890", "2,300"],
    ],
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


def test_the_chat_answers_a_measure_the_question_defines_with_its_arithmetic(filing, llm):
    question = (
        "What is the FY2019 fixed asset turnover ratio for Larkspur? Fixed asset turnover ratio is defined as: "
        "FY2019 revenue / (average PP&E between FY2018 and FY2019). Round your answer to two decimal places."
    )
    llm.script(answers=["The ratio is 23.10 [1]."])  # a small model's arithmetic: never asked
    asked = len(llm.chats)
    turn = filing.chat.ask(question)
    assert len(llm.chats) == asked  # the value asked is the app's arithmetic: no model
    assert turn.answer.startswith("🧮 Computed from the statements:")
    assert "24.26 = 6,489 / ((282 + 253) / 2)" in turn.answer and "23.10" not in turn.answer
    pages = [s["page"] for s in turn.sources]
    assert pages[:2] in ([2, 3], [3, 2])  # the operands' pages lead the sources
    first = pages.index(2) + 1  # cited as the source of its first operand's page (revenue's), trusted
    assert turn.answer.endswith(f"[{first}]") and turn.figures_unsupported == 0
    assert turn.served_by["llm"] == COMPUTED_BY


def test_an_amount_that_is_one_operand_of_the_ratio_asked_is_no_answer_alone(filing, llm):
    llm.script(answers=["The ratio is 1.2 [1]."])
    asked = len(llm.chats)
    turn = filing.chat.ask("What is the ratio of FY2019 working capital to total assets for Larkspur?")
    assert len(llm.chats) == asked + 1 and turn.served_by["llm"] != COMPUTED_BY  # the model answers


def test_asked_why_a_measure_moved_the_model_answers_after_reading_the_arithmetic(filing, llm):
    question = "What drove the FY2019 fixed asset turnover ratio for Larkspur?"
    llm.script(answers=["Sales fell, the ratio is 23.10 [1]."])
    turn = filing.chat.ask(question)
    assert "24.26" in str(llm.chats[-1][-1].content)  # the model read the computation first
    assert "🧮 Computed from the statements:" in turn.answer and "24.26 = 6,489 / ((282 + 253) / 2)" in turn.answer
    assert {2, 3} <= {s["page"] for s in turn.sources}  # each operand's page is a source
    llm.script(answers=["Sales fell; the ratio is 24.26 [1]."])
    again = filing.chat.ask(question)
    assert "🧮" not in again.answer  # stated right: nothing added
    assert again.figures_unsupported == 0  # the computation counts as its first operand's source
    assert "table on p." not in again.answer  # its operands' cells are not what the question asks


def test_the_statement_is_read_in_the_company_s_filing_the_search_did_not_find(filing):
    question = "What is the FY2019 current ratio for Larkspur?"
    bm25 = filing.chat.components.keywords.get(None)
    files = filing.settings.paths.files
    elsewhere = [NodeWithScore(node=TextNode(text="Larkspur's 2021 report", metadata={"file_name": "x.pdf"}), score=1)]
    assert Computation(question, elsewhere, bm25, files).result is None  # only the document found is read
    found = Computation(question, elsewhere, bm25, files, also=["larkspur-10k.pdf"])  # the company's other filing
    assert found.result is not None and found.result.describe(question).startswith(
        "Current ratio: 3.33 = 7,001 / 2,100"
    )


@pytest.mark.parametrize(
    ("question", "stance"),
    [
        ("Does Larkspur have positive working capital based on FY2019 data?", "Yes: working capital is positive."),
        ("Does Larkspur have negative working capital based on FY2019 data?", "No: working capital is positive."),
    ],
)
def test_asked_the_sign_of_a_measure_the_answer_says_yes_or_no(filing, llm, question, stance):
    asked = len(llm.chats)
    turn = filing.chat.ask(question)
    assert len(llm.chats) == asked and turn.answer.startswith(stance)
    assert "$4,901 million = 7,001 - 2,100" in turn.answer and turn.figures_unsupported == 0


def test_a_question_that_defines_nothing_computes_nothing(filing, llm):
    llm.script(answers=["Larkspur sells games [1]."])
    turn = filing.chat.ask("What does Larkspur sell?")
    assert "🧮" not in turn.answer


def _statement_lookup(pages: dict[str, list[tuple[object, int]]]):
    """A lookup over real statement pages: each item read from its own statement's page."""
    from rag_core.figures.statement_titles import ITEM_STATEMENT

    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        for path, page in pages[ITEM_STATEMENT[item]]:
            row = find_row(statement_rows(page_rows(path, page) or ""), labels, year)
            got = value_in(row, year) if row is not None else None
            if got is not None:
                return Figure(item, year, got[0], got[1], f"{path.name}, page {page}")  # type: ignore[attr-defined]
        return None

    return lookup


@pytest.mark.parametrize(
    ("filing", "pages", "question", "shown"),
    [
        # 3M's 2022 balance sheet (page 50): 14,688 current assets, 5,372 inventories, 9,523 current liabilities
        ("3M_2022_10K.pdf", {"balance": 50}, "What is the FY2022 quick ratio for 3M?", "0.98"),
        ("CORNING_2022_10K.pdf", {"balance": 60}, "What is the FY2022 current ratio for Corning?", "1.44"),
        ("CORNING_2022_10K.pdf", {"income": 58}, "What is the FY2022 gross margin for Corning?", "31.76%"),
        # Activision Blizzard's receivables "net of allowances of $132 and $190, at December 31, …"
        (
            "ACTIVISIONBLIZZARD_2019_10K.pdf",
            {"balance": 69, "income": 70},
            "What is the FY2019 days sales outstanding (DSO) for Activision Blizzard?",
            "52.96",
        ),
        # American Water Works writes its interest expense as "(433)": its size is what covers
        (
            "AMERICANWATERWORKS_2022_10K.pdf",
            {"income": 83},
            "What is the FY2022 interest coverage ratio for American Water Works?",
            "2.94",
        ),
        (
            "3M_2022_10K.pdf",
            {"cash": 39},
            "What is the FY2022 free cash flow for 3M in USD millions?",
            "$3,842.00 million",
        ),
        # PDFium's stream runs American Water Works' 2021 header into its first row ("… December 31,
        # 2021 2020 2019 Operating revenues $ 3,930 …") and its cash flows' rows into each other:
        # read by where they stand, operating income 1,196 (page 86) + D&A 636 (page 88)
        (
            "AMERICANWATERWORKS_2021_10K.pdf",
            {"income": 86, "cash": 88},
            "What is American Water Works's FY2021 unadjusted EBITDA in USD millions?",
            "$1,832.00 million",
        ),
        (
            "AMERICANWATERWORKS_2021_10K.pdf",
            {"cash": 88},
            "What is the FY2021 capital expenditure amount for American Water Works in USD millions?",
            "$1,764.00 million",
        ),
        # whether a business is capital-intensive, as analysts measure it: capex against revenue. 3M's
        # 2022 capex 1,749 (cash flows, page 52) of net sales 34,229 (page 48): FinanceBench's analysts
        # answer "CAPEX/Revenue Ratio: 5.1%"; Corning's capex 1,604 of net sales 14,189
        (
            "3M_2022_10K.pdf",
            {"income": 48, "cash": 52},
            "Is 3M a capital-intensive business based on FY2022 data?",
            "5.11%",
        ),
        (
            "CORNING_2022_10K.pdf",
            {"income": 58, "cash": 61},
            "Is Corning a capital-intensive business based on FY2022 data?",
            "11.30%",
        ),
        # Corning writes D&A as two rows, "Depreciation" 1,329 and "Amortization of purchased
        # intangibles" 123 (page 61): EBITDA = 1,438 + 1,329 + 123
        (
            "CORNING_2022_10K.pdf",
            {"income": 58, "cash": 61},
            "What is Corning's FY2022 unadjusted EBITDA in USD millions?",
            "$2,890.00 million",
        ),
    ],
)
def test_textbook_measures_are_computed_from_real_statements(shared_data, filing, pages, question, shown):
    path = shared_data / "eval" / "financebench" / "pdfs" / filing
    statements = {kind: [(path, pages[kind])] if kind in pages else [] for kind in ("income", "balance", "cash")}
    result = compute(question, _statement_lookup(statements))
    assert result is not None and show(result.value, result.kind, question) == shown


@pytest.mark.parametrize(
    ("filing", "page", "kind", "is_statement"),
    [
        ("3M_2018_10K.pdf", 60, "cash", True),  # "Consolidated Statement of Cash Flows"
        (
            "3M_2018_10K.pdf",
            46,
            "cash",
            False,
        ),  # MD&A: "Individual amounts in the Consolidated Statement of Cash Flows …"
        ("3M_2018_10K.pdf", 81, "balance", False),  # "NOTE 7. Supplemental Balance Sheet Information"
        ("COCACOLA_2017_10K.pdf", 74, "income", True),  # "CONSOLIDATED STATEMENTS OF INCOME"
        ("COCACOLA_2017_10K.pdf", 94, "income", False),  # "… our consolidated statement of income during the year …"
        ("AMERICANEXPRESS_2022_10K.pdf", 96, "income", True),
        ("AMERICANEXPRESS_2022_10K.pdf", 156, "income", False),  # "PARENT COMPANY - CONDENSED STATEMENTS OF INCOME …"
        ("CORNING_2020_10K.pdf", 72, "balance", True),  # "Consolidated Balance Sheets Corning Incorporated and …"
    ],
)
def test_a_statement_is_the_page_its_title_heads_not_one_that_names_it(shared_data, filing, page, kind, is_statement):
    from rag_core.figures.statement_titles import STATEMENT_HEAD, STATEMENTS, titled

    path = shared_data / "eval" / "financebench" / "pdfs" / filing
    head = "\n".join((page_rows(path, page) or "").splitlines()[:STATEMENT_HEAD])
    assert STATEMENTS[kind][1].search(head)  # each names the statement in its head
    assert titled(head, STATEMENTS[kind][1]) is is_statement


def test_a_row_the_stream_runs_into_the_next_is_read_apart_but_a_wrapped_label_is_not(shared_data):
    awk = shared_data / "eval" / "financebench" / "pdfs" / "AMERICANWATERWORKS_2021_10K.pdf"
    lines = (page_rows(awk, 88) or "").splitlines()
    assert "Depreciation and amortization 636 604 582" in lines  # was one line with the next three rows
    assert "Capital expenditures (1,764) (1,822) (1,654)" in lines  # after its heading in capitals
    three_m = (page_rows(shared_data / "eval" / "financebench" / "pdfs" / "3M_2018_10K.pdf", 20) or "").splitlines()
    assert any(line.startswith("Q4 2017 Adjusted Non") and line.endswith("$ 1,285 $ 2.10") for line in three_m)


@pytest.mark.parametrize(
    ("document", "page", "label", "value"),
    [
        ("2023 Q2 INTC.pdf", 9, "Additions to property, plant, and equipment", -13_301e6),  # Intel
        ("2023 Q2 MSFT.pdf", 6, "Additions to property and equipment", -6_607e6),  # Microsoft
    ],
)
def test_capital_expenditures_written_as_additions_are_read(shared_data, document, page, label, value):
    from rag_core.figures.items import ITEMS

    path = shared_data / "eval" / "sec10q" / "data" / "v1" / "docs" / document
    row = find_row(statement_rows(page_rows(path, page) or ""), ITEMS["capex"][1], 2023)
    assert row is not None and row.label == label and value_in(row, 2023) is not None
    assert value_in(row, 2023)[0] == value  # type: ignore[index]


@pytest.mark.parametrize(
    ("folder", "document", "page", "year", "label", "value"),
    [
        (("financebench", "pdfs"), "3M_2022_10K.pdf", 52, 2022, "Dividends paid to shareholders", -3_369e6),
        (
            ("sec10q", "data", "v1", "docs"),
            "2023 Q2 AAPL.pdf",
            8,
            2023,
            "Payments for dividends and dividend equivalents",
            -7_418e6,
        ),
        (
            ("sec10q", "data", "v1", "docs"),
            "2023 Q2 INTC.pdf",
            9,
            2023,
            "Payment of dividends to stockholders",
            -2_036e6,
        ),
    ],
)
def test_dividends_paid_are_read_however_the_statement_words_them(
    shared_data, folder, document, page, year, label, value
):
    from rag_core.figures.items import ITEMS, LABEL_PATTERNS

    path = shared_data.joinpath("eval", *folder, document)
    row = find_row(
        statement_rows(page_rows(path, page) or ""), ITEMS["dividends"][1], year, LABEL_PATTERNS["dividends"]
    )
    assert row is not None and row.label == label
    assert value_in(row, year) is not None and value_in(row, year)[0] == value  # type: ignore[index]


def test_dividends_received_declared_or_paid_to_others_are_not_dividends_paid():
    from rag_core.figures.items import ITEMS, LABEL_PATTERNS

    rows = statement_rows(
        "(Millions) 2022 2021\nDividends received from equity affiliates 100 90\n"
        "Dividends paid to noncontrolling interests (12) (10)\nCash dividends declared per share 1.20 1.10"
    )
    assert find_row(rows, ITEMS["dividends"][1], 2022, LABEL_PATTERNS["dividends"]) is None


def test_d_and_a_written_as_two_rows_is_their_sum_from_one_statement():
    # Intel's 10-Q cash flows: "Depreciation 3,733" and "Amortization of intangibles 909", no row of their sum
    rows = {
        ("Depreciation",): Figure("da", 2023, 3_733e6, "3,733", "intel.pdf, page 9"),
        ("Amortization of intangibles", "Amortization of purchased intangibles"): Figure(
            "da", 2023, 909e6, "909", "intel.pdf, page 9"
        ),
        ("Operating income", "Income from operations", "Operating profit", "Operating income (loss)"): Figure(
            "operating_income", 2023, 1_000e6, "1,000", "intel.pdf, page 6"
        ),
    }

    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        return next((f for key, f in rows.items() if key[0] == labels[0]), None)

    result = compute("What is the FY2023 EBITDA for Intel?", lookup)
    assert result is not None and result.arithmetic == "1,000 + (3,733 + 909)"
    assert [f.item for f in result.figures] == ["operating_income", "depreciation", "amortization"]
    # the two rows stand on different pages: not one statement's, nothing is computed
    rows[("Depreciation",)] = Figure("da", 2023, 3_733e6, "3,733", "intel.pdf, page 31")
    assert compute("What is the FY2023 EBITDA for Intel?", lookup) is None


def test_a_year_s_operands_are_read_in_the_filing_of_that_year(filing, tmp_path):
    # The later 10-K repeats the year before it, restated (American Water Works' and Corning's 10-Ks
    # each repeat the years before theirs): FY2018 is read in the FY2018 filing.
    earlier = (
        [
            "Larkspur Holdings, Inc.",
            "Consolidated Balance Sheets (in millions)",
            "At December 31, 2018 At December 31, 2017",
            "Total current assets",
            "Total current liabilities",
        ],
        [["", "", "", "5,400", "2,300"], ["", "", "", "5,100", "2,250"]],
    )
    make_columns_pdf([earlier], tmp_path / "larkspur-2018-10k.pdf")
    filing.ingestion.ingest_paths([tmp_path / "larkspur-2018-10k.pdf"])
    question = "What is the FY2018 current ratio for Larkspur?"
    bm25 = filing.chat.components.keywords.get(None)
    found = [NodeWithScore(node=TextNode(text="Larkspur", metadata={"file_name": "larkspur-10k.pdf"}), score=1)]
    both = Computation(question, found, bm25, filing.settings.paths.files, also=["larkspur-2018-10k.pdf"])
    assert both.result is not None and both.result.describe(question).startswith("Current ratio: 2.35 = 5,400 / 2,300")
    alone = Computation(question, found, bm25, filing.settings.paths.files)  # the later filing only: its figure
    assert alone.result is not None and alone.result.describe(question).startswith(
        "Current ratio: 2.39 = 5,500 / 2,300"
    )
    other = [NodeWithScore(node=TextNode(text="x", metadata={"file_name": "larkspur-2018-10k.pdf"}), score=1)]
    named = Computation(question, other, bm25, filing.settings.paths.files, also=["larkspur-10k.pdf"])
    assert named.result is not None and "5,500 / 2,300" in named.result.describe(question)  # found, not the company's


def test_a_measure_asked_but_not_answered_alone_has_its_statement_among_the_sources(filing):
    # American Express's "what drove gross margin change": its income statement has no cost of sales,
    # and that page is the evidence the measure does not apply
    from rag_core.chat.computed import computed_for
    from rag_core.chat.engine import Retrieved

    bm25 = filing.chat.components.keywords.get(None)
    cover = [NodeWithScore(node=bm25.nodes[i], score=1.0) for i in bm25.page_nodes[("larkspur-10k.pdf", 1)]]
    question = "Why did Larkspur's FY2019 inventory turnover change?"  # its balance sheet lists no inventories
    preview = {"source": len(cover)}
    computation, found = computed_for(filing.chat.components, question, question, Retrieved(cover), None, preview)
    assert computation is not None and computation.result is None
    pages = [(n.node.metadata or {}).get("page") for n in found.nodes]
    assert pages.count(2) == 1 and pages.index(2) == len(cover) - 1  # in place of the weakest
    assert found.nodes[preview["source"] - 1].node.node_id == cover[-1].node.node_id  # the preview follows
    moved = "Why did Larkspur's FY2019 gross margin change?"  # computed, the model answers why: the same
    computation, found = computed_for(filing.chat.components, moved, moved, Retrieved(cover), None)
    assert computation is not None and computation.result is not None and not computation.answers
    assert [(n.node.metadata or {}).get("page") for n in found.nodes].index(2) == len(cover) - 1


def test_a_filing_with_sections_is_read_by_its_document_s_name(filing, monkeypatch):
    # entity_docs names units: a section of a filing is "AMERICANEXPRESS_2022_10K.pdf (pages 1-155)"
    # (American Express's 10-K, Walmart's 2020 10-K); its statements are its document's
    from rag_core.chat.computed import computed_for
    from rag_core.chat.engine import Retrieved

    components = filing.chat.components
    unit = "larkspur-10k.pdf (pages 1-3)"

    class _Known:
        def document(self, name: str) -> str:
            return name.split(" (pages")[0]

    monkeypatch.setattr(components.entities, "current", lambda: _Known())
    bm25 = components.keywords.get(None)
    cover = [NodeWithScore(node=bm25.nodes[i], score=1.0) for i in bm25.page_nodes[("larkspur-10k.pdf", 1)]]
    question = "What is the FY2019 current ratio for Larkspur?"
    found = Retrieved(cover, stats={"entity_docs": [unit]})
    computation, _ = computed_for(components, question, question, found, None)
    assert computation is not None and computation.result is not None
    assert computation.result.describe(question).startswith("Current ratio: 3.33 = 7,001 / 2,100")


@pytest.mark.parametrize(
    ("question", "pages"),
    [
        # the analysts' wording in FinanceBench's questions on 3M's, American Express's and Coca-Cola's filings
        ("What was the largest liability in Larkspur's Balance Sheet in 2019?", [3]),
        ("Using the P&L, which cost of Larkspur grew most in FY2019?", [2]),
        ("Using the balance sheet and the income statement, how did Larkspur fund its growth in 2019?", [3, 2]),
        ("What does Larkspur sell?", []),  # names no statement: the sources as found
    ],
)
def test_a_statement_the_question_names_is_among_the_sources(filing, question, pages):
    from rag_core.chat.computed import computed_for
    from rag_core.chat.engine import Retrieved

    bm25 = filing.chat.components.keywords.get(None)
    cover = [NodeWithScore(node=bm25.nodes[i], score=1.0) for i in bm25.page_nodes[("larkspur-10k.pdf", 1)]]
    cover += [NodeWithScore(node=TextNode(text=f"note {i}", metadata={"page": 10 + i}), score=0.5) for i in range(4)]
    computation, found = computed_for(filing.chat.components, question, question, Retrieved(cover), None)
    assert computation is not None and computation.result is None  # nothing to compute: the model answers
    shown = [(n.node.metadata or {}).get("page") for n in found.nodes[: len(cover)]]
    assert shown == [1, 10, 11, 12, 13][: len(cover) - len(pages)] + pages  # in place of the weakest, in order
