"""Turn one file into LlamaIndex ``Document`` objects, or refuse it with a reason.

Every refusal is an ``IngestError`` whose reason a person can act on ("encrypted: needs
a password", "no text layer: scanned pages need OCR", "unsupported type .epub (...)",
"empty file"); nothing here lets a library's exception escape for a bad file.

- PDF: one Document per page, 1-based ``page`` and the PDF's ``page_label`` in metadata.
  Pages are read with pypdfium2 (PDFium, binary inside its wheel: ~25x faster than pypdf
  here and it opens files pypdf refuses); pypdf is the fallback for the few files PDFium
  cannot open. PDFium is not thread-safe, not even across documents, and Streamlit runs
  each upload in its own thread: every PDFium call holds ``_PDFIUM_LOCK``.
- DOCX: the WordprocessingML inside the ZIP, read with the standard library (zipfile +
  ElementTree): body paragraphs and tables in order, split into sections on heading
  styles, then headers/footers and footnotes. python-docx would add lxml for the same
  text and still not give footnotes or text boxes.
- HTML: ``html.parser`` from the standard library; script/style/hidden elements dropped,
  split into sections on h1-h6. Encoding: byte-order mark, then ``<meta charset>`` or the
  XML declaration, then the same sniffing as text files.
- TXT/Markdown: encoding detected (BOM, UTF-8, UTF-16 without BOM, GB18030, cp1252);
  Markdown is split on headings and the heading path kept in metadata.

Document ids are stable, derived from the document's name plus page/section number,
so re-ingesting the same name upserts instead of duplicating.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
import threading
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

from llama_index.core import Document

from rag_core.errors import IngestError

logger = logging.getLogger(__name__)

PDF_EXTS = {".pdf"}
DOCX_EXTS = {".docx"}
HTML_EXTS = {".html", ".htm", ".xhtml"}
TEXT_EXTS = {".txt", ".text"}
MD_EXTS = {".md", ".markdown"}
SUPPORTED_EXTS = PDF_EXTS | DOCX_EXTS | HTML_EXTS | TEXT_EXTS | MD_EXTS
SUPPORTED_LABEL = "PDF, Word .docx, HTML, TXT, Markdown"

# Formats people try, and what to do instead. Everything else gets the plain refusal.
_CONVERT = "export it as PDF or .docx"
_UNSUPPORTED_HINTS = {
    ".doc": "old Word format: save it as .docx",
    ".rtf": _CONVERT,
    ".odt": _CONVERT,
    ".epub": _CONVERT,
    ".pages": _CONVERT,
    **{
        ext: "an image: text in images needs OCR"
        for ext in (".jpg", ".jpeg", ".png", ".gif", ".tif", ".tiff", ".bmp", ".webp", ".heic")
    },
}

# Metadata that is shown to the user but kept out of the embedding and of the LLM's text.
HIDDEN_KEYS = ["doc_key", "file_sha256", "section"]

# Largest XML part read from a .docx once unpacked: a 1,000-page document is ~6 MB; a
# ZIP bomb is refused before it is inflated.
MAX_UNPACKED_XML = 100 * 1024 * 1024

_PDFIUM_LOCK = threading.Lock()

# File signatures, to say what a misnamed file really is.
_CFB = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file: .doc/.xls, or an encrypted .docx
_SIGNATURES = [
    (b"%PDF", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (such as .docx, .epub or .odt)"),
    (_CFB, "an old Office file (.doc/.xls) or an encrypted Office file"),
    (b"{\\rtf", "an RTF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
]


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


def unsupported_reason(name: str) -> str:
    """Why ``name``'s type is refused: 'unsupported type .X (supported: ...)'."""
    ext = Path(name).suffix.lower()
    hint = _UNSUPPORTED_HINTS.get(ext)
    shown = ext or "(no extension)"
    return f"unsupported type {shown} (supported: {SUPPORTED_LABEL}" + (f"; {hint})" if hint else ")")


def check_supported(name: str) -> None:
    if not supported(name):
        raise IngestError(name, unsupported_reason(name))


