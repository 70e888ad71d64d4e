"""Every figure of an answer checked against the passages it cites.

A figure is supported only where a cited passage holds its value (as written, or after the
table's unit and the written rounding: "$82.96 billion" is 82,959 in a table "in millions")
in a row or sentence whose line item, period and entity agree with what the figure's clause
claims (``claims``), when the clause names them. The dangerous wrong answers hold a figure
that IS on the cited page but is something else — the neighbouring row, the six months for
the quarter, the other company's period — so such a figure is reported with what the source
says it is ("6,728 is Compute & Networking (Operating income by Reportable Segments), three
months ended July 30, 2023 in [2]"). A figure the model computed (a difference, a sum, a
ratio, a percent change) is recomputed from figures of related cells (one row, one column of
one table, one sentence) or from the answer's own supported figures, never from any pair.

Statuses: ``found`` (as written), ``normalised`` (after unit and rounding), ``computed``,
``mismatch`` (the value is there but is another item, period or entity), ``unsupported``;
``table`` (``verify``: a cell found by structure for the asked item and period says otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from rag_core.figures import naming
from rag_core.figures.claims import SHARE_OF, Claim, read_claims
from rag_core.figures.compute import Operand, recompute
from rag_core.figures.labels import agreement, concepts, content
from rag_core.figures.numbers import Number
from rag_core.figures.periods import agree, report_in_name
from rag_core.figures.sources import Occurrence, Passage, counted, entity_keys, read_passages

SUPPORTED = ("found", "normalised", "computed")
_CITE = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_CURRENCIES = {"$": "$", "US$": "$", "USD": "$", "€": "€", "EUR": "€", "£": "£", "GBP": "£", "¥": "¥", "RMB": "¥"}


@dataclass
class FigureCheck:
    """One figure of the answer and what the sources say of it."""

    text: str
    start: int
    end: int
    status: str  # found | normalised | computed | mismatch | unsupported | table
    source: str = ""  # "[1] Net income, three months ended July 30, 2023" (where it was found)
    explanation: str = ""  # what the check concluded, in words
    passage: int | None = None  # the [n] of the passage it was found in (or computed from)
    computed: str = ""  # "36% = 1,100 / 3,050"
    source_value: str = ""  # the figure as the source writes it ("6,728")
    value: float | None = None  # in units, as the source that supports it gives it

    @property
    def supported(self) -> bool:
        return self.status in SUPPORTED


@dataclass
class CheckReport:
    figures: list[FigureCheck] = field(default_factory=list)

    @property
    def figures_checked(self) -> int:
        return len(self.figures)

    @property
    def figures_unsupported(self) -> int:
        return sum(not f.supported for f in self.figures)

    def to_dict(self) -> dict:
        return {
            "figures_checked": self.figures_checked,
            "figures_unsupported": self.figures_unsupported,
            "figures": [asdict(f) for f in self.figures],
        }


def value_match(n: Number, occ: Occurrence) -> str | None:
    """ "exact" when ``occ`` writes the figure's digits at its scale, "rounded" when it holds
    the same value once units and the written rounding are applied, else None."""
    src = occ.number
    if n.percent != src.percent and not (n.percent and _percent_unsaid(occ)):
        return None
    currencies = {_CURRENCIES.get(c, c) for c in (n.currency, src.currency) if c}
    if len(currencies) > 1:
        return None
    src_scale = src.scale if src.scaled else occ.scale
    if n.digits == src.digits and (not n.scaled or not occ.unit_known or n.scale == src_scale):
        return "exact"
    if n.scaled and occ.unit_known:
        pairs = [(n.magnitude * n.scale, n.step, src.magnitude * src_scale, occ.step)]
    elif n.scaled:  # a bare number in prose: read at the usual scales
        pairs = [
            (n.magnitude * n.scale, n.step, src.magnitude * s, 10.0**-src.decimals * s) for s in (1.0, 1e3, 1e6, 1e9)
        ]
    else:
        pairs = [(n.magnitude, n.step, src.magnitude, 10.0**-src.decimals)]
        if occ.unit_known and src_scale != 1.0:
            pairs.append((n.magnitude, n.step, src.magnitude * src_scale, occ.step))
    for a, sa, b, sb in pairs:
        step = max(sa, sb)
        if a and step <= 0.05 * a and abs(a - b) <= step / 2 + 1e-9 * a:
            return "rounded"
    return None


def _percent_unsaid(occ: Occurrence) -> bool:
    """Whether a table cell may be a percentage its table does not mark: a bare figure with a
    decimal, at most 100, in a table with no unit nor currency (a paper's accuracies, "84.4"
    under "Top-100 NQ"); a statement's cells in millions never are."""
    src = occ.number
    return (
        occ.item is not None
        and not occ.unit_known
        and not (src.currency or src.scaled or src.negative)
        and src.decimals > 0
        and src.magnitude <= 100
    )


