"""Retrieval: vector search over Chroma fused with BM25 keyword search.

The default embedding (MiniLM) is English-only and truncates at 256 word pieces, so
keyword search carries names, figures and Chinese text. The BM25 index is built from
the chunks stored in Chroma and rebuilt only when the index changes. Tokens are
lower-cased words plus character bigrams for CJK runs, which needs no dictionary.
Results are fused by reciprocal rank (RRF, k=60), with a third list that ranks the
candidates by how much of the question their whole document holds (a 10-Q chunk says
"the Company", its file is Apple's), and, for CJK questions, the English-only vectors
weighted down. Query variants, one retry of a weak search, a relevance gate and
neighbour windows are switches; docs/evaluation.md has what each one measured.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from rag_core.index import VectorIndex

logger = logging.getLogger(__name__)

_LATIN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*", re.IGNORECASE)
CJK_RANGES = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"  # kana, CJK ideographs, hangul
_CJK = re.compile(f"[{CJK_RANGES}]+")
_STOP = frozenset(
    "a an the of to in on for and or is are was were be been it its this that these those what which who whom "
    "how why when where do does did can could would should will shall may might with by from as at about into "
    "than then there their they them he she his her you your we our i me my not no yes".split()
)
RRF_K = 60


def tokenize(text: str) -> list[str]:
    """Latin words (no stop words) and CJK character bigrams (and single characters)."""
    text = text.lower()
    tokens = [_stem(w) for w in _LATIN.findall(text) if w not in _STOP]
    for run in _CJK.findall(text):
        tokens.extend(run)
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def _stem(word: str) -> str:
    """Plural/third-person 's' only: 'delivers' matches 'deliver', 'pumps' matches 'pump'."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and not word[0].isdigit():
        return word[:-1]
    return word


class BM25:
    """A small Okapi BM25 over a fixed list of nodes."""

    def __init__(self, nodes: list[TextNode], k1: float = 1.2, b: float = 0.75) -> None:
        self.nodes = nodes
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for i, node in enumerate(nodes):
            counts = Counter(tokenize(node.get_content()))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((i, tf))
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        self.by_id: dict[str, TextNode] = {node.node_id: node for node in nodes}
        # Per document: every term of its chunks and of its file name ("2023 Q1 NVDA.pdf").
        self.doc_terms: dict[str, set[str]] = defaultdict(set)
        for node in nodes:
            key = doc_of(node)
            if key not in self.doc_terms:
                self.doc_terms[key].update(tokenize(str(node.metadata.get("file_name") or key)))
        for term, plist in self.postings.items():
            for i, _ in plist:
                self.doc_terms[doc_of(nodes[i])].add(term)
        self.doc_df: Counter[str] = Counter(t for terms in self.doc_terms.values() for t in terms)
        self.doc_chunks: Counter[str] = Counter(doc_of(node) for node in nodes)

    def idf(self, term: str) -> float:
        """Inverse document frequency; a term found nowhere gets the highest value."""
        n = len(self.nodes)
        df = len(self.postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def coverage(self, query: str, text: str) -> float:
        """Share of the query's terms, weighted by idf, that ``text`` contains."""
        terms = query_terms(query)
        if not terms:
            return 0.0
        have = set(tokenize(text))
        weights = {t: self.idf(t) for t in terms}
        total = sum(weights.values()) or 1.0
        return sum(w for t, w in weights.items() if t in have) / total

    def doc_scores(self, query: str) -> dict[str, float]:
        """Per document, the idf-weighted share (idf over documents) of the query's terms
        found anywhere in it or in its file name: which documents the question is about."""
        terms = query_terms(query)
        n = len(self.doc_terms)
        if not terms or not n:
            return {}
        weights = {t: math.log(1 + (n - self.doc_df[t] + 0.5) / (self.doc_df[t] + 0.5)) for t in terms}
        total = sum(weights.values()) or 1.0
        return {doc: sum(w for t, w in weights.items() if t in have) / total for doc, have in self.doc_terms.items()}

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        n = len(self.nodes)
        scores: dict[int, float] = defaultdict(float)
        for term in set(tokenize(query)):
            plist = self.postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for i, tf in plist:
                denom = tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.avg or 1))
                scores[i] += idf * tf * (self.k1 + 1) / denom
        return sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]


class KeywordCache:
    """BM25 indexes keyed by the index version and the document filter."""

    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._cache: dict[Any, BM25] = {}

    def get(self, names: list[str] | None) -> BM25:
        key = (self.index.version, tuple(sorted(names)) if names else None)
        with self._lock:
            bm = self._cache.get(key)
            if bm is None:
                self._cache = {k: v for k, v in self._cache.items() if k[0] == key[0]}
                bm = BM25(self.index.all_nodes(names))
                self._cache[key] = bm
            return bm


