"""Each figure of an answer read as a claim: the line item, the period and the entity its
clause names.

"NVIDIA's net income for the quarter ended July 30, 2023 was $6,728 million" claims net
income, the three months to July 30, 2023, NVIDIA. A figure's clause is the text from the
figure before it (or its sentence's start) to the figure, and what follows it up to the next
figure ("$6,188 million in net income"). What the clause does not name comes from the
clauses before it in the sentence ("Revenue was $13,507 million, up from $6,704 million"),
then from the question — except the period, when the clause says it is another one ("a year
ago", "compared with"). "..., respectively" pairs figures with the names and dates listed
before them, in order.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rag_core.figures.cells import Ask, question_parts
from rag_core.figures.labels import concepts, content, spans
from rag_core.figures.numbers import Number, figures
from rag_core.figures.periods import AGO, DATE, RELATIVE, Period, parse_date, period_named, report_of
from rag_core.figures.sources import named_entities

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+(?=[A-Z\d\"“(*-]|[\u3400-\u9fff])|\n+")


@dataclass
class Claim:
    """A figure of an answer and what its words say it is."""

    number: Number
    sentence: str
    terms: set[str]  # the words naming its line item (``labels.content``)
    period: Period
    entities: set[str]  # entity words (``sources.entity_keys``) it is about
    relative: bool  # its clause says it is of another period ("a year ago")
    report: tuple[int, int] | None = None  # the report it is from, when named ("the Q3 2022 10-Q")
    # the names it is about that no source's document is about ("Apple" over Galaxy Gaming's 10-K)
    foreign: tuple[frozenset[str], ...] = ()
    clause: str = ""  # the words around the figure that speak of it ("REALMNews scores 40.4 on TREC")
    asked: str = ""  # the question's part it answers (what the clause leaves unsaid: "And on TREC?")


def sentences(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s sentences (a line of a list is one)."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() > start:
            out.append((start, m.start()))
        start = m.end()
    if start < len(text):
        out.append((start, len(text)))
    return out


def read_claims(answer: str, question: str, known: set[str], strangers: Sequence[frozenset[str]] = ()) -> list[Claim]:
    """The figures of ``answer`` worth checking, each with what it claims (``known``: the
    entity words of the cited documents; ``strangers``: the entity words of each name the
    question asks about that no cited document is about)."""
    foreign = {k for name in strangers for k in name}
    every = known | foreign
    asks = question_parts(question, known) if question else []
    asked = report_of(question)
    found = figures(answer, question)
    out: list[Claim] = []
    for s_start, s_end in sentences(answer):
        sentence = answer[s_start:s_end]
        mine = [n for n in found if s_start <= n.start < s_end]
        respectively = _respectively(sentence, mine, s_start, known)
        previous_terms: set[str] = set()
        previous_period = Period()
        previous_entities: set[str] = set()
        for i, n in enumerate(mine):
            lo = mine[i - 1].end if i else s_start
            hi = mine[i + 1].start if i + 1 < len(mine) else s_end
            before = answer[lo : n.start]
            if lo == s_start:  # "According to the statements of operations, …": where, not what
                before = _ATTRIBUTION.sub("", before)
            tail = answer[n.end : hi]
            if i + 1 < len(mine):  # "(FY2022: $1,604 million, FY2021: $1,637 million": "FY2021:" is the next one's
                tail = _NEXT_LABEL.sub("", tail)
            after = _own_tail(tail, bool(concepts(content(before))))
            terms = content(before)
            if (not concepts(terms) and concepts(content(after))) or SHARE_OF.match(after):
                terms |= content(after)  # "$6,188 million in net income", "70% of revenue"
            entities = respectively[0].get(i) or named_entities(before + " " + after, every)
            said = period_named(after)
            if not said.known:
                said = period_named(before, last=True)
            if not entities:
                entities = previous_entities or named_entities(answer[s_start : n.start], every)
                entities = _entity_of_period(asks, said) or entities
            ask = _ask_for(asks, entities)
            if not entities and ask is not None and len(asks) == 1:
                entities = set(ask.entities) or set(foreign)
            relative = bool(RELATIVE.search(before) or AGO.search(after))
            if not concepts(terms):
                terms |= previous_terms or (ask.terms if ask is not None else set())
            elif ask is not None and concepts(terms) <= concepts(ask.terms):  # the question's qualifiers ("diluted")
                terms |= {t for t in ask.terms if not t.startswith("§")} - {k for a in asks for k in a.entities}
            period, listed = said, set(_dates(before))
            # "the quarters ended July 1 and October 29": the one the question asks of this company
            if ask is not None and len(listed) > 1 and said.end in listed and ask.period.end in listed:
                period = replace(period, end=ask.period.end)
            if i in respectively[1]:
                period = Period(period.months, respectively[1][i], period.fiscal_year, period.quarter)
            if not period.known and not relative:
                same = entities == previous_entities or not entities
                if previous_period.known and same:
                    period = previous_period
                elif ask is not None:
                    period = ask.period
            elif ask is not None and not relative:  # the question's length or date where the clause gives one only
                period = Period(
                    period.months if period.months is not None else ask.period.months,
                    period.end or (ask.period.end if period.months in (None, ask.period.months) else None),
                    period.fiscal_year,
                    period.quarter,
                )
                quarter_only = period.months in (None, 3) and not (period.quarter or period.end or period.fiscal_year)
                if ask.period.quarter and quarter_only:  # "in the quarter", asked of Q3 2024
                    period = replace(period, fiscal_year=ask.period.fiscal_year, quarter=ask.period.quarter)
            report = report_of(before + " " + after) or report_of(sentence) or (None if len(asks) > 1 else asked)
            others = tuple(name for name in strangers if entities and name & entities)
            clause = f"{before} {n.text} {after}"
            asked_part = ask.text if ask is not None else question
            out.append(Claim(n, sentence, terms, period, entities, relative, report, others, clause, asked_part))
            previous_terms, previous_entities = terms, entities
            if not relative:
                previous_period = period
    return out


# A sentence's lead-in that names where its figures come from, not what they are
_ATTRIBUTION = re.compile(
    r"^\s*(?:according\s+to|based\s+on|as\s+(?:stated|shown|reported|noted|given)\s+in|per)\b[^,.;:]{0,200},\s*",
    re.IGNORECASE,
)
# A period written as a label, "FY2021:", right before the next figure: that figure's period, not the one before it
# (an answer listing a line item's years, as the local model wrote Corning's and 3M's capex by fiscal year)
_NEXT_LABEL = re.compile(
    r"[,;(]?\s*(?:FY\s?'?\d{2,4}|fiscal\s+(?:year\s+)?\d{4}|(?:19|20)\d{2}|Q[1-4]\s*(?:FY\s?)?'?\d{2,4})\s*[:=]\s*$",
    re.IGNORECASE,
)
# Where a figure's clause ends: ";", ", and …", "while"; and a closing parenthesis before "and", which ends
# a list the figure closes ("(FY2022: $1,604 million, …, FY2020: $1,377 million) and fixed assets …")
_CUT = re.compile(
    r";|,\s*(?:and|while|but|whereas|which|compared)\b|\s(?:while|whereas|but)\s|\)\s*(?:and|while|but|whereas)\b",
    re.IGNORECASE,
)


SHARE_OF = re.compile(r"\s*(?:of|as\s+an?\s+(?:percentage|share|portion|proportion)\s+of)\b", re.IGNORECASE)


def _own_tail(after: str, named: bool) -> str:
    """The words after a figure that still speak of it: up to the next clause, and up to the
    next line item when the figure's own is named before it."""
    m = _CUT.search(after)
    if m:
        after = after[: m.start()]
    if named and not SHARE_OF.match(after):
        for s, _, w in spans(after):
            if w.startswith("§"):
                return after[:s]
    return after


