"""Hybrid retrieval: vector search over Chroma fused with BM25 keyword search (in the database).

The retriever composes the steps of one search: the ranked lists of the question and of
its extra queries (phrasings, its conversation), their fusion (``fusion``: reciprocal rank,
with a list of the best pages and one of the best documents), the relevance signals, one
retry of a weak search, the relevance gate, routing by name (``routing``) and neighbour
windows (``windows``). For CJK questions the English-only vectors are weighted down. Each
step past plain fusion is a switch (``RetrievalSettings``); docs/evaluation.md has what
each one measured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag_core.entities import Entities, EntityIndex, Scope, decide
from rag_core.index import VectorIndex
from rag_core.retrieval.dates import asks_latest, latest_documents
from rag_core.retrieval.fusion import Fused, RankedList, by_document, fuse
from rag_core.retrieval.keywords import KeywordCache, doc_of
from rag_core.retrieval.lists import QueryLists
from rag_core.retrieval.look import one_subject, second_look, spans_pages
from rag_core.retrieval.pages import names_line_item, statement_list
from rag_core.retrieval.queries import ConversationQueries, query_variants
from rag_core.retrieval.reports import library_report, within_reports
from rag_core.retrieval.result import Retrieval
from rag_core.retrieval.routing import interleave, route_by_name
from rag_core.retrieval.spans import Spans
from rag_core.retrieval.windows import finish_lines, widen
from rag_core.settings import RetrievalSettings
from rag_core.text import is_cjk, spelled_out

# The vector similarity mapped onto the coverage scale for the relevance signal: VECTOR_FLOOR
# (typical of unrelated text in the same language with MiniLM) is 0, VECTOR_FLOOR +
# VECTOR_SPAN is 1. Fitted on the evaluation sets: docs/evaluation.md, "The relevance gate".
VECTOR_FLOOR, VECTOR_SPAN = 0.45, 0.5


def relevance_score(vector_top: float, coverage: float, vector_trust: float = 1.0) -> float:
    """One number (0..1) for the gate and the retry: the better of the lexical coverage and
    the rescaled vector similarity. ``vector_trust`` scales the vector part down where the
    embedding cannot judge (CJK text with the English-only default model)."""
    vector_part = min(1.0, max(0.0, (vector_top - VECTOR_FLOOR) / VECTOR_SPAN))
    return max(coverage, vector_trust * vector_part)


class HybridRetriever(BaseRetriever):
    """Vector (Chroma) + BM25, fused by reciprocal rank, or vectors alone; with optional
    query variants, one retry when the first search looks weak, a relevance gate, routing
    by name and neighbour windows (see ``RetrievalSettings`` for each switch).

    ``search`` returns the passages with their per-list scores and what happened (a
    ``Retrieval``); LlamaIndex's ``retrieve`` the passages alone. Nothing is kept between searches."""

    def __init__(
        self,
        index: VectorIndex,
        keywords: KeywordCache,
        settings: RetrievalSettings,
        *,
        names: list[str] | None = None,
        top_k: int | None = None,
        multilingual: bool = False,
        llm_factory: Callable[[], Any] | None = None,
        entities: EntityIndex | None = None,
        spans: Spans | None = None,
        sections: Entities | None = None,
    ) -> None:
        super().__init__()
        self.index = index
        self.entities = entities  # what each document is about (``entity_scope``)
        self.spans = spans  # only these pages of ``names`` are searched
        self.sections = sections  # the units known to the search this one is part of
        self.keywords = keywords
        self.settings = settings
        self.names = names
        self.top_k = top_k or settings.top_k
        # A multilingual embedding reads CJK questions: its vectors always vote in full.
        self.cjk_vector_weight = 1.0 if multilingual else settings.cjk_vector_weight
        self.llm_factory = llm_factory
        self.lists = QueryLists(index, keywords, settings, names, spans, self.cjk_vector_weight)

    def _keep(self) -> Callable[[tuple[str, int]], bool] | None:
        return self.lists.keep()

    # ------------------------------------------------------------------ fusion
    def _rank(self, query: str, lists: list[RankedList]) -> Fused:
        """Fuse the lists; with ``page_weight``, first add a list of the chunks of the pages
        that best match the question as a whole (a statement's page holds "operating
        expenses" in its title, rows and columns, not in any one chunk); with
        ``document_weight``, fuse once more with the candidates ordered by how much of the
        question their whole document holds (``fusion.by_document``)."""
        s = self.settings
        if s.retrieval_mode == "vector":
            return fuse(lists)
        bm = self.keywords.get(self.names)
        if s.page_weight > 0 and bm.page_keys:
            pages = bm.search_pages(query, max(self.top_k, 5), self._keep())
            page_list = [
                NodeWithScore(node=bm.nodes[i], score=score) for key, score in pages for i in bm.page_nodes[key]
            ]
            lists = [*lists, ("page_score", s.page_weight, page_list)]
        # The statement pages and "the latest report" weigh every document: scored only when
        # the question names a line item or asks for the latest (a library of thousands of
        # documents is not scored whole for every question).
        every_doc: dict[str, float] = {}

        def doc_scores_all() -> dict[str, float]:
            if not every_doc:
                every_doc.update(
                    latest_documents(query, bm, doc_of, bm.doc_scores(query, s.name_weight), s.latest_weight)
                )
            return every_doc

        if s.latest_weight > 0 and asks_latest(query):
            doc_scores_all()
        if s.statement_weight > 0:
            statements = statement_list(query, bm, doc_of, doc_scores_all, sections=self._sections(), keep=self._keep())
            if statements:
                lists = [*lists, ("statement_score", s.statement_weight, statements)]
        doc_scores = every_doc or None
        fused = fuse(lists)
        weight = s.document_weight
        if weight <= 0 or not fused.ranked:
            return fused
        if doc_scores is None:  # only the candidates' documents (an index of many documents)
            candidates = {doc_of(hit.node) for hit in fused.by_id.values()}
            doc_scores = bm.doc_scores(query, s.name_weight, docs=candidates)
        docs = by_document(fused, doc_scores, doc_of, bm.doc_chunks)
        return fuse([*lists, ("document_score", weight, docs)])

    # ------------------------------------------------------------------ signals
    def relevance(self, query: str, lists: list[RankedList], fused: Fused) -> dict[str, float]:
        """How well the best passages match the query: the top cosine similarity of the
        query's own vector search, and the idf-weighted share of the query's terms that the
        best of the top three passages contains (terms absent from every document weigh most)."""
        vec: list[NodeWithScore] = next((hits for name, _, hits in lists if name == "vector_score"), [])
        vector_top = max((float(h.score or 0.0) for h in vec), default=0.0)
        bm = self.keywords.get(self.names)
        coverage = max(
            (bm.coverage(query, fused.by_id[nid].node.get_content()) for nid, _ in fused.ranked[:3]), default=0.0
        )
        trust = self.cjk_vector_weight if is_cjk(query) else 1.0
        return {
            "vector_top": round(vector_top, 4),
            "coverage": round(coverage, 4),
            "relevance": round(relevance_score(vector_top, coverage, trust), 4),
        }

    # ------------------------------------------------------------------ search
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.search(query_bundle.query_str).hits

    def search(self, query: str, conversation: ConversationQueries | None = None) -> Retrieval:
        """Search ``query``; ``conversation``: a follow-up's conversation, searched with it
        (``history_search``). With ``page_look``, for a question naming a line item (some
        page's labels hold it; not CJK) and one thing at most, whose passages span pages, the
        model's second look at the candidate pages (``look``). One view of the index throughout."""
        with self.index.one_view():
            return self._look(query, conversation, self._search(query, conversation))

    def _look(self, query: str, conversation: ConversationQueries | None, found: Retrieval) -> Retrieval:
        s, bm = self.settings, self.keywords.get(self.names)
        if not (
            s.page_look > 1
            and self.llm_factory is not None
            and s.retrieval_mode != "vector"
            and spans_pages(found.hits)
            and one_subject(found.stats)
            and not is_cjk(query)
            and names_line_item(query, bm, doc_of, self._sections())
        ):
            return found
        wide = HybridRetriever(
            self.index,
            self.keywords,
            s.model_copy(update={"page_look": 0}),
            names=self.names,
            top_k=max(self.top_k, 3 * s.page_look),
            multilingual=self.cjk_vector_weight == 1.0,
            llm_factory=self.llm_factory,
            entities=self.entities,
            spans=self.spans,
            sections=self.sections,
        )
        candidates = wide.search(query, conversation).hits
        texts = lambda key: [bm.nodes[i].get_content() for i in bm.page_nodes.get(key, [])]  # noqa: E731
        return second_look(query, found, candidates, texts, self.llm_factory(), self.top_k, s.page_look)

    def _search(self, query: str, conversation: ConversationQueries | None) -> Retrieval:
        scope = self._scope(query, conversation)
        if scope is not None and scope.refused:
            return Retrieval([], {}, {**scope.stats(), "gated": True})
        s = self.settings
        pool = max(self.top_k * 3, 10) * (len(scope.routes) if scope else 1)  # candidates enough for each
        lists = self.lists.of(spelled_out(query), 1.0, pool)  # "net PP&E" searched as filings write it too
        stats: dict[str, Any] = {}
        variants = query_variants(query, s.multi_query, self.llm_factory) if s.multi_query != "off" else []
        for v in variants:
            lists += self.lists.of(v, 1.0, pool)
        context = conversation.queries(query) if conversation else []
        for v in context:
            lists += self.lists.of(v, 1.0, pool)
        fused = self._rank(query, lists)
        signals = self.relevance(query, lists, fused)
        if s.retry_weak != "off" and signals["relevance"] < s.retry_threshold:
            retry = [v for v in query_variants(query, s.retry_weak, self.llm_factory, retry=True) if v not in variants]
            if retry:
                for v in retry:
                    lists += self.lists.of(v, 1.0, pool)
                fused = self._rank(query, lists)
                signals = self.relevance(query, lists, fused)
                stats["retried"] = retry
        stats.update(signals)
        if variants:
            stats["variants"] = variants
        if context:
            stats["conversation"] = context
        stats["vector_hits"] = sum(len(h) for n, _, h in lists if n == "vector_score")
        stats["keyword_hits"] = sum(len(h) for n, _, h in lists if n == "keyword_score")
        if s.relevance_gate and signals["relevance"] < s.gate_threshold:
            stats["gated"] = True
            return Retrieval([], {}, stats)
        if scope is not None:
            return self._within(scope, fused, stats, query, conversation)
        narrow = s.report_scope and not self.spans and s.retrieval_mode != "vector"  # to one report it names
        report = library_report(query, self.keywords.get(self.names)) if narrow else None
        if report is not None:
            sub = self._search_in(report, query, conversation)
            return Retrieval(sub.hits, sub.extras, {**stats, "report": report})
        hits = self._select(fused, stats)
        if s.name_gate and hits and s.retrieval_mode != "vector" and not is_cjk(query):
            said, routed = route_by_name(
                query,
                hits,
                self.keywords.get(self.names),
                self.top_k,
                lambda names: self._search_in(names, query, conversation),
            )
            stats.update(said)
            if routed is not None:
                return Retrieval(routed.hits, routed.extras, stats)
        return Retrieval(hits, {h.node.node_id: fused.extras[h.node.node_id] for h in hits}, stats)

    def _scope(self, query: str, conversation: ConversationQueries | None) -> Scope | None:
        """Which documents the question's names are about (``entity_scope``:
        ``rag_core.entities.scope``); None when the names decide nothing."""
        if self.entities is None or not self.settings.entity_scope or is_cjk(query):
            return None
        return decide(
            self.entities.current(),
            self.keywords.get(self.names),
            query,
            typed=conversation.typed if conversation else None,
            previous=conversation.previous if conversation else (),
            allowed=self.names,
        )

    def _within(
        self, scope: Scope, fused: Fused, stats: dict[str, Any], query: str, conversation: ConversationQueries | None
    ) -> Retrieval:
        """The passages of the documents the question's names are about: one thing named, in
        the order the search ranked them (other documents' passages dropped; too few of its own
        among the candidates topped up from a search in its documents); several, each also
        searched in its own documents (the two rankings interleaved), then all interleaved.
        A route to sections of a document that joins others' pages is always searched inside
        them too: among the whole document's candidates its pages are a few by chance. A
        question naming one report of a company's several keeps that one (``reports``)."""
        per_route: list[list[NodeWithScore]] = []
        extras = dict(fused.extras)
        known = self._sections()

        def unit_of(node: Any) -> str:
            doc = doc_of(node)
            return known.section_of(doc, (node.metadata or {}).get("page"))[0] if known is not None else doc

        routes = scope.routes
        if self.settings.report_scope:
            document = known.document if known is not None else str
            routes = within_reports(query, routes, document, self.keywords.get(self.names))
        for _, docs in routes:
            keep = set(docs)
            ranked = [(nid, score) for nid, score in fused.ranked if unit_of(fused.by_id[nid].node) in keep]
            hits = self._select(Fused(ranked, fused.by_id, fused.extras), stats)
            partial = known is not None and any(known.pages(u) for u in keep)
            if len(scope.routes) > 1 or partial:  # and searched in its own documents: both rankings count
                sub = self._search_in(sorted(keep), query, conversation)
                hits = interleave([hits, sub.hits], self.top_k)
                extras.update(sub.extras)
            elif len(hits) < self.top_k:
                sub = self._search_in(sorted(keep), query, conversation)
                seen = {h.node.node_id for h in hits}
                hits += [h for h in sub.hits if h.node.node_id not in seen][: self.top_k - len(hits)]
                extras.update(sub.extras)
            per_route.append(hits)
        hits = interleave(per_route, self.top_k)
        return Retrieval(
            hits, {h.node.node_id: extras.get(h.node.node_id, {}) for h in hits}, {**stats, **scope.stats()}
        )

    def _search_in(self, names: list[str], query: str, conversation: ConversationQueries | None) -> Retrieval:
        """``query`` searched in the documents ``names`` alone (or the sections: ``Entities``
        units), not routed again."""
        known = self._sections()
        spans: Spans = {}
        for name in names:
            doc = known.document(name) if known is not None else name
            pages = known.pages(name) if known is not None else None
            if pages is None:
                spans[doc] = []  # the whole document
            elif doc not in spans or spans[doc]:
                spans.setdefault(doc, []).append(pages)
        sub = HybridRetriever(
            self.index,
            self.keywords,
            self.settings.model_copy(update={"name_gate": False, "page_look": 0}),
            names=sorted(spans),
            top_k=self.top_k,
            multilingual=self.cjk_vector_weight == 1.0,
            llm_factory=self.llm_factory,
            spans=spans if any(spans.values()) else None,
            sections=known,
        )
        return sub.search(query, conversation)

    def _sections(self) -> Entities | None:
        """The units of the documents, when some document has sections (``Entities``)."""
        if self.sections is not None:
            return self.sections
        if self.entities is None or not self.settings.entity_scope:
            return None
        known = self.entities.current()
        return known if known.sectioned() else None

    def _select(self, fused: Fused, stats: dict[str, Any]) -> list[NodeWithScore]:
        """The top_k passages; with neighbour windows, each widened (``windows.widen``)."""
        ranked, by_id = fused.ranked, fused.by_id
        if self.settings.retrieval_mode == "vector" and not {"variants", "retried", "conversation"} & stats.keys():
            # vectors alone: show the cosine similarity, not a rank-fusion score
            ranked = [(nid, float(by_id[nid].score or 0.0)) for nid, _ in ranked]
        window = self.settings.neighbor_window
        bm = self.keywords.get(self.names)
        if window <= 0:
            chosen = [NodeWithScore(node=by_id[nid].node, score=round(score, 4)) for nid, score in ranked[: self.top_k]]
        else:
            chosen = widen(ranked, by_id, bm.by_id, window, self.top_k)
        return finish_lines(chosen, bm.index.nodes_by_id)  # no passage ends inside a line
