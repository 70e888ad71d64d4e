"""Turn one file into LlamaIndex ``Document`` objects, or refuse it with a reason.

Every refusal is an ``IngestError`` whose reason a person can act on ("encrypted: needs
a password", "no text layer: scanned pages need OCR", "unsupported type .epub (...)",
"empty file"); nothing here lets a library's exception escape for a bad file.

The formats, their extensions, labels and readers are one table, ``FORMATS`` in
``formats.py``; everything that names them is built from it:

- PDF (``pdf.py``): one Document per page, PDFium with pypdf as the fallback; pages without
  a text layer read by OCR (``ocr.py``) when asked.
- DOCX (``docx.py``): the WordprocessingML inside the ZIP, split on heading styles.
- HTML (``html.py``): BeautifulSoup with lxml, visible text split on h1-h6.
- TXT/Markdown (``text.py``, ``sections.py``): encoding detected (BOM, UTF-8, then
  charset-normalizer); Markdown is split on headings and the heading path kept in metadata.

``load_file`` parses in this process; ``load_file_guarded`` (``budget.py``) parses in a
reused worker process under a time and memory budget, so that one hostile or broken file
cannot hang or exhaust the app.

Document ids are stable, derived from the document's name plus page/section number
(``name::p0003``, ``name::s0001``, ``name::text``), so re-ingesting the same name upserts
instead of duplicating.
"""

from __future__ import annotations

from pathlib import Path

from rag_core.errors import IngestError
from rag_core.loaders.budget import load_file_guarded
from rag_core.loaders.budget import warm as warm_reader
from rag_core.loaders.documents import (
    HIDDEN_KEYS,
    MAX_TEXT_CHARS,
    LoadedFile,
    split_long,
    too_much_text,
)
from rag_core.loaders.docx import MAX_UNPACKED_XML, MAX_XML_ELEMENTS
from rag_core.loaders.formats import (
    FORMATS,
    SUPPORTED_EXTS,
    SUPPORTED_LABEL,
    UPLOAD_LABEL,
    UPLOAD_TYPES,
    Format,
    extensions_of,
    format_of,
)
from rag_core.loaders.html import decode_html
from rag_core.loaders.ocr import OcrPage, OcrRequest
from rag_core.loaders.reasons import sniff
from rag_core.loaders.sections import Block
from rag_core.loaders.text import decode_text

__all__ = [
    "DOCX_EXTS",
    "FORMATS",
    "HIDDEN_KEYS",
    "HTML_EXTS",
    "MAX_TEXT_CHARS",
    "MAX_UNPACKED_XML",
    "MAX_XML_ELEMENTS",
    "MD_EXTS",
    "PDF_EXTS",
    "SUPPORTED_EXTS",
    "SUPPORTED_LABEL",
    "TEXT_EXTS",
    "UPLOAD_LABEL",
    "UPLOAD_TYPES",
    "Block",
    "Format",
    "LoadedFile",
    "OcrPage",
    "OcrRequest",
    "check_supported",
    "decode_html",
    "decode_text",
    "extensions_of",
    "format_of",
    "kind_of",
    "load_file",
    "load_file_guarded",
    "supported",
    "unsupported_reason",
    "warm_reader",
]

PDF_EXTS = extensions_of("pdf")
DOCX_EXTS = extensions_of("docx")
HTML_EXTS = extensions_of("html")
TEXT_EXTS = extensions_of("text")
MD_EXTS = extensions_of("markdown")

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


def supported(name: str) -> bool:
    return format_of(name) is not None


def unsupported_reason(name: str) -> str:
    """Why ``name``'s type is refused: 'unsupported type .X (supported: ...)'."""
    ext = Path(name).suffix.lower()
    hint = _UNSUPPORTED_HINTS.get(ext)
    shown = ext or "(no extension)"
    return f"unsupported type {shown} (supported: {SUPPORTED_LABEL}" + (f"; {hint})" if hint else ")")


def kind_of(name: str) -> str:
    """The ``kind`` a loader gives a file of this name (pdf, docx, html, markdown, text)."""
    found = format_of(name)
    return found.kind if found else "text"


def check_supported(name: str) -> None:
    if not supported(name):
        raise IngestError(name, unsupported_reason(name))


def load_file(path: Path, name: str, sha256: str, ocr: OcrRequest | None = None) -> LoadedFile:
    """Parse ``path`` (known to the user as ``name``). Raises ``IngestError`` with a reason.
    ``ocr`` says whether a PDF's pages without a text layer are read by OCR (None: they are not).
    A file that yields more than ``MAX_TEXT_CHARS`` of text is refused here, where it was read
    (in the worker: within the parse budget), not after hours of embedding."""
    loaded = _load(path, name, sha256, ocr)
    for doc in loaded.documents:  # a NUL is no text: PostgreSQL refuses it, and SQLite must hold what it holds
        if "\x00" in doc.text:
            doc.set_content(doc.text.replace("\x00", ""))
        for key, value in doc.metadata.items():
            if isinstance(value, str) and "\x00" in value:
                doc.metadata[key] = value.replace("\x00", "")
    chars = sum(len(d.text) for d in loaded.documents)
    if chars > MAX_TEXT_CHARS:
        raise IngestError(name, too_much_text(chars, MAX_TEXT_CHARS))
    return loaded


def _load(path: Path, name: str, sha256: str, ocr: OcrRequest | None) -> LoadedFile:
    check_supported(name)
    found = format_of(name)
    assert found is not None
    try:
        data = path.read_bytes()
    except OSError as e:
        raise IngestError(name, f"cannot read the file ({e.strerror or type(e).__name__})") from e
    if not data.strip():
        raise IngestError(name, "empty file")
    if found.text:
        _refuse_binary(data, name, Path(name).suffix.lower())
    loaded = found.read(path, data, name, sha256, ocr)
    return _split(loaded) if found.split else loaded


def _split(loaded: LoadedFile) -> LoadedFile:
    loaded.documents = split_long(loaded.documents)
    return loaded


def _refuse_binary(data: bytes, name: str, ext: str) -> None:
    """A PDF or a Word file renamed to .txt would otherwise be indexed as garbage."""
    what = sniff(data)
    if what:
        raise IngestError(name, f"not a {ext} text file: it is {what} with the wrong extension")
