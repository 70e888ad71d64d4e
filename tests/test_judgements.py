"""The measures a yes-or-no judgement is read by (``figures.judgements``), on the pages of real
10-Ks of two companies (3M's and Corning's 2022 10-Ks, FinanceBench's tune half), and the model
judging from them in the chat."""

from __future__ import annotations

import pytest

from rag_core.figures.formulas import Figure, show
from rag_core.figures.items import LABEL_PATTERNS
from rag_core.figures.judgements import judged_by
from rag_core.figures.statement_titles import ITEM_STATEMENT
from rag_core.figures.statements import find_row, statement_rows, value_in
from rag_core.loaders.layout import page_rows
from tests.pdfgen import make_columns_pdf


def _lookup(path, pages: dict[str, int]):
    """Each item read from its own statement's page, as the chat's computation reads it."""

    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        page = pages.get(ITEM_STATEMENT[item])
        if page is None:
            return None
        row = find_row(statement_rows(page_rows(path, page) or ""), labels, year, LABEL_PATTERNS.get(item))
        got = value_in(row, year) if row is not None else None
        return Figure(item, year, got[0], got[1], f"{path.name}, page {page}") if got else None

    return lookup


@pytest.mark.parametrize(
    ("filing", "pages", "question", "shown"),
    [
        # 3M: capex 1,749 of net sales 34,229; PP&E 9,178 of total assets 46,455; net income attributable
        # to 3M 5,777 (FinanceBench's analysts: "CAPEX/Revenue Ratio: 5.1%, Fixed assets/Total Assets: 20%,
        # Return on Assets= 12.4%")
        (
            "3M_2022_10K.pdf",
            {"income": 48, "balance": 50, "cash": 52},
            "Is 3M a capital-intensive business based on FY2022 data?",
            ["5.11%", "19.76%", "12.44%"],
        ),
        # Corning, a glass maker: capex 1,604 of net sales 14,189; PP&E 15,371 of total assets 29,499
        (
            "CORNING_2022_10K.pdf",
            {"income": 58, "balance": 60, "cash": 61},
            "Is Corning a capital-intensive business based on FY2022 data?",
            ["11.30%", "52.11%", "4.46%"],
        ),
    ],
)
def test_capital_intensity_is_read_by_its_measures_each_from_its_statement(shared_data, filing, pages, question, shown):
    path = shared_data / "eval" / "financebench" / "pdfs" / filing
    results = judged_by(question, [2022], _lookup(path, pages))
    assert results is not None and [show(r.value, r.kind, question) for r in results] == shown
    assert all(f.where.startswith(filing) for r in results for f in r.figures)  # each figure's page


def test_a_judgement_is_asked_only_as_a_yes_or_no_question():
    def lookup(item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        values = {"capex": -30.0, "revenue": 100.0, "ppe": 80.0, "total_assets": 120.0, "net_income": 5.0}
        if item not in values:  # no row of net income attributable: the fallback, "Net income"
            return None
        return Figure(item, year, values[item] * 1e6, str(values[item]), "vega-10k.pdf, page 3")

    results = judged_by("Is Vega a capital-intensive business based on FY2022 data?", [2022], lookup)
    assert results is not None and [round(r.value, 2) for r in results] == [30.0, 66.67, 4.17]
    assert judged_by("Why is Vega capital-intensive in FY2022?", [2022], lookup) is None  # a why, not a yes or no
    assert judged_by("What is the FY2022 capital intensity of Vega?", [2022], lookup) is None  # a value
    missing = lambda item, labels, year: None if item == "ppe" else lookup(item, labels, year)  # noqa: E731
    assert judged_by("Is Vega capital-intensive based on FY2022 data?", [2022], missing) is None  # nothing guessed


# A 10-K of a made-up company, each statement's page shaped as 3M's and Corning's 2022 10-Ks write them
# (figures set apart from their labels, outflows in parentheses).
_COVER = (["FORM 10-K", "WILLOWMERE FOUNDRY CORPORATION", "(Exact name of registrant as specified in its charter)"], [])
_INCOME = (
    [
        *("Willowmere Foundry Corporation", "Consolidated Statements of Income", "(in millions) 2022 2021"),
        *("Net sales", "Cost of sales", "Net income attributable to Willowmere"),
    ],
    [["", "", "", "$ 4,000", "2,900", "150"], ["", "", "", "$ 3,800", "2,800", "140"]],
)
_POSITION = (
    [
        *("Willowmere Foundry Corporation", "Consolidated Balance Sheets (in millions)", "December 31, 2022 2021"),
        *("Total current assets", "Property, plant and equipment, net", "Total assets"),
    ],
    [["", "", "", "1,200", "3,100", "$ 5,000"], ["", "", "", "1,100", "3,000", "$ 4,800"]],
)
_CASH = (
    [
        *("Willowmere Foundry Corporation", "Consolidated Statements of Cash Flows", "(in millions) 2022 2021"),
        *("Net cash provided by operating activities", "Capital expenditures"),
    ],
    [["", "", "", "700", "(520)"], ["", "", "", "650", "(480)"]],
)


def test_the_model_judges_from_each_measure_with_its_page(make_settings, llm, tmp_path):
    from rag_core import build_context
    from rag_core.chat.computed import COMPUTED_LEAD

    ctx = build_context(make_settings(), llm=llm)
    make_columns_pdf([_COVER, _INCOME, _POSITION, _CASH], tmp_path / "willowmere-10k.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "willowmere-10k.pdf"])
    llm.script(answers=["Yes: capex is 13.00% of revenue [1]."])
    turn = ctx.chat.ask("Is Willowmere a capital-intensive business based on FY2022 data?")
    read = str(llm.chats[-1][-1].content)
    computed = ("13.00% = 520 / 4,000 * 100", "62.00% = 3,100 / 5,000 * 100", "3.00% = 150 / 5,000 * 100")
    assert all(shown in read for shown in computed)  # the model read every measure, not its impression
    assert turn.answer.startswith("Yes: capex is 13.00% of revenue")  # the verdict is the model's
    assert f"{COMPUTED_LEAD}\n- Fixed assets" in turn.answer and "- Return on assets" in turn.answer  # unstated
    assert "- Capex as a % of revenue" not in turn.answer  # stated by the model: not repeated
    assert {s["page"] for s in turn.sources[:3]} == {2, 3, 4}  # the three statements' pages lead the sources
    assert turn.figures_unsupported == 0  # the measures count as their first operand's source
