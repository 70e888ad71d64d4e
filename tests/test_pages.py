"""Pages by structure (rag_core.retrieval.pages): the statement page a question's line items name,
of the document the question's names and dates are on the cover of. Real PDFs, real Chroma, the
hash embedding."""

from __future__ import annotations

from rag_core import build_context
from rag_core.retrieval.pages import label_terms, question_terms, row_labels
from tests.pdfgen import make_pdf

STATEMENT = """CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)
(In millions)
Three Months Ended
Net sales:
Products $ 96,388 $ 104,429
Services 20,766 19,516
Total net sales 117,154 123,945
Cost of sales 66,822 69,702
Gross margin 50,332 54,243
Operating expenses:
Research and development 7,709 6,306
Selling, general and administrative 6,607 6,449
Total operating expenses 14,316 12,755
Operating income 36,016 41,488
Net income $ 29,998 $ 34,630"""

DISCUSSION = """Management discussion of the quarter
The revenue of the quarter and the operating expenses of the quarter are discussed here.
Revenue grew in some regions and fell in others; operating expenses rose with headcount.
Management compares revenue with operating expenses every quarter and expects revenue and
operating expenses to move together. Revenue, operating expenses, revenue, operating expenses."""

OTHER = """Employees and offices
The company had many employees in many offices in many countries during the quarter.
Its offices are leased; its employees work in engineering, sales and administration."""


def filing(path, company: str, cover_date: str, extra: str = "") -> None:
    cover = f"{company} Inc.\nFORM 10-Q\nFor the quarterly period ended {cover_date}\nQuarterly report of {company}."
    make_pdf([cover, STATEMENT.replace("Three Months", f"{company} Three Months"), DISCUSSION, OTHER + extra], path)


def test_row_labels_are_the_text_before_a_rows_figures_and_the_titles():
    labels = row_labels(STATEMENT + "\nThe Company's net sales increased 5% compared with last year.")
    assert label_terms("operating expenses") in labels  # "Total operating expenses 14,316 12,755"
    assert label_terms("research and development") in labels
    assert label_terms("operations") in labels  # the title, its generic words left out
    assert label_terms("operations") == label_terms("operating")  # "Net cash from operations"
    assert label_terms("Operating income (loss)") == label_terms("operating income")  # the sign, not the item
    assert not any("increased" in label for label in labels)  # prose with a figure is not a row


def test_question_terms_add_the_words_filings_use():
    terms = question_terms("How much did they spend on R&D, and what was revenue?")
    assert {"research", "development", "net", "sale"} <= terms
    assert "inventory" in question_terms("What were the inventories?")


def test_a_question_naming_line_items_gets_the_statement_page_of_its_company(make_settings, tmp_path):
    filing(tmp_path / "apple.pdf", "Apple", "December 31, 2022")
    filing(tmp_path / "orange.pdf", "Orange", "December 31, 2022")
    question = "How did Apple's operating expenses compare to its revenue in the quarter?"
    listed = {}
    for weight in (0.0, 1.0):
        ctx = build_context(make_settings(statement_weight=weight, top_k=2, data_dir=tmp_path / f"w{weight}"))
        ctx.ingestion.ingest_paths([tmp_path / "apple.pdf", tmp_path / "orange.pdf"])
        found = ctx.chat.search(question)
        listed[weight] = [(s["file"], s["page"]) for s in found.sources if "statement_score" in s]
    assert listed[0.0] == []
    assert listed[1.0] == [("apple.pdf", 2)]  # the statement's rows name both; Apple's, not Orange's


def test_a_question_naming_no_line_item_is_searched_as_before(make_settings, tmp_path):
    filing(tmp_path / "apple.pdf", "Apple", "December 31, 2022")
    found = {}
    for weight in (0.0, 1.0):
        ctx = build_context(make_settings(statement_weight=weight, data_dir=tmp_path / f"w{weight}"))
        ctx.ingestion.ingest_paths([tmp_path / "apple.pdf"])
        found[weight] = ctx.chat.search("Where do the employees work?")
    assert [s["text"] for s in found[0.0].sources] == [s["text"] for s in found[1.0].sources]
    assert not any("statement_score" in s for s in found[1.0].sources)


def test_the_statement_is_the_one_of_the_filing_whose_cover_holds_the_stated_date(make_settings, tmp_path):
    dates = {"a.pdf": "April 1, 2023", "b.pdf": "July 1, 2023"}  # file names say nothing of the period
    for name, cover_date in dates.items():  # each holds the other's period in its text, as filings do
        other = "July 1, 2023" if name == "a.pdf" else "April 1, 2023"
        filing(tmp_path / name, "Apple", cover_date, f"\nThe quarter ended {other} is discussed in another report.")
    question = "How did Apple's operating expenses compare to its revenue in the quarter ended July 1, 2023?"
    ctx = build_context(make_settings(data_dir=tmp_path / "d"))
    ctx.ingestion.ingest_paths([tmp_path / name for name in dates])
    sources = ctx.chat.search(question).sources
    statements = [(s["file"], s["page"]) for s in sources if "statement_score" in s]
    assert statements and set(statements) == {("b.pdf", 2)}  # the same rows in a.pdf: not its period


def test_label_words_on_most_pages_of_a_document_and_the_questions_names_pick_no_page(tmp_path):
    from rag_core.retrieval.pages import PageLabels

    class Node:
        def __init__(self, text: str, page: int, doc: str) -> None:
            self.text, self.metadata, self.doc = text, {"page": page}, doc

        def get_content(self) -> str:
            return self.text

    header = "ACME WIDGETS HOLDINGS"  # a running header, set in capitals on every page
    nodes = [Node(f"{header}\nRow {i} label {i} 1,234 5,678", i, "acme.pdf") for i in range(1, 6)]
    labels = PageLabels.build(nodes, lambda n: n.doc)
    assert all("widget" not in label for entries in labels.chunks.values() for _, ls in entries for label in ls)
    assert labels.covers["acme.pdf"] >= {"acme", "widgets"}
