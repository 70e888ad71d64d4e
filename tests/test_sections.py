"""A document that joins others' pages (a binder of filings) is read per section
(rag_core.entities.sections; issue 18, item 8): a question about one company of it is
answered from that company's pages. Real SEC filings joined with PDFium, real Chroma and
SQLite; skipped without the shared corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core import build_context
from rag_core.entities import EntityIndex
from rag_core.entities.scope import decide
from rag_core.entities.sections import _declared, read_sections

FILINGS = Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "sec10q" / "data" / "v1" / "docs"
APPLE, MICROSOFT, INTEL = (FILINGS / f"2023 Q1 {t}.pdf" for t in ("AAPL", "MSFT", "INTC"))
# Both filings are for the quarter ended December 31, 2022: only the company tells them apart.
QUESTION = "What was {}'s total revenue for the three months ended December 31, 2022?"

pytestmark = pytest.mark.skipif(not FILINGS.is_dir(), reason="needs ../shared (the SEC 10-Q filings)")


def _texts(pdf: Path) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(pdf))
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def _join(sources: list[Path], out: Path) -> list[tuple[int, int]]:
    """``sources`` joined into ``out`` with PDFium; each one's (first, last) page in it."""
    import pypdfium2 as pdfium

    joined = pdfium.PdfDocument.new()
    spans = []
    for src in sources:
        doc = pdfium.PdfDocument(str(src))
        first = len(joined) + 1
        joined.import_pages(doc)
        spans.append((first, len(joined)))
        doc.close()
    joined.save(str(out))
    joined.close()
    return spans


def _chunks(texts: list[str]) -> list[tuple[int, str]]:
    return [(i + 1, t) for i, t in enumerate(texts)]


# ============================================================================ reading the sections
def test_a_binder_of_filings_has_a_section_per_filing_each_about_its_registrant():
    apple, microsoft, intel = _texts(APPLE), _texts(MICROSOFT), _texts(INTEL)
    sections = read_sections("binder.pdf", _chunks(apple + microsoft + intel))
    assert [(s.first, s.last) for s in sections] == [
        (1, len(apple)),
        (len(apple) + 1, len(apple) + len(microsoft)),
        (len(apple) + len(microsoft) + 1, len(apple) + len(microsoft) + len(intel)),
    ]
    # Microsoft's cover names no "(Exact name of registrant …)": its letterhead and trading symbols do.
    assert [[(x.name, x.tickers) for x in s.profile.subjects] for s in sections] == [
        [("Apple Inc.", ["aapl"])],
        [("Microsoft Corporation", ["msft"])],
        [("Intel Corporation", ["intc"])],
    ]


def test_a_single_filing_has_no_sections_though_another_company_heads_one_of_its_pages():
    intel = _texts(INTEL)
    # Intel's litigation note heads a page with "VLSI Technology LLC"; its signature page
    # names Intel again: neither starts a section.
    declared = [found[0].name for t in intel if (found := _declared(t))]
    assert "VLSI Technology LLC" in declared and "INTEL CORPORATION" in declared[1:]
    assert read_sections("2023 Q1 INTC.pdf", _chunks(intel)) == []
    assert read_sections("2023 Q1 MSFT.pdf", _chunks(_texts(MICROSOFT))) == []


def test_a_book_before_the_filings_is_a_section_about_nothing_in_particular():
    pages = [f"Chapter {i}\nThe river ran past the mill, and the miller counted sacks of grain." for i in range(1, 7)]
    microsoft, apple = _texts(MICROSOFT), _texts(APPLE)
    sections = read_sections("binder.pdf", _chunks(pages + microsoft + apple))
    assert [s.first for s in sections] == [1, 7, 7 + len(microsoft)]
    assert sections[0].profile.subjects == []
    # A book alone, or a book and one filing, is not split: no two sections about different subjects.
    assert read_sections("book.pdf", _chunks(pages)) == []
    assert read_sections("book and filing.pdf", _chunks(pages + microsoft)) == []


# ============================================================================ answering from them
@pytest.fixture
def binder(make_settings, llm, tmp_path):
    spans = _join([APPLE, MICROSOFT], tmp_path / "binder.pdf")
    ctx = build_context(make_settings(), llm=llm)
    [result] = ctx.ingestion.ingest_paths([tmp_path / "binder.pdf"])
    assert result.status == "indexed"
    return ctx, spans


def test_a_question_about_the_second_company_of_a_binder_gets_only_its_pages(binder, llm):
    ctx, (apple, microsoft) = binder
    known = EntityIndex(ctx.index, ctx.registry).current()
    assert sorted(known.units) == [f"binder.pdf (pages {a}-{b})" for a, b in (apple, microsoft)]
    for company, (first, last) in (("Microsoft", microsoft), ("Apple", apple)):
        found = ctx.chat.retrieve(QUESTION.format(company))
        pages = [s["page"] for s in found]
        assert pages and all(first <= p <= last for p in pages), (company, pages)
    # The statement page (Microsoft's income statement: "Total revenue 52,747") is among them.
    found = ctx.chat.retrieve(QUESTION.format("Microsoft"))
    assert any("52,747" in s["text"] for s in found)
    llm.script(answers=["Total revenue was $52,747 million [1]."])
    turn = ctx.chat.ask(QUESTION.format("Microsoft"))
    prompt = llm.chats[-1][-1].content
    assert "binder.pdf (Microsoft Corporation), page" in prompt and "(Apple Inc.)" not in prompt
    assert turn.figures_unsupported == 0


def test_without_sections_the_binder_answers_microsoft_with_apple_pages(binder, monkeypatch):
    """The failure the sections fix, reproduced with them read as nothing: the fixture can tell."""
    ctx, (apple, _) = binder
    monkeypatch.setattr("rag_core.entities.resolver.with_sections", lambda profile, name, chunks: profile)
    [rec] = ctx.registry.list()
    assert ctx.registry.set_entities(rec.name, rec.sha256, 0, "{}")  # an older reader's: read again, without sections
    ctx.chat.components.entities._cached = None
    assert not ctx.chat.components.entities.current().sectioned()
    found = ctx.chat.retrieve(QUESTION.format("Microsoft"))
    assert any(apple[0] <= s["page"] <= apple[1] for s in found)


def test_a_company_the_binder_is_not_about_is_refused_and_one_it_is_about_is_routed(binder):
    ctx, (_, microsoft) = binder
    known = EntityIndex(ctx.index, ctx.registry).current()
    keywords = ctx.chat.components.keywords.get(None)
    scope = decide(known, keywords, "What was Tesla's total revenue in the quarter?")
    assert scope is not None and scope.refused == ["Tesla"]
    scope = decide(known, keywords, QUESTION.format("Microsoft"))
    assert scope is not None and scope.routes == [("Microsoft", [f"binder.pdf (pages {microsoft[0]}-{microsoft[1]})"])]
