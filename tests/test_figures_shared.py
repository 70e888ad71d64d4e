"""The figure check and the table reader on real filings (the shared SEC 10-Q PDFs, read as
the loader reads them). Skipped when ../shared is absent."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from rag_core.evaluation.answers import figure_matches, gold_figures
from rag_core.evaluation.answers import figures as answer_figures
from rag_core.figures import Page, Passage, check_answer, document_entity, find_cells, parse_tables

pytestmark = pytest.mark.shared

DATA = Path(__file__).parent / "data"


@pytest.fixture
def docs(shared_data) -> Path:
    folder = shared_data / "eval" / "sec10q" / "data" / "v1" / "docs"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    return folder


@cache
def pages_of(path: Path) -> tuple[str, ...]:
    import pypdfium2 as pdfium

    from rag_core.loaders.pdf import _clean_pdf_text

    pdf = pdfium.PdfDocument(str(path))
    try:
        out = []
        for i in range(len(pdf)):
            textpage = pdf[i].get_textpage()
            out.append(_clean_pdf_text(textpage.get_text_bounded()))
            textpage.close()
        return tuple(out)
    finally:
        pdf.close()


def passage(docs: Path, number: int, name: str, page: int) -> Passage:
    texts = pages_of(docs / name)
    return Passage(number, texts[page - 1], name, page, document_entity(texts[0]))


def test_a_real_statement_page_reads_as_one_table(docs):
    (table,) = parse_tables(pages_of(docs / "2023 Q2 NVDA.pdf")[2])
    rows = {r.item.label: r for r in table.rows}
    net = rows["Net income"]
    assert [(c.number.clean, c.column.describe()) for c in net.cells[:3] if c.number and c.column] == [
        ("$6,188", "three months ended July 30, 2023"),
        ("$656", "three months ended July 31, 2022"),
        ("$8,232", "six months ended July 30, 2023"),
    ]
    assert table.scale == 1e6


def test_the_dangerous_errors_on_real_pages(docs):
    sources = [
        passage(docs, 1, "2023 Q2 NVDA.pdf", 3),
        passage(docs, 2, "2023 Q2 NVDA.pdf", 30),
        passage(docs, 3, "2023 Q2 AMZN.pdf", 4),
    ]
    question = "What was NVIDIA's net income for the quarter ended July 30, 2023?"
    wrong_row = check_answer(
        "NVIDIA's net income for the quarter ended July 30, 2023 was $6,728 million [1].", question, sources
    )
    assert wrong_row.figures[0].status == "mismatch"
    assert wrong_row.figures[0].source.startswith("[2] Compute & Networking")
    right = check_answer(
        "NVIDIA's net income for the quarter ended July 30, 2023 was $6,188 million [1].", question, sources
    )
    assert right.figures_unsupported == 0
    six = check_answer(
        "Amazon's total net sales for the quarter ended June 30, 2023 were $261,741 million [3].",
        "What were Amazon's total net sales for the quarter ended June 30, 2023?",
        sources,
    )
    assert six.figures[0].status == "mismatch" and "six months ended June 30, 2023" in six.figures[0].source
    rounded = check_answer("NVIDIA's revenue was $13.51 billion in the quarter [1].", question, sources)
    assert rounded.figures[0].status == "normalised"


@pytest.mark.parametrize("questions", ["sec_shapes.jsonl", "figure_cells.jsonl"])
def test_find_cells_on_every_page_of_every_filing(docs, questions):
    """Period and comparison questions (the shapes set; statements and line items of all five
    companies), the cells looked for in all 20 filings at once: each figure from its own
    company's filing and its own period."""
    pages = []
    for path in sorted(docs.glob("*.pdf")):
        texts = pages_of(path)
        entity = document_entity(texts[0])
        pages += [Page(t, path.name, i + 1, entity) for i, t in enumerate(texts)]
    right = {"period": 0, "compare": 0}
    total = {"period": 0, "compare": 0}
    for line in (DATA / questions).read_text().splitlines():
        q = json.loads(line)
        if q["shape"] not in right:
            continue
        previous = q["history"][0] if q.get("history") else ""
        got = [m for m in find_cells(q["question"], pages, previous) if m is not None]
        wanted = gold_figures(q["gold_answer"])
        ok = len(got) == len(wanted) and all(
            any(figure_matches(g, f) for m in got for f in answer_figures(m.number.text)) for g in wanted
        )
        companies = {document_entity(pages_of(docs / f)[0]) for f in q["gold_files"]}
        ok = ok and all(m.page.entity in companies for m in got)
        total[q["shape"]] += 1
        right[q["shape"]] += ok
    assert right["period"] == total["period"] > 0
    assert right["compare"] >= 0.9 * total["compare"]


def test_a_list_of_years_labelled_fy_gives_each_figure_the_label_before_it(shared_data):
    # The local model listed capex by fiscal year, tried as a user on Corning's 2022 10-K: each
    # "FY2021:" is the period of the figure after it, not of the one before ("$1,604 million, FY2021:").

    from rag_core.figures import Passage, check_answer
    from rag_core.loaders.layout import page_rows

    pdfs: Path = shared_data / "eval" / "financebench" / "pdfs"
    for filing, page, company, (y22, y21, y20) in (
        ("CORNING_2022_10K.pdf", 61, "Corning Incorporated", ("1,604", "1,637", "1,377")),
        ("3M_2022_10K.pdf", 52, "3M Company", ("1,749", "1,603", "1,501")),
    ):
        passage = [Passage(1, page_rows(pdfs / filing, page) or "", filing, page, company)]
        question = "Is it a capital-intensive business based on FY2022 data?"
        listed = f"Capital expenditures (FY2022: ${y22} million, FY2021: ${y21} million, FY2020: ${y20} million) [1]."
        assert [f.status for f in check_answer(listed, question, passage).figures] == ["found"] * 3
        swapped = f"Capital expenditures (FY2022: ${y21} million, FY2021: ${y22} million, FY2020: ${y20} million) [1]."
        assert [f.status for f in check_answer(swapped, question, passage).figures] == ["mismatch", "mismatch", "found"]
        # the list's last figure keeps its clause: ") and fixed assets …" is the next line item's, as the model went on
        went_on = listed[:-6] + ") and fixed assets as a % of total assets indicate it is capital-intensive [1]."
        assert [f.status for f in check_answer(went_on, question, passage).figures] == ["found"] * 3
        wrong_last = went_on.replace(f"FY2020: ${y20}", f"FY2020: ${y22}")
        assert [f.status for f in check_answer(wrong_last, question, passage).figures][2] == "mismatch"
