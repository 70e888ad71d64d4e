"""Which documents may answer a question, by what its names are about (``entity_scope``).

"Documents" here are the units of ``Entities``: a document, or a section of one that joins
others' pages (a binder of filings); a route's keys are units.

- A question that names what some documents are about is answered from those documents
  alone: one search per thing named, results interleaved. A passage of another company's
  filing is no evidence for this one's figure, however well it matches the words.
- A follow-up that names nothing keeps the conversation's subject: the subject of the last
  question that named one (or, when the last question named nothing, of the rewrite). One
  that names something else switches, and the conversation's searches then run inside the
  new subject's documents, so they cannot pull the old one's pages in.
- A name that no document is about, and that the documents hold nowhere, or only as a word
  ("target"), or only in passing on a page or two of documents about others when a figure
  is asked, means the documents don't cover it: nothing is searched, the model is not asked.
  A sentence of theirs stating a figure with the name ("a MacBook Pro with … 2 GB RAM") is
  more than a passing mention, unless the figure is asked as the name's own ("Larkspur's
  net sales": a page about another company holds none of that). So does such a name beside
  covered ones when what is asked belongs to it ("Tesla's Services segment").
- A name no document is about but that one writes as a name on several pages ("Amex" in
  American Express's 10-K, "AMD" in Advanced Micro Devices', a business a filing names) is
  covered: answered from the documents that write it so, never refused.
- A name mentioned in passing that a question asks no figure of ("Who does Bramblecrest say
  it competes with, such as Larkspur?") is answered from the documents that mention it, and
  the answer says that no document is about it (``unsure``).

Documents that speak for no subject (notes, passages, short documents) are no other company's:
they stay searchable beside the named subject's documents, ranked by what they say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag_core.entities.names import Name, asks_figure, question_names
from rag_core.entities.resolver import Entities

SAID = 5  # subjects listed in a refusal


class KeywordView(Protocol):
    """What the scope reads of the keyword index: its documents, and whether they hold terms."""

    doc_terms: Any

    def mentions(self, docs: set[str], terms: list[str]) -> bool: ...


@dataclass
class Scope:
    """The documents a question may be answered from (``routes``: one search each), or why
    there is nothing to answer from (``refused``)."""

    routes: list[tuple[str, list[str]]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unmentioned: list[str] = field(default_factory=list)  # beside names that routed
    inherited: str = ""  # where the routes came from when the question names nothing: conversation | rewrite
    covering: list[str] = field(default_factory=list)  # what the documents are about (said in a refusal)
    others: int = 0  # how many more subjects the documents have than ``covering`` lists
    absent: bool = False  # no document holds the refused names at all, in any case
    unsure: list[str] = field(default_factory=list)  # names no document is about, only mentioned

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.routes:
            out["entities"] = [label for label, _ in self.routes]
            out["entity_docs"] = sorted({doc for _, docs in self.routes for doc in docs})  # each route's documents
        if self.inherited:
            out["entity_from"] = self.inherited
        if self.refused:
            out["uncovered_names"] = self.refused
            out["refusal"] = refusal(self.refused, self.covering, self.others, absent=self.absent)
            if self.absent:
                out["missing_names"] = self.refused
        if self.unmentioned:
            out["unmentioned_names"] = self.unmentioned
        if self.unsure:
            out["unsure_names"] = self.unsure
        return out


def refusal(names: list[str], covering: list[str], others: int = 0, *, absent: bool = False) -> str:
    """What the chat answers when no document covers what the question names (``absent``:
    none even holds the name)."""
    it = "it" if len(names) == 1 else "them"
    if absent:
        text = f"The documents don't mention {_listed(names)}: no indexed document names {it}"
    else:
        text = f"The documents don't cover {_listed(names)}: no document is about {it}"
    if covering:
        listed = [*covering, f"{others} more"] if others else covering
        text += f" (they are about {_listed(listed)})"
    return text + ", so there is nothing to answer from."


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "; ".join(items[:-1]) + " and " + items[-1]


def decide(
    entities: Entities,
    keywords: KeywordView,
    query: str,
    *,
    typed: str | None = None,
    previous: Iterable[str] = (),
    allowed: Iterable[str] | None = None,
) -> Scope | None:
    """The scope of a search for ``query`` (the question, or its rewrite), given the question
    as ``typed`` and the ``previous`` questions of its conversation (oldest first); None
    when the names decide nothing (search everywhere, as before). ``allowed``: the documents
    the conversation is limited to."""
    docs = entities.units_of(set(keywords.doc_terms) if allowed is None else set(allowed) & set(keywords.doc_terms))
    if not entities.speaking & docs:
        return None
    asked = typed or query
    names = question_names(asked)
    routes, loose = _resolve(entities, names, docs, keywords)
    coverage = {n: entities.coverage(n, _mentioned(entities, keywords, n, docs)) for n in loose}
    states = {n: c.state for n, c in coverage.items()}
    figure = asks_figure(asked)
    uncovered = [
        n
        for n, state in states.items()
        if state in ("absent", "word")
        or (state == "passing" and (figure or n.owner))
        or (state == "stated" and n.owner)
    ]
    unsure = [n for n, state in states.items() if state in ("passing", "stated") and n not in uncovered]
    if not routes and not (uncovered and any(n.owner for n in uncovered)):
        routes = _named_routes(entities, coverage, docs)
    if routes and previous and _COMPARES.search(asked):
        routes = _with_earlier(entities, keywords, query, asked, list(previous), docs, routes)
    if routes:
        return Scope(routes, unmentioned=[n.text for n in uncovered], unsure=[n.text for n in unsure])
    # Nothing to answer from when no name is covered, or when what is asked belongs to one
    # that is not ("Tesla's Services segment": Services is covered, Tesla is not).
    if uncovered and (len(uncovered) == len(names) or any(n.owner for n in uncovered)):
        subjects = entities.subjects(docs)
        return Scope(
            refused=[n.text for n in uncovered],
            covering=subjects[:SAID],
            others=max(0, len(subjects) - SAID),
            absent=all(states[n] == "absent" for n in uncovered),
        )
    covered = [n for n in loose if n not in uncovered]
    for source, found in _earlier(entities, keywords, query, asked, list(previous), docs):
        # A follow-up naming only what the conversation's documents hold stays with them.
        held = all(
            keywords.mentions({entities.document(u) for u in d}, list(n.terms)) for n in covered for _, d in found
        )
        return Scope(found, unmentioned=[n.text for n in uncovered], inherited=source) if held else None
    return None


# A follow-up that compares ("How does that compare with Amazon's?") asks of both companies.
_COMPARES = re.compile(r"\bcompar(?:e[sd]?|ing|ison)\b|\bversus\b|\bvs\.?(?!\w)|\brelative to\b|\bthan\b", re.I)


def _with_earlier(
    entities: Entities,
    keywords: KeywordView,
    query: str,
    asked: str,
    previous: list[str],
    docs: set[str],
    routes: list[tuple[str, list[str]]],
) -> list[tuple[str, list[str]]]:
    """A comparing follow-up's routes and the conversation's subject before them: the first
    company stays in scope and the answer is for both."""
    for _source, found in _earlier(entities, keywords, "", asked, previous, docs):
        have = [sorted(key) for _, key in routes]
        earlier = [(label, key) for label, key in found if sorted(key) not in have]
        return earlier + routes
    return routes


def _named_routes(entities: Entities, coverage: dict[Name, Any], docs: set[str]) -> list[tuple[str, list[str]]]:
    """Routes for names no document is about, to the documents that write them as names on
    several pages (or, for a name only mentioned, to those that mention it), when they pick
    some documents out of the library."""
    routes: dict[tuple[str, ...], str] = {}
    for name, cover in coverage.items():
        if cover.state == "covered":
            held = entities.naming(name, cover.docs)
        elif cover.state in ("passing", "stated"):
            held = set(cover.docs)
        else:
            continue
        if not held or held >= docs:
            continue
        key = tuple(sorted(held | (docs - entities.speaking)))
        routes.setdefault(key, name.text)
    return [(label, list(key)) for key, label in routes.items()]


def _resolve(
    entities: Entities, names: list[Name], docs: set[str], keywords: KeywordView
) -> tuple[list[tuple[str, list[str]]], list[Name]]:
    """The routes of the names some documents are about (one per set of documents: those,
    and the documents about nothing in particular: a note is not another company's filing),
    and the names no document is about."""
    routes: dict[tuple[str, ...], str] = {}
    loose = []
    for name in names:
        about = entities.about(name, docs)
        if not about:
            loose.append(name)
            continue
        about |= docs - entities.speaking  # a note about nothing in particular is no other company's
        key = tuple(sorted(about))
        routes.setdefault(key, name.text)
    if len(routes) == 1 and set(next(iter(routes))) >= docs:
        return [], loose  # every document is about it: nothing to route
    return [(label, list(key)) for key, label in routes.items()], loose


def _mentioned(entities: Entities, keywords: KeywordView, name: Name, units: set[str]) -> set[str]:
    """The units holding every term of the name, in any case. The keyword index knows whole
    documents: of a document's sections, those that write the name as a name (all of them when
    none does, so that a name held only as a word stays a word)."""
    held = {d for d in {entities.document(u) for u in units} if all(keywords.mentions({d}, [t]) for t in name.terms)}
    named = {u for u in units if u != entities.document(u) and all(t in entities.units[u].names for t in name.terms)}
    written = {entities.document(u) for u in named}
    return {u for u in units if entities.document(u) in held and (u in named or entities.document(u) not in written)}


def _earlier(
    entities: Entities, keywords: KeywordView, query: str, asked: str, previous: list[str], docs: set[str]
) -> Iterable[tuple[str, list[tuple[str, list[str]]]]]:
    """Where a question that names nothing takes its subject from, in order: the last question
    that named one, unless the last question named nothing (then the rewrite first)."""
    rewrite = query if query.strip() != asked.strip() else ""
    if previous and not question_names(previous[-1]) and rewrite:
        found, _ = _resolve(entities, question_names(rewrite), docs, keywords)
        if found:
            yield "rewrite", found
    for earlier in reversed(previous):
        found, _ = _resolve(entities, question_names(earlier), docs, keywords)
        if found:
            yield "conversation", found
            return
    if rewrite:
        found, _ = _resolve(entities, question_names(rewrite), docs, keywords)
        if found:
            yield "rewrite", found
