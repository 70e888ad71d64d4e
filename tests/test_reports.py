"""The one report a question names among a company's several (rag_core.retrieval.reports): by
quarter and year, or the latest. Real PDFs, real Chroma, the hash embedding."""

from __future__ import annotations

from datetime import date

from rag_core import build_context
from rag_core.retrieval.dates import Covers, reported
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

    def dated() -> Covers:
        read.append(1)
        return dates, {}, {}

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


# Covers as the SEC form words them (3M's 2018 and 2022 10-Ks, Corning's 2020-2022, Walmart's
# fiscal year ended January 31, 2020; NVIDIA's 10-Q of its fiscal 2024's third quarter)
ANNUAL = "For the fiscal year ended December 31, {}\nCommission file number 1-3285"
YEARS = {f"3M_{y}_10K.pdf": ("year", date(y, 12, 31)) for y in (2018, 2020, 2022)}


def test_a_year_asked_drops_the_filings_of_earlier_periods_only():
    units = list(YEARS)

    def covers() -> Covers:
        return {}, {}, YEARS

    assert named_reports("Is 3M a capital-intensive business based on FY2022 data?", units, str, covers) == [
        "3M_2022_10K.pdf"
    ]
    fy21 = "How much has the effective tax rate of 3M changed between FY2021 and FY2022?"
    assert named_reports(fy21, units, str, covers) == ["3M_2022_10K.pdf"]
    # a 10-K's statements give its year and the two before: the 2022 10-K gives FY2020, not FY2018
    assert named_reports("3M's FY20 capex?", units, str, covers) == ["3M_2020_10K.pdf", "3M_2022_10K.pdf"]
    assert named_reports("What drove 3M's growth in fiscal 2018?", units, str, covers) == [
        "3M_2018_10K.pdf",
        "3M_2020_10K.pdf",
    ]
    # no filing gives both years: those that may give the earliest
    assert named_reports("3M's revenue between FY2016 and FY2022?", units, str, covers) == units
    assert named_reports("3M's revenue in 2030?", units, str, covers) == units  # none reports it: kept
    assert named_reports("What capex does 3M expect for 2022?", units, str, covers) == units  # looking ahead
    assert named_reports("What was 3M's capex?", units, str, covers) == units
    unknown = [*units, "3m-analyst-day.pdf"]  # no cover: it may report the year
    assert named_reports("3M's FY2022 revenue?", unknown, str, covers) == ["3M_2022_10K.pdf", "3m-analyst-day.pdf"]
    # a 10-Q may be of the next fiscal year already: NVIDIA's quarter ended October 29, 2023 is of fiscal 2024
    nvidia = {"NVDA 10-Q.pdf": ("quarter", date(2023, 10, 29)), "NVDA 10-K FY2022.pdf": ("year", date(2022, 1, 30))}
    assert named_reports("NVIDIA's fiscal 2024 revenue so far?", list(nvidia), str, lambda: ({}, {}, nvidia)) == [
        "NVDA 10-Q.pdf"
    ]


def test_the_filings_that_give_every_year_asked_are_kept_when_there_are():
    # Corning's 2020, 2021 and 2022 10-Ks (covers "For the fiscal year ended December 31, 2022"):
    # "between FY2021 and FY2022" is in the 2022 10-K's statements; the 2021 one gives FY2021 alone
    corning = {f"CORNING_{y}_10K.pdf": ("year", date(y, 12, 31)) for y in (2020, 2021, 2022)}
    units = list(corning)

    def covers() -> Covers:
        return {}, {}, corning

    changed = "How much has the effective tax rate of Corning changed between FY2021 and FY2022?"
    assert named_reports(changed, units, str, covers) == ["CORNING_2022_10K.pdf"]
    average = "What is the FY2019 - FY2021 3 year average operating margin for Corning?"
    assert named_reports(average, units, str, covers) == ["CORNING_2021_10K.pdf"]
    assert named_reports("Corning's FY2020 capex?", units, str, covers) == units  # each gives FY2020
    unknown = [*units, "corning-investor-day.pdf"]  # no cover: it may give them
    assert named_reports(changed, unknown, str, covers) == ["CORNING_2022_10K.pdf", "corning-investor-day.pdf"]