def doc_of(node: Any) -> str:
    meta = node.metadata or {}
    return str(meta.get("doc_key") or meta.get("file_name") or "")


def doc_filter(names: list[str] | None) -> MetadataFilters | None:
    if not names:
        return None
    return MetadataFilters(filters=[MetadataFilter(key="doc_key", value=list(names), operator=FilterOperator.IN)])


def query_terms(text: str) -> set[str]:
    """Terms that say what a query is about: content words, and CJK bigrams (single
    characters only for one-character runs, since most single characters are common)."""
    text = text.lower()
    terms = {_stem(w) for w in _LATIN.findall(text) if w not in _STOP and w not in _QUESTION_WORDS}
    for run in _CJK.findall(text):
        if len(run) == 1:
            terms.add(run)
        else:
            terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return terms


# Words that say a sentence is a question or a request, not what it is about.
_QUESTION_WORDS = frozenset(
    "tell know explain describe please give show find list mean means meant more much many any some also "
    "just really ok okay interesting thanks thank great wow".split()
)
_CJK_SHARE = 0.3  # a query with more CJK characters than this is treated as CJK


def cjk_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(len(r) for r in _CJK.findall(text)) / len(chars) if chars else 0.0


def keyword_query(text: str) -> str:
    """The query's content terms in their original order: a rule-based rephrasing."""
    words = [w for w in _LATIN.findall(text) if w.lower() not in _STOP and w.lower() not in _QUESTION_WORDS]
    runs = _CJK.findall(text)
    return " ".join(words + runs)


def focus_sentence(text: str) -> str:
    """The last sentence that asks something ("Interesting. What about X?" → "What about X?")."""
    parts = [p.strip() for p in re.split(r"(?<=[.!?。！？])\s*", text) if p.strip()]
    asking = [p for p in parts if p.endswith(("?", "？"))]
    return (asking or parts or [text])[-1]


MULTI_QUERY_PROMPT = """Write {n} different search queries that would find the passage answering the question below.
Use other words than the question where you can, keep names and numbers, and write in the language of the question.
Write one query per line and nothing else.

Question: {question}
Queries:"""

RETRY_PROMPT = """A search with the question below found nothing relevant. Rewrite it as one short search query \
that names the subject explicitly, in the language of the question. Write only the query.

Question: {question}
Query:"""


def parse_queries(text: str, question: str, n: int) -> list[str]:
    """Lines of an LLM's answer as queries: numbering, bullets and quotes removed; no repeats."""
    out: list[str] = []
    for line in (text or "").splitlines():
        line = re.sub(r"^\s*(?:\d+[.)]|[-*•])\s*", "", line).strip().strip("\"“”'`").strip()
        line = re.sub(r"^(query|queries)\s*\d*\s*[:：]\s*", "", line, flags=re.I).strip()
        if line and line.lower() != question.lower() and line not in out and len(line) < 300:
            out.append(line)
    return out[:n]


_UNIT = re.compile(f"[{CJK_RANGES}]|[^\\s{CJK_RANGES}]+")  # a CJK character, or a run of other non-space
ANSWER_WORDS = 30  # how much of the last answer a follow-up is searched with
EARLIER_QUESTIONS = 1  # how many earlier questions (2 and 3 measured worse)


def head_words(text: str, n: int) -> str:
    """The start of ``text``: ``n`` words, a CJK character counting as one."""
    end = 0
    for i, m in enumerate(_UNIT.finditer(text or "")):
        if i >= n:
            break
        end = m.end()
    return (text or "")[:end]


class ConversationQueries:
    """What a follow-up's conversation adds to its search (``history_search``).

    A rewrite by a small model misses often (it resolves "it" to the conversation's topic
    rather than to the entity of the last answer, or leaves "they" in place). Two more
    searches are fused with the rewrite's: the start of the last answer followed by the
    rewrite (the entity just talked about), and the previous question followed by the
    question as typed (the topic). On CAsT this took condensed recall@5 from 0.72 to 0.825
    of 200 turns; docs/evaluation.md has the measurements.
    """

    def __init__(self, question: str, history: list[tuple[str, str]]) -> None:
        answers = [text for role, text in history if role == "assistant" and text]
        questions = [text for role, text in history if role == "user" and text]
        self.answer_head = head_words(answers[-1], ANSWER_WORDS) if answers else ""
        earlier = questions[-EARLIER_QUESTIONS:]
        self.earlier = " ".join([*earlier, question]) if earlier else ""

    def __bool__(self) -> bool:
        return bool(self.answer_head or self.earlier)

    def queries(self, query: str) -> list[str]:
        """The extra searches for ``query`` (the rewrite actually searched)."""
        out = []
        if self.answer_head:
            out.append(f"{self.answer_head} {query}")
        if self.earlier and self.earlier != query:
            out.append(self.earlier)
        return out


