"""The keyword index (SQLite: rag_core.storage.fts; PostgreSQL: rag_core.storage.pg_keywords) and
BM25 over it (rag_core.retrieval.keywords): the same rankings as a plain in-memory Okapi BM25 over
the same chunks (the one every process used to build), for every document or a few, whole pages
and documents; the term tables always equal to a fresh index of what is left after deletes.
Each test runs on a real SQLite file in tmp_path and on a real PostgreSQL server (skipped, with
the reason, where PostgreSQL is not installed)."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import pytest

from rag_core.retrieval.keywords import BM25
from rag_core.storage.fts import SQLiteKeywordIndex
from rag_core.storage.indexdb import IndexDB
from rag_core.storage.keyword_index import ChunkRecord, stem_of
from rag_core.text import period_aliases, query_terms, tokenize

WORDS = (
    "revenue margin quarter segment cash flow operating income expense share dividend debt interest tax product "
    "service cloud device region growth decline inventory supply demand customer contract lease asset liability "
    "pumps pump delivers litres 1,234.5 q1 q3 2022 2023 中国 市场 长城 熊猫 竹子"
).split()


class ReferenceBM25:
    """Okapi BM25 as Docent built it in memory before the index moved to the database."""

    def __init__(self, records: list[ChunkRecord], k1: float = 1.2, b: float = 0.75) -> None:
        self.records, self.k1, self.b = records, k1, b
        self.counts = [Counter(tokenize(r.text)) for r in records]
        self.doc_terms: dict[str, set[str]] = defaultdict(set)
        for r, c in zip(records, self.counts, strict=True):
            if r.doc not in self.doc_terms:
                self.doc_terms[r.doc].update(tokenize(r.file_name or r.doc))
            self.doc_terms[r.doc].update(c)
        self.name_terms = {doc: set(tokenize(stem_of(doc))) for doc in self.doc_terms}
        self.pages: dict[tuple[str, int], Counter] = defaultdict(Counter)
        for r, c in zip(records, self.counts, strict=True):
            if r.page is not None:
                self.pages[(r.doc, r.page)] += c

    @staticmethod
    def _idf(n: int, df: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def _top(self, counts: list[Counter], query: str, k: int) -> list[tuple[int, float]]:
        n = len(counts)
        lengths = [sum(c.values()) for c in counts]
        avg = sum(lengths) / n
        scores = [0.0] * n
        for term in sorted(set(tokenize(query))):
            df = sum(term in c for c in counts)
            if not df:
                continue
            idf = self._idf(n, df)
            for i, c in enumerate(counts):
                if c[term]:
                    tf = c[term]
                    scores[i] += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * lengths[i] / avg))
        ranked = sorted((i for i in range(n) if scores[i] > 0), key=lambda i: (-scores[i], i))
        return [(i, scores[i]) for i in ranked[:k]]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(self.records[i].node_id, s) for i, s in self._top(self.counts, query, k)]

    def search_pages(self, query: str, k: int) -> list[tuple[tuple[str, int], float]]:
        keys = list(self.pages)
        return [(keys[i], s) for i, s in self._top([self.pages[key] for key in keys], query, k)]

    def idf(self, term: str) -> float:
        return self._idf(len(self.counts), sum(term in c for c in self.counts))

    def doc_scores(self, query: str, name_weight: float) -> dict[str, float]:
        terms = query_terms(query) | period_aliases(query)
        n = len(self.doc_terms)
        df = Counter(t for have in self.doc_terms.values() for t in have)
        weights = {t: self._idf(n, df[t]) for t in terms}
        total = sum(weights.values()) or 1.0
        scores = {doc: sum(w for t, w in weights.items() if t in have) / total for doc, have in self.doc_terms.items()}
        name_df = Counter(t for have in self.name_terms.values() for t in have)
        named = {t: self._idf(n, name_df[t]) for t in terms if name_df[t]}
        if name_weight > 0 and named:
            for doc, have in self.name_terms.items():
                scores[doc] += name_weight * sum(w for t, w in named.items() if t in have) / sum(named.values())
        return scores


def corpus(rng: random.Random, docs: int = 12, chunks: int = 14) -> list[ChunkRecord]:
    out = []
    for d in range(docs):
        doc = f"{2022 + d % 2} Q{1 + d % 4} company{d % 5}.{'pdf' if d % 3 else 'txt'}"
        for c in range(rng.randint(1, chunks)):
            words = [rng.choice(WORDS[: rng.randint(5, len(WORDS))]) for _ in range(rng.randint(3, 40))]
            page = 1 + c // 3 if d % 3 else None
            out.append(
                ChunkRecord(
                    f"{d}-{c}", f"{doc}::p{page}" if page else f"{doc}::text", doc, doc, page, " ".join(words), {}
                )
            )
    return out


@pytest.fixture(params=["sqlite", "postgres"])
def new_index(request, tmp_path):
    """Makes empty keyword indexes of one backend: ``new_index("x")`` a separate one."""
    if request.param == "sqlite":
        return lambda name="index": SQLiteKeywordIndex(IndexDB(tmp_path / f"{name}.db"))
    from rag_core.storage.pg_keywords import PgIndexDB, PostgresKeywordIndex

    url = request.getfixturevalue("pg_url")
    return lambda name="index": PostgresKeywordIndex(PgIndexDB(url, "" if name == "index" else f"lib-{name}"))


@pytest.fixture
def index(new_index):
    return new_index()


def node_ids(index: SQLiteKeywordIndex, hits: list[tuple[int, float]]) -> list[tuple[str, float]]:
    nodes = index.nodes([i for i, _ in hits])
    return [(nodes[i].node_id, s) for i, s in hits]


def same(got: list[tuple], want: list[tuple]) -> bool:
    return [g[0] for g in got] == [w[0] for w in want] and all(
        math.isclose(g[1], w[1], rel_tol=1e-9) for g, w in zip(got, want, strict=True)
    )


def test_search_ranks_as_the_in_memory_okapi_bm25(index):
    rng = random.Random(5)
    records = corpus(rng)
    index.add(records)
    bm, ref = BM25(index), ReferenceBM25(records)
    for _ in range(60):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 5)))
        k = rng.choice([1, 3, 10])
        assert same(node_ids(index, bm.search(query, k)), ref.search(query, k)), query
        assert same(bm.search_pages(query, k), ref.search_pages(query, k)), query
        for term in tokenize(query):
            assert math.isclose(bm.idf(term), ref.idf(term))
        for weight in (0.0, 0.5):
            got, want = bm.doc_scores(query, weight), ref.doc_scores(query, weight)
            assert got.keys() == want.keys() and all(math.isclose(got[d], want[d], abs_tol=1e-12) for d in want), query
    assert bm.idf("nowhere") == ref.idf("nowhere")


def test_a_search_in_some_documents_has_their_own_statistics(index):
    rng = random.Random(9)
    records = corpus(rng)
    index.add(records)
    docs = sorted({r.doc for r in records})
    for _ in range(20):
        names = rng.sample(docs, rng.randint(1, 4))
        bm, ref = BM25(index, names), ReferenceBM25([r for r in records if r.doc in names])
        query = " ".join(rng.sample(WORDS, 3))
        assert same(node_ids(index, bm.search(query, 5)), ref.search(query, 5))
        assert same(bm.search_pages(query, 5), ref.search_pages(query, 5))
        assert bm.doc_scores(query, 0.5) == pytest.approx(ref.doc_scores(query, 0.5))
        assert set(bm.doc_terms) == set(names) and bm.doc_terms[names[0]] == ref.doc_terms[names[0]]
        assert dict(bm.doc_chunks) == Counter(r.doc for r in records if r.doc in names)


def test_a_large_corpus_prunes_to_the_candidates_and_still_finds_the_rare_term(index, monkeypatch):
    """With a question of common words and one rare one, the rare term's chunks are scored and
    the chunks holding only common words are never read."""
    records = [
        ChunkRecord(f"n{i}", None, f"d{i // 50}", f"d{i // 50}", None, "revenue margin " * (1 + i % 3), {})
        for i in range(3000)
    ]
    records.append(ChunkRecord("rare", None, "x", "x", None, "revenue zyzzyva", {}))
    index.add(records)
    read = []
    original = index.rows_with
    monkeypatch.setattr(index, "rows_with", lambda term, *a, **kw: read.append(term) or original(term, *a, **kw))
    hits = node_ids(index, BM25(index).search("zyzzyva revenue margin", 1))
    assert hits[0][0] == "rare" and read == ["zyzzyva"]


def test_deletes_leave_the_tables_a_fresh_index_of_what_is_left_would_have(index, new_index):
    rng = random.Random(3)
    records = corpus(rng)
    index.add(records)
    gone_docs = {records[0].doc}
    gone_refs = {r.ref_doc_id for r in records if r.page == 2}
    index.delete_docs(gone_docs)
    index.delete_refs(gone_refs)
    left = [r for r in records if r.doc not in gone_docs and r.ref_doc_id not in gone_refs]
    fresh = new_index("fresh")
    fresh.add(left)

    def tables(i: SQLiteKeywordIndex) -> dict:
        q = i.db.query
        return {
            "terms": sorted(q("SELECT term, df, pdf FROM kw_terms")),
            "doc_terms": sorted(
                q("SELECT t.term, d.doc, t.df, t.pdf, t.named FROM kw_doc_terms t JOIN kw_docs d USING (docno)")
            ),
            "docs": sorted(q("SELECT doc, chunks, length, pages, page_length FROM kw_docs")),
            "pages": sorted(q("SELECT d.doc, p.page, p.length, p.tokens FROM kw_pages p JOIN kw_docs d USING (docno)")),
        }

    assert tables(index) == tables(fresh)
    query = "revenue 中国 pump"
    assert same(node_ids(index, BM25(index).search(query, 8)), ReferenceBM25(left).search(query, 8))
    index.clear()
    assert BM25(index).search(query, 3) == [] and not BM25(index).page_keys


def test_tokens_reach_fts5_whole_and_nodes_come_back_as_stored(index):
    index.add(
        [
            ChunkRecord(
                "a", "d::text", "d", "d.txt", None, "Sales of 1,234.5 units; 熊猫 ate.", {"file_name": "d.txt", "k": 1}
            )
        ]
    )
    assert [r.tokens for r in index.rows_with("1,234.5")] == ["sale 1,234.5 unit ate 熊 猫 熊猫"]
    assert index.rows_with("熊猫") and not index.rows_with("234")
    node = BM25(index).nodes[index.rows_with("ate")[0].id]
    assert node.node_id == "a" and node.get_content() == "Sales of 1,234.5 units; 熊猫 ate." and node.metadata["k"] == 1
    if isinstance(index.db, IndexDB):
        assert index.db.query("SELECT tokens FROM kw_chunks_fts") == [(None,)]  # an index only: no second copy
    else:  # the lexemes as given, not parsed again by PostgreSQL's text search
        assert index.db.query("SELECT tsv::text FROM kw_chunks") == [
            ("'1,234.5' 'ate' 'sale' 'unit' '熊' '熊猫' '猫'",)
        ]


def test_postgres_processes_share_one_index_and_libraries_stay_apart(pg_url):
    """Two processes of a team (two pools' worth of connections, one database): what one
    indexes the other finds at once, with no fill from Chroma; a person's library is a
    schema of its own; a token that is not a plain word is looked up whole."""
    from rag_core import postgres
    from rag_core.storage.pg_keywords import PgIndexDB, PostgresKeywordIndex

    a = PostgresKeywordIndex(PgIndexDB(pg_url))
    rec = ChunkRecord(
        "n1", "q3.pdf::p0001", "q3.pdf", "q3.pdf", 1, "Revenue was $1,234.5 million; o'brien's 中国市场", {}
    )
    a.add([rec])
    postgres.close_all()  # the other process: new connections
    b = PostgresKeywordIndex(PgIndexDB(pg_url))
    assert [r.id for r in b.rows_with("1,234.5")] == [r.id for r in a.rows_with("1,234.5")] != []
    assert b.docs() == {"q3.pdf": 1} and BM25(b).search("revenue 市场", 1)
    assert b.rows_with("o'brien") == [] and b.rows_with("o'brien", ["q3.pdf"]) == []  # quoted, not an error
    for term in tokenize(rec.text):
        assert b.rows_with(term) and b.rows_with(term, ["q3.pdf"]) and b.rows_with(term, pages=True), term
    ana = PostgresKeywordIndex(PgIndexDB(pg_url, "lib-0123456789abcdef"))
    assert ana.docs() == {} and ana.rows_with("revenue") == [] and ana.db.schema == "docent_kw_lib_0123456789abcdef"
    assert a.db.applied_migrations() == ["pk001_keywords"] == ana.db.applied_migrations()
    b.delete_docs(["q3.pdf"])
    assert a.docs() == {} and a.rows_with("revenue") == []


def test_a_documents_nodes_come_back_in_the_order_written_and_only_its_own(index):
    records = corpus(random.Random(9))
    index.add(records)
    doc = records[-1].doc
    index.delete_refs([records[-1].ref_doc_id])
    want = [r.node_id for r in records if r.doc == doc and r.ref_doc_id != records[-1].ref_doc_id]
    got = index.doc_nodes(doc)
    assert want and [n.node_id for n in got] == want
    assert [n.get_content() for n in got] == [r.text for r in records if r.node_id in want]
    assert index.doc_nodes("no such document.pdf") == []


def test_chunks_are_stored_with_their_relationships_as_ids_and_old_envelopes_still_read(tmp_path):
    """Chroma and the keyword index keep a chunk's links as the ids they name, not LlamaIndex's
    copy of each linked node's metadata; a chunk stored the old way (by LlamaIndex's own
    ``ChromaVectorStore.add``) is read back the same."""
    import json

    import chromadb
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from rag_core.storage.fts_tables import unpack_meta
    from rag_core.storage.keyword_index import MirroredChroma

    big = {"file_name": "q3.pdf", "note": "x" * 500}

    def chunk(i: int, doc: str) -> TextNode:
        rel = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"{doc}::text", metadata=big, hash="h" * 64)}
        if i:
            rel[NodeRelationship.PREVIOUS] = RelatedNodeInfo(node_id=f"{doc}-{i - 1}", metadata=big)
        rel[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=f"{doc}-{i + 1}", metadata=big)
        return TextNode(
            id_=f"{doc}-{i}", text=f"chunk {i} of {doc}", metadata={"file_name": f"{doc}.pdf", "page": i + 1},
            relationships=rel, embedding=[1.0, float(i), 0.5],
        )  # fmt: skip

    collection = chromadb.PersistentClient(path=str(tmp_path / "chroma")).get_or_create_collection(
        "chunks", embedding_function=None
    )
    keywords = SQLiteKeywordIndex(IndexDB(tmp_path / "index.db"))
    store = MirroredChroma(collection, keywords)
    store.add([chunk(i, "new") for i in range(3)])
    ChromaVectorStore(chroma_collection=collection).add([chunk(i, "old") for i in range(3)])  # the old envelope

    stored = collection.get(ids=["new-1", "old-1"], include=["metadatas"])
    metas = dict(zip(stored["ids"], stored["metadatas"], strict=True))  # Chroma's order is not the ids' order
    envelope = {i: json.loads(m["_node_content"]) for i, m in metas.items()}
    assert all(not r["metadata"] and not r["hash"] for r in envelope["new-1"]["relationships"].values())
    assert envelope["old-1"]["relationships"]["1"]["metadata"] == big  # what the slim envelope leaves out
    assert metas["new-1"]["document_id"] == "new::text" and metas["new-1"]["page"] == 2
    assert len(metas["new-1"]["_node_content"]) < len(metas["old-1"]["_node_content"]) - 1000
    kept = keywords.nodes_by_id(["new-1"])["new-1"][1]
    assert all("x" * 500 not in json.dumps(unpack_meta(m)) for (m,) in keywords.db.query("SELECT meta FROM kw_chunks"))

    got = store.query(VectorStoreQuery(query_embedding=[1.0, 1.0, 0.5], similarity_top_k=6))
    assert sorted(got.ids) == ["new-0", "new-1", "new-2", "old-0", "old-1", "old-2"]
    for node in [*got.nodes, kept]:
        doc, i = node.node_id.split("-")
        assert node.ref_doc_id == f"{doc}::text" and node.metadata == {"file_name": f"{doc}.pdf", "page": int(i) + 1}
        assert node.next_node.node_id == f"{doc}-{int(i) + 1}" and node.get_content() == f"chunk {i} of {doc}"
        assert (node.prev_node.node_id if node.prev_node else None) == (f"{doc}-{int(i) - 1}" if i != "0" else None)
    store.delete("new::text")
    assert collection.count() == 3 and keywords.nodes_by_id(["new-1"]) == {}


def test_chroma_is_given_no_document_and_every_reader_finds_the_text_in_the_envelope(tmp_path):
    """Chroma indexes every document it is given for a full-text search Docent never asks
    (~30% of a write at 100k chunks): new chunks keep their text inside the node envelope
    instead. Every way back to it reads it: LlamaIndex's own store, the fallback for ids the
    keyword index lacks, the records the keyword index is rebuilt from (which keep the text in
    their own column, not twice); chunks stored before, with a document, still read."""
    import json

    import chromadb
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from rag_core.storage.fts_tables import unpack_meta
    from rag_core.storage.keyword_index import MirroredChroma, stored_record

    def chunk(i: int, doc: str) -> TextNode:
        return TextNode(id_=f"{doc}-{i}", text=f"chunk {i} of {doc} ünïcode", metadata={"file_name": f"{doc}.pdf"},
                        embedding=[1.0, float(i), 0.5])  # fmt: skip

    collection = chromadb.PersistentClient(path=str(tmp_path / "chroma")).get_or_create_collection(
        "chunks", embedding_function=None
    )
    store = MirroredChroma(collection, SQLiteKeywordIndex(IndexDB(tmp_path / "index.db")))
    store.add([chunk(i, "new") for i in range(3)])
    ChromaVectorStore(chroma_collection=collection).add([chunk(i, "old") for i in range(3)])  # with documents

    got = collection.get(ids=["new-1", "old-1"], include=["documents", "metadatas"])
    documents = dict(zip(got["ids"], got["documents"], strict=True))
    assert documents == {"new-1": None, "old-1": "chunk 1 of old ünïcode"}
    wanted = {f"{doc}-{i}": f"chunk {i} of {doc} ünïcode" for doc in ("new", "old") for i in range(3)}
    query = VectorStoreQuery(query_embedding=[1.0, 1.0, 0.5], similarity_top_k=6)
    llama = ChromaVectorStore(chroma_collection=collection).query(query)  # LlamaIndex's own read
    assert {n.node_id: n.get_content() for n in llama.nodes} == wanted
    empty = MirroredChroma(collection, SQLiteKeywordIndex(IndexDB(tmp_path / "empty.db")))  # every id "missing"
    assert {n.node_id: n.get_content() for n in empty.query(query).nodes} == wanted

    for node_id, meta, document in zip(got["ids"], got["metadatas"], got["documents"], strict=True):
        record = stored_record(node_id, meta, document)  # what the keyword index is rebuilt from
        assert record.text == wanted[node_id] and record.file_name == node_id.split("-")[0] + ".pdf"
        assert json.loads(record.meta["_node_content"])["text"] == ""  # the text once, in its own column
    kept = store._keywords.db.query("SELECT meta FROM kw_chunks")
    assert kept and all("ünïcode" not in json.dumps(unpack_meta(m)) for (m,) in kept)
