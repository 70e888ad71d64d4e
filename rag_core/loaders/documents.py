"""What a loader makes of a file: the result type, and the Documents' shared shape (their
metadata, which of it the embedding and the LLM do not see, tidy text, long texts cut into
parts). Kept apart from ``__init__`` so that the format modules import it without a cycle."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import Document

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
    ocr: dict[int, Any] = field(default_factory=dict)  # 1-based page -> the OcrPage it was read from


def doc_metadata(name: str, sha256: str) -> dict:
    """The metadata every Document of one file carries (its name, key and file digest)."""
    return {"file_name": name, "doc_key": name, "file_sha256": sha256}


def hide_metadata(doc: Document) -> None:
    """Keep the bookkeeping keys out of the embedding and the LLM's text (the page number stays for the LLM)."""
    doc.excluded_embed_metadata_keys = [*HIDDEN_KEYS, "page_label", "page"]
    doc.excluded_llm_metadata_keys = [*HIDDEN_KEYS, "page_label"]


def tidy(text: str) -> str:
    """Runs of spaces/tabs/no-break spaces as one space, lines trimmed, empty lines dropped."""
    lines = (re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


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


# Most characters of text one file may yield: about 8,000 dense pages, four times the
# 2,000-page PDF of docs/robustness.md (~6 M characters, indexed in minutes). Chunking and
# embedding time grow with the text, so a file past this would run for hours with no end in
# sight. Read through the package at call time (``rag_core.loaders.MAX_TEXT_CHARS``).
MAX_TEXT_CHARS = 25_000_000


def too_much_text(chars: int, limit: int) -> str:
    return (
        f"too much text: {chars / 1e6:.1f} million characters, more than one file may hold "
        f"({limit / 1e6:g} million, about {limit // 3000:,} dense pages); split it into smaller files"
    )
