"""What every loader shares: the result type, Document metadata, file signatures, short
error texts. Kept apart from ``__init__`` so that the format modules import it without a cycle."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from llama_index.core import Document

# Metadata that is shown to the user but kept out of the embedding and of the LLM's text.
HIDDEN_KEYS = ["doc_key", "file_sha256", "section"]

# File signatures, to say what a misnamed file really is.
CFB = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file: .doc/.xls, or an encrypted .docx
_SIGNATURES = [
    (b"%PDF", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (such as .docx, .epub or .odt)"),
    (CFB, "an old Office file (.doc/.xls) or an encrypted Office file"),
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
    ocr: dict[int, Any] = field(default_factory=dict)  # 1-based page -> the OcrPage it was read from


def sniff(data: bytes) -> str | None:
    """What the file's first bytes say it is ('a PDF', 'a PNG image'...), or None."""
    head = data[:1024].lstrip()[:16]
    return next((what for sig, what in _SIGNATURES if head.startswith(sig)), None)


def _meta(name: str, sha256: str) -> dict:
    return {"file_name": name, "doc_key": name, "file_sha256": sha256}


def _hide(doc: Document) -> None:
    doc.excluded_embed_metadata_keys = [*HIDDEN_KEYS, "page_label", "page"]
    doc.excluded_llm_metadata_keys = [*HIDDEN_KEYS, "page_label"]


def tidy(text: str) -> str:
    """Runs of spaces/tabs/no-break spaces as one space, lines trimmed, empty lines dropped."""
    lines = (re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def short(e: BaseException) -> str:
    """An exception as a short reason: its first line, at most 160 characters."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    # pypdfium2 wraps PDFium's reason: "Failed to load document (PDFium: Data format error)."
    msg = re.sub(r"^Failed to load document \((.+)\)\.?$", r"\1", msg)
    return msg[:160]


PART_CHARS = 100_000  # longest Document handed to the sentence splitter (its regexes slow on more)


def split_long(docs: list[Document], limit: int = PART_CHARS) -> list[Document]:
    """Documents longer than ``limit`` characters cut into parts at paragraph (else line, else
    space) boundaries, ids ``<id>.01``, ``.02``...: a 10 MB novel is split into sentences part
    by part instead of timing out in one pass. Shorter documents are returned as they are."""
    out: list[Document] = []
    for doc in docs:
        text = doc.text
        if len(text) <= limit:
            out.append(doc)
            continue
        parts, start = [], 0
        while start < len(text):
            end = min(len(text), start + limit)
            if end < len(text):
                base = start + limit // 2
                window = text[base:end]
                for sep in ("\n\n", "\n", " "):
                    cut = window.rfind(sep)
                    if cut >= 0:
                        end = base + cut + len(sep)
                        break
            parts.append(text[start:end])
            start = end
        for k, part in enumerate(parts, 1):
            piece = Document(id_=f"{doc.id_}.{k:02d}", text=part, metadata=dict(doc.metadata))
            piece.excluded_embed_metadata_keys = list(doc.excluded_embed_metadata_keys)
            piece.excluded_llm_metadata_keys = list(doc.excluded_llm_metadata_keys)
            out.append(piece)
    return out
