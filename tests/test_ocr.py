"""Scanned pages read by OCR (rag_core.loaders.ocr): in the parse worker with its budget, page
by page with progress and cancel, only the pages without a usable text layer, rows kept as
rows, and the line boxes kept for the viewer. Real PDFs (images of text set by Pillow, no text
layer), the real engine, real worker processes; the shared corpus's scans when it is there.

Timing-free: a budget is exceeded by giving it a page allowance no page can meet, and a cancel
is sent when the progress says the second page has started.
"""

from __future__ import annotations

import io
import json
import sys

import pypdfium2 as pdfium
import pytest
from PIL import Image

from rag_core import Upload, build_context
from rag_core.errors import IngestError
from rag_core.health import check
from rag_core.loaders import budget, load_file, load_file_guarded
from rag_core.loaders.ocr import OcrPage, OcrSegment, reading_order, sidecar_path
from rag_core.viewer import fold
from tests.pdfgen import ZEPHYR_PAGES, make_pdf, make_scanned_pdf
from tests.test_viewer import highlighted_share

pytestmark = pytest.mark.usefixtures("settled_reader")  # each test sees only its own workers

REPORT = "Quarterly report of the Zephyr pump company\nItem\t2022\t2021\nRevenue\t1,234\t1,100\nNet income\t310\t275"
REPORT_LINES = [
    "Quarterly report of the Zephyr pump company",
    "Item 2022 2021",
    "Revenue 1,234 1,100",
    "Net income 310 275",
]


@pytest.fixture(autouse=True, scope="module")
def _no_worker_left_behind():
    yield
    budget._close_idle()


@pytest.fixture(scope="module")
def mixed_pdf(tmp_path_factory):
    """Page 1 a scan of a small table, page 2 an ordinary text page."""
    path = tmp_path_factory.mktemp("ocr") / "mixed.pdf"
    make_scanned_pdf([REPORT, ZEPHYR_PAGES[1]], path, text_pages={1})
    return path


