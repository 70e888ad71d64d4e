"""Retrieval (rag_core.retrieval, rag_core.text): keyword and vector search fused, the
switches measured in docs/evaluation.md, and the conversation's extra searches.
Hash embedding and a scripted LLM: fast and deterministic."""

from __future__ import annotations

import pytest

from rag_core import build_context
from rag_core.retrieval import ConversationQueries, merge_texts, parse_queries
from rag_core.text import focus_sentence, head_words, keyword_query


def test_hybrid_retrieval_finds_chinese_text_by_keywords(ctx, tmp_path):
    (tmp_path / "zh.txt").write_text("长城是中国古代的军事防御工程，全长两万多公里。", encoding="utf-8")
    (tmp_path / "zh2.txt").write_text("熊猫主要生活在四川的竹林里，以竹子为食。", encoding="utf-8")
    ctx.ingestion.ingest_paths([tmp_path / "zh.txt", tmp_path / "zh2.txt"])
    hits = ctx.chat.retrieve("熊猫吃什么？", top_k=1)
    assert hits[0]["file"] == "zh2.txt"


def test_conversation_queries_take_the_last_answer_and_earlier_questions():

    assert head_words("one two  three four", 2) == "one two"
    assert head_words("长江全长约6300公里", 3) == "长江全"
    assert head_words("", 5) == ""
    history = [
        ("user", "What are the common types?"),
        ("assistant", "Ductal and lobular carcinoma."),
        ("user", "Which is more common?"),
        ("assistant", "Ductal carcinoma is, by far. " + "word " * 100),
    ]
    conv = ConversationQueries("How deadly is it?", history)
    head, earlier = conv.queries("How deadly is ductal carcinoma?")
    assert head.startswith("Ductal carcinoma is, by far.") and head.endswith("How deadly is ductal carcinoma?")
    assert len(head.split()) == 30 + 5
    assert earlier == "Which is more common? How deadly is it?"
    assert not ConversationQueries("Hi?", [])


