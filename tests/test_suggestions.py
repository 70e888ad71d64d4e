"""Suggested questions: from the documents' outlines at once, from the LLM in the background
(ScriptedLLM), cached per content in suggestions.json; follow-ups from the cited sources."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from llama_index.core.base.llms.types import CompletionResponse

from rag_core import build_context
from rag_core.prompts import SUGGEST_MARKER
from rag_core.suggestions import parse_questions
from tests.fakes import ScriptedLLM
from tests.pdfgen import make_pdf

LLM_REPLY = (
    "1. How many litres per minute does the Zephyr pump deliver?\n"
    "2) What battery does the Zephyr pump run on?\n"
    "- Why can two pumps not share one battery?\n"
    "Here are your questions, I hope they help."
)


@pytest.fixture
def extractive(make_settings, three_docs):
    """The ``extractive`` provider (no LLM to write questions) over the three documents."""
    ctx = build_context(make_settings())
    ctx.ingestion.ingest_paths([three_docs])
    return ctx


def cache(ctx) -> dict[str, Any]:
    return json.loads((ctx.settings.data_dir / "suggestions.json").read_text(encoding="utf-8"))


def top_source(ctx, question: str):
    return ctx.chat.retrieve(question, top_k=1)[0]


# ============================================================================ rules, at once
def test_headings_and_definitions_become_questions_that_find_their_section(extractive):
    ctx = extractive
    zephyr = ctx.suggestions.for_documents(["zephyr.pdf"], n=5)
    assert zephyr == [
        "What does the section on Capacity say?",
        "What does the section on Safety say?",
        "What is zephyr.pdf about?",
    ]  # "Chapter 1: Overview" is too generic to ask about
    assert top_source(ctx, zephyr[0])["page"] == 2 and top_source(ctx, zephyr[1])["page"] == 3
    assert ctx.suggestions.for_documents(["bananas.txt"]) == ["What are bananas?", "What is bananas.txt about?"]
    tea = ctx.suggestions.for_documents(["tea.md"], n=2)
    assert tea == ["What is green tea?", "What is tea.md about?"]
    assert top_source(ctx, tea[0])["file"] == "tea.md"


def test_a_new_session_over_every_document_gets_three_from_different_documents(extractive):
    ctx = extractive
    every = ctx.suggestions.for_documents(None)
    assert len(every) == 3
    asked_of = {top_source(ctx, q)["file"] for q in every}
    assert asked_of == {"zephyr.pdf", "bananas.txt", "tea.md"}
    assert ctx.suggestions.for_documents(["zephyr.pdf", "tea.md"], n=2) == [
        "What does the section on Capacity say?",  # zephyr.pdf was indexed last: the most recent first
        "What is green tea?",
    ]
    assert ctx.suggestions.for_documents(["not-indexed.pdf"]) == []


def test_without_a_model_no_llm_questions_are_asked_and_rules_are_cached_by_content(extractive, tmp_path):
    ctx = extractive
    ctx.suggestions.for_documents(None)
    ctx.suggestions.schedule("zephyr.pdf")
    assert ctx.suggestions.wait(60)
    assert ctx.suggestions.llm_calls == 0
    entries = cache(ctx)
    sha = ctx.registry.get("zephyr.pdf").sha256
    assert entries[sha]["name"] == "zephyr.pdf" and "llm" not in entries[sha]
    assert [h for h, _ in entries[sha]["headings"]] == ["Overview", "Capacity", "Safety"]
    assert [p for _, p in entries[sha]["headings"]] == [1, 2, 3]
    assert set(entries) == {r.sha256 for r in ctx.registry.list()}
    gone = ctx.registry.get("bananas.txt").sha256
    ctx.ingestion.delete("bananas.txt")
    (tmp_path / "kiwi.txt").write_text("Kiwis are small brown fruit with green flesh.")
    ctx.ingestion.ingest_file(tmp_path / "kiwi.txt")
    assert ctx.suggestions.for_documents(["kiwi.txt"])[0] == "What are kiwis?"
    assert gone not in cache(ctx)  # the next write drops what no document has any more
    assert set(cache(ctx)) == {r.sha256 for r in ctx.registry.list()}


# ============================================================================ the LLM, in the background
def test_the_llm_writes_three_questions_per_document_once_and_they_come_first(make_settings, three_docs):
    llm = ScriptedLLM(condense=[LLM_REPLY])
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    ctx.suggestions.schedule("zephyr.pdf")
    assert ctx.suggestions.wait(60)
    assert ctx.suggestions.llm_calls == 1 and len(llm.prompts) == 1
    prompt = llm.prompts[0]
    assert prompt.endswith(SUGGEST_MARKER)
    document = prompt.split("<document>\n", 1)[1].split("</document>")[0]
    assert document.startswith("The Zephyr Handbook\nChapter 1: Overview") and "12 volt battery" in document
    written = [
        "How many litres per minute does the Zephyr pump deliver?",
        "What battery does the Zephyr pump run on?",
        "Why can two pumps not share one battery?",
    ]
    assert ctx.suggestions.for_documents(["zephyr.pdf"], n=5) == [
        *written,
        "What does the section on Capacity say?",
        "What does the section on Safety say?",
    ]
    assert cache(ctx)[ctx.registry.get("zephyr.pdf").sha256]["llm"] == written
    # Scheduled again, or read by another context on the same folder: no second call.
    ctx.suggestions.schedule("zephyr.pdf")
    assert ctx.suggestions.wait(60) and len(llm.prompts) == 1
    other_llm = ScriptedLLM()
    other = build_context(make_settings(), llm=other_llm)
    assert other.suggestions.for_documents(["zephyr.pdf"])[:3] == written
    assert other.suggestions.wait(60) and other_llm.prompts == []


class GatedLLM(ScriptedLLM):
    """Blocks in ``complete`` until the test opens the gate, to catch a caller that waits."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.__dict__["entered"] = threading.Event()
        self.__dict__["gate"] = threading.Event()

    def complete(self, prompt: str, formatted: bool = False, **kw: Any):
        self.entered.set()
        self.gate.wait(60)
        return super().complete(prompt, formatted, **kw)


