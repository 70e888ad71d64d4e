"""One turn's figures: the cells its question asks for, found by structure in the retrieved
pages and read by the model first, and its answer checked against the sources it was given
(``rag_core.figures``).

The check reads what the model read: each source numbered as the answer cites it, with the
page's title and table header lines in front (the chunk's ``context``), and the company its
document is about (named on the document's first page). The cells are looked for on the
whole pages the sources come from (a page again from its chunks, ``figures.page_text``):
a chunk cut from the middle of a statement lacks the rows and columns around its figure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from llama_index.core.schema import BaseNode, NodeWithScore

from rag_core.chat.engine import unfence
from rag_core.chat.evidence import Evidence
from rag_core.entities import question_names
from rag_core.figures import CellMatch, Page, Passage, Verified, document_entity, find_cells, page_text, verify_answer
from rag_core.figures.check import CheckReport
from rag_core.figures.verify import sure_cells
from rag_core.retrieval.keywords import BM25
from rag_core.text_injection import blank_instructions

logger = logging.getLogger(__name__)
STRUCTURE_NOTE = "found by the table's structure"
ChunksOf = Callable[[tuple[str, int]], list[BaseNode]]  # (document, page) -> that page's chunks


def _file(meta: dict[str, Any]) -> str:
    return str(meta.get("file_name") or meta.get("doc_key") or "")


def _doc(meta: dict[str, Any]) -> str:
    return str(meta.get("doc_key") or meta.get("file_name") or "")


class TurnFigures:
    """The figure check of one turn: ``first`` puts the cells before the evidence, ``check``
    marks the answer. ``chunks_of`` gives a page's chunks (``chunks_in``: the keyword index's
    pages); without it only the sources' own text is read. ``cover_of``: the page naming the
    company a page's figures are of (1 unless the document joins others' pages); ``subjects``:
    what each document is about (``Components.subjects_of``), for one whose first page names
    no company or that has no pages (a web page, a Word file); ``owners``: the names whose
    figures the question asks for (default: every one it asks so)."""

    def __init__(
        self,
        question: str,
        nodes: Sequence[NodeWithScore],
        chunks_of: ChunksOf | None = None,
        cover_of: Callable[[str, int | None], int] | None = None,
        subjects: Mapping[str, str] | None = None,
        owners: Sequence[str] | None = None,
    ) -> None:
        t = time.perf_counter()
        self.question = question
        # whose figures the question asks for ("Apple" of "Apple's revenue"; ``Components.strangers``:
        # those no document is about), checked against the companies of the sources' documents
        self.owners = list(owners) if owners is not None else [n.text for n in question_names(question) if n.owner]
        subjects = subjects or {}
        self._chunks_of: ChunksOf = chunks_of or (lambda key: [])
        self._cover_of = cover_of or (lambda doc, page: 1)
        self._entities: dict[tuple[str, int], str] = {}
        self.passages: list[Passage] = []
        self.page_of: dict[tuple[str, int], Page] = {}
        self._read_as: list[tuple[str, tuple[str, int] | None]] = []  # each passage's context lines, its page
        for i, hit in enumerate(nodes):
            meta = hit.node.metadata or {}
            text = hit.node.get_content()
            context = "\n".join(str(meta["context"]).split(" | ")) + "\n" if meta.get("context") else ""
            page = meta.get("page") if isinstance(meta.get("page"), int) else None
            entity = self._entity(_doc(meta), page) or subjects.get(_doc(meta)) or subjects.get(hit.node.node_id, "")
            self.passages.append(Passage(i + 1, context + text, _file(meta), page, entity))
            key = (_doc(meta), page) if page is not None else None
            self._read_as.append((context, key))
            if key is not None and key not in self.page_of:
                chunks = self._chunks_of(key) or [hit.node]
                whole = page_text([(getattr(c, "start_char_idx", None), c.get_content()) for c in chunks])
                whole = blank_instructions(whole)  # no cell is read from text addressing an assistant
                self.page_of[key] = Page(whole, _file(meta), page, entity)
        self.cells: list[CellMatch | None] = []
        try:
            self.cells = find_cells(question, list(self.page_of.values())) if self.page_of else []
        except Exception:  # a page the table reader trips on: the answer goes on without its cells
            logger.exception("finding the asked cells failed")
        self.seconds = time.perf_counter() - t

    def _entity(self, doc: str, page: int | None) -> str:
        """The company a document is about, from its first page ("" when it has none indexed);
        in a document joining others' pages, from its section's first page (``cover_of``)."""
        key = (doc, self._cover_of(doc, page))
        if key not in self._entities:
            first = self._chunks_of(key)
            text = page_text([(getattr(c, "start_char_idx", None), c.get_content()) for c in first]) if first else ""
            self._entities[key] = document_entity(text) if text else ""
        return self._entities[key]

    def first(self, evidence: list[Evidence]) -> list[Evidence]:
        """``evidence`` with each sure cell in front of it, numbered as the first source from
        its page (so the answer cites it as that page), its words unfenced like the rest."""
        out: list[Evidence] = []
        for cell in sure_cells(self.cells):
            number = next(
                (p.number for p in self.passages if p.file == cell.page.file and p.page == cell.page.page), None
            )
            if number is None:
                continue
            line = f"{unfence(cell.describe())} ({STRUCTURE_NOTE})"
            out.append(Evidence(number, unfence(cell.page.file), cell.page.page, None, [line]))
        return out + evidence

    def trust(self, number: int, text: str) -> None:
        """Text Docent wrote for the model from the sources (a measure computed from the
        statements' figures, ``chat.computed``) counts as a source of ``number``: a figure the
        answer takes from it is as supported as the cells it was computed from. The question
        then asks for that measure, not for a cell: the cells its words name (its operands) are
        no reading of the answer's figure to mark it by, nor to show as what "the table says"."""
        self.cells = []
        base = next((p for p in self.passages if p.number == number), None)
        file, page, entity = (base.file, base.page, base.entity) if base else ("", None, "")
        self.passages.append(Passage(number, text, file, page, entity))
        self._read_as.append(("", None))

    def check(self, answer: str) -> Verified:
        """``answer`` checked: its figures against the sources and the cells (the cells' pages
        count among the sources, as the source of their page's number)."""
        t = time.perf_counter()
        # each passage read within its whole page: a table's header, its units and its caption
        # tell its cells apart, where the passage holds rows a chunk boundary cut them from
        passages = [
            replace(p, text=context + self.page_of[key].text, cited=p.text) if key in self.page_of else p
            for p, (context, key) in zip(self.passages, self._read_as, strict=True)
        ]
        for cell in sure_cells(self.cells):
            number = next((p.number for p in passages if p.file == cell.page.file and p.page == cell.page.page), None)
            if number is not None:
                passages.append(Passage(number, cell.page.text, cell.page.file, cell.page.page, cell.page.entity))
        try:
            verified = verify_answer(answer, self.question, passages, self.cells, owners=self.owners)
        except Exception:  # the answer is kept as written, unchecked, rather than lost
            logger.exception("checking the answer's figures failed")
            verified = Verified(answer, CheckReport(), "")
        self.seconds += time.perf_counter() - t
        return verified

    def fields(self, verified: Verified) -> dict[str, Any]:
        """What the turn reports and stores: the counts, and the check's time in seconds."""
        return {
            "figures_checked": verified.figures_checked,
            "figures_unsupported": verified.figures_unsupported,
            "figures_s": round(self.seconds, 3),
        }


def chunks_in(bm25: BM25) -> ChunksOf:
    """A page's chunks as the keyword index holds them (``BM25.page_nodes``)."""
    return lambda key: [bm25.nodes[i] for i in bm25.page_nodes.get(key, ())]