def _verdicts(claim: Claim, occ: Occurrence) -> tuple[str, bool | None, bool | None]:
    """(item, period, entity): does ``occ`` say what the claim says it is."""
    if occ.item is None:  # prose: only the line item named nearest before the figure
        named = concepts(claim.terms)
        label = "neutral" if not occ.concept or not named else ("agree" if occ.concept in named else "conflict")
    else:
        label = agreement(claim.terms, occ.item)
    period = None if claim.relative else agree(claim.period, occ.period)
    entity = None
    keys = occ.passage.entity_words()
    mine = claim.entities - {k for name in claim.foreign for k in name}
    if mine and keys:
        entity = bool(mine & keys)
    if claim.foreign and occ.passage.entity and entity is not False:
        # asked of a name no source's document is about: a figure of a document about another
        # company is not its figure, unless the passage names it ("revenue from Caesars"),
        # whatever else the claim names that the document is ("DPR on MS MARCO")
        entity = names_strangers(claim, occ.passage.own_text) or False  # the passage cited, not its page
    filed = report_in_name(occ.passage.file)
    if claim.report and filed and entity is not False:  # "the Q3 2022 10-Q": another filing is not it
        entity = filed == claim.report
    return label, period, entity


def foreign_names(owners: Sequence[str], known: set[str]) -> list[frozenset[str]]:
    """The entity words of each name in ``owners`` that none of ``known`` (the sources'
    documents' entity words) share."""
    names = (entity_keys(owner) for owner in owners)
    return [name for name in names if name and not name & known]


def names_strangers(claim: Claim, text: str) -> bool:
    """Whether ``text`` names every name the claim is about that no source's document is about
    ("BM25+DPR" of a paper about open-domain QA, "Caesars" of a casino's 10-K)."""
    return bool(claim.foreign) and all(name <= _named_words(text) for name in claim.foreign)


@lru_cache(maxsize=256)
def _named_words(text: str) -> frozenset[str]:
    """The words of ``text`` as ``entity_keys`` reads a name's, a possessive dropped."""
    return frozenset(re.sub(r"['’]s$", "", w.lower()) for w in re.findall(r"[^\W\d_][\w'’-]*", text or ""))


def _unit_read_in(n: Number, occ: Occurrence) -> bool:
    """Whether the figure's currency or scale is only the claim's: the source writes bare digits
    where no table unit says what they count."""
    src = occ.number
    return bool(n.currency or n.scaled) and not (src.currency or src.scaled or occ.unit_known)


def _counts_differ(answer: str, n: Number, occ: Occurrence) -> bool:
    """Whether the answer's figure counts other things than the source's figure of the same
    value (in prose, where no row label says what it is)."""
    claimed = counted(answer[n.end : n.end + 60])
    held = counted((occ.passage.text or "")[occ.number.end : occ.number.end + 60])
    return bool(claimed and held and not claimed & held)


