"""A document's outline, read from its chunks in Chroma: its title, its section headings and
the definitions among its first sentences. ``rag_core.suggestions`` turns them into questions.

Markdown, DOCX and HTML sections carry their heading path in metadata. PDFs and text files
have none, so a heading is guessed from a line's shape: numbered ("Chapter 2: Capacity",
"3.1 Results"), ALL CAPS or Title Case, 2-8 words, followed by running text. Names,
addresses, table rows and contents lines mostly fail on their characters or on what follows.
"""

from __future__ import annotations

import re
from typing import Any

from rag_core.figures.tables import row_cells
from rag_core.index import VectorIndex

_NOT_SUBJECTS = {
    "it", "this", "that", "these", "those", "there", "they", "he", "she", "we", "you", "i", "what",
    "which", "who", "here", "all", "each", "some", "one", "such", "both", "many", "most", "none",
    "the", "a", "an", "because", "when", "if", "while", "since", "although", "as", "so", "but",
    "and", "or", "then", "thus", "however", "also", "our", "their", "its", "his", "her", "my", "your",
}  # fmt: skip
_NUMBERED = re.compile(
    r"^(?:(?:chapter|section|part|appendix|article|item|note)\s+[\w.]+\s*[:.\-–—]?\s*|\d+(?:\.\d+)*\.?\s+)(?=\S)", re.I
)
_BARE_NUMBER = re.compile(r"(?:chapter|section|part|book|volume|appendix|article|item|note)\s+[\w.]+:?", re.I)
_DEFINITION = re.compile(
    r"^(?:(the|an?)\s+)?([^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*){0,3})\s+(is|are|was|were)\s+"
    r"(?!not\b|also\b|used\b|made\b|shown\b|given\b|based\b|available\b|required\b)",
    re.I,
)


def outline(name: str, index: VectorIndex) -> dict[str, Any]:
    """A document's title, headings ``[heading, position]`` (position: its page, or its
    section number) and definition questions, from its chunks in Chroma. The title is the
    first section's heading (Markdown, DOCX, HTML); for PDFs and text it is the file name,
    as a PDF's first line is as often a cover page's "UNITED STATES" as a title."""
    nodes = ordered_chunks(name, index)
    headings: list[list[Any]] = []
    title = ""
    facts: list[str] = []
    seen_parts: set[Any] = set()
    text_all = "\n".join(n.text for n in nodes)
    for node in nodes:
        meta = node.metadata
        pos = meta.get("page") or meta.get("section") or 0
        path = [p.strip() for p in str(meta.get("heading") or "").split(">") if p.strip()]
        if path:
            title = title or (path[0] if meta.get("section") == 1 else "")
            if [path[-1], pos] not in headings:
                headings.append([path[-1], pos])
        elif not meta.get("section"):
            for heading in _heading_lines(node.text, whole_first_line=not node.start_char_idx):
                if [heading, pos] not in headings:
                    headings.append([heading, pos])
        if pos not in seen_parts:  # definitions among the first sentences of each page/section
            seen_parts.add(pos)
            facts += [q for q in (definition_question(x, text_all) for x in _sentences(node.text)[:3]) if q]
    headings = [h for h in headings if h[0] != title][:40]
    return {"name": name, "title": title, "headings": headings, "facts": unique(facts)[:10]}


_HEADING_CHARS = re.compile(r"^[\w\s\-–—:'’&/(),.]+$")
_LOOSE_END = {
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "is", "of", "on", "or", "the", "to", "with",
    "his", "her", "its", "their", "our", "my", "your", "this", "that", "he", "she", "it", "they", "we",
}  # fmt: skip


def heading_line(line: str) -> str | None:
    """The heading a line of PDF/text is, cleaned ("Chapter 2: Capacity" → "Capacity"), or
    None. Numbered lines, ALL CAPS and Title Case lines of 2-8 words count; names, addresses
    and table cells mostly fail on their characters or on what follows them (``_is_body``)."""
    line = " ".join(line.split())
    if not 3 <= len(line) <= 80 or line[-1] in ".,;" or not _HEADING_CHARS.match(line):
        return None
    if re.search(r"(\w)\1{3,}|\d{4,}", line) or sum(c.isalpha() for c in line) < 0.7 * len(line.replace(" ", "")):
        return None
    if _BARE_NUMBER.fullmatch(line):
        return None  # "Chapter IV" says where, not what about
    numbered = _NUMBERED.match(line)
    body = line[numbered.end() :] if numbered else line
    words = re.sub(r"(?<=[^\W\d]{3})\s+\d{1,4}$", "", body).rstrip(":").split()  # a contents line's page number
    if not words or len(words) > 8 or not words[0][0].isupper() or words[-1].lower() in _LOOSE_END:
        return None
    if not any(len(w) >= 4 and w.isalpha() for w in words):
        return None
    significant = [w for w in words if len(w) >= 4 and w[0].isalpha()]
    caps = len(words) >= 2 and body.isupper()
    titled = len(words) >= 2 and all(w[0].isupper() for w in significant)
    if not (numbered or caps or titled):
        return None
    body = " ".join(words)
    return body.title() if body.isupper() else body