def test_for_documents_never_waits_for_the_llm(make_settings, three_docs):
    llm = GatedLLM(condense=[LLM_REPLY])
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    ctx.suggestions.schedule("zephyr.pdf")
    assert llm.entered.wait(60)  # the worker is inside the LLM call, held at the gate
    assert ctx.suggestions.for_documents(["zephyr.pdf"]) == [
        "What does the section on Capacity say?",
        "What does the section on Safety say?",
        "What is zephyr.pdf about?",
    ]
    assert not llm.gate.is_set()  # answered while the LLM was still writing
    llm.gate.set()
    assert ctx.suggestions.wait(60)
    assert (
        ctx.suggestions.for_documents(["zephyr.pdf"])[0] == "How many litres per minute does the Zephyr pump deliver?"
    )


def test_a_failing_llm_leaves_the_rule_questions_and_the_worker_going(make_settings, three_docs):
    llm = ScriptedLLM(condense=[RuntimeError("model crashed"), "1. What is green tea made from?"])
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    ctx.suggestions.schedule("zephyr.pdf")
    ctx.suggestions.schedule("tea.md")
    assert ctx.suggestions.wait(60)
    assert ctx.suggestions.llm_calls == 2
    assert ctx.suggestions.for_documents(["zephyr.pdf"])[0] == "What does the section on Capacity say?"
    assert ctx.suggestions.for_documents(["tea.md"])[0] == "What is green tea made from?"


