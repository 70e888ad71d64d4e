"""Which securities a company has registered on an exchange, answered by the app from its
filing's cover (``entities.registered``): the Section 12(b) table lists every class, so the
answer is what the cover lists, that page first among the sources, with no model. A 1.5B
model asked "Which debt securities are registered … under American Express' name?" named the
trusts of its card receivables (no class of the cover); the cover lists common shares alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from llama_index.core.schema import NodeWithScore, TextNode

from rag_core.chat.components import ChatComponents
from rag_core.chat.engine import Retrieved
from rag_core.entities.registered import is_debt, registered_classes
from rag_core.figures.marks import quoted
from rag_core.retrieval import BM25, doc_of
from rag_core.text import period_aliases

COVER_BY = "Docent's reading of the filing's cover (no model)"
COVER_PAGES = 3  # the pages of a filing its cover may take (passages of a filing without pages)
COVER_WORDS = "securities registered pursuant section 12 title each class trading symbol exchange registered"
_TABLE = re.compile(r"12\s*\(\s*b\s*\)", re.I)
# Asked which securities are registered on an exchange (or under Section 12(b)).
_ASKED = re.compile(
    r"\bregistered\b.*\b(?:exchanges?|section\s*12)|\b(?:exchanges?|section\s*12)\b.*\bregistered\b", re.I
)
_WHAT = re.compile(r"^\W*(?:which|what|list|name)\b|\b(?:which|what)\s+(?:debt\s+)?(?:securities|classes|notes)", re.I)
_DEBT = re.compile(r"\b(?:debt|notes?|bonds?|debentures?)\b", re.I)
_YES_NO = re.compile(r"^\W*(?:and\s+)?(?:does|do|did|has|have|had|is|are)\b", re.I)


def asks_registered(question: str) -> bool:
    """True for "Which debt securities are registered to trade on a national securities exchange …?"."""
    return bool(_ASKED.search(question) and (_WHAT.search(question) or _YES_NO.search(question)))


def listed_for(
    components: ChatComponents,
    question: str,
    condensed: str,
    found: Retrieved,
    names: list[str] | None,
    preview: dict[str, Any] | None = None,
) -> tuple[str | None, Retrieved]:
    """The answer the cover gives to the question as typed, else as rewritten (None when
    neither asks such a thing or no cover of the documents found lists the classes), and the
    sources with the cover's passage first (``preview``'s source number follows its passage).
    ``names``: the documents the session searches (None: all); no other document's cover is read."""
    question = question if asks_registered(question) else condensed
    if not found.nodes or not asks_registered(question):
        return None, found
    bm25 = components.keywords.get(names)
    for doc in (d for d in _filings(components, question, found) if d in bm25.doc_chunks):
        for page, chunks in _covers(bm25, doc):
            classes = registered_classes("\n".join(c.get_content() for c in chunks))
            if not classes:
                continue
            cover = next((c for c in chunks if _TABLE.search(c.get_content())), chunks[0])
            on_cover = {c.node_id for c in chunks}
            nodes = [NodeWithScore(node=cover, score=1.0), *(n for n in found.nodes if n.node.node_id not in on_cover)]
            return _said(question, classes, page), found.reordered(nodes, preview)
    return None, found


def _covers(bm25: BM25, doc: str) -> Iterator[tuple[int | None, list[TextNode]]]:
    """Where a filing's cover may stand: its first pages, each whole (a PDF); else the passages of
    the document that best match the cover's table (an HTML or Word filing has no pages)."""
    for page in range(1, COVER_PAGES + 1):
        chunks = [bm25.nodes[i] for i in bm25.page_nodes.get((doc, page), ())]
        if chunks:
            yield page, chunks
    if not bm25.page_nodes.get((doc, 1)):
        for i, _ in bm25.search(COVER_WORDS, COVER_PAGES, keep=lambda key: key[0] == doc):
            yield None, [bm25.nodes[i]]


def _filings(components: ChatComponents, question: str, found: Retrieved) -> list[str]:
    """The filings whose covers are read: the company's the question names (else those the
    search found), the one whose name holds the year (and quarter) asked first."""
    company = components.company_documents(found.stats)
    searched = (doc_of(n.node) for n in found.nodes)
    docs = [*dict.fromkeys([*(d for d in searched if not company or d in company), *company])]
    asked = period_aliases(question) | set(re.findall(r"\b(?:19|20)\d{2}\b", question))
    return sorted(docs, key=lambda d: -sum(a in d.lower() for a in asked))


def _said(question: str, classes: list[str], page: int | None) -> str:
    where = f"the filing's cover (page {page})" if page else "the filing's cover"
    shown = [quoted(c, 160) for c in classes]
    if _DEBT.search(question):
        debt = [c for c, raw in zip(shown, classes, strict=True) if is_debt(raw)]
        yes_no = bool(_YES_NO.search(question))
        if not debt:
            listed = "; ".join(shown)
            said = "No" if yes_no else "None"
            return f"{said}: {where} registers no debt under Section 12(b) of the Exchange Act, only: {listed}. [1]"
        items = "\n".join(f"- {c}" for c in debt)
        return (
            ("Yes: " if yes_no else "")
            + f"{len(debt)} debt securit{'ies are' if len(debt) != 1 else 'y is'} registered under Section 12(b) "
            f"of the Exchange Act ({where}):\n\n{items}\n\n[1]"
        )
    items = "\n".join(f"- {c}" for c in shown)
    return f"Registered under Section 12(b) of the Exchange Act ({where}):\n\n{items}\n\n[1]"
