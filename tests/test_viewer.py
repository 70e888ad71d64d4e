"""Opening a source at its passage: PDF pages rendered with the passage highlighted (real PDFs,
real PDFium, real PNGs decoded by Pillow), and the passage in its text for other formats."""

from __future__ import annotations

import io
import math
import threading

import pypdfium2 as pdfium
import pytest
from PIL import Image

from rag_core.errors import DocentError, NotFoundError
from rag_core.pdfium import PDFIUM_LOCK
from rag_core.viewer import fold, locate
from tests.pdfgen import ZEPHYR_PAGES, make_pdf
from tests.test_formats import make_docx, para

ZOOM = 1.5
PAGE3_BODY = ZEPHYR_PAGES[2].split("\n", 1)[1]  # the passage without the page's heading line


@pytest.fixture
def pdf_ctx(ctx, tmp_path):
    path = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, path)
    assert ctx.ingestion.ingest_file(path).status == "indexed"
    return ctx


def word_box(path, page: int, word: str, zoom: float = ZOOM) -> tuple[float, float, float, float]:
    """PDFium's own box of ``word`` on ``page``, in pixels of a page rendered at ``zoom``
    (the generated PDFs are unrotated A4: y grows downwards in the image)."""
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(str(path))
        try:
            p = pdf[page - 1]
            height = p.get_height()
            text = p.get_textpage()
            start, count = text.search(word, match_case=True).get_next()
            boxes = [text.get_charbox(i) for i in range(start, start + count)]
            text.close()
            p.close()
        finally:
            pdf.close()
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    bottom, top = min(b[1] for b in boxes), max(b[3] for b in boxes)
    return (left * zoom, (height - top) * zoom, right * zoom, (height - bottom) * zoom)


def inside(inner, outer) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def highlighted_share(image: Image.Image, box) -> float:
    """The share of the box's pixels tinted yellow (red and green high, blue low)."""
    crop = image.convert("RGB").crop(tuple(int(v) for v in box))
    pixels = list(crop.getdata())
    return sum(1 for r, g, b in pixels if r > 180 and g > 150 and b < 200) / max(len(pixels), 1)


def stored(ctx, name):
    return ctx.settings.data_dir / "files" / name


# ============================================================================ PDF pages
def test_the_passage_is_highlighted_over_each_of_its_lines_and_nothing_else(pdf_ctx):
    img = pdf_ctx.viewer.page_image("zephyr.pdf", 3, PAGE3_BODY, zoom=ZOOM)
    assert (img.page, img.pages, img.found) == (3, 3, True)
    decoded = Image.open(io.BytesIO(img.png))
    assert decoded.format == "PNG"
    assert decoded.size == (math.ceil(595 * ZOOM), math.ceil(842 * ZOOM)) == (img.width, img.height)
    assert len(img.boxes) == 2  # the passage runs over two lines
    for box in img.boxes:
        assert 0 <= box[0] < box[2] <= img.width and 0 <= box[1] < box[3] <= img.height
        assert highlighted_share(decoded, box) > 0.5
    path = stored(pdf_ctx, "zephyr.pdf")
    first, second = sorted(img.boxes, key=lambda b: b[1])
    assert inside(word_box(path, 3, "Never"), first) and inside(word_box(path, 3, "dry."), first)
    assert inside(word_box(path, 3, "because"), second) and inside(word_box(path, 3, "amperes."), second)
    heading = word_box(path, 3, "Safety")  # the heading line above is not part of the passage
    assert not any(inside(heading, box) for box in img.boxes)
    assert highlighted_share(decoded, heading) < 0.05


def test_a_passage_with_other_whitespace_starting_mid_sentence_is_found(pdf_ctx):
    passage = "pump   dry.  Two pumps\ncannot share one\n\nbattery, because the battery can only supply 10 amperes"
    img = pdf_ctx.viewer.page_image("zephyr.pdf", 3, passage)
    assert img.found
    path = stored(pdf_ctx, "zephyr.pdf")
    assert any(inside(word_box(path, 3, "share"), b) for b in img.boxes)
    assert any(inside(word_box(path, 3, "supply"), b) for b in img.boxes)
    assert not any(inside(word_box(path, 3, "Never"), b) for b in img.boxes)  # before the passage


def test_a_passage_whose_middle_differs_is_highlighted_from_its_first_to_its_last_words(pdf_ctx):
    # The chunk's text and the PDF's text layer differ in the middle (an extraction quirk):
    # the first and last 60 characters still place it.
    passage = PAGE3_BODY.replace("cannot share", "can never share")
    img = pdf_ctx.viewer.page_image("zephyr.pdf", 3, passage)
    assert img.found and len(img.boxes) == 2
    path = stored(pdf_ctx, "zephyr.pdf")
    assert any(inside(word_box(path, 3, "Never"), b) for b in img.boxes)
    assert any(inside(word_box(path, 3, "amperes."), b) for b in img.boxes)