def _says_nothing_of(claim: Claim, occ: Occurrence) -> bool:
    """Whether the sentence holding a figure in prose names nothing of what the claim says the
    figure is: the claim names a line item ("revenue"), the sentence none, and no word of the
    claim's item either (its companies' names aside). A price on a page's copyright line is no
    company's revenue, whatever the page is."""
    if not concepts(claim.terms) or occ.concept is not None:
        return False
    named = {k for name in claim.foreign for k in name} | claim.entities
    return not (content(occ.said) & claim.terms) - named


def _cited(answer: str) -> set[int]:
    return {int(n) for m in _CITE.finditer(answer) for n in re.split(r"\s*,\s*", m.group(1))}


def check_answer(
    answer: str, question: str, passages: Sequence[Passage], cited_only: bool = False, owners: Sequence[str] = ()
) -> CheckReport:
    """Each figure of ``answer`` checked against ``passages`` (the sources it was given, as
    numbered for it; ``cited_only``: only those its [n] markers cite, when it cites any;
    ``owners``: the names the question asks about as whose, "Apple" of "Apple's revenue")."""
    cited = _cited(answer)
    if cited_only and cited:
        passages = [p for p in passages if p.number in cited]
    evidence = read_passages(passages)
    known = {k for p in passages for k in entity_keys(f"{p.entity} {p.file}")}
    report = CheckReport()
    supported: list[tuple[Claim, float]] = []
    pending: list[tuple[Claim, FigureCheck, list[Occurrence]]] = []  # not found as stated
    for claim in read_claims(answer, question, known, foreign_names(owners, known)):
        n = claim.number
        fig = FigureCheck(n.text, n.start, n.end, "unsupported", explanation="not found in the sources")
        good: list[tuple[int, Occurrence, str]] = []
        wrong: list[tuple[int, Occurrence]] = []
        names_a_row = None  # whether the claim's words are the label of some row of the sources
        for occ in evidence.found:
            if occ.number.kind != "figure" and (n.currency or n.scaled or n.percent or n.decimals):
                continue  # a source's year, date or ordinal can only be a bare number's ("第22代": "22")
            how = value_match(n, occ)
            if how is None:
                continue
            label, period, entity = _verdicts(claim, occ)
            if label != "conflict" and occ.item is None and _counts_differ(answer, n, occ):
                label = "conflict"  # "96 league appearances" where the source has "96 goals"
            if label == "neutral" and occ.item is None and _says_nothing_of(claim, occ):
                label = "conflict"  # "Google's revenue was $5.00" where the page has "Copyright 2009 ACM … $5.00"
            if label != "conflict" and naming.names_another_column(claim, occ, evidence.found):
                label = "conflict"  # "40.4 on TREC" where 40.4 is the NQ column's cell of the row
            if label != "conflict" and (
                naming.names_another_key(claim, occ) or naming.names_another_number(claim, occ)
            ):
                label = "conflict"  # "at 6 g" of the row of 0 g; "Base 1024" of the row "Base 512"
            if label != "conflict" and naming.names_another_one(claim, occ):
                label = "conflict"  # "Huddersfield paid £300,000" where the sentence says Leicester City did
            if label == "neutral" and occ.item is not None and naming.names_another_section(claim, occ, evidence.found):
                label = "conflict"  # "Bananas cost 1.99" where 1.99 is the Price of Juicy Apples
            if label == "neutral" and occ.item is not None:
                if names_a_row is None:
                    names_a_row = naming.names_a_row(claim, evidence.found)
                label = "conflict" if names_a_row and not naming.names_its_label(claim, occ) else label
            elif label == "agree" and occ.item is not None and naming.more_specific(claim, occ, evidence.found):
                label = "conflict"
            elif label == "agree" and occ.item is not None and naming.says_another_row(claim, occ, evidence.found):
                label = "conflict"  # "Dense reaches 59.1% against Okapi's …" where 59.1 is Okapi's row
            if label != "agree" and _unit_read_in(n, occ) and occ.number.significant < 3:
                continue  # "$17 million" read into a bare "17" of another row or of prose (a page number): no evidence
            if label == "conflict" or period is False or entity is False:
                rank = (2 if label != "conflict" else 0) + (1 if entity is not False else 0)
                wrong.append((rank, occ))
                continue
            if how == "rounded" and label == "neutral" and min(n.significant, occ.number.significant) < 3:
                continue  # "$7 billion" somewhere in a passage says too little
            score = (how == "exact") * 4 + (label == "agree") * 2 + (period is True) + (occ.passage.number in cited)
            good.append((score, occ, how))
        if good:
            _, occ, how = max(good, key=lambda g: g[0])
            fig.status = "found" if how == "exact" else "normalised"
            fig.passage = occ.passage.number
            fig.source, fig.source_value = _source(occ), occ.number.clean
            fig.explanation = occ.describe()
            fig.value = occ.value if (occ.unit_known or not n.scaled) else n.value
            supported.append((claim, fig.value))
        else:
            pending.append((claim, fig, [o for _, o in sorted(wrong, key=lambda w: -w[0])]))
        report.figures.append(fig)
    for claim, fig, others in pending:
        # A value the sources hold as another item or period was copied, not computed: in a
        # statement, some total minus some row is every other row.
        done = None if others else recompute(claim, _operands(claim, evidence.found, supported))
        if done is not None:
            fig.status, fig.computed, fig.passage = "computed", done.text, done.passage
            fig.explanation = f"computed: {done.text}"
        elif others:
            first = others[0]
            fig.status, fig.passage, fig.source = "mismatch", first.passage.number, _source(first)
            fig.source_value = first.number.clean
            fig.explanation = f"not what the sources say it is: {first.describe()}"
            if _verdicts(claim, first)[2] is False and first.passage.entity and first.item is not None:
                # another company's row: say whose (a sentence is quoted as it is)
                fig.source = f"[{first.passage.number}] {first.passage.entity}’s {fig.source.split('] ', 1)[-1]}"
    return report


