"""What documents are about, and answers that stay with what the question names
(rag_core.entities; issue 16, item 2). Companies are made up (tests/retailers.py), the
filings real PDFs, the index real Chroma and SQLite, the model scripted."""

from __future__ import annotations

import json

import pytest

from rag_core import build_context
from rag_core.entities import EntityIndex, Name, asks_figure, name_matches, question_names, read_profile
from rag_core.entities.scope import decide, refusal
from rag_core.evaluation import EvalQuestion, score_sources, summarise
from tests.retailers import BRAMBLECREST, QUILLFEATHER, write_filings

QFO, BCM = "qfo-q2-2024-earnings.pdf", "bcm-10q-q2-2024.pdf"


# ============================================================================ reading a document
def _pages(pages: list[str]) -> list[tuple[int, str]]:
    return [(i + 1, text) for i, text in enumerate(pages)]


def test_a_filing_is_about_the_registrant_its_cover_names_with_its_trading_symbol():
    profile = read_profile(BCM, _pages(BRAMBLECREST))
    [subject] = profile.subjects
    assert subject.name == "Bramblecrest Markets Corporation"  # as its text writes it, not in capitals
    assert ["bramblecrest", "market"] in subject.aliases and subject.tickers == ["bcm"]
    assert profile.parts == 5


def test_an_earnings_release_is_about_the_company_its_head_names_with_a_legal_form_or_ticker():
    [subject] = read_profile(QFO, _pages(QUILLFEATHER)).subjects
    assert subject.aliases[0] == ["quillfeather", "outfitter"] and subject.tickers == ["qfo"]


def test_a_word_capitalised_only_at_a_sentence_start_or_in_capitals_is_not_a_name_the_document_uses():
    profile = read_profile(BCM, _pages(BRAMBLECREST))
    assert "target" not in profile.names  # "Our target operating margin", "we target", "its target leverage"
    assert profile.names["bramblecrest"] >= 3  # inside sentences on most pages
    assert "security" not in profile.names  # "SECURITIES AND EXCHANGE COMMISSION": a line set in capitals


def test_a_manual_is_about_the_product_its_title_names_and_a_note_about_nothing_in_particular():
    manual = read_profile(
        "zephyr.pdf", _pages(["The Zephyr Handbook\nThe Zephyr pump moves water.", "Run the Zephyr pump wet."])
    )
    assert [s.aliases[0] for s in manual.subjects] == [["zephyr"]]
    note = read_profile("note.txt", [(None, "Bananas are yellow fruit that grow in Ecuador and in Costa Rica.")])
    assert note.subjects == []


# ============================================================================ names in a question
def test_names_in_a_question_keep_their_case_their_possessive_and_drop_dates():
    names = question_names("What was Target's revenue for the quarter ended August 3, 2024?")
    assert names == [Name("Target", ("target",), capitals=False, possessive=True)]
    assert [n.text for n in question_names("Target's revenue in Q2?")] == ["Target"]  # possessive at the start
    assert question_names("What is our target margin?") == []  # the word, not the name
    assert [n.text for n in question_names("Has Bramblecrest bought back shares?")] == ["Bramblecrest"]
    split = question_names("Can trends be seen in Tesla's Services segment revenue?")
    assert [(n.text, n.possessive) for n in split] == [("Tesla", True), ("Services", False)]
    assert question_names("What was BCM revenue?")[0].capitals


def test_a_name_matches_a_subject_by_its_names_but_not_by_a_word_that_says_nothing_alone():
    assert name_matches(("bramblecrest",), ("bramblecrest", "market"))  # "Bramblecrest" for the corporation
    assert name_matches(("quillfeather", "outfitter", "store"), ("quillfeather", "outfitter"))
    assert not name_matches(("american",), ("american", "express"))
    assert not name_matches(("bramble",), ("bramblecrest", "market"))
    assert asks_figure("How many stores did it have?") and not asks_figure("Who founded it?")