def test_relevance_gate_refuses_off_topic_and_keeps_on_topic(make_settings, llm, three_docs):
    ctx = build_context(make_settings(relevance_gate=True), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    found = ctx.chat.search("Who won the 1998 football world cup final?")
    stats = found.stats
    assert found.sources == []
    assert stats["gated"] is True and stats["relevance"] < ctx.settings.retrieval.gate_threshold
    hits = ctx.chat.retrieve("How many litres per minute does the Zephyr pump deliver?")
    assert hits and hits[0]["file"] == "zephyr.pdf"
    turn = ctx.chat.ask("Who won the 1998 football world cup final?")
    assert turn.sources == [] and llm.chats == []  # the chat engine's "documents don't say"


def test_neighbor_window_widens_a_chunk_with_its_page_neighbours(make_settings, tmp_path):
    text = " ".join(f"Sentence number {i} is about topic {i % 7}." for i in range(80))
    (tmp_path / "long.txt").write_text(text)
    plain = build_context(make_settings(chunk_size=64, chunk_overlap=8))
    plain.ingestion.ingest_file(tmp_path / "long.txt")
    hit = plain.chat.retrieve("Sentence number 45", top_k=1)[0]["text"]
    wide = build_context(make_settings(chunk_size=64, chunk_overlap=8, neighbor_window=1, data_dir=tmp_path / "wide"))
    wide.ingestion.ingest_file(tmp_path / "long.txt")
    window = wide.chat.retrieve("Sentence number 45", top_k=1)[0]["text"]
    assert hit in window and len(window) > 2 * len(hit)
    assert window.count("Sentence number 45 ") == 1  # the splitter's overlap is not repeated


def test_no_passage_ends_inside_a_line_the_splitter_cut(make_settings, tmp_path):
    """The splitter cuts at a token count, inside a table row or a figure ("… | 10,230,"): a
    retrieved passage takes the rest of its last line from the chunk after it."""
    rows = [f"Line item {i} | | $ | {i},984,378 | | | $ | {i + 1},230,316 |" for i in range(1, 60)]
    (tmp_path / "table.txt").write_text("STATEMENT OF OPERATIONS\n2021 | | | 2020 |\n" + "\n".join(rows) + "\n")
    ctx = build_context(make_settings(chunk_size=64, chunk_overlap=16))
    ctx.ingestion.ingest_file(tmp_path / "table.txt")
    whole = set(rows) | {"STATEMENT OF OPERATIONS", "2021 | | | 2020 |"}
    chunks = ctx.chat.retrieve("Line item", top_k=100)
    assert len(chunks) > 5
    for hit in chunks:
        assert hit["text"].rstrip().splitlines()[-1].strip() in whole, hit["text"][-80:]
    # and the splitter did cut inside rows: without the rest of the line these would be cut short
    cut = [n for n in ctx.index.all_nodes() if n.get_content().rstrip().splitlines()[-1].strip() not in whole]
    assert cut, "the splitter cut no row: the test shows nothing"


def test_document_weight_ranks_up_chunks_whose_document_names_the_subject(make_settings, tmp_path):
    filler = " ".join(f"Line {i} of the quarterly report covers routine matters." for i in range(30))
    for company, margin in (("Apple", 44), ("Orange", 30)):
        (tmp_path / f"{company.lower()}.txt").write_text(
            f"{company} Inc. quarterly report. {filler} The Company's gross margin was {margin} percent."
        )
    hits = {}
    for weight in (0.0, 1.0):
        ctx = build_context(
            make_settings(chunk_size=48, chunk_overlap=0, document_weight=weight, data_dir=tmp_path / f"w{weight}")
        )
        ctx.ingestion.ingest_paths([tmp_path / "apple.txt", tmp_path / "orange.txt"])
        hits[weight] = ctx.chat.retrieve("What was Apple's gross margin?", top_k=2)
    # the margin chunks don't say "Apple": only the document does
    assert "Apple" not in hits[1.0][0]["text"] and "gross margin" in hits[1.0][0]["text"]
    assert hits[1.0][0]["file"] == "apple.txt"
    assert [h["file"] for h in hits[0.0]] != [h["file"] for h in hits[1.0]]


def test_merge_texts_drops_the_repeated_overlap():
    assert merge_texts(["alpha beta gamma delta epsilon zeta", "delta epsilon zeta eta theta"]) == (
        "alpha beta gamma delta epsilon zeta eta theta"
    )
    assert merge_texts(["one", "two"]) == "one\ntwo"


def test_rule_based_variants():
    assert focus_sentence("Interesting. What are the effects of these changes?") == (
        "What are the effects of these changes?"
    )
    assert keyword_query("What is the capital of France?") == "capital France"
    assert parse_queries('1. capital of France\n- "French capital city"\n\nQuery: Paris', "x", 2) == [
        "capital of France",
        "French capital city",
    ]


def test_llm_multi_query_fuses_the_phrasings(make_settings, llm, three_docs):
    ctx = build_context(make_settings(multi_query="llm"), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    llm.script(condense=["1. yellow fruit growing in bunches\n2. herbaceous plants fruit"])
    found = ctx.chat.search("Which snack would a monkey like?", top_k=1)
    hits, stats = found.sources, found.stats
    assert stats["variants"] == ["yellow fruit growing in bunches", "herbaceous plants fruit"]
    assert "Which snack would a monkey like?" in llm.prompts[-1]
    assert hits[0]["file"] == "bananas.txt"


def test_weak_retrieval_is_retried_once(make_settings, llm, three_docs):
    ctx = build_context(make_settings(retry_weak="llm", retry_threshold=0.9), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    llm.script(condense=["green tea picking"])
    found = ctx.chat.search("How is it processed after harvest?", top_k=1)
    hits, stats = found.sources, found.stats
    assert stats["retried"] == ["green tea picking"] and len(llm.prompts) == 1
    assert hits[0]["file"] == "tea.md"


# ============================================================================ the retriever's parts
def _companies(make_settings, llm, tmp_path, **overrides):
    """Two company reports of several chunks each, and a note that names neither."""
    ctx = build_context(make_settings(chunk_size=40, chunk_overlap=0, top_k=2, **overrides), llm=llm)
    for name, company, figure in (("nvidia.txt", "NVIDIA", "26"), ("amazon.txt", "Amazon", "143")):
        lines = [f"{company} reported revenue of {figure} billion dollars for the quarter."]
        lines += [
            f"Paragraph {i} of the {company} report covers operations, staff and offices in detail." for i in range(8)
        ]
        (tmp_path / name).write_text("\n\n".join(lines))
    (tmp_path / "bananas.txt").write_text("Bananas are yellow fruit that grow in bunches on large herbaceous plants.")
    ctx.ingestion.ingest_paths([tmp_path / "nvidia.txt", tmp_path / "amazon.txt", tmp_path / "bananas.txt"])
    return ctx


def test_a_question_about_two_names_is_searched_once_per_name(make_settings, llm, tmp_path):
    ctx = _companies(make_settings, llm, tmp_path, entity_scope=False)  # routing by name alone (tests/test_entities.py)
    found = ctx.chat.search("What revenue did NVIDIA report, compared with Amazon's?")
    assert found.stats["routed"] == ["NVIDIA", "Amazon"]
    assert [s["file"] for s in found.sources] == ["nvidia.txt", "amazon.txt"]  # rank 1 of each, interleaved
    assert all("keyword_score" in s or "vector_score" in s for s in found.sources)  # each with its scores


def test_a_name_no_document_holds_is_said_and_the_rest_answered(make_settings, llm, tmp_path):
    ctx = _companies(make_settings, llm, tmp_path, entity_scope=False)
    found = ctx.chat.search("What revenue did NVIDIA report, compared with Tesla's?")
    assert found.stats["unmentioned_names"] == ["Tesla"] and found.sources
    llm.script(answers=["26 billion dollars [1]."])
    turn = ctx.chat.ask("What revenue did NVIDIA report, compared with Tesla's?")
    assert "The documents found don't mention Tesla: the answer is about the rest." in turn.notices
    one = ctx.chat.search("What revenue did NVIDIA report?")
    assert "routed" not in one.stats and one.sources[0]["file"] == "nvidia.txt"  # one name, already found


def test_the_retriever_returns_its_figures_with_its_passages_and_keeps_nothing(ctx, three_docs):
    ctx.ingestion.ingest_paths([three_docs])
    retriever = ctx.chat.components.retriever(top_k=2)
    first = retriever.search("How many litres per minute does the Zephyr pump deliver?")
    second = retriever.search("Bananas yellow fruit")
    assert (
        first.hits[0].node.metadata["file_name"] == "zephyr.pdf"
        and second.hits[0].node.metadata["file_name"] == "bananas.txt"
    )
    assert set(first.extras) == {h.node.node_id for h in first.hits}  # this search's own, not the last one's
    assert {"vector_top", "coverage", "relevance", "vector_hits", "keyword_hits"} <= set(first.stats)
    assert [h.node.node_id for h in retriever.retrieve("Bananas yellow fruit")] == [h.node.node_id for h in second.hits]
    assert not {"last_stats", "last_extras", "conversation"} & set(vars(retriever))


def test_reciprocal_rank_fusion_rewards_agreement_and_scales_rank_one_to_one():
    from llama_index.core.schema import NodeWithScore, TextNode

    from rag_core.retrieval import fuse
    from rag_core.retrieval.routing import interleave

    a, b, c = (TextNode(text=t, id_=t) for t in "abc")
    fused = fuse(
        [
            ("vector_score", 1.0, [NodeWithScore(node=a, score=0.9), NodeWithScore(node=b, score=0.8)]),
            ("keyword_score", 1.0, [NodeWithScore(node=a, score=7.0), NodeWithScore(node=c, score=1.0)]),
            ("page_score", 0.0, [NodeWithScore(node=c, score=5.0)]),  # weight 0: no vote, no score shown
        ]
    )
    assert [nid for nid, _ in fused.ranked] == ["a", "b", "c"]  # b's 0.8 of 0.9 beats c's 1 of 7 at rank 2
    assert fused.ranked[0][1] == pytest.approx(1.0, abs=1e-3)
    assert fused.extras["a"] == {"vector_score": 0.9, "keyword_score": 7.0} and fused.extras["c"] == {
        "keyword_score": 1.0
    }
    lists = [[NodeWithScore(node=a), NodeWithScore(node=b)], [NodeWithScore(node=a), NodeWithScore(node=c)]]
    assert [h.node.node_id for h in interleave(lists, 3)] == ["a", "b", "c"]  # a once, then each list's second


def test_a_vector_query_gives_what_llamaindexs_chroma_store_gives(ctx, three_docs):
    """The nearest chunks' text and metadata come from the keyword index, not Chroma's read of
    them: the same nodes and scores as LlamaIndex's own ``ChromaVectorStore``; a chunk the
    keyword index lacks is read from Chroma."""
    from llama_index.core.vector_stores.types import VectorStoreQuery
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from rag_core.retrieval.spans import doc_filter

    ctx.ingestion.ingest_paths([three_docs])
    plain = ChromaVectorStore(chroma_collection=ctx.index.collection)
    embedding = ctx.embed_model.get_query_embedding("litres per minute of the Zephyr pump")

    def asked(store, names=None):
        got = store.query(VectorStoreQuery(query_embedding=embedding, similarity_top_k=4, filters=doc_filter(names)))
        return [
            (n.node_id, n.get_content(), n.metadata, n.ref_doc_id, round(s, 9))
            for n, s in zip(got.nodes, got.similarities)
        ]

    ours = asked(ctx.index.vector_store)
    assert len(ours) == 4 and ours == asked(plain)
    assert any(meta["file_name"] == "zephyr.pdf" for _, _, meta, _, _ in ours)
    assert asked(ctx.index.vector_store, ["tea.md"]) == asked(plain, ["tea.md"]) != []
    ctx.index.keywords.delete_docs(["zephyr.pdf"])  # the mirror lacks a document Chroma still holds
    assert asked(ctx.index.vector_store) == ours
