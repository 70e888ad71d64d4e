"""Blocks to section Documents.

A "block" is (heading level or None, text). Markdown, DOCX and HTML all become blocks, and
one function turns blocks into section Documents (``name::s0001``...) that keep their
heading path ("Manual > Capacity") in metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from llama_index.core.schema import Document

from rag_core.loaders.documents import doc_metadata, hide_metadata

Block = tuple[int | None, str]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def markdown_blocks(text: str) -> Iterator[Block]:
    """ATX headings outside code fences; a heading block keeps its '#' line as written."""
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        yield (len(m.group(1)), line) if m else (None, line)


def heading_title(text: str) -> str:
    m = _HEADING.match(text)
    return " ".join((m.group(2) if m else text).split())


def section_documents(blocks: Iterable[Block], name: str, sha256: str) -> list[Document]:
    """One Document per heading section; each keeps the path of headings above it."""
    sections: list[tuple[list[str], list[str]]] = []
    path: list[str] = []
    lines: list[str] = []
    for level, text in blocks:
        if level is not None:
            if any(x.strip() for x in lines):
                sections.append((list(path), lines))
            path = path[: level - 1] + [""] * max(0, level - 1 - len(path)) + [heading_title(text)]
            lines = [text]
        else:
            lines.append(text)
    if any(x.strip() for x in lines):
        sections.append((list(path), lines))
    docs = []
    for i, (heads, body) in enumerate(sections, start=1):
        heading = " > ".join(h for h in heads if h)
        meta = doc_metadata(name, sha256)
        meta["section"] = i
        if heading:
            meta["heading"] = heading
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip()
        doc = Document(id_=f"{name}::s{i:04d}", text=text, metadata=meta)
        hide_metadata(doc)
        docs.append(doc)
    return docs
