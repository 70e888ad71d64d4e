"""The formats Docent reads: one table, ``FORMATS``, from which everything that names them is
built — the extensions accepted, a document's ``kind``, the refusal's "supported: …" label, the
Upload page's file types and label, and which loader reads a file.

Adding a format is a row here and a reader (docs/architecture.md, "Adding a format").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.schema import Document

from rag_core.errors import IngestError
from rag_core.loaders.documents import LoadedFile, doc_metadata, hide_metadata
from rag_core.loaders.docx import load_docx
from rag_core.loaders.html import load_html
from rag_core.loaders.ocr import OcrRequest
from rag_core.loaders.pdf import load_pdf
from rag_core.loaders.sections import markdown_blocks, section_documents
from rag_core.loaders.text import decode_text

# (path, bytes, name, sha256, ocr) -> the file's Documents
Reader = Callable[[Path, bytes, str, str, OcrRequest | None], LoadedFile]


def read_pdf(path: Path, data: bytes, name: str, sha256: str, ocr: OcrRequest | None) -> LoadedFile:
    return load_pdf(path, data, name, sha256, ocr)


def read_docx(path: Path, data: bytes, name: str, sha256: str, ocr: OcrRequest | None) -> LoadedFile:
    return load_docx(data, name, sha256)


def read_html(path: Path, data: bytes, name: str, sha256: str, ocr: OcrRequest | None) -> LoadedFile:
    return load_html(data, name, sha256)


def _decoded(data: bytes, name: str) -> str:
    text = decode_text(data, name)
    if not text.strip():
        raise IngestError(name, "empty file (only whitespace)")
    return text


def read_text(path: Path, data: bytes, name: str, sha256: str, ocr: OcrRequest | None) -> LoadedFile:
    doc = Document(id_=f"{name}::text", text=_decoded(data, name), metadata=doc_metadata(name, sha256))
    hide_metadata(doc)
    return LoadedFile(name, [doc], pages=0, kind="text")


def read_markdown(path: Path, data: bytes, name: str, sha256: str, ocr: OcrRequest | None) -> LoadedFile:
    docs = section_documents(markdown_blocks(_decoded(data, name)), name, sha256)
    return LoadedFile(name, docs, pages=0, kind="markdown")


@dataclass(frozen=True)
class Format:
    kind: str  # LoadedFile.kind and the registry's kind
    label: str  # in the refusal: "unsupported type .epub (supported: PDF, Word .docx, …)"
    noun: str  # on the Upload page: "Add PDF, Word (.docx), … files"
    extensions: tuple[str, ...]  # lower case, with the dot; the first is the usual one
    read: Reader
    text: bool  # read as text: a PDF or Word file renamed to this extension is refused
    split: bool  # very long Documents cut into parts at paragraphs (``split_long``)


FORMATS: tuple[Format, ...] = (
    Format("pdf", "PDF", "PDF", (".pdf",), read_pdf, text=False, split=False),
    Format("docx", "Word .docx", "Word (.docx)", (".docx",), read_docx, text=False, split=True),
    Format("html", "HTML", "HTML", (".html", ".htm", ".xhtml"), read_html, text=True, split=True),
    Format("text", "TXT", "text", (".txt", ".text"), read_text, text=True, split=True),
    Format("markdown", "Markdown", "Markdown", (".md", ".markdown"), read_markdown, text=True, split=True),
)

BY_EXTENSION: dict[str, Format] = {ext: f for f in FORMATS for ext in f.extensions}
SUPPORTED_EXTS: frozenset[str] = frozenset(BY_EXTENSION)
SUPPORTED_LABEL = ", ".join(f.label for f in FORMATS)
UPLOAD_TYPES: list[str] = sorted(ext.lstrip(".") for ext in SUPPORTED_EXTS)
UPLOAD_LABEL = "Add " + ", ".join(f.noun for f in FORMATS[:-1]) + f" or {FORMATS[-1].noun} files"


def format_of(name: str) -> Format | None:
    """The format a file of this name is read as, by its extension (any case); None: refused."""
    return BY_EXTENSION.get(Path(name).suffix.lower())


def extensions_of(kind: str) -> set[str]:
    return {ext for f in FORMATS if f.kind == kind for ext in f.extensions}
