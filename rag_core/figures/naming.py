"""Which row and which column of the sources a claim's words name: the checks ``check``
runs on a figure found by its value, to tell the cell the claim means from its neighbours.

A row: the claim's words agree with its label (``labels.agreement``), or name another row
of the same label under another section ("Price" of "Bananas", not of "Juicy Apples"), a
row that says more ("iPhone" over "Total net sales"), or, in a comparison, the other row
the question names ("Dense reaches 59.1% against Okapi's"). A column named by words
(``named``): the claim's clause, else its question, names this column's parts or another's;
or a column only another table has, which this table's caption does not name.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rag_core.figures import keyed, named
from rag_core.figures.claims import Claim
from rag_core.figures.labels import agreement, content
from rag_core.figures.numbers import MONTH
from rag_core.figures.sources import Occurrence, entity_keys
from rag_core.figures.tables import parse_tables
from rag_core.text import is_period_token


def names_a_row(claim: Claim, found: list[Occurrence]) -> bool:
    """Whether the claim's words name a row the sources hold ("Services" among "Products",
    "Services"): then a row it does not name is another item, not a neutral one."""
    items = {occ.item for occ in found if occ.item is not None}
    return any(item.qualifiers() and agreement(claim.terms, item) == "agree" for item in items)


def names_its_label(claim: Claim, occ: Occurrence) -> bool:
    """Whether the claim names ``occ``'s row by its label, only its section unsaid ("DPR
    reaches 78.4" of the row "DPR" under "Single", in a claim that names BM25's row too)."""
    assert occ.item is not None
    own = replace(occ.item, shared=False).qualifiers()
    said = content(claim.clause.partition(claim.number.text)[0])  # its own words before it, not the question's
    return bool(own) and own <= said


def says_another_row(claim: Claim, occ: Occurrence, found: list[Occurrence]) -> bool:
    """Whether the words just before the figure name another row of ``occ``'s table by its
    label and not ``occ``'s own: the row a comparison's question names too ("than Okapi") is
    what the claim's own words say it is not."""
    assert occ.item is not None and occ.row is not None
    said = content(claim.clause.partition(claim.number.text)[0])
    if not said or replace(occ.item, shared=False).qualifiers() <= said:
        return False
    return any(
        (own := replace(o.item, shared=False).qualifiers()) and own <= said
        for o in found
        if o.item is not None and o.row is not None and o.passage is occ.passage and o.row.table == occ.row.table
    )


def names_another_section(claim: Claim, occ: Occurrence, found: list[Occurrence]) -> bool:
    """Whether the claim names another row of the same label than ``occ``'s: the label stands
    under several sections (a grid's column under each row: "Price" of "Juicy Apples", of
    "Bananas"), and the claim's words name another of them, not this one."""
    assert occ.item is not None
    mine = content(occ.item.section)
    if not occ.item.shared or not mine or mine <= claim.terms:
        return False
    label = occ.item.label
    others = {o.item.section for o in found if o.item is not None and o.item.shared and o.item.label == label}
    return any(content(other) and content(other) <= claim.terms for other in others - {occ.item.section})


def column_name(occ: Occurrence) -> str:
    """The name of the column a table cell is in, when words name it ("TREC"), else ""."""
    return " ".join(column_parts(occ))


def column_parts(occ: Occurrence) -> tuple[str, ...]:
    """The parts of the name of the column a table cell is in (``Column.parts``), else ()."""
    if occ.row is None or not 0 <= occ.cell < len(occ.row.cells):
        return ()
    column = occ.row.cells[occ.cell].column
    return column.parts() if column is not None and column.name else ()


def names_another_key(claim: Claim, occ: Occurrence) -> bool:
    """Whether the claim (its clause, else its question) names another row of a table keyed
    by a number than ``occ``'s ("at 6 g" where the figure is the row of 0 g; ``keyed``)."""
    if occ.row is None or occ.row.key is None:
        return False
    tables = parse_tables(occ.passage.text)
    key = tables[occ.row.table].key if 0 <= occ.row.table < len(tables) else None
    if key is None:
        return False
    for text in (claim.clause, claim.asked):
        asked = keyed.asked(text, key)
        if asked is not None:
            return abs(asked - occ.row.key) > 1e-9 * max(1.0, abs(asked))
    return False


def names_another_number(claim: Claim, occ: Occurrence) -> bool:
    """Whether the claim names the row's name with another number ("Base 1024" of the row
    "Base 512"): by its clause, else by its question."""
    if occ.item is None:
        return False
    mine = named.numbered(occ.item.label)
    if not mine:
        return False
    for text in (claim.clause, claim.asked):
        verdict = named.another_number(mine, named.numbered(text))
        if verdict is not None:
            return verdict
    return False


