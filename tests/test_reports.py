"""The one report a question names among a company's several (rag_core.retrieval.reports): by
quarter and year, or the latest. Real PDFs, real Chroma, the hash embedding."""

from __future__ import annotations

from datetime import date

from rag_core import build_context
from rag_core.retrieval.reports import named_reports, names_report
from tests.pdfgen import make_pdf
from tests.test_pages import DISCUSSION, OTHER, STATEMENT, filing

COVERS = {
    "2022 Q4 AAPL.pdf": "December 31, 2022",
    "2023 Q1 AAPL.pdf": "April 1, 2023",
    "2023 Q2 AAPL.pdf": "July 1, 2023",
}


def test_the_report_named_by_quarter_and_year_or_the_latest_is_kept():
    units = list(COVERS)
    dates = {"2022 Q4 AAPL.pdf": date(2022, 12, 31), "2023 Q1 AAPL.pdf": date(2023, 4, 1)}
    read = []

    def dated() -> tuple[dict[str, date], dict[str, tuple[int, int]]]:
        read.append(1)
        return dates, {}

    assert named_reports("Apple's revenue in the Q1 2023 10-Q?", units, str, dated) == ["2023 Q1 AAPL.pdf"]
    assert named_reports("Apple's revenue in its first quarter 2023 report?", units, str, dated) == ["2023 Q1 AAPL.pdf"]
    assert not read  # the covers are read only when no file name tells
    assert named_reports("Apple's revenue in the most recent 10-Q?", units, str, dated) == ["2023 Q1 AAPL.pdf"]
    assert named_reports("Apple's revenue in the Q3 2021 10-Q?", units, str, dated) == units  # none is that one
    assert named_reports("Apple's revenue in the first quarter of 2023?", units, str, dated) == ["2023 Q1 AAPL.pdf"]
    both = "How did Apple's revenue in Q1 2023 compare with Q4 2022?"
    assert named_reports(both, units, str, dated) == ["2022 Q4 AAPL.pdf", "2023 Q1 AAPL.pdf"]
    assert named_reports("Apple's revenue for the quarter ended April 1, 2023?", units, str, dated) == units
    assert named_reports("Apple's revenue in the Q1 2023 10-Q?", ["2023 Q1 AAPL.pdf"], str, dated) == [
        "2023 Q1 AAPL.pdf"
    ]
    assert names_report("the latest 10-Q") and names_report("Apple's most recent quarterly report")
    assert names_report("in the latest quarter") and not names_report("What was revenue in 2023?")
    assert not names_report("What is Apple's latest product?")  # the newest of something else
    assert named_reports("Apple's latest product?", units, str, dated) == units


def test_a_question_naming_one_of_a_companys_filings_is_answered_from_that_filing(make_settings, tmp_path):
    for name, cover in COVERS.items():
        filing(tmp_path / name, "Apple", cover)
    filing(tmp_path / "orange.pdf", "Orange", "July 1, 2023")
    ctx = build_context(make_settings(data_dir=tmp_path / "data", top_k=5))
    ctx.ingestion.ingest_paths([tmp_path / name for name in [*COVERS, "orange.pdf"]])

    def files(question: str) -> set[str]:
        return {s["file"] for s in ctx.chat.search(question).sources}

    assert files("What were Apple's operating expenses?") > {"2023 Q1 AAPL.pdf"}  # all three filings rank alike
    assert files("What were Apple's operating expenses in the Q1 2023 10-Q?") == {"2023 Q1 AAPL.pdf"}
    assert files("What were Apple's operating expenses in the latest 10-Q?") == {"2023 Q2 AAPL.pdf"}
    assert len(files("What were Apple's operating expenses in the Q3 2021 10-Q?") - {"orange.pdf"}) > 1


def test_a_library_of_one_companys_filings_answers_the_report_named_without_the_company(make_settings, tmp_path):
    for name, cover in COVERS.items():
        filing(tmp_path / name, "Apple", cover)
    ctx = build_context(make_settings(data_dir=tmp_path / "data", top_k=5))
    ctx.ingestion.ingest_paths([tmp_path / name for name in COVERS])
    found = ctx.chat.search("What were the operating expenses in the Q1 2023 10-Q?")
    assert {s["file"] for s in found.sources} == {"2023 Q1 AAPL.pdf"}
    assert found.stats["report"] == ["2023 Q1 AAPL.pdf"]
    assert len({s["file"] for s in ctx.chat.search("What were the operating expenses?").sources}) > 1


def test_a_release_named_by_the_quarter_on_its_first_page_is_the_one_asked(make_settings, tmp_path):
    names = {"acme-release-a.pdf": "Second", "acme-release-b.pdf": "Third", "acme-release-c.pdf": "Fourth"}
    for name, quarter in names.items():
        title = f"Acme Inc. Reports Results for the {quarter} Quarter of Fiscal 2024\nAcme Inc. (Nasdaq: ACME)"
        make_pdf([title, STATEMENT, DISCUSSION, OTHER], tmp_path / name)
    ctx = build_context(make_settings(data_dir=tmp_path / "data", top_k=5))
    ctx.ingestion.ingest_paths([tmp_path / name for name in names])
    found = ctx.chat.search("What were Acme's total operating expenses in Q3 FY24?")
    assert {s["file"] for s in found.sources} == {"acme-release-b.pdf"}
    assert len({s["file"] for s in ctx.chat.search("What were Acme's total operating expenses?").sources}) > 1