def test_quarterly_reports_alone_are_kept_by_the_earliest_year():
    # JPMorgan's 10-Qs ("For the quarterly period ended March 31, 2021", June 30, 2022 and June 30, 2023)
    # and Apple's ("For the Quarterly Period Ended June 25, 2022"): a 10-Q's statements give quarters,
    # so no 10-Q narrows a question to itself as giving every year named
    jpm = {
        "JPMORGAN_2021Q1_10Q.pdf": ("quarter", date(2021, 3, 31)),
        "JPMORGAN_2022Q2_10Q.pdf": ("quarter", date(2022, 6, 30)),
        "JPMORGAN_2023Q2_10Q.pdf": ("quarter", date(2023, 6, 30)),
    }
    units = list(jpm)
    both = "How did JPMorgan's net interest income change between 2022 and 2023?"
    assert named_reports(both, units, str, lambda: ({}, {}, jpm)) == units  # each may give 2022's quarter
    # beside a 10-K that gives the years, a 10-Q of the latest year is kept (Apple's 10-K for fiscal 2022)
    apple = {
        "AAPL 10-K 2022.pdf": ("year", date(2022, 9, 24)),
        "2023 Q3 AAPL.pdf": ("quarter", date(2023, 7, 1)),
        "AAPL 10-K 2021.pdf": ("year", date(2021, 9, 25)),
    }
    fy = "How did Apple's net sales change between fiscal 2021 and fiscal 2022?"
    assert named_reports(fy, list(apple), str, lambda: ({}, {}, apple)) == ["AAPL 10-K 2022.pdf"]
    assert named_reports("Apple's net sales in fiscal 2022?", list(apple), str, lambda: ({}, {}, apple)) == [
        "AAPL 10-K 2022.pdf",
        "2023 Q3 AAPL.pdf",
    ]


def test_a_cover_says_the_period_its_filing_reports():
    assert reported(ANNUAL.format(2022)) == ("year", date(2022, 12, 31))
    assert reported("FORM 10-K\nFor the fiscal year ended January 31, 2020\nor") == ("year", date(2020, 1, 31))
    jpmorgan = "For the quarterly period ended Commission file March 31, 2021 number 1-5805 JPMorgan Chase & Co."
    assert reported(jpmorgan) == ("quarter", date(2021, 3, 31))
    assert reported("Apple Inc.\nFor the Quarterly Period Ended June 25, 2022") == ("quarter", date(2022, 6, 25))
    assert reported("Acme Inc. Reports Results for the Third Quarter of Fiscal 2024") is None


def test_the_real_covers_say_their_periods(shared_data):
    import pypdfium2 as pdfium

    expected = {
        "financebench/pdfs/3M_2018_10K.pdf": ("year", date(2018, 12, 31)),
        "financebench/pdfs/CVSHEALTH_2022_10K.pdf": ("year", date(2022, 12, 31)),
        "financebench/pdfs/WALMART_2020_10K.pdf": ("year", date(2020, 1, 31)),
        "financebench/pdfs/JPMORGAN_2021Q1_10Q.pdf": ("quarter", date(2021, 3, 31)),
        "sec10q/data/v1/docs/2023 Q3 NVDA.pdf": ("quarter", date(2023, 10, 29)),
        "sec10q/data/v1/docs/2022 Q3 AAPL.pdf": ("quarter", date(2022, 6, 25)),
    }
    for path, period in expected.items():
        pdf = pdfium.PdfDocument(shared_data / "eval" / path)
        assert reported(pdf[0].get_textpage().get_text_range()) == period, path


def test_a_question_naming_a_year_is_answered_from_the_filings_that_report_it(make_settings, tmp_path):
    for year in (2018, 2022):
        cover = f"3M Company\nFORM 10-K\n{ANNUAL.format(year)}\nAnnual report of 3M Company."
        make_pdf([cover, STATEMENT, DISCUSSION, OTHER], tmp_path / f"3M_{year}_10K.pdf")
    ctx = build_context(make_settings(data_dir=tmp_path / "data", top_k=5))
    ctx.ingestion.ingest_paths([tmp_path / f"3M_{year}_10K.pdf" for year in (2018, 2022)])

    def files(question: str) -> set[str]:
        return {s["file"] for s in ctx.chat.search(question).sources}

    assert files("What were 3M's operating expenses?") == {"3M_2018_10K.pdf", "3M_2022_10K.pdf"}
    assert files("What were 3M's operating expenses in FY2022?") == {"3M_2022_10K.pdf"}
    # the 2022 10-K's statements give 2020-2022: FY2018 is the 2018 10-K's
    assert files("What were 3M's operating expenses in FY2018?") == {"3M_2018_10K.pdf"}