def load_file(path: Path, name: str, sha256: str) -> LoadedFile:
    """Parse ``path`` (known to the user as ``name``). Raises ``IngestError`` with a reason."""
    check_supported(name)
    ext = Path(name).suffix.lower()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise IngestError(name, f"cannot read the file ({e.strerror or type(e).__name__})") from e
    if not data.strip():
        raise IngestError(name, "empty file")
    if ext in PDF_EXTS:
        return _load_pdf(path, data, name, sha256)
    if ext in DOCX_EXTS:
        return _load_docx(data, name, sha256)
    _refuse_binary(data, name, ext)
    if ext in HTML_EXTS:
        return _load_html(data, name, sha256)
    text = decode_text(data, name)
    if not text.strip():
        raise IngestError(name, "empty file (only whitespace)")
    if ext in MD_EXTS:
        docs = _section_documents(_markdown_blocks(text), name, sha256)
        return LoadedFile(name, docs, pages=0, kind="markdown")
    doc = Document(id_=f"{name}::text", text=text, metadata=_meta(name, sha256))
    _hide(doc)
    return LoadedFile(name, [doc], pages=0, kind="text")


def _sniff(data: bytes) -> str | None:
    head = data[:1024].lstrip()[:16]
    return next((what for sig, what in _SIGNATURES if head.startswith(sig)), None)


def _refuse_binary(data: bytes, name: str, ext: str) -> None:
    """A PDF or a Word file renamed to .txt would otherwise be indexed as garbage."""
    what = _sniff(data)
    if what:
        raise IngestError(name, f"not a {ext} text file: it is {what} with the wrong extension")


# --------------------------------------------------------------------------- text
def decode_text(data: bytes, name: str) -> str:
    """Decode bytes whose encoding nobody told us; refuse bytes that are not text at all."""
    text = _decode_text(data, name)
    sample = text[:20000]
    controls = sum(1 for c in sample if c < " " and c not in "\t\n\r\f\x1b")
    if controls > len(sample) // 20:
        raise IngestError(name, "binary file, not text")
    return text


def _decode_text(data: bytes, name: str) -> str:
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


# --------------------------------------------------------------------------- sections
# A "block" is (heading level or None, text). Markdown, DOCX and HTML all become blocks,
# and one function turns blocks into section Documents that keep their heading path.
Block = tuple[int | None, str]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def _markdown_blocks(text: str) -> Iterator[Block]:
    """ATX headings outside code fences; a heading block keeps its '#' line as written."""
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        yield (len(m.group(1)), line) if m else (None, line)


def _heading_title(text: str) -> str:
    m = _HEADING.match(text)
    return " ".join((m.group(2) if m else text).split())


def _section_documents(blocks: Iterable[Block], name: str, sha256: str) -> list[Document]:
    """One Document per heading section; each keeps the path of headings above it."""
    sections: list[tuple[list[str], list[str]]] = []
    path: list[str] = []
    lines: list[str] = []
    for level, text in blocks:
        if level is not None:
            if any(x.strip() for x in lines):
                sections.append((list(path), lines))
            path = path[: level - 1] + [""] * max(0, level - 1 - len(path)) + [_heading_title(text)]
            lines = [text]
        else:
            lines.append(text)
    if any(x.strip() for x in lines):
        sections.append((list(path), lines))
    docs = []
    for i, (heads, body) in enumerate(sections, start=1):
        heading = " > ".join(h for h in heads if h)
        meta = _meta(name, sha256)
        meta["section"] = i
        if heading:
            meta["heading"] = heading
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip()
        doc = Document(id_=f"{name}::s{i:04d}", text=text, metadata=meta)
        _hide(doc)
        docs.append(doc)
    return docs


# --------------------------------------------------------------------------- pdf
@dataclass
class _PdfPage:
    text: str
    label: str = ""
    content: str = "text"  # text | image | drawing | blank | unreadable | unknown


