"""PDF: one Document per page (``name::p0003``), 1-based ``page`` and the PDF's ``page_label``.

Pages are read with pypdfium2 (PDFium, binary inside its wheel: ~25x faster than pypdf here
and it opens files pypdf refuses); pypdf is the fallback for the few files PDFium cannot
open. PDFium is not thread-safe, not even across documents, and Streamlit runs each upload
in its own thread: every PDFium call holds ``rag_core.pdfium.PDFIUM_LOCK``. A page without text is told
apart as image-only (scanned), drawings, blank or unreadable, for the warnings and refusals.

Pages without a usable text layer (an image or drawings and no text, or a few characters over
a page-sized image) are read by OCR (``ocr.py``) when the request asks for it; the pages with
text keep it as it is.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.schema import Document

from rag_core.errors import IngestError
from rag_core.loaders.documents import LoadedFile, doc_metadata, hide_metadata
from rag_core.loaders.ocr import OcrRequest, ocr_pages
from rag_core.loaders.reasons import short, sniff
from rag_core.pdfium import PDFIUM_LOCK

logger = logging.getLogger(__name__)


@dataclass
class _PdfPage:
    text: str
    label: str = ""
    content: str = "text"  # text | sparse | image | drawing | blank | unreadable | unknown
    ocr: bool = False


SPARSE_CHARS = 20  # a text layer this short over an image covering half the page is not usable
_OCR_CONTENT = ("image", "drawing", "sparse")


def load_pdf(path: Path, data: bytes, name: str, sha256: str, ocr: OcrRequest | None = None) -> LoadedFile:
    if data[:2048].lstrip()[:1024].find(b"%PDF") < 0:
        what = sniff(data)
        if what:
            raise IngestError(name, f"not a PDF: it is {what} with a .pdf name")
        raise IngestError(name, "not a PDF (no %PDF header): the file is damaged or misnamed")
    try:
        pages = _pdfium_pages(path, name)
    except (IngestError, MemoryError):  # out of memory is no reason to try the other reader
        raise
    except Exception as e:  # PDFium failed: try pypdf, which repairs some files differently
        logger.info("pdfium could not open %s (%s); trying pypdf", name, e)
        pages = _pypdf_pages(path, name, first_error=e)
    if not pages:
        raise IngestError(name, "the PDF has no pages")
    read = _ocr(path, pages, ocr) if ocr is not None and ocr.enabled else {}
    docs = []
    for i, page in enumerate(pages, start=1):
        page.text = _clean_pdf_text(page.text)
        if not page.text.strip():
            continue
        meta = doc_metadata(name, sha256)
        meta["page"] = i
        meta["page_label"] = page.label or str(i)
        if page.ocr:
            meta["ocr"] = True
        doc = Document(id_=f"{name}::p{i:04d}", text=page.text, metadata=meta)
        hide_metadata(doc)
        if page.ocr:
            doc.excluded_embed_metadata_keys.append("ocr")
            doc.excluded_llm_metadata_keys.append("ocr")
        docs.append(doc)
    missing: dict[str, list[int]] = {}
    for i, page in enumerate(pages, start=1):
        if not page.text.strip():
            missing.setdefault(page.content, []).append(i)
    if not docs:
        raise IngestError(name, _no_text_reason(missing, len(pages), ocr))
    loaded = LoadedFile(name, docs, pages=len(pages), kind="pdf")
    loaded.ocr = {i: result for i, result in read.items() if pages[i - 1].ocr}
    n = len(pages)
    if loaded.ocr:
        loaded.warnings.append(
            f"read {_plural(len(loaded.ocr), 'scanned page')} of {n} by OCR: {_pages(list(loaded.ocr))}"
        )
    damaged = missing.get("unreadable", [])
    if damaged:
        loaded.warnings.append(f"skipped {_plural(len(damaged), 'damaged page')} of {n}: {_pages(damaged)}")
    no_layer = sorted(missing.get("image", []) + missing.get("drawing", []) + missing.get("unknown", []))
    if no_layer:
        how = "OCR found no text on" if read else "skipped"
        loaded.warnings.append(
            f"{how} {_plural(len(no_layer), 'page')} of {n} without a text layer (scanned?): {_pages(no_layer)}"
        )
    return loaded


def _ocr(path: Path, pages: list[_PdfPage], request: OcrRequest) -> dict:
    """OCR for the pages without a usable text layer; a page takes the OCR text when it holds
    more than its own layer (a few stray characters over a scan)."""
    wanted = [i for i, page in enumerate(pages, start=1) if page.content in _OCR_CONTENT]
    read = ocr_pages(path, wanted, request, PDFIUM_LOCK) if wanted else {}
    for i, result in read.items():
        page = pages[i - 1]
        if len("".join(result.text.split())) > len("".join(_clean_pdf_text(page.text).split())):
            page.text, page.ocr = result.text, True
    return read


def _no_text_reason(missing: dict[str, list[int]], total: int, ocr: OcrRequest | None = None) -> str:
    if len(missing.get("unreadable", [])) == total:
        return "damaged PDF that cannot be read (no page could be loaded)"
    if missing.get("image") and ocr is not None and ocr.enabled:
        return f"no text layer: OCR found no text on its {_plural(len(missing['image']), 'image-only page')}"
    if missing.get("image"):
        off = "; OCR is turned off in Settings" if ocr is not None else ""
        return f"no text layer: scanned pages need OCR ({_plural(len(missing['image']), 'image-only page')}{off})"
    if missing.get("drawing") and ocr is not None and ocr.enabled:
        return "no text layer: its pages hold only drawings, and OCR found no text in them"
    if missing.get("drawing"):
        return "no text layer: its pages hold only drawings (text drawn as shapes needs OCR)"
    if missing.get("unknown"):
        return "no text layer: scanned pages need OCR (no page has text)"
    return "no text layer: the page is blank" if total == 1 else f"no text layer: all {total} pages are blank"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _pages(numbers: list[int]) -> str:
    """'page 3', 'pages 2-4, 9' (at most a few ranges, then '…')."""
    ranges: list[list[int]] = []
    for n in sorted(numbers):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    shown = [f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:6]]
    more = ", …" if len(ranges) > 6 else ""
    return ("page " if len(numbers) == 1 else "pages ") + ", ".join(shown) + more


def _pdfium_pages(path: Path, name: str) -> list[_PdfPage]:
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError as e:
            if "password" in str(e).lower():
                raise IngestError(name, "encrypted: needs a password") from e
            raise
        try:
            pages: list[_PdfPage] = []
            for i in range(len(pdf)):
                pages.append(_pdfium_page(pdf, i, pdfium_c))
            if pages and all(p.content == "unreadable" for p in pages):
                raise RuntimeError("PDFium could not load any page")
            return pages
        finally:
            pdf.close()


def _pdfium_page(pdf, i: int, pdfium_c) -> _PdfPage:
    try:
        label = pdf.get_page_label(i) or ""
    except Exception:
        label = ""
    try:
        page = pdf[i]
    except MemoryError:
        raise
    except Exception as e:  # one damaged page must not cost the others
        logger.info("page %d could not be loaded: %s", i + 1, e)
        return _PdfPage("", label, "unreadable")
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_bounded()
        finally:
            textpage.close()
        content = "text"
        visible = len("".join(_clean_pdf_text(text).split()))
        if not visible:
            kinds = {obj.type for obj in page.get_objects(max_depth=4)}
            if pdfium_c.FPDF_PAGEOBJ_IMAGE in kinds:
                content = "image"
            elif kinds:
                content = "drawing"
            else:
                content = "blank"
        elif visible < SPARSE_CHARS and _image_cover(page, pdfium_c) >= 0.5:
            content = "sparse"
        return _PdfPage(text, label, content)
    finally:
        page.close()


def _image_cover(page, pdfium_c) -> float:
    """The share of the page that its largest image covers."""
    width, height = page.get_size()
    best = 0.0
    for obj in page.get_objects(max_depth=4):
        if obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE:
            left, bottom, right, top = obj.get_bounds()
            best = max(best, (right - left) * (top - bottom) / max(width * height, 1.0))
    return best


def _pypdf_pages(path: Path, name: str, first_error: Exception) -> list[_PdfPage]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import FileNotDecryptedError, PdfReadError

        try:
            reader = PdfReader(str(path), strict=False)
            if reader.is_encrypted:
                try:
                    ok = reader.decrypt("")
                except Exception as e:
                    raise IngestError(name, "encrypted: needs a password") from e
                if not ok:
                    raise IngestError(name, "encrypted: needs a password")
            try:
                labels = list(reader.page_labels) if reader.page_labels else []
            except Exception:
                labels = []
            pages = []
            for page in reader.pages:
                text = page.extract_text() or ""
                pages.append(_PdfPage(text, content="text" if text.strip() else "unknown"))
            for read, label in zip(pages, labels, strict=False):
                read.label = label
            return pages
        except FileNotDecryptedError as e:
            raise IngestError(name, "encrypted: needs a password") from e
    except (IngestError, MemoryError):
        raise
    except (PdfReadError, Exception) as e:
        raise IngestError(name, f"damaged PDF that cannot be read ({short(first_error)})") from e


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _clean_pdf_text(text: str) -> str:
    # A no-break space is a space: Corning's 2020 and 2021 10-Ks and CVS Health's 2018 10-K set every
    # word apart with one, and no name, period or label written with a space would match their text
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    text = _CONTROL.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
