"""A document's outline: which lines of a PDF are headings, which sentences are definitions."""

from __future__ import annotations

import pytest

from rag_core.outline import definition_question, heading_line, outline, start_text
from tests.pdfgen import make_pdf


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("Chapter 2: Capacity", "Capacity"),
        ("3.1 Nested Trace Tree Formation", "Nested Trace Tree Formation"),
        ("RISK FACTORS", "Risk Factors"),
        ("Item 1A. Risk Factors 20", "Risk Factors"),  # a contents line: its page number goes
        ("Earnings Per Share", "Earnings Per Share"),
        ("The pump delivers 42 litres per minute.", None),  # a sentence
        ("Total net sales $ 82,959", None),  # a table row
        ("Mozilla Corporation∗", None),  # an affiliation mark
        ("Preemptive Information Extraction is an", None),  # a wrapped line
        ("Iiiiiiiiiiiiiiiiiiii 2", None),
        ("D D", None),
        ("Chapter IV", None),  # where, not what about
    ],
)
def test_heading_lines(line, heading):
    assert heading_line(line) == heading


@pytest.mark.parametrize(
    ("sentence", "question"),
    [
        ("Bananas are yellow fruit that grow in bunches.", "What are bananas?"),
        ("Green tea is steamed soon after picking.", "What is green tea?"),
        ("The Zephyr pump is a small electric pump.", "What is the Zephyr pump?"),
        ("ICF is a measure of how common a pattern is.", "What is ICF?"),
        ("It is a small pump.", None),
        ("Because traces are short, they compile fast.", None),
        ("The answer is not obvious.", None),
        ("resentations are stored in the cache.", None),  # the end of a word broken over lines
    ],
)
def test_definition_questions(sentence, question):
    assert definition_question(sentence) == question


def test_the_outline_of_a_pdf_has_its_headings_by_page_and_the_llm_gets_its_prose(ctx, tmp_path):
    make_pdf(
        [
            "ACME PUMPS LTD\n12 Harbour Road\nAnnual Report 2023",  # a cover page: labels, no running text
            "1. Introduction\nThe year brought new Kestrel pumps and a larger dealer network in the north.\n"
            "Kestrel pumps are pumps for deep wells and boreholes in dry regions.",
            "2. Sales by Region\nSales grew in every region except the coast, where storms closed two shops.\n"
            "Region Units Revenue\nNorth 1,200 3.1\nSouth 900 2.2",
        ],
        tmp_path / "report.pdf",
    )
    ctx.ingestion.ingest_file(tmp_path / "report.pdf")
    got = outline("report.pdf", ctx.index)
    assert got["headings"] == [["Introduction", 2], ["Sales by Region", 3]]  # the cover's lines are no headings
    assert got["facts"] == ["What are Kestrel pumps?"]  # "Kestrel" is capitalised inside a sentence too
    assert got["title"] == ""  # a PDF's first line is not trusted as its title
    prompt_text = start_text("report.pdf", ctx.index, 1200)
    assert prompt_text.startswith("1. Introduction") and "Harbour Road" not in prompt_text
    assert len(start_text("report.pdf", ctx.index, 40)) == 40


def test_a_name_at_the_start_of_a_wrapped_line_is_no_heading():
    from rag_core.outline import _heading_lines

    novel = (
        "The guests talked a great deal about the war, and about\n"
        "Anna Pavlovna\n"
        "who had had a cough for some days and was tired of it all.\n"
    )
    assert _heading_lines(novel) == []
    report = "Sales Overview\nSales grew in every region except the coast, where storms closed shops.\n"
    assert _heading_lines(report) == ["Sales Overview"]
    # A chunk that starts inside its page may start mid-line: its first line is not trusted.
    assert _heading_lines(report, whole_first_line=False) == []


def test_a_tables_header_of_names_is_no_section():
    """A paper's results table: its header "Training Model NQ TriviaQA WQ TREC SQuAD" is
    followed by rows that read like words ("Single BM25+BERT (Lee et al., 2019) 26.5 …"): no
    "What does the section on Training Model NQ … say?" is offered."""
    text = (
        "Training Model NQ TriviaQA WQ TREC SQuAD\n"
        "Single BM25+BERT (Lee et al., 2019) 26.5 47.1 17.7 21.3 33.2\n"
        "Single ORQA (Lee et al., 2019) 33.3 45.0 36.4 30.1 20.2\n"
        "Results and Analysis\n"
        "The retriever is trained on the question and passage pairs of each of the datasets.\n"
    )
    from rag_core.outline import _heading_lines

    assert _heading_lines(text) == ["Results and Analysis"]