def _load_pdf(path: Path, data: bytes, name: str, sha256: str) -> LoadedFile:
    if data[:2048].lstrip()[:1024].find(b"%PDF") < 0:
        what = _sniff(data)
        if what:
            raise IngestError(name, f"not a PDF: it is {what} with a .pdf name")
        raise IngestError(name, "not a PDF (no %PDF header): the file is damaged or misnamed")
    try:
        pages = _pdfium_pages(path, name)
    except IngestError:
        raise
    except Exception as e:  # PDFium failed: try pypdf, which repairs some files differently
        logger.info("pdfium could not open %s (%s); trying pypdf", name, e)
        pages = _pypdf_pages(path, name, first_error=e)
    if not pages:
        raise IngestError(name, "the PDF has no pages")
    docs = []
    for i, page in enumerate(pages, start=1):
        page.text = _clean_pdf_text(page.text)
        if not page.text.strip():
            continue
        meta = _meta(name, sha256)
        meta["page"] = i
        meta["page_label"] = page.label or str(i)
        doc = Document(id_=f"{name}::p{i:04d}", text=page.text, metadata=meta)
        _hide(doc)
        docs.append(doc)
    missing: dict[str, list[int]] = {}
    for i, page in enumerate(pages, start=1):
        if not page.text.strip():
            missing.setdefault(page.content, []).append(i)
    if not docs:
        raise IngestError(name, _no_text_reason(missing, len(pages)))
    loaded = LoadedFile(name, docs, pages=len(pages), kind="pdf")
    n = len(pages)
    damaged = missing.get("unreadable", [])
    if damaged:
        loaded.warnings.append(f"skipped {_plural(len(damaged), 'damaged page')} of {n}: {_pages(damaged)}")
    no_layer = sorted(missing.get("image", []) + missing.get("drawing", []) + missing.get("unknown", []))
    if no_layer:
        loaded.warnings.append(
            f"skipped {_plural(len(no_layer), 'page')} of {n} without a text layer (scanned?): {_pages(no_layer)}"
        )
    return loaded


def _no_text_reason(missing: dict[str, list[int]], total: int) -> str:
    if len(missing.get("unreadable", [])) == total:
        return "damaged PDF that cannot be read (no page could be loaded)"
    if missing.get("image"):
        return f"no text layer: scanned pages need OCR ({_plural(len(missing['image']), 'image-only page')})"
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

    with _PDFIUM_LOCK:
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


def _pdfium_page(pdf, i: int, pdfium_c) -> _PdfPage:  # noqa: ANN001 - pypdfium2 objects
    try:
        label = pdf.get_page_label(i) or ""
    except Exception:
        label = ""
    try:
        page = pdf[i]
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
        if not _clean_pdf_text(text):
            kinds = {obj.type for obj in page.get_objects(max_depth=4)}
            if pdfium_c.FPDF_PAGEOBJ_IMAGE in kinds:
                content = "image"
            elif kinds:
                content = "drawing"
            else:
                content = "blank"
        return _PdfPage(text, label, content)
    finally:
        page.close()


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
            for page, label in zip(pages, labels, strict=False):
                page.label = label
            return pages
        except FileNotDecryptedError as e:
            raise IngestError(name, "encrypted: needs a password") from e
    except IngestError:
        raise
    except (PdfReadError, Exception) as e:
        raise IngestError(name, f"damaged PDF that cannot be read ({_short(first_error)})") from e


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _clean_pdf_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _short(e: Exception) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    # pypdfium2 wraps PDFium's reason: "Failed to load document (PDFium: Data format error)."
    msg = re.sub(r"^Failed to load document \((.+)\)\.?$", r"\1", msg)
    return msg[:160]


# --------------------------------------------------------------------------- docx
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.I)


