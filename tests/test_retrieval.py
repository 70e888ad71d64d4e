"""Retrieval (rag_core.retrieval, rag_core.text): keyword and vector search fused, the
switches measured in docs/evaluation.md, and the conversation's extra searches.
Hash embedding and a scripted LLM: fast and deterministic."""

from __future__ import annotations

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
    stats: dict = {}
    assert ctx.chat.retrieve("Who won the 1998 football world cup final?", stats=stats) == []
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
    stats: dict = {}
    hits = ctx.chat.retrieve("Which snack would a monkey like?", top_k=1, stats=stats)
    assert stats["variants"] == ["yellow fruit growing in bunches", "herbaceous plants fruit"]
    assert "Which snack would a monkey like?" in llm.prompts[-1]
    assert hits[0]["file"] == "bananas.txt"


def test_weak_retrieval_is_retried_once(make_settings, llm, three_docs):
    ctx = build_context(make_settings(retry_weak="llm", retry_threshold=0.9), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    llm.script(condense=["green tea picking"])
    stats: dict = {}
    hits = ctx.chat.retrieve("How is it processed after harvest?", top_k=1, stats=stats)
    assert stats["retried"] == ["green tea picking"] and len(llm.prompts) == 1
    assert hits[0]["file"] == "tea.md"