class HybridRetriever(BaseRetriever):
    """Vector (Chroma) + BM25, fused by reciprocal rank, or vectors alone; with optional
    query variants, one retry when the first search looks weak, a relevance gate and
    neighbour windows (see ``DocentSettings`` for each switch, ``docs/evaluation.md`` for
    what each one measured).

    The fused score is scaled so that rank 1 in every list is 1.0; the per-list scores
    of the last call are in ``last_extras`` (by node id) for the sources display, and
    what happened (signals, variants, retry, gate) in ``last_stats``.
    """

    def __init__(
        self,
        index: VectorIndex,
        keywords: KeywordCache,
        top_k: int = 5,
        mode: str = "hybrid",
        similarity_cutoff: float = 0.0,
        names: list[str] | None = None,
        *,
        multi_query: str = "off",
        retry_weak: str = "off",
        relevance_gate: bool = False,
        gate_threshold: float = 0.0,
        retry_threshold: float = 0.0,
        neighbor_window: int = 0,
        cjk_vector_weight: float = 1.0,
        document_weight: float = 0.0,
        llm_factory: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__()
        self.index = index
        self.keywords = keywords
        self.top_k = top_k
        self.mode = mode
        self.similarity_cutoff = similarity_cutoff
        self.names = names
        self.multi_query = multi_query
        self.retry_weak = retry_weak
        self.relevance_gate = relevance_gate
        self.gate_threshold = gate_threshold
        self.retry_threshold = retry_threshold
        self.neighbor_window = neighbor_window
        self.cjk_vector_weight = cjk_vector_weight
        self.document_weight = document_weight
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
        hits = []
        for node, score in zip(result.nodes or [], result.similarities or [], strict=False):
            if self.similarity_cutoff and score < self.similarity_cutoff:
                continue
            hits.append(NodeWithScore(node=node, score=float(score)))
        return hits

    def _keyword(self, query: str, k: int) -> list[NodeWithScore]:
        bm = self.keywords.get(self.names)
        return [NodeWithScore(node=bm.nodes[i], score=s) for i, s in bm.search(query, k)]

    def _lists(self, query: str, weight: float, pool: int) -> list[tuple[str, float, list[NodeWithScore]]]:
        """The ranked lists one query contributes to the fusion, each with its weight."""
        cjk = self.mode != "vector" and cjk_share(query) > _CJK_SHARE  # vectors alone: nothing to shift to
        vec_weight = weight * (self.cjk_vector_weight if cjk else 1.0)
        out = [("vector_score", vec_weight, self._vector(query, pool))]
        if self.mode != "vector":
            out.append(("keyword_score", weight, self._keyword(query, pool)))
        return out

    # ------------------------------------------------------------------ fusion
    @staticmethod
    def _fuse(lists: list[tuple[str, float, list[NodeWithScore]]]):
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

    def _rank(self, query: str, lists: list[tuple[str, float, list[NodeWithScore]]]):
        """Fuse the lists; with ``document_weight``, fuse once more with the candidates
        ordered by how much of the question their whole document holds (``BM25.doc_scores``;
        chunks of one document in fused order): a chunk that says "the Company" ranks up
        when its file is Apple's 10-Q and the question names Apple."""
        ranked, by_id, extras = self._fuse(lists)
        if self.document_weight <= 0 or self.mode == "vector" or not ranked:
            return ranked, by_id, extras
        bm = self.keywords.get(self.names)
        scores = bm.doc_scores(query)
        nodes = [by_id[nid].node for nid, _ in ranked]
        doc_score = [scores.get(doc_of(node), 0.0) for node in nodes]
        # A one-chunk document says nothing its chunk doesn't: such chunks keep their place,
        # and only the places held by chunks of longer documents are reordered.
        movable = [i for i, node in enumerate(nodes) if bm.doc_chunks[doc_of(node)] > 1]
        order = list(range(len(nodes)))
        for slot, i in zip(movable, sorted(movable, key=lambda i: (-doc_score[i], i)), strict=True):
            order[slot] = i
        docs = [NodeWithScore(node=nodes[i], score=doc_score[i]) for i in order]
        return self._fuse([*lists, ("document_score", self.document_weight, docs)])

    # ------------------------------------------------------------------ signals
    def relevance(self, query: str, lists, ranked, by_id) -> dict[str, float]:
        """How well the best passages match the query: the top cosine similarity of the
        query's own vector search, and the idf-weighted share of the query's terms that the
        best of the top three passages contains (terms absent from every document weigh most)."""
        vec = next((hits for name, _, hits in lists if name == "vector_score"), [])
        vector_top = max((float(h.score or 0.0) for h in vec), default=0.0)
        bm = self.keywords.get(self.names)
        coverage = max((bm.coverage(query, by_id[nid].node.get_content()) for nid, _ in ranked[:3]), default=0.0)
        trust = self.cjk_vector_weight if cjk_share(query) > _CJK_SHARE else 1.0
        return {
            "vector_top": round(vector_top, 4),
            "coverage": round(coverage, 4),
            "relevance": round(relevance_score(vector_top, coverage, trust), 4),
        }

    # ------------------------------------------------------------------ variants
    def _variants(self, query: str, how: str, first: list | None = None) -> list[str]:
        if how == "llm" and self.llm_factory is not None:
            try:
                prompt = (
                    MULTI_QUERY_PROMPT.format(n=2, question=query)
                    if first is None
                    else RETRY_PROMPT.format(question=query)
                )
                text = str(self.llm_factory().complete(prompt))
                return parse_queries(text, query, 2 if first is None else 1)
            except Exception as e:  # a variant is a bonus: never fail the search for it
                logger.warning("query variants skipped: %s", e)
                return []
        if how in ("rules", "llm"):
            out = []
            for variant in (focus_sentence(query), keyword_query(query)):
                if variant and variant.strip().lower() != query.strip().lower() and variant not in out:
                    out.append(variant)
            return out
        return []

    # ------------------------------------------------------------------ retrieve
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        pool = max(self.top_k * 3, 10)
        lists = self._lists(query, 1.0, pool)
        stats: dict[str, Any] = {}
        variants = self._variants(query, self.multi_query) if self.multi_query != "off" else []
        for v in variants:
            lists += self._lists(v, 1.0, pool)
        context = self.conversation.queries(query) if self.conversation else []
        for v in context:
            lists += self._lists(v, 1.0, pool)
        ranked, by_id, extras = self._rank(query, lists)
        signals = self.relevance(query, lists, ranked, by_id)
        if self.retry_weak != "off" and signals["relevance"] < self.retry_threshold:
            retry = [v for v in self._variants(query, self.retry_weak, first=ranked) if v not in variants]
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
        if self.relevance_gate and signals["relevance"] < self.gate_threshold:
            stats["gated"] = True
            self.last_stats, self.last_extras = stats, {}
            return []
        self.last_stats = stats
        hits = self._select(ranked, by_id)
        self.last_extras = {h.node.node_id: extras[h.node.node_id] for h in hits}
        return hits

    def _select(self, ranked: list[tuple[str, float]], by_id: dict[str, NodeWithScore]) -> list[NodeWithScore]:
        """The top_k passages; with neighbour windows, each widened by its neighbouring
        chunks of the same page, and a passage already inside an earlier window skipped."""
        if self.mode == "vector" and not ({"variants", "retried", "conversation"} & self.last_stats.keys()):
            # vectors alone: show the cosine similarity, not a rank-fusion score
            ranked = [(nid, float(by_id[nid].score or 0.0)) for nid, _ in ranked]
        if self.neighbor_window <= 0:
            return [NodeWithScore(node=by_id[nid].node, score=round(score, 4)) for nid, score in ranked[: self.top_k]]
        bm = self.keywords.get(self.names)
        covered: set[str] = set()
        out: list[NodeWithScore] = []
        for nid, score in ranked:
            if len(out) >= self.top_k:
                break
            if nid in covered:
                continue
            window = neighbours(by_id[nid].node, bm.by_id, self.neighbor_window)
            covered.update(n.node_id for n in window)
            node = by_id[nid].node.model_copy()
            node.text = merge_texts([n.get_content() for n in window])
            out.append(NodeWithScore(node=node, score=round(score, 4)))
        return out


# MiniLM cosine similarity mapped onto the coverage scale: 0.45 (typical of unrelated text
# in the same language) is 0, 0.55 is 0.2 (the gate's default), 0.95 is 1. Calibrated on
# the evaluation sets (docs/evaluation.md): with the default threshold the gate refuses when
# fewer than a fifth of the question's terms (by idf) are in the best passage AND its
# vector similarity is below 0.55.
VECTOR_FLOOR, VECTOR_SPAN = 0.45, 0.5


def relevance_score(vector_top: float, coverage: float, vector_trust: float = 1.0) -> float:
    """One number (0..1) for the gate and the retry: the better of the lexical coverage and
    the rescaled vector similarity. ``vector_trust`` scales the vector part down where the
    embedding cannot judge (CJK text with the English-only default model)."""
    vector_part = min(1.0, max(0.0, (vector_top - VECTOR_FLOOR) / VECTOR_SPAN))
    return max(coverage, vector_trust * vector_part)


def neighbours(node: Any, by_id: dict[str, TextNode], window: int) -> list[TextNode]:
    """``node`` with up to ``window`` chunks before and after it from the same page/section,
    in reading order (the splitter links a page's chunks as previous/next)."""
    from llama_index.core.schema import NodeRelationship

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