def _load_docx(data: bytes, name: str, sha256: str) -> LoadedFile:
    if data.startswith(_CFB):
        # Office wraps a password-protected .docx in an OLE compound file.
        if _ENCRYPTED_PACKAGE in data:
            raise IngestError(name, "encrypted: needs a password")
        raise IngestError(name, "old Word .doc format with a .docx name: open it in Word and save it as .docx")
    if not data.startswith(b"PK"):
        what = _sniff(data)
        raise IngestError(
            name, f"not a Word .docx file: it is {what}" if what else "damaged Word file (not a ZIP archive)"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            main = _docx_main_part(zf)
            if main not in zf.NameToInfo:
                raise IngestError(name, "not a Word document: the archive has no word/document.xml")
            styles = _docx_heading_styles(zf, name)
            body = _docx_xml(zf, main, name)
            blocks = list(_docx_blocks(body, styles))
            extras = _docx_extras(zf, name)
    except IngestError:
        raise
    except RecursionError as e:
        raise IngestError(name, "damaged Word file (nested too deeply to read)") from e
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError) as e:
        raise IngestError(name, f"damaged Word file ({_short(e)})") from e
    except RuntimeError as e:  # zipfile: "File ... is encrypted, password required"
        if "encrypted" in str(e).lower():
            raise IngestError(name, "encrypted: needs a password") from e
        raise IngestError(name, f"damaged Word file ({_short(e)})") from e
    for title, texts in extras:
        blocks.append((1, title))
        blocks.extend((None, t) for t in texts)
    docs = _section_documents(((lvl, _tidy(t)) for lvl, t in blocks if lvl is None or t.strip()), name, sha256)
    if not any(d.text.strip() for d in docs):
        raise IngestError(name, "no text: the Word document is empty or holds only images")
    return LoadedFile(name, docs, pages=0, kind="docx")


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _attr(el: ElementTree.Element, local: str) -> str | None:
    for key, value in el.attrib.items():
        if _local(key) == local:
            return value
    return None


def _child(el: ElementTree.Element, local: str) -> ElementTree.Element | None:
    return next((c for c in el if _local(c.tag) == local), None)


def _docx_xml(zf: zipfile.ZipFile, part: str, name: str) -> ElementTree.Element:
    info = zf.getinfo(part)
    if info.file_size > MAX_UNPACKED_XML:
        raise IngestError(name, f"too large when unpacked: {part} is {info.file_size / 1e6:.0f} MB")
    with zf.open(info) as f:
        raw = f.read(MAX_UNPACKED_XML + 1)
    if len(raw) > MAX_UNPACKED_XML:
        raise IngestError(name, f"too large when unpacked: {part} is over {MAX_UNPACKED_XML // 2**20} MB")
    # Word never writes a DTD; one here can only be an entity-expansion attack.
    if b"<!DOCTYPE" in raw or b"<!ENTITY" in raw:
        raise IngestError(name, f"damaged or unsafe Word file ({part} declares a DTD)")
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError as e:
        raise IngestError(name, f"damaged Word file ({part}: {e})") from e


def _docx_main_part(zf: zipfile.ZipFile) -> str:
    """The main document part named by _rels/.rels (almost always word/document.xml)."""
    default = "word/document.xml"
    if "_rels/.rels" not in zf.NameToInfo or zf.getinfo("_rels/.rels").file_size > 1 << 20:
        return default
    try:
        rels = ElementTree.fromstring(zf.read("_rels/.rels"))
    except ElementTree.ParseError:
        return default
    for rel in rels:
        if (rel.get("Type") or "").endswith("/officeDocument") and rel.get("Target"):
            return rel.get("Target", "").lstrip("/")
    return default