def test_on_a_rotated_page_the_boxes_turn_with_the_text(ctx, tmp_path):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(ZEPHYR_PAGES))))
    writer.pages[2].rotate(90)
    writer.write(tmp_path / "turned.pdf")
    ctx.ingestion.ingest_file(tmp_path / "turned.pdf")
    img = ctx.viewer.page_image("turned.pdf", 3, PAGE3_BODY, zoom=ZOOM)
    decoded = Image.open(io.BytesIO(img.png))
    assert decoded.size == (math.ceil(842 * ZOOM), math.ceil(595 * ZOOM))  # landscape now
    assert img.found and len(img.boxes) == 2
    for box in img.boxes:
        assert box[3] - box[1] > 10 * (box[2] - box[0])  # lines run down the image
        assert highlighted_share(decoded, box) > 0.5


def test_a_passage_from_another_page_is_not_found_and_the_page_still_shows(pdf_ctx):
    img = pdf_ctx.viewer.page_image("zephyr.pdf", 1, ZEPHYR_PAGES[1])
    assert (img.found, img.boxes, img.page) == (False, [], 1)
    assert Image.open(io.BytesIO(img.png)).size == (img.width, img.height)
    plain = pdf_ctx.viewer.page_image("zephyr.pdf", 2)  # no highlight asked
    assert plain.found is False and plain.boxes == []


def test_rendered_pages_are_cached_on_disk_and_served_again_without_rendering(pdf_ctx, make_settings, llm):
    from rag_core import build_context

    viewer = pdf_ctx.viewer
    first = viewer.page_image("zephyr.pdf", 2, "42 litres per minute")
    cached = sorted((pdf_ctx.settings.data_dir / "cache" / "pages").glob("*.png"))
    assert len(cached) == 1 and viewer.renders == 1
    mtime = cached[0].stat().st_mtime_ns
    again = viewer.page_image("zephyr.pdf", 2, "42  litres\nper minute")  # the same text, other whitespace
    assert viewer.renders == 1 and again.png == first.png and again.boxes == first.boxes
    assert cached[0].stat().st_mtime_ns == mtime
    # Another process (a new context on the same folder) reads the same files.
    other = build_context(make_settings(), llm=llm).viewer
    assert other.page_image("zephyr.pdf", 2, "42 litres per minute").boxes == first.boxes
    assert other.renders == 0
    # Another highlight, page or zoom is another image.
    viewer.page_image("zephyr.pdf", 2, "12 volt battery")
    viewer.page_image("zephyr.pdf", 2, "42 litres per minute", zoom=1.0)
    assert viewer.renders == 3
    assert len(list((pdf_ctx.settings.data_dir / "cache" / "pages").glob("*.png"))) == 3