def _heading_lines(text: str, whole_first_line: bool = True) -> list[str]:
    """The headings among a chunk's lines: a heading-shaped line that starts a block (not the
    wrapped end of a sentence, as "Anna Pavlovna" in a novel is) and is followed by running text.
    A chunk that starts inside its page may start mid-line: then its first line is no heading
    (the chunk before, which overlaps it, has that line whole)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if i == 0 and not whole_first_line:
            continue
        after = next((x for x in lines[i + 1 :] if x.strip()), "")
        before = lines[i - 1] if i else ""
        if line.strip() and _is_body(after) and not _continues(before):
            heading = heading_line(line)
            if heading:
                found.append(heading)
    return found


def _continues(line: str) -> bool:
    """A line of running text that does not end its sentence: the next line goes on with it (a
    table's row does not)."""
    if len(line.split()) < 6 or line.rstrip().endswith((".", "!", "?", ":", ";", '"', "”", ")")):
        return False
    return not _is_row(line)


def _is_row(line: str) -> bool:
    """A table's row: words, then two figures or more ("Single ORQA (Lee et al., 2019) 33.3 45.0")."""
    row = row_cells(line)
    return row is not None and len(row[1]) >= 2


def _is_body(line: str) -> bool:
    """A line of running text (what follows a section heading), not another short label, nor a
    table's row ("Single BM25+BERT (Lee et al., 2019) 26.5 47.1 17.7": the line above it is the
    table's header, "Training Model NQ TriviaQA", no section)."""
    words = line.split()
    if len(words) < 6 or sum(w[0].islower() for w in words if w[0].isalpha()) < 2:
        return False
    return not _is_row(line)


def definition_question(sentence: str, text: str = "") -> str | None:
    """'Bananas are yellow fruit...' → 'What are bananas?' (None if it is no definition). The
    first word stays capitalised only if ``text`` (the document) has it so within a sentence."""
    sentence = sentence.strip()
    m = _DEFINITION.match(sentence)
    if not m or len(sentence) > 400 or not sentence[0].isupper():
        return None
    article, subject, verb = m.group(1), m.group(2), m.group(3).lower()
    words = subject.split()
    if any(w.lower() in _NOT_SUBJECTS for w in words) or (article and article.lower() == "the" and len(words) == 1):
        return None  # "It is", "Because traces are", "The answer is": no topic to ask about
    first = words[0]
    if not article and first[:1].isupper() and not first.isupper() and not re.search(rf"[\w,;] {first}\b", text):
        subject = first.lower() + subject[len(first) :]  # capitalised only because it starts the sentence
    verb = "is" if verb in ("is", "was") else "are"
    return f"What {verb} {article.lower() + ' ' if article else ''}{subject}?"


def _sentences(text: str) -> list[str]:
    lines = [x for x in text.splitlines() if x.strip() and not heading_line(x) and not x.lstrip().startswith("#")]
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(lines)) if s.strip()]


def ordered_chunks(name: str, index: VectorIndex) -> list:
    nodes = index.all_nodes([name])
    return sorted(
        nodes, key=lambda n: (n.metadata.get("page") or n.metadata.get("section") or 0, n.start_char_idx or 0)
    )


def start_text(name: str, index: VectorIndex, chars: int) -> str:
    """The document's first chunks that read as prose, up to ``chars``: a cover page,
    a table of contents or a table of figures makes the model ask for a telephone number."""
    nodes = ordered_chunks(name, index)
    prose = [n for n in nodes if _prose(n.text) >= 0.4] or nodes
    text = ""
    for node in prose:
        text += node.text.strip() + "\n"
        if len(text) >= chars:
            break
    return text[:chars]


def _prose(text: str) -> float:
    """The share of ``text`` in running text: lines or sentences of six words or more, most
    of them in lower case (a cover page, a contents page or a table has little)."""
    prose = 0
    for piece in re.split(r"(?<=[.!?。！？])\s+|\n", text):
        words = [w for w in piece.split() if w[0].isalpha()]
        if len(words) >= 6 and sum(w[0].islower() for w in words) >= len(words) / 2:
            prose += len(piece)
    return prose / max(len(text), 1)


def unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out
