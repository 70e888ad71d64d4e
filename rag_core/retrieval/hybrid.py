"""Hybrid retrieval: vector search over Chroma fused with BM25 keyword search.

Results are fused by reciprocal rank (RRF, k=60), with a third list that ranks the
candidates by how much of the question their whole document holds (a 10-Q chunk says
"the Company", its file is Apple's), and, for CJK questions, the English-only vectors
weighted down. Query variants, one retry of a weak search, a relevance gate and
neighbour windows are switches (``RetrievalSettings``); docs/evaluation.md has what each
one measured.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any, cast

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters, VectorStoreQuery

from rag_core.index import VectorIndex
from rag_core.retrieval.keywords import KeywordCache, doc_of
from rag_core.retrieval.queries import ConversationQueries, query_variants
from rag_core.settings import RetrievalSettings
from rag_core.text import is_cjk

RRF_K = 60
ROUTE_MIN_CHUNKS = 3  # chunks per document, on average, for a name to route a search to its documents
RankedList = tuple[str, float, list[NodeWithScore]]  # (score name, weight, hits)

# The vector similarity mapped onto the coverage scale for the relevance signal: VECTOR_FLOOR
# (typical of unrelated text in the same language with MiniLM) is 0, VECTOR_FLOOR +
# VECTOR_SPAN is 1. Fitted on the evaluation sets: docs/evaluation.md, "The relevance gate".
VECTOR_FLOOR, VECTOR_SPAN = 0.45, 0.5


def doc_filter(names: list[str] | None) -> MetadataFilters | None:
    if not names:
        return None
    return MetadataFilters(filters=[MetadataFilter(key="doc_key", value=list(names), operator=FilterOperator.IN)])


def relevance_score(vector_top: float, coverage: float, vector_trust: float = 1.0) -> float:
    """One number (0..1) for the gate and the retry: the better of the lexical coverage and
    the rescaled vector similarity. ``vector_trust`` scales the vector part down where the
    embedding cannot judge (CJK text with the English-only default model)."""
    vector_part = min(1.0, max(0.0, (vector_top - VECTOR_FLOOR) / VECTOR_SPAN))
    return max(coverage, vector_trust * vector_part)


class HybridRetriever(BaseRetriever):
    """Vector (Chroma) + BM25, fused by reciprocal rank, or vectors alone; with optional
    query variants, one retry when the first search looks weak, a relevance gate and
    neighbour windows (see ``RetrievalSettings`` for each switch).

    The fused score is scaled so that rank 1 in every list is 1.0; the per-list scores
    of the last call are in ``last_extras`` (by node id) for the sources display, and
    what happened (signals, variants, retry, gate) in ``last_stats``.
    """

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
    ) -> None:
        super().__init__()
        self.index = index
        self.keywords = keywords
        self.settings = settings
        self.names = names
        self.top_k = top_k or settings.top_k
        # A multilingual embedding reads CJK questions: its vectors always vote in full.
        self.cjk_vector_weight = 1.0 if multilingual else settings.cjk_vector_weight
        self.llm_factory = llm_factory
        self.conversation: ConversationQueries | None = None  # set per follow-up (history_search)
        self.last_stats: dict[str, Any] = {}
        self.last_extras: dict[str, dict[str, float]] = {}

    # ------------------------------------------------------------------ single searches
    def _vector(self, query: str, k: int) -> list[NodeWithScore]:
        if self.index.collection.count() == 0:
            return []
        embedding = self.index.embed_model.get_query_embedding(query)
        result = self.index.vector_store.query(
            VectorStoreQuery(query_embedding=embedding, similarity_top_k=k, filters=doc_filter(self.names))
        )
        cutoff = self.settings.similarity_cutoff
        hits = []
        for node, score in zip(result.nodes or [], result.similarities or [], strict=False):
            if cutoff and score < cutoff:
                continue
            hits.append(NodeWithScore(node=node, score=float(score)))
        return hits

    def _keyword(self, query: str, k: int) -> list[NodeWithScore]:
        bm = self.keywords.get(self.names)
        return [NodeWithScore(node=bm.nodes[i], score=s) for i, s in bm.search(query, k)]

    def _lists(self, query: str, weight: float, pool: int) -> list[RankedList]:
        """The ranked lists one query contributes to the fusion, each with its weight."""
        hybrid = self.settings.retrieval_mode != "vector"
        cjk = hybrid and is_cjk(query)  # vectors alone: nothing to shift to
        vec_weight = weight * (self.cjk_vector_weight if cjk else 1.0)
        out: list[RankedList] = [("vector_score", vec_weight, self._vector(query, pool))]
        if hybrid:
            out.append(("keyword_score", weight, self._keyword(query, pool)))
        return out

    # ------------------------------------------------------------------ fusion
    @staticmethod
    def _fuse(lists: list[RankedList]):
        """Weighted reciprocal-rank fusion; ties (rank 1 + rank 2 vs rank 2 + rank 1) broken
        by relative score. Returns the ranking, the nodes by id, and per-list scores."""
        fused: dict[str, float] = defaultdict(float)
        by_id: dict[str, NodeWithScore] = {}
        extras: dict[str, dict[str, float]] = defaultdict(dict)
        for name, weight, hits in lists:
            if weight <= 0:
                continue
            top = max((float(h.score or 0.0) for h in hits), default=0.0) or 1.0
            for rank, hit in enumerate(hits):
                nid = hit.node.node_id
                fused[nid] += weight * (1.0 / (RRF_K + rank + 1) + 1e-5 * float(hit.score or 0.0) / top)
                extras[nid].setdefault(name, round(float(hit.score or 0.0), 4))
                by_id.setdefault(nid, hit)
        best = sum(w for _, w, _ in lists if w > 0) / (RRF_K + 1) or 1.0
        ranked = [(nid, score / best) for nid, score in sorted(fused.items(), key=lambda x: (-x[1], x[0]))]
        return ranked, by_id, extras

    def _rank(self, query: str, lists: list[RankedList]):
        """Fuse the lists; with ``page_weight``, first add a list of the chunks of the pages
        that best match the question as a whole (a statement's page holds "operating
        expenses" in its title, rows and columns, not in any one chunk); with
        ``document_weight``, fuse once more with the candidates ordered by how much of the
        question their whole document holds (``BM25.doc_scores``; chunks of one document in
        fused order): a chunk that says "the Company" ranks up when its file is Apple's 10-Q
        and the question names Apple."""
        s = self.settings
        if s.retrieval_mode == "vector":
            return self._fuse(lists)
        bm = self.keywords.get(self.names)
        if s.page_weight > 0 and bm.page_keys:
            pages = bm.search_pages(query, max(self.top_k, 5))
            page_list = [
                NodeWithScore(node=bm.nodes[i], score=score) for key, score in pages for i in bm.page_nodes[key]
            ]
            lists = [*lists, ("page_score", s.page_weight, page_list)]
        ranked, by_id, extras = self._fuse(lists)
        weight = s.document_weight
        if weight <= 0 or not ranked:
            return ranked, by_id, extras
        scores = bm.doc_scores(query, s.name_weight)
        nodes = [by_id[nid].node for nid, _ in ranked]
        doc_score = [scores.get(doc_of(node), 0.0) for node in nodes]
        # A one-chunk document says nothing its chunk doesn't: such chunks keep their place,
        # and only the places held by chunks of longer documents are reordered.
        movable = [i for i, node in enumerate(nodes) if bm.doc_chunks[doc_of(node)] > 1]
        order = list(range(len(nodes)))
        for slot, i in zip(movable, sorted(movable, key=lambda i: (-doc_score[i], i)), strict=True):
            order[slot] = i
        docs = [NodeWithScore(node=nodes[i], score=doc_score[i]) for i in order]
        return self._fuse([*lists, ("document_score", weight, docs)])

    # ------------------------------------------------------------------ signals
    def relevance(self, query: str, lists, ranked, by_id) -> dict[str, float]:
        """How well the best passages match the query: the top cosine similarity of the
        query's own vector search, and the idf-weighted share of the query's terms that the
        best of the top three passages contains (terms absent from every document weigh most)."""
        vec: list[NodeWithScore] = next((hits for name, _, hits in lists if name == "vector_score"), [])
        vector_top = max((float(h.score or 0.0) for h in vec), default=0.0)
        bm = self.keywords.get(self.names)
        coverage = max((bm.coverage(query, by_id[nid].node.get_content()) for nid, _ in ranked[:3]), default=0.0)
        trust = self.cjk_vector_weight if is_cjk(query) else 1.0
        return {
            "vector_top": round(vector_top, 4),
            "coverage": round(coverage, 4),
            "relevance": round(relevance_score(vector_top, coverage, trust), 4),
        }

    # ------------------------------------------------------------------ retrieve
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        s = self.settings
        query = query_bundle.query_str

        pool = max(self.top_k * 3, 10)
        lists = self._lists(query, 1.0, pool)
        stats: dict[str, Any] = {}
        variants = query_variants(query, s.multi_query, self.llm_factory) if s.multi_query != "off" else []
        for v in variants:
            lists += self._lists(v, 1.0, pool)
        context = self.conversation.queries(query) if self.conversation else []
        for v in context:
            lists += self._lists(v, 1.0, pool)
        ranked, by_id, extras = self._rank(query, lists)
        signals = self.relevance(query, lists, ranked, by_id)
        if s.retry_weak != "off" and signals["relevance"] < s.retry_threshold:
            retry = [v for v in query_variants(query, s.retry_weak, self.llm_factory, retry=True) if v not in variants]
            if retry:
                for v in retry:
                    lists += self._lists(v, 1.0, pool)
                ranked, by_id, extras = self._rank(query, lists)
                signals = self.relevance(query, lists, ranked, by_id)
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
            self.last_stats, self.last_extras = stats, {}
            return []
        self.last_stats = stats
        hits = self._select(ranked, by_id)
        if s.name_gate and hits and s.retrieval_mode != "vector" and not is_cjk(query):
            routed = self._by_name(query, hits, stats)
            if routed is not None:
                return routed
        self.last_extras = {h.node.node_id: extras[h.node.node_id] for h in hits}
        return hits

    def _by_name(self, query: str, hits: list[NodeWithScore], stats: dict[str, Any]) -> list[NodeWithScore] | None:
        """Names decide which documents answer (knowledge-base routing): a question about two
        names ("NVIDIA's revenue compared with Amazon's") is searched once per name, in the
        documents that name it, the results interleaved; a name no passage found is searched
        for in the documents that name it; a name no document holds at all means there is
        nothing to answer from (``[]``, ``missing_names`` in the stats). None: keep ``hits``."""
        bm = self.keywords.get(self.names)
        names = bm.names_in(query)
        if not names:
            return None
        found = {doc_of(h.node) for h in hits}
        every = set(bm.doc_terms)
        homes = {name: {d for d in every if bm.mentions({d}, terms)} for name, terms in names}
        nowhere = [name for name, docs in homes.items() if not docs]
        if len(nowhere) == len(names):
            stats.update({"gated": True, "missing_names": nowhere})
            self.last_extras = {}
            return []
        if nowhere:
            stats["unmentioned_names"] = nowhere
        # Names that pick documents out: not every document holds them, and those that do are
        # long (a one-chunk document says nothing its chunk doesn't: passages are searched as such).
        routes = [
            (name, docs)
            for name, docs in homes.items()
            if docs and docs != every and sum(bm.doc_chunks[d] for d in docs) >= ROUTE_MIN_CHUNKS * len(docs)
        ]
        unmet = [(name, docs) for name, docs in routes if not docs & found]
        if len(routes) < 2 and not unmet:
            return None
        chosen = routes if len(routes) >= 2 else unmet
        per_name = []
        self.last_extras = {}
        for _name, docs in chosen:
            sub = HybridRetriever(
                self.index,
                self.keywords,
                self.settings.model_copy(update={"name_gate": False}),
                names=sorted(docs),
                top_k=self.top_k,
                multilingual=self.cjk_vector_weight == 1.0,
                llm_factory=self.llm_factory,
            )
            sub.conversation = self.conversation
            per_name.append(sub.retrieve(query))
            self.last_extras.update(sub.last_extras)
        stats["routed"] = [name for name, _ in chosen]
        merged: list[NodeWithScore] = []
        seen: set[str] = set()
        for rank in range(self.top_k):
            for results in per_name:
                if rank < len(results) and results[rank].node.node_id not in seen and len(merged) < self.top_k:
                    seen.add(results[rank].node.node_id)
                    merged.append(results[rank])
        self.last_stats = stats
        return merged

    def _select(self, ranked: list[tuple[str, float]], by_id: dict[str, NodeWithScore]) -> list[NodeWithScore]:
        """The top_k passages; with neighbour windows, each widened by its neighbouring
        chunks of the same page, and a passage already inside an earlier window skipped."""
        fused = {"variants", "retried", "conversation"} & self.last_stats.keys()
        if self.settings.retrieval_mode == "vector" and not fused:
            # vectors alone: show the cosine similarity, not a rank-fusion score
            ranked = [(nid, float(by_id[nid].score or 0.0)) for nid, _ in ranked]
        window = self.settings.neighbor_window
        if window <= 0:
            return [NodeWithScore(node=by_id[nid].node, score=round(score, 4)) for nid, score in ranked[: self.top_k]]
        bm = self.keywords.get(self.names)
        covered: set[str] = set()
        out: list[NodeWithScore] = []
        for nid, score in ranked:
            if len(out) >= self.top_k:
                break
            if nid in covered:
                continue
            nodes = neighbours(by_id[nid].node, bm.by_id, window)
            covered.update(n.node_id for n in nodes)
            node = cast(TextNode, by_id[nid].node.model_copy())
            node.text = merge_texts([n.get_content() for n in nodes])
            out.append(NodeWithScore(node=node, score=round(score, 4)))
        return out


def neighbours(node: Any, by_id: dict[str, TextNode], window: int) -> list[TextNode]:
    """``node`` with up to ``window`` chunks before and after it from the same page/section,
    in reading order (the splitter links a page's chunks as previous/next)."""
    before: list[TextNode] = []
    after: list[TextNode] = []
    for rel, acc in ((NodeRelationship.PREVIOUS, before), (NodeRelationship.NEXT, after)):
        current = node
        for _ in range(window):
            info = current.relationships.get(rel)
            nxt = by_id.get(info.node_id) if info is not None else None
            if nxt is None:
                break
            acc.append(nxt)
            current = nxt
    return [*reversed(before), node, *after]


def merge_texts(texts: list[str]) -> str:
    """Join consecutive chunks, dropping the overlap the splitter repeats between them."""
    out = ""
    for text in texts:
        if not out:
            out = text
            continue
        overlap = 0
        for size in range(min(len(out), len(text), 2000), 15, -1):
            if out.endswith(text[:size]):
                overlap = size
                break
        out = out + (text[overlap:] if overlap else ("\n" + text))
    return out