def _source(occ: Occurrence) -> str:
    where = f"[{occ.passage.number}] {occ.label}".rstrip()
    return f"{where}, {occ.column}" if occ.column else where


def _operands(claim: Claim, found: list[Occurrence], supported: list[tuple[Claim, float]]) -> list[list[Operand]]:
    """Groups of figures a computed claim may come from: the answer's own supported figures,
    each table row, each column of a table, each sentence of a passage — the figures of a
    group related to the claim's line item."""
    groups: list[list[Operand]] = []
    own = [
        Operand(c.number.text, v, c.number.percent, None, abs(v) * c.number.step / abs(c.number.value or 1.0))
        for c, v in supported
        if c.number.end <= claim.number.start + 400
    ]
    groups.append(own)
    share = bool(SHARE_OF.match(claim.clause.partition(claim.number.text)[2]))
    by_key: dict[tuple, list[Operand]] = {}
    for occ in found:
        if occ.number.kind != "figure":
            continue
        label, _, entity = _verdicts(claim, occ)
        if label == "conflict" or entity is False:
            continue
        if label != "agree":
            continue  # both figures of a computation must be the items the claim names
        # a paper's bare accuracy is a percentage when the claim is one: no ratio of two stands
        # in for it, unless the claim says it is a share ("76.0% of G.+BM25's")
        percent = occ.number.percent or (claim.number.percent and not share and _percent_unsaid(occ))
        operand = Operand(occ.number.clean, occ.value, percent, occ.passage.number, occ.step)
        if occ.row is not None:
            by_key.setdefault(("row", occ.passage.number, id(occ.row)), []).append(operand)
            by_key.setdefault(("col", occ.passage.number, occ.row.table, occ.cell), []).append(operand)
        else:
            by_key.setdefault(("sentence", occ.passage.number, occ.sentence), []).append(operand)
    groups.extend(g for g in by_key.values() if len(g) >= 2)
    return groups