# ============================================================================ follow-ups
def test_follow_ups_point_to_the_next_section_not_the_one_just_answered(make_settings, three_docs):
    llm = ScriptedLLM()
    ctx = build_context(make_settings(top_k=1), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    question = "How many litres per minute does the Zephyr pump deliver?"
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    turn = ctx.chat.ask(question)
    assert turn.sources[0]["page"] == 2
    calls = (len(llm.prompts), len(llm.chats))
    follow = ctx.suggestions.follow_ups(question, turn.answer, turn.sources)
    # Capacity (page 2) was just answered; the document itself was asked about by name.
    assert follow == ["What does the section on Safety say?"]
    assert (len(llm.prompts), len(llm.chats)) == calls  # no LLM call on the answering path


def test_follow_ups_ask_about_figures_and_tables_the_passage_mentions(ctx, tmp_path):
    make_pdf(
        [
            "Results\nFigure 3 shows the flow of the pump against the head, as Table 2 lists in full.\n"
            "The flow falls as the head rises.",
            "Maintenance Schedule\nThe seals are replaced every two years by the service team of the dealer.",
        ],
        tmp_path / "report.pdf",
    )
    ctx.ingestion.ingest_file(tmp_path / "report.pdf")
    sources = ctx.chat.retrieve("How does the flow change with the head?", top_k=1)
    assert sources[0]["page"] == 1
    follow = ctx.suggestions.follow_ups("How does the flow change with the head?", "It falls [1].", sources, n=3)
    assert follow == [
        "What does Figure 3 in report.pdf show?",
        "What does Table 2 in report.pdf show?",
        "What does the section on Maintenance Schedule say?",
    ]
    asked = "What does Figure 3 show?"
    assert "What does Figure 3 in report.pdf show?" not in ctx.suggestions.follow_ups(asked, "A curve.", sources)


def test_parse_questions_keeps_questions_without_their_numbers():
    assert parse_questions(LLM_REPLY) == [
        "How many litres per minute does the Zephyr pump deliver?",
        "What battery does the Zephyr pump run on?",
        "Why can two pumps not share one battery?",
    ]
    assert parse_questions("Sure!\nQ1: 长江有多长？\n") == ["长江有多长？"]
    assert parse_questions("The documents don't say.") == []
    several = "What is the capacity? What is the main focus of the text?\nWhat method does the paper present?"
    assert parse_questions(several) == ["What is the capacity?", "What method does the paper present?"]


# ============================================================================ never in an answer's way
class WordByWordLLM(ScriptedLLM):
    """Streams its reply a word at a time; ``on_word(k)`` runs before word k of each call."""

    def __init__(self, on_word: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.__dict__["on_word"] = on_word
        self.__dict__["started"] = []  # time.monotonic() at each call's start

    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
        self.started.append(time.monotonic())
        self._prompts.append(prompt)
        text = ""
        for k, word in enumerate(LLM_REPLY.split(" ")):
            self.on_word(k)
            text += ("" if not text else " ") + word
            yield CompletionResponse(text=text, delta=word)


def test_the_llm_writes_questions_after_a_quiet_while_and_stops_at_a_word_when_an_answer_begins(
    make_settings, three_docs
):
    """A new document's questions took the local model for ~15 s right after an upload, and the
    person's next question waited for them (first token 19 s against 13 s in the hand try)."""
    from rag_core.providers.answering import ANSWERING

    answer_began = threading.Event()
    answer_ended = threading.Event()
    calls = {"n": 0}

    def answer_meanwhile() -> None:  # a person's answer, begun while the questions are written
        with ANSWERING.hold():
            answer_began.set()
            time.sleep(0.4)
        answer_ended.set()

    def on_word(k: int) -> None:
        if k == 0:
            calls["n"] += 1
        if calls["n"] == 1 and k == 3:
            threading.Thread(target=answer_meanwhile, daemon=True).start()
            assert answer_began.wait(10)

    llm = WordByWordLLM(on_word)
    ctx = build_context(make_settings(suggest_quiet_s=0.5), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    with ANSWERING.hold():  # an answer just written
        pass
    ended = time.monotonic()
    ctx.suggestions.schedule("zephyr.pdf")
    assert ctx.suggestions.wait(60)
    assert len(llm.started) == 2 and ctx.suggestions.llm_calls == 2
    assert llm.started[0] - ended >= 0.5  # only after half a second without an answer
    assert answer_ended.is_set() and llm.started[1] >= llm.started[0] + 0.4 + 0.5  # after that answer, quiet again
    assert (
        ctx.suggestions.for_documents(["zephyr.pdf"])[0] == "How many litres per minute does the Zephyr pump deliver?"
    )


def test_questions_that_keep_giving_way_are_left_to_the_rules(make_settings, three_docs):
    from rag_core.providers.answering import ANSWERING

    def on_word(k: int) -> None:
        if k == 2:
            threading.Thread(target=lambda: _hold_briefly(ANSWERING), daemon=True).start()
            time.sleep(0.05)

    llm = WordByWordLLM(on_word)
    ctx = build_context(make_settings(suggest_quiet_s=0.1), llm=llm)
    ctx.ingestion.ingest_file(three_docs / "zephyr.pdf")
    ctx.suggestions.schedule("zephyr.pdf")
    assert ctx.suggestions.wait(60)
    assert len(llm.started) == 3  # MAX_GIVE_WAYS calls, each stopped by an answer, then no more
    assert ctx.suggestions.for_documents(["zephyr.pdf"])[:2] == [
        "What does the section on Capacity say?",
        "What does the section on Safety say?",
    ]


def _hold_briefly(gate: Any) -> None:
    with gate.hold():
        time.sleep(0.2)
