"""Documents by their dates (rag_core.retrieval.dates): "the latest report" read from the dates on
the documents' first pages. Real PDFs, real Chroma, the hash embedding."""

from __future__ import annotations

from rag_core import build_context
from rag_core.retrieval.dates import asks_latest, dates_in
from tests.test_pages import filing


def test_dates_written_out_are_read_and_impossible_ones_skipped():
    found = dates_in("For the quarterly period ended July 1, 2023; as of February 30, 2023; June 25,2022")
    assert {(d.year, d.month, d.day) for d in found} == {(2023, 7, 1), (2022, 6, 25)}


def test_the_latest_report_is_the_latest_dated_of_the_companys_documents(make_settings, tmp_path):
    dates = {"apple-a.pdf": "April 1, 2023", "apple-b.pdf": "July 1, 2023", "apple-c.pdf": "December 31, 2022"}
    for name, cover_date in dates.items():  # the oldest says "latest 10-Q" in words: it wins without dates
        filing(tmp_path / name, "Apple", cover_date, "\nThe latest lease." if name == "apple-c.pdf" else "")
    question = "What were Apple's operating expenses in the latest 10-Q?"
    assert asks_latest(question) and asks_latest("the most recent report") and not asks_latest("the late fee")
    first = {}
    for weight in (0.0, 1.0):
        ctx = build_context(make_settings(latest_weight=weight, report_scope=False, data_dir=tmp_path / f"w{weight}"))
        ctx.ingestion.ingest_paths([tmp_path / name for name in dates])
        first[weight] = ctx.chat.search(question).sources[0]["file"]
    assert first[1.0] == "apple-b.pdf"
    assert first[0.0] == "apple-c.pdf"