def test_every_pdfium_call_holds_the_pdfium_lock(pdf_ctx, monkeypatch):
    seen: list[tuple[str, bool]] = []

    def watch(cls, method):
        original = getattr(cls, method)

        def wrapper(self, *a, **kw):
            seen.append((method, PDFIUM_LOCK.locked()))
            return original(self, *a, **kw)

        monkeypatch.setattr(cls, method, wrapper)

    watch(pdfium.PdfDocument, "__init__")
    watch(pdfium.PdfDocument, "__getitem__")
    watch(pdfium.PdfPage, "render")
    watch(pdfium.PdfPage, "get_textpage")
    watch(pdfium.PdfTextPage, "count_rects")
    results = []
    threads = [
        threading.Thread(target=lambda p=p: results.append(pdf_ctx.viewer.page_image("zephyr.pdf", p, "Zephyr pump")))
        for p in (1, 2, 3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.page for r in results) == [1, 2, 3] and all(r.found for r in results)
    assert {m for m, _ in seen} == {"__init__", "__getitem__", "render", "get_textpage", "count_rects"}
    assert all(locked for _, locked in seen), seen


def test_missing_documents_pages_and_copies_are_clear_errors(pdf_ctx, tmp_path):
    viewer = pdf_ctx.viewer
    with pytest.raises(NotFoundError, match=r"No document named 'nope\.pdf'"):
        viewer.page_image("nope.pdf", 1)
    with pytest.raises(DocentError, match="has 3 page"):
        viewer.page_image("zephyr.pdf", 4)
    with pytest.raises(DocentError, match="Zoom"):
        viewer.page_image("zephyr.pdf", 1, zoom=40)
    with pytest.raises(NotFoundError):
        viewer.page_image("../docent.db", 1)
    (tmp_path / "notes.txt").write_text("Plain notes about pumps and their batteries.")
    pdf_ctx.ingestion.ingest_file(tmp_path / "notes.txt")
    with pytest.raises(DocentError, match="not a PDF"):
        viewer.page_image("notes.txt", 1)
    stored(pdf_ctx, "zephyr.pdf").unlink()
    with pytest.raises(NotFoundError, match=r"stored copy of zephyr\.pdf is missing"):
        viewer.page_image("zephyr.pdf", 1, "something not rendered before")


# ============================================================================ passages in context
def test_a_docx_passage_comes_with_the_text_around_it(ctx, tmp_path):
    body = "".join(
        [
            para("Pump manual", "Heading1"),
            para("The Zephyr pump moves water for small farms and gardens."),
            para("It delivers 42 litres per minute at full speed, on one 12 volt battery."),
            para("Never run it dry: the seals burn within a minute."),
        ]
    )
    make_docx(body, tmp_path / "manual.docx")
    assert ctx.ingestion.ingest_file(tmp_path / "manual.docx").status == "indexed"
    got = ctx.viewer.passage_in_context("manual.docx", "delivers 42 litres   per\nminute at full speed")
    assert got.found
    assert got.passage == "delivers 42 litres per minute at full speed"
    assert got.before.endswith("small farms and gardens.\nIt ")
    assert got.after.startswith(", on one 12 volt battery.")
    assert "seals burn" in got.after and "Pump manual" in got.before
    short = ctx.viewer.passage_in_context("manual.docx", "42 litres per minute", chars=12)
    assert short.before.startswith("…") and short.after.endswith("…")
    assert len(short.before) <= 13 and len(short.after) <= 13


def test_markdown_and_text_passages_and_a_passage_that_is_not_there(ctx, three_docs):
    ctx.ingestion.ingest_paths([three_docs])
    tea = ctx.viewer.passage_in_context("tea.md", "steamed or pan-fired")
    assert tea.found and "Green tea is" in tea.before and "soon after picking" in tea.after
    absent = ctx.viewer.passage_in_context("bananas.txt", "Apples are red fruit that grow on trees.")
    assert absent == type(absent)("", "Apples are red fruit that grow on trees.", "", False)
    with pytest.raises(NotFoundError):
        ctx.viewer.passage_in_context("nope.md", "anything")


def test_without_the_stored_copy_the_text_comes_from_the_chunks_in_order(ctx, make_settings, llm, tmp_path):
    from rag_core import build_context

    paragraphs = [f"Paragraph {i} says that the pump number {i} lifts {i * 7} litres of water." for i in range(60)]
    (tmp_path / "long.txt").write_text("\n".join(paragraphs))
    assert ctx.ingestion.ingest_file(tmp_path / "long.txt").chunks > 3  # several overlapping chunks
    from_file = ctx.viewer.passage_in_context("long.txt", paragraphs[30], chars=200)
    stored(ctx, "long.txt").unlink()
    fresh = build_context(make_settings(), llm=llm).viewer  # no text remembered in memory
    from_chunks = fresh.passage_in_context("long.txt", paragraphs[30], chars=200)
    assert from_chunks.found and from_file.found
    assert from_chunks == from_file
    assert paragraphs[29] in from_chunks.before and paragraphs[31] in from_chunks.after


def test_in_a_long_text_the_passage_is_found_near_its_start_or_anywhere(ctx, tmp_path):
    lines = [f"Line {i}: the pump number {i} lifts {i * 7} litres of water from well {i % 13}." for i in range(2500)]
    (tmp_path / "log.txt").write_text("\n".join(lines))  # about 170,000 characters
    assert ctx.ingestion.ingest_file(tmp_path / "log.txt").status == "indexed"
    passage = "  ".join(lines[1800:1803])
    got = ctx.viewer.passage_in_context("log.txt", passage, chars=100)
    assert got.found and got.passage == "\n".join(lines[1800:1803])
    assert lines[1799] in got.before and lines[1803] in got.after
    # The passage's first words differ from the document's (mid-word start): still found.
    changed = "XX" + passage[6:]
    got = ctx.viewer.passage_in_context("log.txt", changed, chars=100)
    assert got.found and lines[1801] in got.passage and lines[1799] in got.before


def test_folding_ignores_whitespace_case_soft_hyphens_and_ligatures():
    page = "The ef\u00adﬁcient ﬁlter\r\nremoves   dust."
    folded, where = fold(page)
    assert folded == "theefficientfilterremovesdust."
    spans = locate(folded, "Efficient filter removes dust.")
    assert len(spans) == 1
    assert page[where[spans[0][0]] : where[spans[0][1] - 1] + 1] == page[4:]
    assert locate(folded, "nothing like it on this page") == []