def squeeze(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------- the loader, in the worker
def test_a_scanned_page_is_read_in_rows_and_the_text_page_beside_it_is_kept(mixed_pdf, tmp_path):
    said: list[tuple[str, float]] = []
    loaded = load_file_guarded(mixed_pdf, "mixed.pdf", "sha", ocr=True, progress=lambda m, f: said.append((m, f)))

    assert said == [("OCR page 1 of 1", 0.0)]
    assert [d.metadata["page"] for d in loaded.documents] == [1, 2]
    scanned, text = loaded.documents
    assert squeeze(scanned.text) == REPORT_LINES  # the table reads row by row
    assert scanned.metadata["ocr"] is True and "ocr" in scanned.excluded_embed_metadata_keys
    # The text page is exactly what it is without OCR.
    make_pdf([ZEPHYR_PAGES[1]], tmp_path / "p2.pdf")
    alone = load_file(tmp_path / "p2.pdf", "p2.pdf", "sha")
    assert text.text == alone.documents[0].text and "ocr" not in text.metadata
    assert loaded.warnings == ["read 1 scanned page of 2 by OCR: page 1"]

    assert list(loaded.ocr) == [1]
    rows = loaded.ocr[1].rows
    assert [" ".join(s.text for s in row) for row in rows] == squeeze(scanned.text)
    tops = [row[0].box[1] for row in rows]
    assert tops == sorted(tops)
    for row in rows:
        lefts = [s.box[0] for s in row]
        assert lefts == sorted(lefts)
        assert all(0 <= s.box[0] < s.box[2] <= 1 and 0 <= s.box[1] < s.box[3] <= 1 for s in row)
    # The table's cells are apart on the page (150 pt columns): the row's numbers are to the right.
    revenue = next(row for row in rows if row[0].text.startswith("Revenue"))
    assert revenue[-1].box[0] > 0.4


def test_with_ocr_off_a_scan_is_refused_as_before_and_says_ocr_is_off(tmp_path):
    path = tmp_path / "scan.pdf"
    make_scanned_pdf([REPORT, REPORT], path)
    with pytest.raises(IngestError) as off:
        load_file_guarded(path, "scan.pdf", "sha", ocr=False)
    assert off.value.reason == (
        "no text layer: scanned pages need OCR (2 image-only pages; OCR is turned off in Settings)"
    )
    with pytest.raises(IngestError) as plain:
        load_file(path, "scan.pdf", "sha")  # no OCR asked: the reason of old
    assert plain.value.reason == "no text layer: scanned pages need OCR (2 image-only pages)"


def test_a_page_over_its_time_allowance_is_refused_with_what_ran_out(mixed_pdf, tmp_path):
    with pytest.raises(IngestError) as e:
        load_file_guarded(mixed_pdf, "mixed.pdf", "sha", ocr=True, ocr_page_s=0.05)
    assert e.value.reason == (
        "OCR took too long: page 1 was not read within 0.05 s, the most one scanned page may take; "
        "0 of 1 scanned pages read"
    )
    assert budget._idle == []  # the stopped worker is not reused
    assert "42 litres" in load_file_guarded(mixed_pdf, "mixed.pdf", "sha", ocr=False).documents[0].text


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_ocr_over_the_memory_budget_is_refused_with_what_ran_out(mixed_pdf):
    budget._close_idle()  # a fresh worker: the model is not loaded yet, and must be within the budget
    with pytest.raises(IngestError) as e:
        load_file_guarded(mixed_pdf, "mixed.pdf", "sha", ocr=True, memory_mb=128, ocr_memory_mb=0)
    assert e.value.reason == (
        "OCR needs more than 128 MB of memory (128 MB for the file, 0 MB for OCR) at page 1: "
        "the page is too large or the file is damaged"
    )


def test_reading_order_groups_cells_into_rows_left_to_right():
    cell = 0.02
    items = [
        ((0.6, 0.30, 0.7, 0.30 + cell), "1,100"),
        ((0.1, 0.301, 0.3, 0.30 + cell), "Revenue"),
        ((0.4, 0.299, 0.5, 0.30 + cell), "1,234"),
        ((0.1, 0.10, 0.5, 0.10 + cell), "Title"),
        ((0.1, 0.34, 0.3, 0.34 + cell), "Net  income"),
    ]
    page = reading_order(items)
    assert page.text == "Title\nRevenue 1,234 1,100\nNet income"
    start, end, box = page.spans()[2]
    assert page.text[start:end] == "1,234" and box == (0.4, 0.299, 0.5, 0.32)
    assert page.boxes_for([(page.text.index("1,234"), page.text.index("1,234") + 1)]) == [box]
    assert OcrPage.from_json(json.loads(json.dumps(page.to_json()))).text == page.text
    assert OcrPage([[OcrSegment("a", (0, 0, 1, 1))]]).spans() == [(0, 1, (0, 0, 1, 1))]


# --------------------------------------------------------------------------- ingestion, viewer, jobs
def test_an_ingested_scan_is_searchable_viewable_by_its_boxes_and_deleted_with_its_sidecar(ctx, mixed_pdf):
    said: list[str] = []
    result = ctx.ingestion.ingest_file(mixed_pdf, progress=lambda m, f: said.append(m))
    assert (result.status, result.pages, result.ocr_pages) == ("indexed", 2, 1)
    assert result.as_json()["ocr_pages"] == 1
    assert "mixed.pdf: OCR page 1 of 1" in said
    sidecar = sidecar_path(ctx.settings.data_dir, ctx.ingestion.documents()[0].sha256)
    stored = json.loads(sidecar.read_text(encoding="utf-8"))
    assert list(stored["pages"]) == ["1"]

    # The viewer highlights the row's boxes (and nothing else) on the rendered scan.
    rows = OcrPage.from_json(stored["pages"]["1"]).rows
    revenue = next(row for row in rows if row[0].text.startswith("Revenue"))
    image = ctx.viewer.page_image("mixed.pdf", 1, highlight=" ".join(s.text for s in revenue))
    assert image.found and image.ocr and len(image.boxes) == len(revenue)
    png = Image.open(io.BytesIO(image.png))
    for seg, drawn in zip(revenue, image.boxes, strict=True):
        expected = (seg.box[0] * png.width, seg.box[1] * png.height, seg.box[2] * png.width, seg.box[3] * png.height)
        assert all(abs(a - b) <= 2.5 for a, b in zip(drawn, expected, strict=True))
        assert highlighted_share(png, drawn) > 0.5
    title = next(row for row in rows if row[0].text.startswith("Quarterly"))[0]
    assert (
        highlighted_share(
            png,
            [title.box[0] * png.width, title.box[1] * png.height, title.box[2] * png.width, title.box[3] * png.height],
        )
        < 0.05
    )
    # A passage of the text page is still found in PDFium's text layer.
    text_page = ctx.viewer.page_image("mixed.pdf", 2, highlight="42 litres per minute")
    assert text_page.found and not text_page.ocr

    # The same file under another name reuses the sidecar: no page is read again.
    said.clear()
    again = ctx.ingestion.ingest_file(mixed_pdf, "copy.pdf", progress=lambda m, f: said.append(m))
    assert (again.status, again.ocr_pages) == ("indexed", 1) and not [m for m in said if "OCR page" in m]
    ctx.ingestion.delete("mixed.pdf")
    assert sidecar.exists()  # copy.pdf still needs it
    ctx.ingestion.delete("copy.pdf")
    assert not sidecar.exists()
    assert check(ctx)[0] == []


def test_cancel_during_ocr_stops_between_pages_and_keeps_nothing(make_settings, llm, tmp_path):
    ctx = build_context(make_settings(), llm=llm)
    data = make_scanned_pdf([REPORT, "Second page\nNothing to see here", "Third page"])
    job = ctx.jobs.submit(ctx.ingestion, [Upload("scan.pdf", data), Upload("next.txt", b"Valves close.")])
    view = ctx.jobs.view(job)
    for _ in range(6000):  # until the second page starts (the engine's load is within the first)
        view = ctx.jobs.view(job)
        if not view.running or "OCR page 2" in view.files[0].message:
            break
        ctx.jobs.wait(job, timeout=0.1)
    assert view.files[0].message == "scan.pdf: OCR page 2 of 3"
    assert 0.05 < view.files[0].fraction < 0.3
    ctx.jobs.cancel(job)
    view = ctx.jobs.wait(job, timeout=120)
    assert [(r.file, r.status) for r in view.results] == [("scan.pdf", "cancelled"), ("next.txt", "cancelled")]
    assert ctx.ingestion.documents() == [] and ctx.index.chunk_count() == 0 and check(ctx)[0] == []
    assert not (ctx.settings.data_dir / "files" / "scan.pdf").exists()
    assert not any((ctx.settings.data_dir / "ocr").glob("*.json"))


def test_the_ocr_setting_off_brings_the_refusal_back(make_settings, llm, tmp_path):
    ctx = build_context(make_settings(ocr=False), llm=llm)
    path = tmp_path / "scan.pdf"
    make_scanned_pdf([REPORT], path)
    result = ctx.ingestion.ingest_file(path)
    assert (result.status, result.reason) == (
        "failed",
        "no text layer: scanned pages need OCR (1 image-only page; OCR is turned off in Settings)",
    )


# --------------------------------------------------------------------------- real scans
def _image_only_copy(src, page: int, dest):
    """Page ``page`` of ``src`` rendered by PDFium and wrapped in a PDF with no text layer."""
    pdf = pdfium.PdfDocument(str(src))
    try:
        image = pdf[page - 1].render(scale=200 / 72).to_pil().convert("RGB")
    finally:
        pdf.close()
    image.save(dest, format="PDF", resolution=200)
    return dest


@pytest.mark.shared
def test_the_corpus_scans_are_read_table_rows_and_chinese_included(shared_data, tmp_path):
    pdfs = shared_data / "corpus" / "pdfs"
    table = load_file_guarded(pdfs / "scanned_or_image_only" / "unstructured__single_table.pdf", "t.pdf", "s", ocr=True)
    lines = squeeze(table.documents[0].text)
    assert "Base 128 64,058 800.73 (484.11) N/A" in lines
    assert "Chipper 20,843 260.57 (145.80) 96.20 (57.53)" in lines
    lorem = load_file_guarded(
        pdfs / "scanned_or_image_only" / "unstructured__loremipsum-flat.pdf", "l.pdf", "s", ocr=True
    )
    assert "lorem ipsum dolor sit amet" in " ".join(squeeze(lorem.documents[0].text)).lower()

    # Chinese: a page of the corpus with a text layer, as a scan, read back against that layer.
    src = pdfs / "cjk" / "pdfjs__issue12823.pdf"
    scan = load_file_guarded(_image_only_copy(src, 1, tmp_path / "zh.pdf"), "zh.pdf", "s", ocr=True)
    truth = load_file(src, "zh-text.pdf", "s").documents[0].text
    read = fold(scan.documents[0].text)[0]
    for line in ("可替换为所需图片。", "描述团队的共同目标，有利于团队成员理解目标并朝着目标努力。", "知识库简介"):
        assert line in truth and fold(line)[0] in read, line