def _docx_heading_styles(zf: zipfile.ZipFile, name: str) -> dict[str, int]:
    """styleId -> heading level, from style names ('heading 2', 'Title') or outline levels."""
    if "word/styles.xml" not in zf.NameToInfo:
        return {}
    root = _docx_xml(zf, "word/styles.xml", name)
    own: dict[str, int] = {}
    based_on: dict[str, str] = {}
    for style in root:
        if _local(style.tag) != "style" or _attr(style, "type") not in (None, "paragraph"):
            continue
        sid = _attr(style, "styleId") or ""
        name_el, ppr, base = _child(style, "name"), _child(style, "pPr"), _child(style, "basedOn")
        style_name = (_attr(name_el, "val") or "") if name_el is not None else ""
        m = _HEADING_NAME.match(style_name.strip())
        if m:
            own[sid] = int(m.group(1))
        elif style_name.strip().lower() == "title":
            own[sid] = 1
        elif ppr is not None and (lvl := _child(ppr, "outlineLvl")) is not None:
            own[sid] = _outline_level(lvl)
        if base is not None and _attr(base, "val"):
            based_on[sid] = _attr(base, "val") or ""
    levels = dict(own)
    for sid in based_on:
        cur, seen = sid, 0
        while cur not in own and cur in based_on and seen < 10:
            cur, seen = based_on[cur], seen + 1
        if cur in own:
            levels[sid] = own[cur]
    return {k: v for k, v in levels.items() if 1 <= v <= 6}


def _outline_level(el: ElementTree.Element) -> int:
    try:
        return int(_attr(el, "val") or "9") + 1
    except ValueError:
        return 0


def _docx_blocks(parent: ElementTree.Element, styles: dict[str, int]) -> Iterator[Block]:
    """Paragraphs and tables in document order."""
    for el in parent:
        tag = _local(el.tag)
        if tag == "p":
            yield _docx_heading_level(el, styles), _docx_inline(el)
        elif tag == "tbl":
            for row in _docx_find(el, "tr"):
                cells = [_docx_cell_text(cell) for cell in _docx_find(row, "tc")]
                if any(cells):
                    yield None, " | ".join(cells)
        elif tag == "AlternateContent":
            choice = _child(el, "Choice")
            if choice is not None:
                yield from _docx_blocks(choice, styles)
        elif tag in ("sdt", "sdtContent", "customXml", "ins", "moveTo", "smartTag", "body"):
            yield from _docx_blocks(el, styles)


def _docx_find(el: ElementTree.Element, local: str) -> Iterator[ElementTree.Element]:
    """Descendants named ``local`` (rows of this table, cells of this row), looking through
    wrappers such as content controls but not into nested tables."""
    for child in el:
        tag = _local(child.tag)
        if tag == local:
            yield child
        elif tag not in ("tbl", "tr", "tc"):
            yield from _docx_find(child, local)


def _docx_cell_text(cell: ElementTree.Element) -> str:
    props = _child(cell, "tcPr")
    merged = _child(props, "vMerge") if props is not None else None
    if merged is not None and _attr(merged, "val") in (None, "continue"):
        return ""  # Word shows only the first cell of a vertical merge
    return " ".join(_tidy(t) for _, t in _docx_blocks(cell, {}) if t.strip())


def _docx_heading_level(p: ElementTree.Element, styles: dict[str, int]) -> int | None:
    ppr = _child(p, "pPr")
    if ppr is None:
        return None
    style = _child(ppr, "pStyle")
    if style is not None and _attr(style, "val") in styles:
        return styles[_attr(style, "val") or ""]
    lvl = _child(ppr, "outlineLvl")
    if lvl is not None and 1 <= _outline_level(lvl) <= 6:
        return _outline_level(lvl)
    return None


# Runs' text, but not deleted revisions, field codes, or the VML copy of a text box.
_DOCX_SKIP = {"pPr", "rPr", "del", "moveFrom", "delText", "instrText", "Fallback", "tblPr", "sectPr"}


def _docx_inline(el: ElementTree.Element) -> str:
    out: list[str] = []

    def walk(node: ElementTree.Element) -> None:
        for child in node:
            tag = _local(child.tag)
            if tag in _DOCX_SKIP:
                continue
            if tag == "t":
                out.append(child.text or "")
            elif tag == "tab":
                out.append("\t")
            elif tag in ("br", "cr"):
                out.append("\n")
            elif tag == "noBreakHyphen":
                out.append("-")
            elif tag == "p":  # a paragraph inside a text box
                out.append("\n")
                walk(child)
                out.append("\n")
            else:
                walk(child)

    walk(el)
    return "".join(out)


