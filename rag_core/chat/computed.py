"""A measure the question defines, computed by the app from the statements of the filing
the search found (``figures.formulas``), with each operand's page among the sources.

A 1.5B model does not divide 6,489 by the mean of 253 and 282 reliably; the app does, from
cells read by structure (``figures.statements`` over ``loaders.layout``'s rows). Each operand
is looked for on the pages of the documents the search found (the question's company's
filings, when its name routed the search), best keyword page first; its page joins the
sources, so the arithmetic's figures are each traceable to the page they stand on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.schema import NodeWithScore

from rag_core.chat.checking import TurnFigures
from rag_core.chat.components import ChatComponents
from rag_core.chat.engine import Retrieved
from rag_core.chat.evidence import Evidence
from rag_core.figures.formulas import Figure, Result, compute, formula_of, show
from rag_core.figures.items import LABEL_PATTERNS
from rag_core.figures.judgements import judged_by
from rag_core.figures.labels import STATEMENT_NAMED
from rag_core.figures.numbers import read_numbers
from rag_core.figures.statement_titles import (
    ITEM_STATEMENT,
    STATEMENT_HEAD,
    STATEMENT_PAGES,
    STATEMENTS,
    titled,
)
from rag_core.figures.statements import StatementRow, find_row, statement_rows, value_in
from rag_core.loaders.layout import page_rows
from rag_core.retrieval import BM25, doc_of

logger = logging.getLogger(__name__)

COMPUTED_NOTE = "computed by Docent from the statements' figures: state this result"
COMPUTED_LEAD = "🧮 Computed from the statements:"
COMPUTED_BY = "Docent's arithmetic over the statements (no model)"
# A question that asks the measure's value (the sentence up to its "?"), not why or how it moved:
# the app's arithmetic is the whole answer. Seen in 3M's, Coca-Cola's and Corning's filings'
# questions ("what is the FY2020 DPO", "how much did American Water Works pay out in dividends").
_VALUE = re.compile(r"\b(?:what\s+(?:is|was|were|are)|what's|how\s+much|calculate|compute)\b", re.I)
_NOT_VALUE = re.compile(
    r"\b(?:why|dr[io]ve[ns]?|drivers?|driving|explain\w*|reasons?|caus\w*|improv\w*|trend\w*|chang\w*|compar\w*"
    r"|grow\w*|increas\w*|decreas\w*|declin\w*|differen\w*|segments?|percentage\s+of|share\s+of)\b",
    re.I,
)
# A ratio or share asked of amounts: an amount the question names is only one of its operands.
_A_RATIO = re.compile(r"\bratio\b|%|\bpercent\w*|\bper\b|\bmargin\b|\bproportion\b", re.I)
# Asked whether the measure is positive or negative (Corning's and American Water Works' FY2022
# working capital): the sign of the result answers Yes or No.
_SIGN = r"^\W*(?:does|do|did|is|was|has|have|had)\b[^?]*?\b(positive|negative)\s+(?:\w+\s+)?"
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")


class Computation:
    """One turn's computation: ``result`` (None when the question defines nothing this reads,
    or an operand is not found) and ``nodes``, a passage of each operand's page that the
    sources lack."""

    def __init__(
        self, question: str, nodes: Sequence[NodeWithScore], bm25: BM25, files: Path, also: Sequence[str] = ()
    ) -> None:
        self.question = question
        self.result: Result | None = None
        # the measures of a yes-or-no judgement asked ("capital-intensive?"): the model judges from them
        self.judged: tuple[Result, ...] = ()
        self.nodes: list[NodeWithScore] = []
        self._bm25, self._files = bm25, files
        self._rows: dict[tuple[str, int], list[StatementRow]] = {}
        self._titles: dict[tuple[str, int], str] = {}
        self._statement_pages: dict[str, list[tuple[str, int]]] = {}
        self._used: list[tuple[str, int, str]] = []
        self._cited: int | None = None  # the source number the computation is read as
        self._wanted: str | None = None  # the statement the measure's first operand is read from
        self._latest = 0  # the latest year the measure asks: its filing's statements are read first
        self._order: dict[str, list[tuple[str, int]]] = {}
        # the documents found, then the other filings of the company the question names (``also``):
        # a statement of FY2022 stands in the 2022 filing though the search found the 2021 one
        found = [*dict.fromkeys(doc_of(n.node) for n in nodes), *also]
        if also:  # the question names a company: only its filings hold its statements (3M's PP&E is no
            found = [d for d in found if d in also]  # figure of CVS Health's 10-K that the search also found)
        self._docs = [d for d in dict.fromkeys(found) if d.lower().endswith(".pdf")]
        if not self._docs:
            return
        asked = formula_of(question)
        if asked is None:
            return
        self._latest = max(asked[3])
        self._scale = 0.0  # the units the statements found so far state
        try:
            self.result = compute(question, self._lookup)
            self.judged = (judged_by(question, asked[3], self._lookup) or ()) if self.result is not None else ()
        except Exception:  # a page the reader trips on: the answer goes on without the computation
            logger.exception("computing the measure asked failed")
            self.result = None
        if self.result is not None:
            self.nodes = self._operand_nodes(nodes)

    def _page(self, doc: str, page: int) -> list[StatementRow]:
        key = (doc, page)
        if key not in self._rows:
            path = (self._files / doc).resolve()
            text = page_rows(path, page) if path.is_relative_to(self._files.resolve()) and path.is_file() else None
            self._rows[key] = statement_rows(text or "")
            self._titles[key] = "\n".join((text or "").splitlines()[:STATEMENT_HEAD])
        return self._rows[key]

    def _statements(self, kind: str) -> list[tuple[str, int]]:
        """The pages of the documents found whose head holds the title of statement ``kind``,
        the best title match first."""
        if kind not in self._statement_pages:
            query, title = STATEMENTS[kind]
            found: list[tuple[str, int]] = []
            for doc in self._docs:  # each document's own best pages: one filing's notes don't crowd out another's
                hits = self._bm25.search_pages(query, STATEMENT_PAGES, keep=_in_document(doc))
                found += [key for key, _ in hits if title.search(self._head(*key))]
            self._statement_pages[kind] = found
        return self._statement_pages[kind]

    def _ordered(self, kind: str) -> list[tuple[str, int]]:
        """The pages of statement ``kind``: the filing of the latest year asked first, its statement
        before those naming it: an operand of FY2021 is read in the FY2021 10-K that reports it, not
        the FY2022 one that repeats it (American Water Works' and Corning's 10-Ks each repeat the
        years before theirs)."""
        if kind not in self._order:  # once per statement: each operand of the measure reads the same order
            title = STATEMENTS[kind][1]
            self._order[kind] = sorted(
                self._statements(kind),
                key=lambda key: (not titled(self._head(*key), title), self._newest(*key) != self._latest),
            )
        return self._order[kind]

    def _newest(self, doc: str, page: int) -> int:
        """The latest year of the page's statement columns (0 when it has none)."""
        return max((max(row.years) for row in self._page(doc, page)), default=0)

    def _head(self, doc: str, page: int) -> str:
        self._page(doc, page)
        return self._titles[(doc, page)]

    def _lookup(self, item: str, labels: tuple[str, ...], year: int) -> Figure | None:
        """The figure of ``item`` for ``year``, read only from the statement it belongs to: a
        figure of a note's table or of another statement ("Inventories" in the cash flows is a
        change) would be computed with and trusted, so it is not looked for elsewhere."""
        self._wanted = self._wanted or ITEM_STATEMENT[item]
        for doc, page in self._ordered(ITEM_STATEMENT[item]):
            row = find_row(self._page(doc, page), labels, year, LABEL_PATTERNS.get(item))
            got = value_in(row, year) if row is not None else None
            if row is not None and got is not None:
                self._used.append((doc, page, row.label))
                value = got[0]
                if row.stated:
                    self._scale = self._scale or row.scale
                elif self._scale:  # a page that does not say its units: those of the statements beside it
                    value *= self._scale
                return Figure(item, year, value, got[1], f"{doc}, page {page}")
        return None

    def _operand_nodes(self, nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
        """A passage of each operand's page the sources lack: the chunk holding the row's label."""
        have = {(doc_of(n.node), (n.node.metadata or {}).get("page")) for n in nodes}
        out: list[NodeWithScore] = []
        for doc, page, label in dict.fromkeys(self._used):
            chosen = self._passage(doc, page, label) if (doc, page) not in have else None
            if chosen is not None:
                out.append(chosen)
                have.add((doc, page))
        return out

    def _passage(self, doc: str, page: int, label: str) -> NodeWithScore | None:
        """The chunk of the page that holds the row's label (else the page's first)."""
        chunks = [self._bm25.nodes[i] for i in self._bm25.page_nodes.get((doc, page), ())]
        if not chunks:
            return None
        words = label.lower().split()[:3]
        chosen = next((c for c in chunks if all(w in c.get_content().lower() for w in words)), chunks[0])
        return NodeWithScore(node=chosen, score=0.0)

    def statement(self) -> NodeWithScore | None:
        """A passage of the statement the measure asked is read from (its first operand found,
        else the statement's titled page), whether or not every operand was: the page an analyst
        turns to for that measure."""
        first = next(iter(self._used), None)
        if first is not None:
            return self._passage(*first)
        if self._wanted is None:
            return None
        title = STATEMENTS[self._wanted][1]  # no operand found (no "Cost of sales" line): the statement's page
        pages = [key for key in self._ordered(self._wanted) if titled(self._head(*key), title)]
        return self._passage(*pages[0], "") if pages else None

    def named(self) -> list[NodeWithScore]:
        """A passage of each statement the question names, in the order it names them: the titled
        page with statement columns, of the filing of the latest year the question names first."""
        latest = max(map(int, _YEAR.findall(self.question)), default=0)
        found = sorted(
            (m.start(), kind) for kind, named in STATEMENT_NAMED.items() if (m := named.search(self.question))
        )
        out: list[NodeWithScore] = []
        for _, kind in found:
            title = STATEMENTS[kind][1]
            pages = [key for key in self._statements(kind) if titled(self._head(*key), title) and self._newest(*key)]
            pages.sort(key=lambda key: (self._newest(*key) != latest, -self._newest(*key)))
            out += [chosen] if pages and (chosen := self._passage(*pages[0], "")) is not None else []
        return out

    def evidence(self, nodes: Sequence[NodeWithScore], figures: TurnFigures | None = None) -> list[Evidence]:
        """The computation as the first thing the model reads, numbered as the source of its
        first operand's page (so that the answer cites that page); the figure check counts it
        as that source's (a figure taken from it is no figure "not in the sources")."""
        if self.result is None or not self.result.figures:
            return []
        first = self.result.figures[0].where
        for i, hit in enumerate(nodes):
            meta = hit.node.metadata or {}
            if f"{doc_of(hit.node)}, page {meta.get('page')}" == first:
                said = [r.describe(self.question) for r in self.judged or (self.result,)]
                if figures is not None:
                    for text in said:
                        figures.trust(i + 1, text)
                self._cited = i + 1
                lines = [f"{text} ({COMPUTED_NOTE})" for text in said]
                return [Evidence(i + 1, doc_of(hit.node), meta.get("page"), None, lines)]
        return []

    @property
    def pages(self) -> set[tuple[str, int]]:
        """The pages the result's figures stand on."""
        return {(doc, page) for doc, page, _ in self._used} if self.result is not None else set()

    def _asked(self) -> tuple[str, re.Match[str] | None] | None:
        """("sign", its match) or ("value", None) when the result alone answers the question."""
        if self.result is None:
            return None
        asked = self.question.split("?")[0]
        name = r"\s+".join(map(re.escape, self.result.name.split(",")[0].lower().split()))
        sign = re.search(_SIGN + name, asked, re.I)
        if sign and self.result.value:
            return "sign", sign
        if _VALUE.search(asked) and not _NOT_VALUE.search(asked):
            if self.result.kind == "amount" and _A_RATIO.search(asked):
                return None  # "the ratio of capex to operating cash flow": one amount is not what it asks
            return "value", None
        return None

    @property
    def answers(self) -> bool:
        """True when the app's arithmetic is the whole answer: the question asks the measure's
        value or its sign, and every operand was found."""
        return self._asked() is not None

    def alone(self) -> str | None:
        """The answer the app gives without the model when the result answers the question (a
        1.5B model states its own arithmetic beside the right figure): the computation, cited
        as the source it was read as, after "Yes"/"No" when the sign was asked."""
        asked = self._asked()
        if asked is None or self.result is None or self._cited is None:
            return None
        text = f"{COMPUTED_LEAD} {self.result.describe(self.question)} [{self._cited}]"
        if asked[0] == "sign" and asked[1] is not None:
            positive = self.result.value > 0
            yes = positive == (asked[1].group(1).lower() == "positive")
            measure = self.result.name.split(",")[0].lower()
            return f"{'Yes' if yes else 'No'}: {measure} is {'positive' if positive else 'negative'}.\n\n{text}"
        return text

    def completed(self, answer: str, question: str) -> str:
        """``answer``, with the computation after it when it does not state the result."""
        if (
            answer.startswith(COMPUTED_LEAD) and answer != self.alone()
        ):  # the model's words posing as Docent's arithmetic
            answer = answer[len(COMPUTED_LEAD) :].lstrip()
        if self.result is None:
            return answer
        said = {abs(n.magnitude) for n in read_numbers(answer)}
        missing = []
        for result in self.judged or (self.result,):  # each measure a judgement is read by
            shown = show(result.value, result.kind, question)
            wanted = float(re.sub(r"[^\d.]", "", shown.split()[0]) or "nan")
            if not any(abs(n - abs(wanted)) < 1e-9 for n in said):
                missing.append(result.describe(question))
        if not missing:
            return answer
        if len(missing) == 1:
            return f"{answer}\n\n{COMPUTED_LEAD} {missing[0]}"
        return f"{answer}\n\n{COMPUTED_LEAD}\n" + "\n".join(f"- {text}" for text in missing)


def _in_document(doc: str) -> Callable[[tuple[str, int]], bool]:
    return lambda key: key[0] == doc


def computed_for(
    components: ChatComponents,
    question: str,
    condensed: str,
    found: Retrieved,
    names: list[str] | None,
    preview: dict[str, Any] | None = None,
) -> tuple[Computation | None, Retrieved]:
    """The turn's computation (of the question as typed, else as rewritten, when either defines
    a measure) and the search's passages with a passage of each operand's page added; when the
    computation is the whole answer, the operands' pages lead the sources (and ``preview``'s
    source number follows its passage)."""
    if not found.nodes or not components.settings.check_figures:
        return None, found
    asked = question if formula_of(question) else condensed
    bm25, also = components.keywords.get(names), components.company_documents(found.stats)
    computation = Computation(asked, found.nodes, bm25, components.settings.paths.files, also)
    nodes = [*found.nodes, *computation.nodes]
    key = lambda n: (doc_of(n.node), (n.node.metadata or {}).get("page"))  # noqa: E731
    if computation.answers or computation.judged:  # the operands' pages lead the sources: what it is read from
        first = [n for n in nodes if key(n) in computation.pages]
        ids = {n.node.node_id for n in first}
        nodes = first + [n for n in nodes if n.node.node_id not in ids]
    elif (statement := computation.statement()) is not None and key(statement) not in map(key, found.nodes):
        # asked why a measure moved, whether it is useful, or an operand is missing: the statement it is
        # read from is among the sources shown, in place of the weakest passage (American Express's "what
        # drove gross margin change": its income statement, without a cost of sales, is the evidence)
        rest = [n for n in nodes if key(n) != key(statement)]
        nodes = [*rest[: len(found.nodes) - 1], statement, *rest[len(found.nodes) - 1 :]]
    elif computation.result is None and (
        named := [n for n in computation.named() if key(n) not in map(key, found.nodes)]
    ):
        # the question says which statement to read ("using the balance sheet"): its page is among the sources
        rest = [n for n in nodes if key(n) not in {key(m) for m in named}]
        cut = max(len(found.nodes) - len(named), 0)
        nodes = [*rest[:cut], *named, *rest[cut:]]
    return computation, found.reordered(nodes, preview)
