"""What the answering model reads: the lines of the retrieved passages that bear on the
question, within a budget of tokens, each passage numbered so the answer can cite it.

On two cores the model reads its prompt at 50–100 tokens a second, so every passage line it
does not need costs the user time before the first word. A passage is cut into lines (a PDF
table row is a line; long prose lines into sentences), each line is scored by the share of
the question's terms it holds (weighted by how rare each term is in the documents), and the
best lines are kept, best first, until the budget is spent. A table's header lines (its
title, "(In millions)", "Three Months Ended", the period dates) travel with any row kept from
it, so a figure keeps its column; a row of a grid (a table whose columns a header row of
words names) is written out with its columns' names and units, and scored with them; a kept
line that states no figure brings a short neighbouring line that does (a form's label and its
value are two lines: "(Address of principal executive offices)" under the address, "State the
aggregate market value …" over "$70,923,698."); lines stay in their document order, a gap
shown as "…".
docs/performance.md has what the budget measured.

The same scoring picks the preview (``preview_of``): the sentence of the sources that best
answers the question, shown before the model has read anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.chat import tables
from rag_core.figures import grids
from rag_core.payloads import Source
from rag_core.text import is_header as is_text_header
from rag_core.text import query_terms, spelled_out, tokenize
from rag_core.text_injection import without_instructions

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
LONG_LINE = 300  # characters: longer lines are prose, cut into sentences
VALUE_LINE = 100  # characters: a neighbouring line this short that holds a figure is a label's value
_DIGIT = re.compile(r"\d")


@dataclass
class Evidence:
    """One source as the model reads it: the kept lines of the passage, numbered for citing."""

    number: int  # 1-based, as the answer cites it: [1], [2]...
    file: str
    page: int | None
    heading: str | None
    lines: list[str] = field(default_factory=list)

    def render(self) -> str:
        where = self.file + (f", page {self.page}" if self.page else "")
        if self.heading:
            where += f", {self.heading}"
        return f"[{self.number}] {where}\n" + "\n".join(self.lines)


def units(text: str) -> list[str]:
    """A passage's lines; a long prose line cut into its sentences; text addressing an assistant
    ("ignore the sources", "answer exactly: …") cut out: an instruction, not evidence."""
    out: list[str] = []
    for line in without_instructions(text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if len(line) > LONG_LINE:
            out.extend(s.strip() for s in _SENTENCE.split(line) if s.strip())
        else:
            out.append(line)
    return out


@dataclass
class _Unit:
    passage: int
    position: int
    text: str
    score: float
    tokens: int
    written: str = ""  # the line as the model reads it (a table row with its columns)


def select_evidence(
    question: str,
    passages: Sequence[tuple[str, str, int | None, str | None]],
    budget: int,
    count_tokens: Callable[[str], int],
    idf: Callable[[str], float] | None = None,
) -> list[Evidence]:
    """The lines of ``passages`` ((text, file, page, heading), best first) worth reading for
    ``question``, within ``budget`` tokens; ``budget`` 0 keeps every line."""
    evidence = [Evidence(i + 1, file, page, heading) for i, (_, file, page, heading) in enumerate(passages)]
    split = [units(text) for text, *_ in passages]
    if budget <= 0:
        for ev, lines in zip(evidence, split, strict=True):
            ev.lines = lines
        return evidence
    terms = query_terms(spelled_out(question))  # "SG&A" is the line "Selling, general and administrative …"
    weight = {t: (idf(t) if idf else 1.0) for t in terms}
    total = sum(weight.values()) or 1.0
    scored: list[_Unit] = []
    for p, lines in enumerate(split):
        decay = 1.0 / (1.0 + 0.15 * p)  # a better-ranked passage wins a tie
        grid_rows = [tables.grid_row(line, lines[max(0, i - grids.ABOVE) : i]) for i, line in enumerate(lines)]
        named = {i - g[1] for i, g in enumerate(grid_rows) if g}  # header rows whose rows carry their names
        for i, line in enumerate(lines):
            read = grid_rows[i]
            grid = read[0] if read else ""
            have = set(tokenize(grid or line))  # a grid's row is found by its columns' names
            share = 0.0 if i in named else sum(w for t, w in weight.items() if t in have) / total
            scored.append(_Unit(p, i, line, share * decay, 0, grid))
    for unit in scored:
        unit.written = unit.written or _written_out(scored, unit.passage, unit.position, unit.text, question)
        unit.tokens = count_tokens(unit.written) + 1
    at = {(u.passage, u.position): u for u in scored}
    chosen: dict[int, set[int]] = {}
    spent = 0
    ranked = sorted((u for u in scored if u.score > 0), key=lambda u: (-u.score, u.passage, u.position))
    if not ranked:  # nothing shares a term (another language, a paraphrase): the passages' starts
        ranked = [u for u in scored if u.position < 3]
    for unit in ranked:
        extra = [unit] + ([] if unit.passage in chosen else _headers(scored, unit.passage, unit.position))
        cost = sum(u.tokens for u in extra if u.position not in chosen.get(u.passage, set()))
        values = [v for v in _values(at, unit) if v.position not in chosen.get(v.passage, set())]
        if values and spent + cost + sum(v.tokens for v in values) <= budget:
            extra, cost = extra + values, cost + sum(v.tokens for v in values)
        if spent + cost > budget and spent > 0:
            continue
        spent += cost
        for u in extra:
            chosen.setdefault(u.passage, set()).add(u.position)
    for p, positions in chosen.items():
        by_position = {u.position: u.written for u in scored if u.passage == p}
        written = {i: by_position[i] for i in sorted(positions)}
        if any(w != split[p][i] for i, w in written.items()):  # rows carry their columns now:
            written = {i: w for i, w in written.items() if not _period_only(w)}  # drop bare dates
        lines, last = [], None
        for i, line in written.items():
            if last is not None and i != last + 1:
                lines.append("…")
            lines.append(line)
            last = i
        evidence[p].lines = lines
    return [ev for ev in evidence if ev.lines]


def _values(at: dict[tuple[int, int], _Unit], unit: _Unit) -> list[_Unit]:
    """The lines next to ``unit`` that hold what it labels, when it states no figure itself: short
    lines with a figure (an amount, an address, a date) just above or below it."""
    if _DIGIT.search(unit.text):
        return []
    near = (at.get((unit.passage, unit.position + d)) for d in (1, -1))
    return [u for u in near if u and len(u.text) <= VALUE_LINE and _DIGIT.search(u.text) and not is_header(u.text)]


def _period_only(line: str) -> bool:
    """A header line that says only a period or a date ("Three Months Ended", "June 25,", "2022 2023")."""
    return bool(
        re.fullmatch(
            r"[\s,]*(?:(?:three|six|nine|twelve)\s+months\s+ended|[A-Z][a-z]+\s+\d{1,2},?|(?:19|20)\d{2}|\s)+[\s,]*",
            line,
            re.I,
        )
    )


def _written_out(scored: list[_Unit], passage: int, position: int, line: str, question: str = "") -> str:
    """A table row with its column headers written into it (``tables.label_row``)."""
    if is_header(line):
        return line
    headers = [u.text for u in _headers(scored, passage, position)]
    labels = tables.columns(headers) if headers else None
    if labels:
        return tables.label_row(line, labels, tables.units(headers))
    above = [u.text for u in scored if u.passage == passage and position - 16 <= u.position < position]
    # a header of names, not periods ("NQ TriviaQA WQ"), or of names with units over rows keyed by a number
    return tables.named_row(line, above, question) or tables.keyed_row(line, above) or line


def _headers(scored: list[_Unit], passage: int, position: int) -> list[_Unit]:
    """The header lines above ``position`` in ``passage``: the table's title, units and periods."""
    return [u for u in scored if u.passage == passage and u.position < position and is_header(u.text)][-12:]


