"""Turn one file into LlamaIndex ``Document`` objects, or refuse it with a reason.

PDF: one Document per page, 1-based ``page`` and the PDF's ``page_label`` in metadata.
Pages are read with pypdfium2 (PDFium, binary inside its wheel: ~25x faster than pypdf
here and it opens files pypdf refuses); pypdf is the fallback for the few files PDFium
cannot open. TXT/Markdown: encoding detected (BOM, UTF-8, UTF-16 without BOM, GB18030,
cp1252); Markdown is split on headings and the heading path kept in metadata.

Document ids are stable, derived from the document's name plus page/section number,
so re-ingesting the same name upserts instead of duplicating.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from llama_index.core import Document

from rag_core.errors import IngestError

logger = logging.getLogger(__name__)

PDF_EXTS = {".pdf"}
TEXT_EXTS = {".txt", ".text"}
MD_EXTS = {".md", ".markdown"}
SUPPORTED_EXTS = PDF_EXTS | TEXT_EXTS | MD_EXTS

# Metadata that is shown to the user but kept out of the embedding and of the LLM's text.
HIDDEN_KEYS = ["doc_key", "file_sha256", "section"]


@dataclass
class LoadedFile:
    """What a loader made of one file."""

    name: str
    documents: list[Document]
    pages: int
    kind: str
    warnings: list[str] = field(default_factory=list)


def supported(name: str) -> bool:
    return Path(name).suffix.lower() in SUPPORTED_EXTS


def load_file(path: Path, name: str, sha256: str) -> LoadedFile:
    """Parse ``path`` (known to the user as ``name``). Raises ``IngestError`` with a reason."""
    ext = Path(name).suffix.lower()
    if ext not in SUPPORTED_EXTS:
        shown = ext or "(no extension)"
        raise IngestError(name, f"unsupported type {shown} (supported: PDF, TXT, Markdown)")
    data = path.read_bytes()
    if not data.strip():
        raise IngestError(name, "empty file")
    if ext in PDF_EXTS:
        return _load_pdf(path, data, name, sha256)
    text = decode_text(data, name)
    if not text.strip():
        raise IngestError(name, "empty file (only whitespace)")
    if ext in MD_EXTS:
        docs = _markdown_documents(text, name, sha256)
        return LoadedFile(name, docs, pages=0, kind="markdown")
    doc = Document(id_=f"{name}::text", text=text, metadata=_meta(name, sha256))
    _hide(doc)
    return LoadedFile(name, [doc], pages=0, kind="text")


# --------------------------------------------------------------------------- text
def decode_text(data: bytes, name: str) -> str:
    """Decode bytes whose encoding nobody told us."""
    for bom, enc in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError as e:
                raise IngestError(name, f"not valid {enc} text despite its byte-order mark ({e.reason})") from e
    if b"\x00" in data[:4096]:
        # UTF-16/32 without a BOM: NULs in the odd or even positions.
        sample = data[:4096]
        for enc in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
            try:
                text = data.decode(enc)
            except UnicodeDecodeError:
                continue
            if _printable_ratio(text[:2000]) > 0.9:
                return text
        if sample.count(b"\x00") > len(sample) // 10:
            raise IngestError(name, "binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("gb18030")
        if _looks_chinese(text) and _printable_ratio(text[:2000]) > 0.9:
            return text
    except UnicodeDecodeError:
        pass
    return data.decode("cp1252", errors="replace")


def _looks_chinese(text: str) -> bool:
    """Real Chinese has runs of CJK characters; cp1252 bytes misread as GB18030 give
    isolated ones between Latin letters ("K\u00f6ln" -> "K" + one CJK char + "n")."""
    sample = text[:5000]
    cjk = [i for i, c in enumerate(sample) if "\u4e00" <= c <= "\u9fff"]
    if not cjk:
        return False
    idx = set(cjk)
    in_runs = sum(1 for i in cjk if i - 1 in idx or i + 1 in idx)
    return in_runs / len(cjk) >= 0.6


def _printable_ratio(text: str) -> float:
    if not text:
        return 0.0
    ok = sum(1 for c in text if c.isprintable() or c in "\r\n\t")
    return ok / len(text)


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def _markdown_documents(text: str, name: str, sha256: str) -> list[Document]:
    """Split on ATX headings (outside code fences); each section keeps its heading path."""
    sections: list[tuple[list[str], list[str]]] = []
    path: list[str] = []
    lines: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m:
            if any(x.strip() for x in lines):
                sections.append((list(path), lines))
            level = len(m.group(1))
            path = path[: level - 1] + [""] * max(0, level - 1 - len(path)) + [m.group(2).strip()]
            lines = [line]
        else:
            lines.append(line)
    if any(x.strip() for x in lines):
        sections.append((list(path), lines))
    docs = []
    for i, (heads, body) in enumerate(sections, start=1):
        heading = " > ".join(h for h in heads if h)
        meta = _meta(name, sha256)
        meta["section"] = i
        if heading:
            meta["heading"] = heading
        doc = Document(id_=f"{name}::s{i:04d}", text="\n".join(body).strip(), metadata=meta)
        _hide(doc)
        docs.append(doc)
    return docs


# --------------------------------------------------------------------------- pdf
def _load_pdf(path: Path, data: bytes, name: str, sha256: str) -> LoadedFile:
    if not data.lstrip()[:1024].find(b"%PDF") >= 0:
        raise IngestError(name, "not a PDF (no %PDF header): the file is damaged or misnamed")
    try:
        pages, labels = _pdfium_pages(path, name)
    except IngestError:
        raise
    except Exception as e:  # PDFium failed: try pypdf, which repairs some files differently
        logger.info("pdfium could not open %s (%s); trying pypdf", name, e)
        pages, labels = _pypdf_pages(path, name, first_error=e)
    if not pages:
        raise IngestError(name, "the PDF has no pages")
    docs = []
    empty = 0
    for i, text in enumerate(pages, start=1):
        text = _clean_pdf_text(text)
        if not text.strip():
            empty += 1
            continue
        meta = _meta(name, sha256)
        meta["page"] = i
        meta["page_label"] = labels[i - 1] or str(i)
        doc = Document(id_=f"{name}::p{i:04d}", text=text, metadata=meta)
        _hide(doc)
        docs.append(doc)
    if not docs:
        raise IngestError(name, f"no text layer: its {len(pages)} page(s) are scanned images and need OCR")
    loaded = LoadedFile(name, docs, pages=len(pages), kind="pdf")
    if empty:
        loaded.warnings.append(f"{empty} of {len(pages)} pages have no text layer (scanned?) and were skipped")
    return loaded


def _pdfium_pages(path: Path, name: str) -> tuple[list[str], list[str]]:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as e:
        if "password" in str(e).lower():
            raise IngestError(name, "encrypted: needs a password") from e
        raise
    try:
        pages, labels = [], []
        for i in range(len(pdf)):
            page = pdf[i]
            try:
                textpage = page.get_textpage()
                pages.append(textpage.get_text_bounded())
                textpage.close()
            finally:
                page.close()
            try:
                labels.append(pdf.get_page_label(i) or "")
            except Exception:
                labels.append("")
        return pages, labels
    finally:
        pdf.close()


def _pypdf_pages(path: Path, name: str, first_error: Exception) -> tuple[list[str], list[str]]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import FileNotDecryptedError, PdfReadError

        reader = PdfReader(str(path), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception as e:
                raise IngestError(name, "encrypted: needs a password") from e
            if not ok:
                raise IngestError(name, "encrypted: needs a password")
        labels = list(reader.page_labels) if reader.page_labels else []
        pages = [p.extract_text() or "" for p in reader.pages]
        labels += [""] * (len(pages) - len(labels))
        return pages, labels
    except IngestError:
        raise
    except FileNotDecryptedError as e:
        raise IngestError(name, "encrypted: needs a password") from e
    except (PdfReadError, Exception) as e:
        raise IngestError(name, f"damaged PDF that cannot be read ({_short(first_error)})") from e


def _clean_pdf_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _short(e: Exception) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return msg[:160]


# --------------------------------------------------------------------------- common
def _meta(name: str, sha256: str) -> dict:
    return {"file_name": name, "doc_key": name, "file_sha256": sha256}


def _hide(doc: Document) -> None:
    doc.excluded_embed_metadata_keys = list(HIDDEN_KEYS) + ["page_label", "page"]
    doc.excluded_llm_metadata_keys = list(HIDDEN_KEYS) + ["page_label"]