def names_another_column(claim: Claim, occ: Occurrence, found: list[Occurrence]) -> bool:
    """Whether the claim names another column than ``occ``'s (columns named by words: "TREC"
    among "NQ", "TriviaQA", "WQ"; "Top-20 WQ" among "Top-100 WQ", "Top-20 TREC"): by its
    clause, or, when the clause names nothing of the tables' columns, by the question it
    answers. A column's name is read part by part from its end (the dataset, then the group
    above it): naming another column's part where ``occ``'s own goes unnamed is naming
    another column. Naming a column another table of the sources has, which ``occ``'s table
    has not and its caption does not name ("SQuAD" of a table on Natural Questions alone),
    is naming another column too."""
    mine = list(column_parts(occ))
    if not mine:
        return False
    assert occ.row is not None
    key = (id(occ.passage), occ.row.table)
    columns: dict[tuple[int, int], set[tuple[str, ...]]] = {}
    for o in found:
        parts = column_parts(o)
        if parts and o.row is not None:
            columns.setdefault((id(o.passage), o.row.table), set()).add(parts)
    others = columns.get(key, set()) - {tuple(mine)}
    own_parts = {part for name in columns.get(key, set()) for part in name}
    elsewhere = {part for k, names in columns.items() if k != key for name in names for part in name} - own_parts
    caption = caption_of(occ)
    for text in (claim.clause, claim.asked):
        spoken = named.said(text)
        if named.another_tables(spoken, elsewhere, caption):
            return True
        verdict = named.column_said(spoken, mine, others)
        if verdict is not None:
            return not verdict
    return False


def caption_of(occ: Occurrence) -> str:
    """The caption of the table ``occ``'s row is in ("Table 3: … on Natural Questions …")."""
    if occ.row is None:
        return ""
    tables = parse_tables(occ.passage.text)
    return tables[occ.row.table].caption if 0 <= occ.row.table < len(tables) else ""


def more_specific(claim: Claim, occ: Occurrence, found: list[Occurrence]) -> bool:
    """Whether the claim names a row of the sources that says more than ``occ``'s row
    ("Total liabilities and shareholders' equity" over "Total shareholders' equity", "iPhone"
    over "Total net sales"; a total stays what a claim naming two of its parts means)."""
    assert occ.item is not None
    mine = occ.item.qualifiers()
    named = [
        other
        for other in {o.item for o in found if o.item is not None}
        if mine < other.qualifiers() <= claim.terms and other.concept in (None, occ.item.concept)
    ]
    if not mine:  # a total: the claim may name its parts ("net sales of Products and Services")
        return len({frozenset(o.qualifiers()) for o in named}) == 1
    return bool(named)


_PROPER = re.compile(r"(?<![\w'’])[A-Z][A-Za-z0-9&'’-]*(?:\s+(?:of\s+|de\s+)?[A-Z][A-Za-z0-9&'’-]*)*")


def proper_names(text: str, leave: frozenset[str] = frozenset()) -> list[str]:
    """The names ``text`` writes: runs of capitalised words, a possessive dropped, none of
    ``leave``'s words (the document's own entity); a single word opening a sentence is no
    name ("According", "He"), nor a month, nor a period as analysts write it ("FY2021", "Q3":
    American Express's "24.6% in FY2021" was marked as another one's than its 10-K's "The
    effective tax rate was … 24.6 percent for 2022 and 2021", as 3M's "FY2022" had been refused
    as a name no document holds)."""
    out = []
    for m in _PROPER.finditer(text or ""):
        before = text[: m.start()].rstrip()
        name = re.sub(r"['’]s\b", "", m.group(0))
        words = [w.strip("-'’") for w in name.split() if w.lower() not in leave and w not in ("of", "de")]
        words = [w for w in words if len(w) > 1 and not is_period_token(w)]  # "R" of "R 14": a letter is no name
        opens = not before or before[-1] in '.!?:;"“([' or re.fullmatch(r".*\[\d+\]", before)
        if not words or (opens and len(name.split()) == 1) or MONTH.fullmatch(name):
            continue
        out.append(" ".join(words))
    return out


def names_another_one(claim: Claim, occ: Occurrence) -> bool:
    """Whether a figure in prose is another's than the claim says: the claim's clause names
    someone or something besides the document's own entity ("Huddersfield Town paid
    £300,000"), and the figure's sentence names none of them but names others ("… signed by
    Leicester City for £300,000"). A word of a name names it ("OnLocation", "Adobe
    OnLocation"), initials the name they shorten ("AWS", "Amazon Web Services"); a sentence
    naming nobody says nothing of whose it is."""
    if occ.item is not None or not occ.said:
        return False
    leave = occ.passage.entity_words()
    mine = proper_names(claim.clause.replace(claim.number.text, " "), leave)
    if not mine:
        return False
    theirs = [name for name in proper_names(occ.said, leave) if not _run_in_heading(name, occ.said)]
    spoken = named.said(occ.said) | {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", occ.said)}
    if not theirs or any(entity_keys(name) & spoken or _initials(name) in spoken for name in mine):
        return False  # a word of the name ("OnLocation" of "Adobe OnLocation"), or its initials ("AWS")
    said_by_claim = named.said(claim.clause)
    return any(not named.names(said_by_claim, name) for name in theirs)


def _run_in_heading(name: str, said: str) -> bool:
    """Whether ``name`` is a heading run into the sentence, not someone's name: the sentence
    writes its last words again in lower case ("Index Gross Margin In the year ended December
    31, 2020, gross margin decreased …": Corning's 10-K; "Depreciation and Amortization In 2022,
    … depreciation and amortization increased $32 million": American Water Works'; Coca-Cola's
    "Nonmarketable Securities In 2017, … nonmarketable securities totaled")."""
    words = [w for w in re.findall(r"[A-Za-z]+", name) if len(w) > 3][-2:]
    return bool(words) and all(re.search(rf"\b{re.escape(w.lower())}\b", said) for w in words)


def _initials(name: str) -> str:
    return "".join(w[0] for w in name.split()).lower() if len(name.split()) > 1 else name.lower()