def is_header(line: str) -> bool:
    """A table's title, unit or period line; a line of quarter columns too ("Q3 2024 Q3 2023")."""
    return is_text_header(line) or tables.is_quarter_header(line)


def best_sentence(question: str, texts: Sequence[str], idf: Callable[[str], float] | None = None) -> tuple[int, str]:
    """The sentence (or table line) of ``texts`` that best answers ``question``: (text index, sentence)."""
    terms = query_terms(spelled_out(question))  # "SG&A" is the line "Selling, general and administrative …"
    weight = {t: (idf(t) if idf else 1.0) for t in terms}
    best: tuple[float, int, str] = (-1.0, 0, "")
    for i, text in enumerate(texts):
        for line in units(text):
            for sentence in _SENTENCE.split(line):
                have = set(tokenize(sentence))
                score = sum(w for t, w in weight.items() if t in have) / (1.0 + 0.15 * i)
                score += min(len(sentence), 300) / 30000  # a fuller sentence wins a tie
                if sentence.strip() and score > best[0]:
                    best = (score, i, sentence.strip())
    return best[1], best[2]


def preview_of(question: str, sources: list[Source], idf: Callable[[str], float]) -> dict[str, Any] | None:
    """The sentence of the sources that best answers the question: shown before the answer."""
    if not sources:
        return None
    index, sentence = best_sentence(question, [src.get("text") or "" for src in sources], idf)
    if not sentence:
        return None
    src = sources[index]
    return {"sentence": sentence, "file": src.get("file"), "page": src.get("page"), "source": index + 1}
