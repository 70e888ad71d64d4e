"""A paper's results table, as ``tables`` reads it, made whole: the group column written on
each group's first row only ("Single ORQA …", "BM25 …", "Multi DPR …"), and the caption
under or above it ("Table 3: … on Natural Questions (development set)."), and rows named by
a number ("Base 128", "Base 256": ``named_by_number``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from rag_core.figures.labels import Item


class _Row(Protocol):
    item: Item


def key(label: str) -> str:
    """A label as rows are compared: lower case, words only."""
    return re.sub(r"\W+", " ", label.lower()).strip()


def regroup(rows: Sequence[_Row]) -> None:
    """Rows under two label columns, the first a group written on its group's first row only
    ("Single ORQA ...", "BM25 ...", "Multi DPR ...", "BM25+DPR ..."): a row whose label is a
    word and then another row's label ("Multi" + "DPR"), or a word that heads rows on a line of
    its own elsewhere in the table ("Single"), or a word before a label that another word is
    before too ("Single DPR", "Multi DPR") starts a group, and so does the table's first row
    then ("None BM25"); the rows after it that were under the same heading as it are in that
    group, not under the heading above it."""
    labels = {key(row.item.label) for row in rows}
    heads = {row.item.section for row in rows if row.item.section}  # "Single" on a line of its own
    # "Single DPR" and "Multi DPR": one label under two groups
    firsts = Counter(key(row.item.label.partition(" ")[2]) for row in rows if " " in row.item.label)

    def starts(label: str) -> bool:
        first, _, rest = label.partition(" ")
        return _splits(first, rest) and (key(rest) in labels or first in heads or firsts[key(rest)] > 1)

    # with a group column, the table's first row starts a group too ("None BM25" over "Single DPR")
    opens = any(starts(row.item.label) for row in rows)
    group, under = "", None
    for i, row in enumerate(rows):
        first, _, rest = row.item.label.partition(" ")
        top = i == 0 and opens and _splits(first, rest)
        if top or starts(row.item.label):
            group, under = first, row.item.section
            row.item = replace(row.item, label=rest, section=first)
        elif group and row.item.section == under:
            row.item = replace(row.item, section=group)
        else:
            group, under = "", None


def _splits(first: str, rest: str) -> bool:
    """Whether a label can be a group's word and a label: a capitalised word with no digit,
    then words starting with a letter ("Multi" + "DPR"; not "Random" + "7 ✗", not "BM25" + …)."""
    return bool(re.match(r"[^\W\d_]", rest)) and first[:1].isupper() and not re.search(r"\d", first)


_CAPTION = re.compile(  # "Table 3: …", or "Table 1" alone on its line, its caption on the next
    r"(?:^|\n)[ \t]*((?:Table|TABLE|Tab\.)\s+[\dIVX]+[a-z]?(?:[ \t]*[:.][^\n]*|[ \t]*(?=\n))(?:\n[^\n]*){0,2})"
)
NUMBER = re.compile(r"(?:Table|TABLE|Tab\.)\s+[\dIVX]+[a-z]?")  # a caption's table: "Table 3"


def caption(text: str, start: int, end: int) -> str:
    """A paper's caption of the table whose rows span ``start``-``end``: the first sentence
    of a "Table N:" paragraph starting on the line after its last row, else within the few
    lines above its first row."""
    after = _CAPTION.match(text, end)
    above = [m for m in _CAPTION.finditer(text, max(0, start - 400), start)]
    found = after or (above[-1] if above else None)
    if found is None:
        return ""
    words = " ".join(found.group(1).split())
    stop = re.search(r"(?<=[a-z)])\.\s", words[8:])
    return words[: 8 + stop.start() + 1] if stop else words[:300]


def named_by_number(rows: list[Any]) -> None:
    """Rows that share a label and differ by a whole number first ("Base 128 64,058 …", "Base
    256 32,051 …"): the number is part of the row's name, not a figure. Totals aside."""
    by_label: dict[tuple[str, str], list[Any]] = {}
    for row in rows:  # under one section: the same label under two is two items ("Government debt")
        by_label.setdefault((row.item.label, row.item.section), []).append(row)
    for (label, _), same in by_label.items():
        firsts = [r.cells[0].number for r in same if len(r.cells) >= 2]
        if len(same) < 2 or len(firsts) < len(same) or re.match(r"(?:sub)?total\b|net\b", label, re.I):
            continue
        if not all(n is not None and re.fullmatch(r"\d{1,4}", n.text) for n in firsts):
            continue
        if len({n.text for n in firsts if n is not None}) < len(same):
            continue
        for row, number in zip(same, firsts, strict=True):
            assert number is not None
            row.item = replace(row.item, label=f"{label} {number.text}")
            row.cells = row.cells[1:]
