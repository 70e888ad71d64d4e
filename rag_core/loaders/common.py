"""What every loader shares: the result type, Document metadata, file signatures, short
error texts. Kept apart from ``__init__`` so that the format modules import it without a cycle."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
