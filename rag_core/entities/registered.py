"""The securities a filing's cover registers under Section 12(b) of the Exchange Act: the
classes listed under "Title of each class", each a line, read as the cover writes them.

Every 10-K's and 10-Q's cover has the table: American Express's 2022 10-K lists one class
("Common Shares (par value $0.20 per Share) AXP New York Stock Exchange"), 3M's 2022 10-K its
common stock and four notes ("0.950% Notes due 2023 MMM23 New York Stock Exchange"),
Coca-Cola's 2017 10-K its common stock and notes without trading symbols ("1.125% Notes Due
2022 New York Stock Exchange"), Corning's, American Water Works', AMD's and Activision
Blizzard's their common stock alone; so do the SEC set's 10-Qs (Apple's and Microsoft's notes
beside their common stock; Amazon's, Intel's and NVIDIA's common stock alone). An HTML cover's
cells are set apart by "|" (Galaxy Gaming's 10-K: "Common stock | | GLXZ | | OTCQB
marketplace", registered "under" Section 12(b)). The table ends where Section 12(g)'s line, a
note or the check boxes begin.
"""

from __future__ import annotations

import re

_START = re.compile(
    r"securities\s+registered\s+(?:pursuant\s+to|under)\s+section\s+12\s*\(\s*b\s*\)(?:\s+of\s+the(?:\s+exchange)?\s+act)?:?",
    re.I,
)
_END = re.compile(r"section\s+12\s*\(\s*g\s*\)|indicate\s+by\s+check\s+mark|^\s*note\s*:", re.I | re.M)
# The table's header, as covers write it, whole or wrapped ("Name of each exchange" / "on which registered").
_HEADER = re.compile(
    r"\(?\s*(?:title\s+of\s+(?:each\s+)?class|name\s+of\s+(?:each\s+)?exchange(?:\s+on\s+which\s+registered)?"
    r"|on\s+which\s+registered|trading\s+symbols?(?:\s*\(s\))?)\s*\)?",
    re.I,
)
# An exchange's name after a class ("New York Stock Exchange", "The Nasdaq Global Select Market",
# "Chicago Stock Exchange, Inc.", "New York Stock Exchange (NYSE)"): said apart from the class.
_EXCHANGE = re.compile(
    r"\s*(?:the\s+)?(?:(?:new\s+york|nasdaq|chicago|nyse)\b[\w\s.&-]*?(?:exchange|market)\b(?:,?\s*inc\.?|\s+llc|\s*\(nyse\))?"
    r"|(?:nasdaq|nyse)\b|otc(?:qb|qx|\s+pink)?\s+market(?:place)?s?\b)",
    re.I,
)
# What stands for an empty cell or a rule: "—" for no trading symbol (Apple's notes), "____" (Amazon's cover).
_BLANK = re.compile(r"(?:\s+(?:[—–-]+|_{2,}))+\s*$")
# A debt security's class: notes, debentures, bonds, or a coupon and a maturity ("0.950% Notes due 2023").
_DEBT = re.compile(r"\b(?:notes?|debentures?|bonds?)\b|%\s.*\bdue\s+(?:19|20)\d{2}\b", re.I)
# An equity's class: "Common Stock", "Common Shares", "Preferred", "Depositary Shares", "Warrants".
_CLASS = re.compile(r"\b(?:stock|shares?|notes?|debentures?|bonds?|warrants?|units?|rights?|preferred)\b", re.I)


def registered_classes(cover: str) -> list[str] | None:
    """The classes the cover registers under Section 12(b), one line each as written (a line
    broken inside a class is joined: Coca-Cola's "Common Stock, $0." / "$0.25 Par Value …");
    None when ``cover`` holds no such table."""
    start = _START.search(cover)
    if start is None:
        return None
    rest = cover[start.end() :]
    end = _END.search(rest)
    if end is None:
        block = rest[:1500]
    else:  # up to the line the end begins, or to the end itself on a cover set as one line
        line_start = rest.rfind("\n", 0, end.start())
        block = rest[: line_start + 1] if line_start > 0 else rest[: end.start()]
    out: list[str] = []
    for raw in block.splitlines():
        line = re.sub(r"\s+", " ", raw.replace("|", " "))  # an HTML cover's cells: "Common stock | | GLXZ"
        line = _BLANK.sub("", _EXCHANGE.sub("", _HEADER.sub("", line))).strip(" ,;")
        if not re.search(r"[^\W_]", line):  # the header, a rule ("____"), an empty cell
            continue
        if out and (out[-1].endswith((".", ",", "$")) or not _CLASS.search(line)) and not _DEBT.search(line):
            out[-1] = f"{out[-1]} {line}"  # the rest of the class above it
        elif _CLASS.search(line):
            out.append(line)
    return out


def is_debt(title: str) -> bool:
    """True for a class of notes, debentures or bonds."""
    return bool(_DEBT.search(title))
