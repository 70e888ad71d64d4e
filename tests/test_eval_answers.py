"""Scoring answers (rag_core.evaluation.answers) and the answer mode of run_eval."""

from __future__ import annotations

import pytest

from rag_core import build_context
from rag_core.evaluation import format_table, run_eval
from rag_core.evaluation.answers import answer_correct, cites_page, figures, refused


@pytest.mark.parametrize(
    "answer",
    [
        "Total net sales were $82,959 million.",
        "Total net sales were 82959.",
        "Total net sales were $82.96 billion for the quarter.",
        "about 82,959 (in millions)",
        "82 959",  # no: a space is not a thousands separator here
    ],
)
def test_one_figure_in_any_format(answer):
    expected = answer != "82 959"
    assert answer_correct(answer, "$82,959 million") is expected
    assert answer_correct(answer, "82,959") is expected


def test_precision_and_scale_are_respected():
    assert answer_correct("Net sales were $83.0 billion.", "$82,959 million")  # 82,950-83,050: 82,959 is in
    assert not answer_correct("Net sales were $83.1 billion.", "$82,959 million")
    assert not answer_correct("Net sales were $83 billion.", "$82,959 million")  # too rough: 82.5-83.5 billion
    assert not answer_correct("Net sales were $81.4 billion.", "$82,959 million")
    assert not answer_correct("Net sales were $82,959 thousand.", "$82,959 million")
    assert answer_correct("The effective tax rate was 12.5%.", "12.5%")
    assert not answer_correct("The effective tax rate was 21%.", "12.5%")


def test_every_gold_figure_must_be_there_and_years_do_not_count():
    gold = "Operating expenses for Q1 2023 were $14,316 million and net sales $117,154 million."
    assert answer_correct("Expenses: $14.3 billion; sales: $117,154 million (2023).", gold)
    assert not answer_correct("Expenses were $14,316 million.", gold)
    assert [f.value for f in figures("In 2023 it sold 3 units for $1.2b")] == [2023.0, 3.0, 1.2e9]


def test_a_gold_answer_without_figures_is_a_span():
    assert answer_correct("The lawsuit was filed by Epic Games, Inc.", "Epic Games")
    assert not answer_correct("The lawsuit was filed by a competitor.", "Epic Games")


def test_refusals_and_cited_pages():
    assert refused("The documents don't say what Tesla's revenue was.")
    assert refused("The documents do not cover Tesla.")
    assert not refused("Tesla's revenue was $23.4 billion.")
    sources = [{"file": "a.pdf", "page": 3}, {"file": "a.pdf", "page": 7}, {"file": "b.pdf", "page": 7}]
    assert cites_page("It was 5 [2].", sources, ["a.pdf"], [7])
    assert not cites_page("It was 5 [1][3].", sources, ["a.pdf"], [7])
    assert cites_page("It was 5.", sources, ["a.pdf"], [7])  # no markers: every source counts as cited


def test_answer_mode_asks_through_the_chat_and_scores(make_settings, llm, three_docs):
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    questions = [
        {
            "id": "flow",
            "question": "How many litres per minute does the Zephyr pump deliver?",
            "gold_files": ["zephyr.pdf"],
            "gold_pages": [2],
            "gold_answer": "42 litres per minute",
        },
        {"id": "off", "question": "What was Tesla's revenue?", "answerable": False},
    ]
    llm.script(answers=["It delivers 42 litres per minute [1].", "The documents don't say."])
    details: list[dict] = []
    result = run_eval(ctx, questions, k=3, modes=["answer"], details=details)
    figures_ = result["modes"]["answer"]
    assert figures_["answer_accuracy"] == 1.0 and figures_["citation_page"] == 1.0
    assert figures_["refusal_rate"] == 1.0 and figures_["false_refusal_rate"] == 0.0
    assert details[0]["answer"]["answer"] == "It delivers 42 litres per minute [1]."
    # the answerable question went through the chat's path to the model; "Tesla", which no
    # document names, is refused before the model is asked
    assert len(llm.chats) == 1 and "Zephyr" in str(llm.chats[0][-1].content)
    assert details[1]["answer"]["refused_answer"] is True and "Tesla" in details[1]["answer"]["answer"]
    # the trust table counts the answerable question only: right, its page among the sources
    trust = figures_["trust"]["all"]
    assert (trust["n"], trust["right"], trust["refused"], trust["page_in_sources"]) == (1, 1, 0, 1.0)
    assert details[0]["answer"]["trust"] == "right" and "trust table" in format_table(result)
