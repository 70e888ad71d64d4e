"""Tables keyed by a number, their columns named with their units, as a paper's PDF text
writes a measurement table:

    Inhibitor
    concentration (g)
    bc (V/dec) … icorr (A/cm2
    ) Polarization
    resistance (Ω)
    Corrosion
    rate (mm/year)
    0 0.0335 … 0.0003 24.0910 2.8163
    6 0.3233 … 5.39E-05 373.180 0.4318

Each column's name ends with its unit in parentheses, so the header says where one name ends
and the next begins, however its lines wrap; a row is figures only, its first the key (here
the concentration), the rest one per named column. Read bare, "6 0.3233 … 0.4318" says
nothing of which figure is the corrosion rate: a small model answers the first, and a check
that finds the value anywhere on the page passes it.

A question names a row by its key: a number in the key's unit ("at 6 g"), a number beside a
word of the key's name ("a concentration of 6"), or the key's absence ("without inhibitor",
"in the absence of inhibitor": 0, the control row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FIGURE = re.compile(r"[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]\d{1,3})?|N/A|n/a|[—–-]")
_NAMED = re.compile(r"\s*(?P<name>[^()]*?[A-Za-z][^()]*?)\s*\((?P<unit>[^()]{1,16})\)")
_MAX_LINES = 8  # lines a header may wrap over
_MAX_WORDS = 4  # words a column's name may have, its unit aside
_STOP = frozenset("the of in at with for and to a an by on per".split())


@dataclass(frozen=True)
class Key:
    """The key column: its name and unit ("Inhibitor concentration", "g")."""

    name: str
    unit: str

    def label(self, value: str) -> str:
        """A row's label from its key: "Inhibitor concentration 6 g"."""
        return f"{self.name} {value}{' ' + self.unit if self.unit else ''}"


def figures(line: str) -> list[str] | None:
    """A line's figures when it is nothing else and has at least three, else None."""
    tokens = line.split()
    if len(tokens) < 3 or not all(_FIGURE.fullmatch(t) for t in tokens):
        return None
    if not any(re.search(r"\d", t) for t in tokens[1:]):
        return None
    return tokens


def header(above: list[str], n: int) -> list[tuple[str, str]] | None:
    """The ``n`` columns' (name, unit) of a table whose first row of ``n`` figures comes right
    after ``above`` (lines, nearest last), from the nearest lines that join into exactly ``n``
    names each ending in its unit; None when no such header is there. The header is taken as
    far up as its names go: the line above it is a sentence, a figure's row, or would make a
    name longer than a column's."""
    best = None
    lines: list[str] = []
    for line in reversed(above[-_MAX_LINES:]):
        s = line.strip()
        if not s or s.endswith(".") or figures(s) is not None or len(s.split()) > 16:
            break
        lines.insert(0, s)
        read = _names(" ".join(lines))
        if read is None:
            if best is not None:
                break  # the line belongs above the header (a title, a name too long for a column)
            continue  # a name's first half so far (") Polarization")
        if len(read) == n:
            best = read
        elif len(read) > n:
            break
    return best


def _names(text: str) -> list[tuple[str, str]] | None:
    """``text`` read as names each ending in its unit, wholly; None when something is left
    over at its end or a name is longer than a column's. Text before the first name's words
    may be a name's beginning, so it is kept in it."""
    out: list[tuple[str, str]] = []
    at = 0
    for m in _NAMED.finditer(text):
        if m.start() != at:
            return None
        name = " ".join(m.group("name").split())
        if len(name.split()) > _MAX_WORDS or not re.search(r"[A-Za-z]", name) or re.search(r"(?<!\S)\d", name):
            return None  # "Table 1 Inhibitor concentration": a title's number is no column's name
        out.append((name, " ".join(m.group("unit").split())))
        at = m.end()
    return out if out and not text[at:].strip() else None


def asked(text: str, key: Key) -> float | None:
    """The key value ``text`` names, or None: a number in the key's unit ("at 6 g"), a number
    right after a word of the key's name ("concentration of 6"), or the key's absence
    ("without inhibitor": 0)."""
    words = [w for w in re.findall(r"[A-Za-z]+", key.name.lower()) if w not in _STOP and len(w) > 2]
    number = r"(\d+(?:\.\d+)?)"
    if key.unit:
        m = re.search(rf"(?<![\w.]){number}\s?{re.escape(key.unit)}(?![\w/])", text)
        if m:
            return float(m.group(1))
    for word in words:
        m = re.search(rf"\b{word}\w*\s+(?:of\s+|at\s+|=\s*)?{number}(?![\w.])", text, re.IGNORECASE)
        if m:
            return float(m.group(1))
        if re.search(rf"\b(?:without|no|absence\s+of)\s+(?:(?:the|any|an?)\s+)?(?:\w+\s+)?{word}", text, re.IGNORECASE):
            return 0.0
    return None
