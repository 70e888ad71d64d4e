"""Columns named by words, as a paper's table writes them in PDF text:

    Training Model NQ TriviaQA WQ TREC SQuAD
    Single ORQA (Lee et al., 2019) 33.3 45.0 36.4 30.1 20.2
    Single REALMNews (Guu et al., 2020) 40.4 - 40.7 42.9 -

The header is one line of names, the row labels' own headers first ("Training Model"), then
one name per figure, each an acronym or a coined name (a capital or a digit past its first
letter: "NQ", "TriviaQA", "F1", "Top-20"): plain words may pair into one column's name
("Operating Leases Finance Leases Total" over three figures), and which pair is not said. Read bare, a figure's column is lost: a small model answers the NQ cell
when asked of TREC, and nothing tells it otherwise. Here the last names of the line are the
columns of a row of as many figures. A line of exactly as many names as figures may have a
name that spans two columns ("Dataset Train Dev Test" over four figures: "Train" is two), so
it is read only when its names repeat in groups that a line above names ("Top-20 Top-100"
over "NQ TriviaQA ... NQ TriviaQA ...": "Top-20 NQ"). Anything else is no header: a
sentence's words ending a line are not columns.

``said`` reads the names a clause uses, abbreviations included ("CuratedTREC" names "TREC",
"WebQuestions" "WQ", "Natural Questions" "NQ"), so that a figure of another named column
than the one a claim names is caught (``figures.check``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag_core.figures.numbers import MONTH

_NAME = re.compile(r"[A-Z0-9][\w+\-/&@.]*[\w+%)]|[A-Z]")
_FIGURE = re.compile(r"[-+(]?\$?\d[\d,]*(?:\.\d+)?%?\)?|[—–-]")
_SHORT = re.compile(r"^.+[A-Z0-9]")  # a capital or a digit past the first letter: "NQ", "TriviaQA", "F1", "Top-20"
_MAX_LABEL_HEADERS = 4  # "Training Model": the row labels' own column names before the figures' ones
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # "CuratedTREC": Curated, TREC


def _names(line: str, n: int = 0) -> list[str] | None:
    """The line's words when every one can name a column (capitalised or an acronym, a letter
    in each, no figure), else None; with ``n``, only the last ``n`` must (the words before
    them head the row labels: "Type #N IB Top-5 Top-20 Top-100")."""
    s = line.strip()
    if not s or s[-1] in ".,;:" or len(s) > 160:
        return None
    tokens = s.split()
    if len(tokens) > 16 or any(_FIGURE.fullmatch(t) for t in tokens):
        return None
    named = tokens[len(tokens) - n :] if n else tokens
    heads = tokens[: len(tokens) - n] if n else []
    if not all(_NAME.fullmatch(t) and re.search(r"[A-Za-z]", t) for t in named):
        return None
    if not all(re.search(r"[A-Za-z]", t) and t[:1] not in "([" for t in heads):
        return None
    return tokens


def _groups(names: list[str]) -> int:
    """How many times the names repeat in order ("NQ WQ NQ WQ": 2); 1 when they do not."""
    for g in range(len(names) // 2, 1, -1):
        if len(names) % g == 0:
            per = len(names) // g
            if names[:per] * g == names:
                return g
    return 1


def columns(above: list[str], n: int) -> tuple[list[str], int] | None:
    """The names of a row's ``n`` figures from the lines ``above`` its table's first row
    (nearest last), and how many names before them head the row labels; None when the line
    just above is no header of names for ``n`` figures."""
    if n < 2 or not above:
        return None
    tokens = _names(above[-1], n)
    if tokens is None or not n <= len(tokens) <= n + _MAX_LABEL_HEADERS:
        return None
    names, labels = tokens[len(tokens) - n :], len(tokens) - n
    if not all(_SHORT.search(name) for name in names):
        return None  # "Operating Leases Finance Leases Total": words, some of two, not one name a column
    g = _groups(names)
    if g > 1:
        over = _names(above[-2], g) if len(above) >= 2 else None
        if over is not None and len(over) >= g:
            # the line above: the row labels' headers, then the groups ("Training Retriever Top-20 Top-100")
            per = n // g
            return [f"{over[len(over) - g + i // per]} {name}" for i, name in enumerate(names)], len(over) - g
    if labels == 0:
        return None  # "Dataset Train Dev Test" over four figures: which name spans two is not said
    return names, labels


def said(text: str) -> frozenset[str]:
    """The names ``text`` uses, lower-cased with hyphens dropped, and their short forms: the
    parts of a word written in camel case ("CuratedTREC": curated, trec), the initials of
    those parts ("WebQuestions": wq) and of a run of capitalised words ("Natural Questions":
    nq; "WonderBase Questions": wq, wbq)."""
    return _said(text or "")


@lru_cache(maxsize=1024)
def _said(text: str) -> frozenset[str]:
    out: set[str] = set()
    words = re.findall(r"[A-Za-z0-9][\w+\-]*", text)
    run: list[str] = []
    for i, word in enumerate(words):
        key = word.lower().replace("-", "")
        out.add(key)
        if i and word.isdigit():
            out.add(words[i - 1].lower().replace("-", "") + word)  # "top 20": top20
        parts = _PARTS.findall(word)
        if len(parts) > 1:
            out.update(p.lower() for p in parts)
            out.add("".join(p[0] for p in parts).lower())
        if word[:1].isupper():
            run.append(word)
            if len(run) > 1:  # "Natural Questions": nq; "WonderBase Questions": wq and wbq
                out.add("".join(w[0] for w in run).lower())
                out.add("".join(p[0] for w in run for p in _PARTS.findall(w)).lower())
        else:
            run = []
    return frozenset(out)


def names(spoken: frozenset[str], column: str) -> bool:
    """Whether a clause whose names are ``spoken`` (``said``) names the column ``column``."""
    keys = [w.lower().replace("-", "") for w in column.split()]
    return bool(keys) and all(k in spoken for k in keys)


def column_said(spoken: frozenset[str], mine: list[str], others: set[tuple[str, ...]]) -> bool | None:
    """True when ``spoken`` names ``mine``'s parts wherever it names a part of the table's
    columns, False when it names another column's part where ``mine``'s goes unnamed, None
    when it names no part of any."""
    said_any = False
    for k in range(max(len(mine), *(len(o) for o in others)) if others else len(mine)):
        part = mine[-1 - k] if k < len(mine) else ""
        if part and names(spoken, part):
            said_any = True
            continue
        if any(len(o) > k and o[-1 - k] != part and names(spoken, o[-1 - k]) for o in others):
            return False
    return True if said_any else None


def asked_as(question: str, column: str) -> str:
    """How ``question`` writes the column ``column`` when it names it otherwise ("CuratedTREC"
    for "TREC", "WebQuestions" for "WQ"), else "": the row is then written in the question's
    words too, for a small model that would not see they are the same."""
    words = re.findall(r"[A-Za-z0-9][\w+\-]*", question or "")
    spans = [[w] for w in words] + [
        words[i:j]
        for i in range(len(words))
        for j in range(i + 2, min(i + 4, len(words)) + 1)
        if all(w[:1].isupper() for w in words[i:j])
    ]
    keys = [w.lower().replace("-", "") for w in column.split()]
    for span in spans:
        text = " ".join(span)
        if text.lower().replace("-", "") in keys or text.lower().replace("-", "") == "".join(keys):
            return ""  # written as the column is
        said_here = _said(text)
        if keys[-1] in said_here and keys[-1] not in {w.lower() for w in span}:
            return text
    return ""


def another_tables(spoken: frozenset[str], elsewhere: set[str], caption: str) -> bool:
    """Whether ``spoken`` names a column part only other tables have (``elsewhere``) that this
    table's ``caption`` does not name either ("SQuAD" of a table whose caption says it is on
    Natural Questions alone)."""
    said_there = said(caption)
    return any(names(spoken, part) and not names(said_there, part) for part in elsewhere)


_NUMBERED = re.compile(r"\b([^\W\d_][\w-]*)\s+(\d{1,4})\b(?![.,]\d)")
_NOT_NAMES = re.compile(r"(?:19|20)\d{2}|" + MONTH.pattern, re.IGNORECASE)


def numbered(text: str) -> dict[str, set[str]]:
    """The names ``text`` writes with a number ("Base 512", "iPhone 15"; not a year, not a
    day of a month): each name's word, lower-cased, with its numbers."""
    out: dict[str, set[str]] = {}
    for m in _NUMBERED.finditer(text or ""):
        if _NOT_NAMES.fullmatch(m.group(2)) or _NOT_NAMES.fullmatch(m.group(1).rstrip(".")):
            continue
        out.setdefault(m.group(1).lower(), set()).add(m.group(2))
    return out


def another_number(mine: dict[str, set[str]], said: dict[str, set[str]]) -> bool | None:
    """Whether ``said`` (``numbered``) writes a name of ``mine`` with none of its numbers only
    ("Base 1024" of "Base 512"); None when it writes none of ``mine``'s names."""
    shared = [word for word in mine if word in said]
    return all(not (said[word] & mine[word]) for word in shared) if shared else None
