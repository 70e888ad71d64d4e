"""A PDF page's lines laid out by where they stand: the text stream's lines that share a
baseline joined left to right, so that a statement's row is one line again.

PDFium's text stream gives a filing's table row as its label on one line and each figure on a
line of its own (3M's and Corning's 10-Ks: "Purchases of property, plant and equipment (PP&E)",
"(1,577)", "(1,373)", "(1,420)"); every character has its box on the page, so lines whose boxes
stand side by side at one height are one row: "Purchases of property, plant and equipment
(PP&E) (1,577) (1,373) (1,420)". The stream's words are kept as it writes them (their spacing
is the stream's, not guessed from the boxes: 3M's pages set each glyph apart).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rag_core.pdfium import PDFIUM_LOCK


@dataclass
class _Row:
    y: float
    height: float
    parts: list[tuple[float, float, str]] = field(default_factory=list)  # (left, right, text)


def _segments(textpage: object) -> list[tuple[str, float, float, float, float]]:
    """The stream's lines, each with its box: left, right, and the median bottom and top of its
    characters (a comma hangs below the line; the median does not move for it)."""
    n = textpage.count_chars()  # type: ignore[attr-defined]
    text = textpage.get_text_range(0, n)  # type: ignore[attr-defined]
    if len(text) != n:  # characters the stream made up: no box to place them by
        return []
    out = []
    start = 0
    for end in [i for i, ch in enumerate(text) if ch in "\r\n"] + [n]:
        chars = [i for i in range(start, end) if not text[i].isspace()]
        boxes = {i: textpage.get_charbox(i) for i in chars}  # type: ignore[attr-defined]
        for first, last in _visual_lines(text, start, end, chars, boxes):
            piece = [boxes[i] for i in chars if first <= i < last]
            if piece:
                bottoms, tops = sorted(b[1] for b in piece), sorted(b[3] for b in piece)
                left, right = min(b[0] for b in piece), max(b[2] for b in piece)
                out.append((text[first:last].strip(), left, bottoms[len(bottoms) // 2], right, tops[len(tops) // 2]))
        start = end + 1
    return out


def _wraps(before: str) -> bool:
    """Whether text ending as ``before`` goes on on the next line: a word broken by a hyphen
    ("Non-"), or a phrase cut after a lower-case word or a comma. A row of figures ("(105) *"),
    a heading in capitals ("CASH FLOWS FROM INVESTING ACTIVITIES") or one ending in a colon ends
    its line."""
    last = before.rstrip(" \u00a0")[-1:]
    return last in ("-", "\u00ad", "\ufffe", ",") or last.islower()


def _visual_lines(
    text: str, start: int, end: int, chars: list[int], boxes: dict[int, tuple[float, float, float, float]]
) -> list[tuple[int, int]]:
    """The stream's line ``text[start:end]`` (``chars``, its characters but spaces, each with
    its box in ``boxes``) cut where its text goes on a line below, back at the left, after a
    line that ends (``_wraps``): a break the stream did not write. American Water Works' 2021
    10-K runs its statements' header into the first row ("For the Years Ended December 31, 2021
    2020 2019 Operating revenues $ 3,930 …") and several rows into one; Corning's 2020 and 2021
    10-Ks run table rows together the same way ("… customer contract (2) (105) * Consolidated
    net sales $ 11,303 …"). A label or a sentence that wraps onto the next line (3M's "Q4 2017
    Adjusted Non-" / "GAAP Measure $ 7,990 …") stays one row. A character a little above or
    below its neighbours (a footnote mark) is no new line: the drop must exceed 1.2 times the
    line's median character height."""
    if len(chars) < 2:
        return [(start, end)]
    heights = sorted(max(boxes[i][3] - boxes[i][1], 0.0) for i in chars)
    height = max(heights[len(heights) // 2], 1.0)
    cuts = [start]
    for k in range(1, len(chars)):
        before, now = boxes[chars[k - 1]], boxes[chars[k]]
        dropped = (before[1] + before[3]) / 2 - (now[1] + now[3]) / 2 > 1.2 * height
        if dropped and now[0] < before[0] and not _wraps(text[cuts[-1] : chars[k]]):
            cuts.append(chars[k])
    return list(zip(cuts, [*cuts[1:], end], strict=True))


def lay_out(segments: list[tuple[str, float, float, float, float]]) -> str:
    """The segments joined into rows: those whose vertical centres are within half the
    smaller height and that do not overlap side by side, top to bottom, left to right."""
    rows: list[_Row] = []
    for text, left, bottom, right, top in sorted(segments, key=lambda s: -(s[2] + s[4]) / 2):
        middle, height = (bottom + top) / 2, max(top - bottom, 1.0)
        for row in rows:
            side_by_side = not any(left < b and a < right for a, b, _ in row.parts)
            if abs(row.y - middle) < 0.5 * min(row.height, height) and side_by_side:
                row.parts.append((left, right, text))
                break
        else:
            rows.append(_Row(middle, height, [(left, right, text)]))
    rows.sort(key=lambda r: -r.y)
    return "\n".join(" ".join(t for _, _, t in sorted(r.parts)) for r in rows)


def page_rows(path: Path, page: int) -> str | None:
    """Page ``page`` (1-based) of the PDF at ``path``, laid out by position; None when it
    can't be read (no such page, a damaged file)."""
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(str(path))
        except Exception:
            return None
        try:
            if not 1 <= page <= len(pdf):
                return None
            textpage = pdf[page - 1].get_textpage()
            try:
                return lay_out(_segments(textpage))
            finally:
                textpage.close()
        except Exception:
            return None
        finally:
            pdf.close()