# ============================================================================ the two retailers
@pytest.fixture
def retailers(make_settings, llm, tmp_path):
    ctx = build_context(make_settings(), llm=llm)
    results = ctx.ingestion.ingest_paths(write_filings(tmp_path / "filings"))
    assert [r.status for r in results] == ["indexed", "indexed"]
    return ctx


def _files(turn) -> set[str]:
    return {s["file"] for s in turn.sources}


def test_a_conversation_about_two_retailers_answers_each_from_its_own_filing(retailers, llm):
    """The new user's four questions (issue 16): each answered from the filing of the company
    it names or inherits, and Target, which no filing is about, refused without the model."""
    session = retailers.sessions.create("two retailers").id
    llm.script(
        answers=["Quillfeather spent $96 million [1].", "$150 million [1].", "1,106 stores [1]."],
        condense=[
            "How much did Quillfeather spend on share repurchases in the fourth quarter?",
            "How many stores did Bramblecrest have at the end of the second quarter of fiscal 2024?",
            "What was Target's revenue in the second quarter of fiscal 2024?",
        ],
    )
    first = retailers.chat.ask(
        "How much did Quillfeather spend on share repurchases in the second quarter, as a percentage of its net sales?",
        session,
    )
    assert _files(first) == {QFO}  # not Bramblecrest's repurchase page, however well it matches
    prompt = llm.chats[-1][-1].content
    assert f"{QFO} (Quillfeather Outfitters), page" in prompt  # the model reads whose page each source is
    follow_up = retailers.chat.ask("How much did they spend in the fourth quarter?", session)
    assert _files(follow_up) == {QFO}  # names nothing: keeps the conversation's company
    switch = retailers.chat.ask(
        "How many stores did Bramblecrest have at the end of the second quarter of fiscal 2024?", session
    )
    assert _files(switch) == {BCM}  # the conversation's searches no longer pull Quillfeather's store page in
    assert any("1,106 stores" in s["text"] for s in switch.sources)
    asked = len(llm.chats)
    target = retailers.chat.ask("What was Target's revenue in that quarter?", session)
    assert target.answer.startswith("The documents don't cover Target") and target.sources == []
    assert "Bramblecrest Markets Corporation" in target.answer  # what they do cover
    assert len(llm.chats) == asked  # refused without asking the model


def test_without_entity_scope_the_same_conversation_mixes_the_retailers(make_settings, llm, tmp_path):
    """The failures above, reproduced with the switch off: the fixture can tell."""
    ctx = build_context(make_settings(entity_scope=False), llm=llm)
    ctx.ingestion.ingest_paths(write_filings(tmp_path / "filings"))
    first = ctx.chat.search(
        "How much did Quillfeather spend on share repurchases in the second quarter, as a percentage of its net sales?"
    )
    assert BCM in {s["file"] for s in first.sources}
    target = ctx.chat.search("What was Target's revenue in that quarter?")
    assert target.sources  # "target" is a word of Bramblecrest's filing: the name gate let it through


def test_a_follow_up_naming_a_product_the_conversation_documents_hold_stays_with_them(retailers):
    history = [("user", "How many stores did Bramblecrest have?"), ("assistant", "1,106 stores [1].")]
    found = retailers.chat.search("What about its Condensed Consolidated Statements?", history=history)
    assert found.stats.get("entity_from") == "conversation" and {s["file"] for s in found.sources} == {BCM}
    assert found.stats["entity_docs"] == [BCM]  # the company's filings: a computed measure reads their statements