def _docx_extras(zf: zipfile.ZipFile, name: str) -> list[tuple[str, list[str]]]:
    """Header/footer text (each distinct line once) and footnotes/endnotes, as extra sections."""
    out: list[tuple[str, list[str]]] = []
    parts = sorted(n for n in zf.namelist() if re.fullmatch(r"word/(header|footer)\d*\.xml", n))
    seen: dict[str, None] = {}
    for part in parts:
        for _, text in _docx_blocks(_docx_xml(zf, part, name), {}):
            text = _tidy(text)
            if text:
                seen.setdefault(text, None)
    if seen:
        out.append(("Headers and footers", list(seen)))
    notes: list[str] = []
    for part in ("word/footnotes.xml", "word/endnotes.xml"):
        if part not in zf.NameToInfo:
            continue
        for note in _docx_xml(zf, part, name):
            if _attr(note, "type") in ("separator", "continuationSeparator", "continuationNotice"):
                continue
            text = " ".join(_tidy(t) for _, t in _docx_blocks(note, {}) if t.strip())
            if text:
                notes.append(text)
    if notes:
        out.append(("Notes", notes))
    return out


def _tidy(text: str) -> str:
    lines = (re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


# --------------------------------------------------------------------------- html
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:\-]+)""",
    re.I,
)


def decode_html(data: bytes, name: str) -> str:
    """Byte-order mark, then a declared charset (<meta> or <?xml encoding>), then sniffing."""
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in data[:4096]:
        return decode_text(data, name)
    m = _META_CHARSET.search(data[:4096])
    if m:
        label = (m.group(1) or m.group(2)).decode("ascii").lower()
        try:
            enc = codecs.lookup(label).name
        except LookupError:
            enc = ""
        # As browsers do: a declared UTF-16 in bytes we can read as ASCII means UTF-8,
        # and Latin-1/ASCII labels mean windows-1252.
        if enc.startswith("utf-16") or enc.startswith("utf-32"):
            enc = "utf-8"
        if enc in ("latin-1", "iso8859-1", "ascii"):
            enc = "cp1252"
        if enc:
            try:
                return data.decode(enc)
            except UnicodeDecodeError:
                logger.info("%s declares %s but is not; detecting the encoding instead", name, label)
    return decode_text(data, name)


def _load_html(data: bytes, name: str, sha256: str) -> LoadedFile:
    text = decode_html(data, name)
    blocks = _html_blocks(text, name, honour_hidden=True)
    if not blocks:
        # A page that hides its whole body until a script shows it: read the hidden text
        # rather than refuse a page a browser would show.
        blocks = _html_blocks(text, name, honour_hidden=False)
    docs = _section_documents(blocks, name, sha256)
    if not any(d.text.strip() for d in docs):
        raise IngestError(name, "no text: the HTML page has no visible text")
    return LoadedFile(name, docs, pages=0, kind="html")


def _html_blocks(text: str, name: str, honour_hidden: bool) -> list[Block]:
    parser = _HTMLText(honour_hidden)
    try:
        parser.feed(text)
        parser.close()
    except Exception as e:  # html.parser is lenient; this would be a bug worth a clear message
        raise IngestError(name, f"damaged HTML that cannot be read ({_short(e)})") from e
    return [b for b in parser.blocks() if b[1].strip()]


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "select", "button"}
_BLOCK = {
    "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "dialog", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
    "html", "legend", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "tfoot",
    "thead", "tr", "ul",
}  # fmt: skip
_CELL = {"td", "th"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Start tags that close an open element of the same kind within the given scope.
_IMPLIED_END = {
    "li": ({"li"}, {"ul", "ol"}),
    "dt": ({"dt", "dd"}, {"dl"}),
    "dd": ({"dt", "dd"}, {"dl"}),
    "tr": ({"tr"}, {"table", "tbody", "thead", "tfoot"}),
    "td": ({"td", "th"}, {"tr", "table"}),
    "th": ({"td", "th"}, {"tr", "table"}),
    "option": ({"option"}, {"select", "datalist"}),
}
_HEAD_CONTENT = {"title", "meta", "link", "style", "script", "base", "noscript", "template"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)


class _HTMLText(HTMLParser):
    """Visible text as blocks: headings split sections, table cells joined by ' | ',
    <pre> keeps its line breaks; script, style and hidden elements are dropped.

    html.parser only reports tags, so a small stack of open elements (with the implied
    ends that matter: <p>, <li>, <td>, <tr>...) tells whether text sits inside a hidden
    element, a row, or a <pre>."""

    def __init__(self, honour_hidden: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self._honour_hidden = honour_hidden
        self._stack: list[tuple[str, bool]] = []  # (tag, hides its content)
        self._hidden = 0
        self._pre = 0
        self._rows = 0
        self._inline: list[str] = []
        self._heading: int | None = None
        self._blocks: list[Block] = []
        self._title: list[str] = []
        self._in_title = False

    # -- open elements
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br" and not self._hidden:
                self._inline.append("\n")
            return
        if tag not in _HEAD_CONTENT:  # <body> or any content ends a <head> left open
            self._close_open({"head"}, set())
        if tag in _IMPLIED_END:
            same, scope = _IMPLIED_END[tag]
            self._close_open(same, scope)
        elif tag in _BLOCK and self._stack and self._stack[-1][0] == "p":
            self._pop_to(len(self._stack) - 1)
        if tag == "title":
            self._in_title = True
        hides = tag in _SKIP or (self._honour_hidden and _is_hidden(attrs))
        self._stack.append((tag, hides))
        self._hidden += hides
        if self._hidden:
            return
        if tag == "pre":
            self._pre += 1
        if tag in _CELL:
            if self._rows and "".join(self._inline).strip():
                self._inline.append(" | ")
        elif tag in _BLOCK:
            self._boundary()
            if tag == "tr":
                self._rows += 1
            elif tag in _HEADINGS and not self._rows:
                self._heading = int(tag[1])
            elif tag == "li":
                self._inline.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                self._pop_to(i)
                return
        if tag == "p" and not self._hidden:  # a stray </p> is an empty paragraph
            self._boundary()

    def _close_open(self, same: set[str], scope: set[str]) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            t = self._stack[i][0]
            if t in same:
                self._pop_to(i)
                return
            if t in scope:
                return

    def _pop_to(self, index: int) -> None:
        while len(self._stack) > index:
            tag, hides = self._stack.pop()
            self._hidden -= hides
            if hides or self._hidden:
                continue
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
            if tag == "tr":
                self._rows = max(0, self._rows - 1)
            if tag in _BLOCK:
                self._boundary()
                if tag in _HEADINGS:
                    self._heading = None

    # -- text
    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)
        elif not self._hidden:
            self._inline.append(data if self._pre else re.sub(r"\s+", " ", data))

    def _boundary(self) -> None:
        """The end of a block of text; inside a table row, only a space."""
        if self._rows:
            self._inline.append(" ")
            return
        text = _tidy("".join(self._inline))
        self._inline = []
        if not text:
            return
        if self._heading is not None:
            self._blocks.append((self._heading, " ".join(text.split())))
            self._heading = None
        else:
            self._blocks.append((None, text))

    def blocks(self) -> list[Block]:
        self._rows = 0
        self._boundary()
        title = " ".join("".join(self._title).split())
        if title and not (self._blocks and self._blocks[0][0] is not None):
            return [(1, title)] + self._blocks
        return self._blocks


def _is_hidden(attrs: list[tuple[str, str | None]]) -> bool:
    for key, value in attrs:
        if key == "hidden" or (key == "style" and value and _HIDDEN_STYLE.search(value)):
            return True
    return False


# --------------------------------------------------------------------------- common
def _meta(name: str, sha256: str) -> dict:
    return {"file_name": name, "doc_key": name, "file_sha256": sha256}


def _hide(doc: Document) -> None:
    doc.excluded_embed_metadata_keys = list(HIDDEN_KEYS) + ["page_label", "page"]
    doc.excluded_llm_metadata_keys = list(HIDDEN_KEYS) + ["page_label"]