def _ask_for(asks: list[Ask], entities: set[str]) -> Ask | None:
    """The part of the question about ``entities`` (the question itself when it has one part)."""
    about = [a for a in asks if a.entities & entities] if len(asks) > 1 else asks
    if not about and len({frozenset(a.entities) for a in asks}) == 1:
        about = asks  # one company, two line items ("operating expenses ... compared to revenue")
    if not about or len({(a.period, frozenset(a.entities)) for a in about}) > 1:
        return None
    return Ask(about[0].text, set().union(*(a.terms for a in about)), about[0].period, set(about[0].entities))


def _entity_of_period(asks: list[Ask], said: Period) -> set[str] | None:
    """The entity of the one part of a question of several companies whose date a clause names
    without naming its company ("Apple's net income for the quarter ended July 1, 2023 was
    $19,881 million, and for the quarter ended July 30, 2023 was $6,188 million": NVIDIA's, as
    asked); None when the clause names no date, or several parts have it."""
    if said.end is None or len({frozenset(a.entities) for a in asks}) < 2:
        return None
    parts = {frozenset(a.entities) for a in asks if a.entities and a.period.end == said.end}
    return set(next(iter(parts))) if len(parts) == 1 else None


def _dates(text: str) -> list[dt.date]:
    return [d for d in (parse_date(m) for m in DATE.finditer(text)) if d]


def _respectively(
    sentence: str, numbers: list[Number], offset: int, known: set[str]
) -> tuple[dict[int, set[str]], dict[int, dt.date]]:
    """For a "..., respectively" sentence: figure index → the entity and the date listed in the
    same place before the figures."""
    if "respectively" not in sentence.lower() or len(numbers) < 2:
        return {}, {}
    head = sentence[: numbers[0].start - offset]
    names: list[str] = []
    for m in re.finditer(r"\b[A-Z][\w&.-]*", head):
        for key in named_entities(m.group(0), known):
            if key not in names:
                names.append(key)
    dates = _dates(head)
    by_name = {i: {names[i]} for i in range(len(numbers))} if len(names) == len(numbers) else {}
    by_date: dict[int, dt.date] = {i: dates[i] for i in range(len(numbers))} if len(dates) == len(numbers) else {}
    return by_name, by_date