def test_a_name_the_documents_mention_only_in_passing_is_refused_for_a_figure_not_for_an_account(
    make_settings, llm, tmp_path
):
    ctx = build_context(make_settings(), llm=llm)
    pages = [*BRAMBLECREST[:-1], BRAMBLECREST[-1] + "\nWe compete with Larkspur Goods and other chains."]
    from tests.pdfgen import make_pdf

    make_pdf(pages, tmp_path / "bcm.pdf")
    make_pdf(QUILLFEATHER, tmp_path / "qfo.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "bcm.pdf", tmp_path / "qfo.pdf"])
    figure = ctx.chat.search("What was Larkspur's net sales in the second quarter?")
    assert figure.sources == [] and figure.stats["uncovered_names"] == ["Larkspur"]
    account = ctx.chat.search("Who does Bramblecrest say it competes with, such as Larkspur?")
    assert {s["file"] for s in account.sources} == {"bcm.pdf"}


def test_an_item_the_documents_tables_report_is_no_other_company_even_named_once(make_settings, llm, tmp_path):
    """A release names its segments once, as rows of a table ("Garden Centers $ 512"): "What were
    Garden Centers net sales?" asks for an item the document reports, not for a company it
    mentions in passing (that one is still refused)."""
    ctx = build_context(make_settings(), llm=llm)
    segments = "Net sales by segment (in millions)\nHome Goods $ 1,204\nGarden Centers $ 512\n"
    pages = [
        *BRAMBLECREST[:-1],
        BRAMBLECREST[-1] + "\n" + segments + "We compete with Larkspur Goods and other chains.",
    ]
    from tests.pdfgen import make_pdf

    make_pdf(pages, tmp_path / "bcm.pdf")
    make_pdf(QUILLFEATHER, tmp_path / "qfo.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "bcm.pdf", tmp_path / "qfo.pdf"])
    segment = ctx.chat.search("What were Garden Centers net sales in the second quarter?")
    assert "refusal" not in segment.stats and segment.sources[0]["file"] == "bcm.pdf"
    other = ctx.chat.search("What was Larkspur's net sales in the second quarter?")
    assert other.sources == [] and other.stats["uncovered_names"] == ["Larkspur"]
    profile = read_profile("bcm.pdf", _pages(pages))
    from rag_core.entities.names import terms_of

    assert {*terms_of("Garden Centers"), *terms_of("Home Goods")} <= set(profile.rows)
    assert not set(terms_of("Larkspur")) & set(profile.rows)


def test_a_name_a_table_row_or_a_sentence_gives_a_figure_of_is_covered_a_reference_is_not(make_settings, llm, tmp_path):
    """A paper about one thing names others once: a results row ("Single REALMNews (Guu et al.,
    2020) 40.4 …", its citation no part of the label) and a sentence stating figures ("a MacBook
    Pro with 2.2 GHz … and 2 GB RAM") can answer a figure asked of them; a name only in the
    references, or in a sentence stating none, is still refused when its figure is asked."""
    ctx = build_context(make_settings(), llm=llm)
    pages = [
        "Dense Passage Retrieval for Open-Domain Question Answering\nDense Passage Retrieval (DPR) "
        "retrieves passages. Dense Passage Retrieval is trained on question and passage pairs.",
        "Dense Passage Retrieval results. All experiments were performed on a MacBook Pro with 2.2 GHz "
        "processor and 2 GB RAM. Larkspur Search was also considered by the authors.",
        "Dense Passage Retrieval against others, exact match.\nModel NQ TREC\n"
        "Single REALMNews (Guu et al., 2020) 40.4 42.9\nSingle Dense Passage Retrieval 41.5 25.9\n"
        "Single GraphRetriever (Min et al., 2019b) 34.5 -",
        "References\nOmar Khattab. 2020. ColBERT: Efficient passage search. In SIGIR 2020, pages 39-48. "
        "arXiv:2004.12832.\nDense Passage Retrieval appendix.",
    ]
    from tests.pdfgen import make_pdf

    make_pdf(pages, tmp_path / "dpr.pdf")
    make_pdf(QUILLFEATHER, tmp_path / "qfo.pdf")
    ctx.ingestion.ingest_paths([tmp_path / "dpr.pdf", tmp_path / "qfo.pdf"])
    profile = read_profile("dpr.pdf", _pages(pages))
    assert {"realmnew", "single", "graphretriever"} <= set(profile.rows) and not {"guu", "min"} & set(profile.rows)
    assert {"macbook", "pro", "ram"} <= set(profile.stated) and not {"colbert", "larkspur"} & set(profile.stated)
    for question in (
        "What exact match does REALMNews get on TREC?",
        "What exact match accuracy does GraphRetriever reach on NQ?",  # its citation closed on the row: "(Min et al., 2019b)"
        "How much RAM did the MacBook Pro used for the experiments have?",
    ):
        found = ctx.chat.search(question)
        assert "refusal" not in found.stats and found.sources[0]["file"] == "dpr.pdf", question
    for question, name in (
        ("What is the exact match of ColBERT on TREC?", "ColBERT"),
        ("How many searches did the Larkspur Search run?", "Larkspur Search"),
    ):
        found = ctx.chat.search(question)
        assert found.sources == [] and found.stats["uncovered_names"] == [name], question


def test_documents_about_nothing_in_particular_are_searched_as_before(ctx, three_docs):
    ctx.ingestion.ingest_paths([three_docs])
    known = ctx.chat.components.entities.current()
    assert known.label("bananas.txt") is None and known.label("tea.md") is None
    found = ctx.chat.search("Where do Bananas grow?")
    assert "entities" not in found.stats and found.sources[0]["file"] == "bananas.txt"


def test_the_documents_a_conversation_is_limited_to_decide_what_is_covered(retailers):
    found = retailers.chat.search("How many stores did Bramblecrest have?", names=[QFO])
    assert found.sources == [] and "don't" in found.stats["refusal"]


# ============================================================================ kept, and read again
def test_profiles_are_kept_in_the_registry_and_read_from_the_chunks_when_missing(retailers):
    rows = retailers.registry.entities()
    assert set(rows) == {QFO, BCM}  # written at ingestion
    sha, _reader, data = rows[BCM]
    assert json.loads(data)["subjects"][0]["tickers"] == ["bcm"]
    with retailers.db.connect() as c:  # as before this existed: no profile
        c.execute("DELETE FROM document_entities")
    index = EntityIndex(retailers.index, retailers.registry)
    assert sorted(index.missing()) == [BCM, QFO]
    assert index.current().label(BCM) == "Bramblecrest Markets Corporation"  # read from the stored chunks
    assert index.missing() == [] and retailers.registry.entities()[BCM][0] == sha
    retailers.ingestion.delete(BCM)
    assert set(retailers.registry.entities()) == {QFO}  # gone with its document


def test_a_profile_of_another_version_of_the_document_is_not_kept(retailers):
    assert not retailers.registry.set_entities(BCM, "0" * 64, 1, "{}")
    assert not retailers.registry.set_entities("nope.pdf", "0" * 64, 1, "{}")


def test_check_repair_reads_the_missing_profiles(retailers):
    from rag_core.health import check

    with retailers.db.connect() as c:
        c.execute("DELETE FROM document_entities")
    problems, summary = check(retailers)
    assert problems == [] and summary["profiles_missing"] == 2
    assert sorted(EntityIndex(retailers.index, retailers.registry).fill()) == [BCM, QFO]
    assert check(retailers)[1]["profiles_missing"] == 0


# ============================================================================ the decision alone
class _Keywords:
    def __init__(self, terms: dict[str, set[str]]) -> None:
        self.doc_terms = terms

    def mentions(self, docs: set[str], terms: list[str]) -> bool:
        return any(t in self.doc_terms.get(d, set()) for d in docs for t in terms)


def test_the_scope_switches_with_a_new_name_and_inherits_when_none_is_named():
    from rag_core.entities import Entities

    profiles = {
        QFO: read_profile(QFO, _pages(QUILLFEATHER)),
        BCM: read_profile(BCM, _pages(BRAMBLECREST)),
    }
    known = Entities(profiles)
    keywords = _Keywords({QFO: {"quillfeather", "store"}, BCM: {"bramblecrest", "store", "target"}})
    previous = ["How many stores does Quillfeather have?"]
    switched = decide(known, keywords, "How many stores does Bramblecrest have?", typed=None, previous=previous)
    assert switched is not None and switched.routes == [("Bramblecrest", [BCM])] and not switched.inherited
    kept = decide(known, keywords, "And last year?", typed="And last year?", previous=previous)
    assert kept is not None and kept.routes == [("Quillfeather", [QFO])] and kept.inherited == "conversation"
    assert decide(known, keywords, "And last year?") is None  # no conversation: searched everywhere
    word = decide(known, keywords, "What was Target's revenue?")
    assert word is not None and word.refused == ["Target"] and not word.absent
    assert refusal(["Target"], ["A Corp"], 2).endswith(
        "(they are about A Corp and 2 more), so there is nothing to answer from."
    )


def test_foreign_sources_are_measured_against_the_entity_files():
    q = EvalQuestion(question="q", gold_files=["a.pdf"], entity_files=["a.pdf", "b.pdf"])
    row = score_sources(q, [{"file": "a.pdf"}, {"file": "c.pdf"}, {"file": "b.pdf"}, {"file": "c.pdf"}], 5)
    assert row["foreign"] == 0.5
    figures = summarise([row, score_sources(q, [{"file": "b.pdf"}], 5)], [q, q])
    assert figures["foreign_sources"] == 0.25 and figures["foreign_questions"] == 0.5


def test_a_heading_the_question_names_and_a_note_beside_a_named_product_are_not_other_companies(ctx, three_docs):
    ctx.ingestion.ingest_paths([three_docs])
    section = ctx.chat.search("What does the section on Capacity say?")  # "Chapter 2: Capacity" in zephyr.pdf
    assert "refusal" not in section.stats and section.sources[0]["page"] == 2
    both = ctx.chat.search("How is green tea made, and is it like the Zephyr pump?", top_k=5)
    assert {"zephyr.pdf", "tea.md"} <= {s["file"] for s in both.sources}  # the note about tea is no other company's


def test_a_name_the_question_asks_about_is_its_owner_and_a_run_at_the_start_is_kept_whole():
    assert [(n.text, n.owner) for n in question_names("Best Buy's cash at the end of the quarter?")] == [
        ("Best Buy", True)
    ]
    assert [(n.text, n.owner) for n in question_names("Did TSMC report any acquisitions?")] == [("TSMC", True)]
    assert [(n.text, n.owner) for n in question_names("What was the net income of Gap?")] == [("Gap", True)]
    assert [(n.text, n.owner) for n in question_names("What does the section on Capacity say?")] == [
        ("Capacity", False)
    ]
    assert [n.text for n in question_names("What Apple's revenue?")] == ["Apple"]  # not "What Apple"


def test_a_company_named_on_a_heading_line_of_another_company_s_filing_is_not_covered_when_asked_about():
    from rag_core.entities import Entities

    social = [*BRAMBLECREST[:-1], BRAMBLECREST[-1] + "\nFollow us\nLarkspur Social\n"]
    known = Entities({BCM: read_profile(BCM, _pages(social)), QFO: read_profile(QFO, _pages(QUILLFEATHER))})
    keywords = _Keywords({BCM: {"bramblecrest", "larkspur", "social"}, QFO: {"quillfeather"}})
    asked = decide(known, keywords, "Did Larkspur report any acquisitions?")
    assert asked is not None and asked.refused == ["Larkspur"]  # the line names it, the filing is not about it
    section = decide(known, keywords, "What does the part on Larkspur Social say?")
    assert section is None or not section.refused  # a heading the question points at
