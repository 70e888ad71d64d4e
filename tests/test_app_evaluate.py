"""The Evaluate page, driven through AppTest like tests/test_app.py: extractive "LLM" (its
rule-based rewrite appends the previous user question), hashed embeddings, a data folder
under tmp_path. The questions file goes through the real ``st.file_uploader``."""

from __future__ import annotations

import json
import math

import pytest
from streamlit.testing.v1 import AppTest

from rag_core import build_context, load_settings
from tests.test_app import (
    ORION,
    VEGA,
    click,
    data_dir,  # noqa: F401 (the fixture: a fresh data folder, extractive, hash)
    open_app,
    seed,
    texts,
)
from ui.markdown import escape_markdown

PAGE = "app_pages/evaluate.py"
pytestmark = pytest.mark.usefixtures("data_dir")

QUESTIONS = [
    {
        "id": "q1",
        "question": "Where did the Orion project launch?",
        "gold_files": ["orion.md"],
        "gold_answer": "Lisbon",
    },
    {"id": "q2", "question": "Where does the Vega telescope stand?", "gold_files": ["vega.txt"]},
    {  # raw, "launched" is only in orion.md; the rewrites name Vega
        "id": "q3",
        "question": "When was it launched?",
        "history": ["Where does the Vega telescope stand?", "In the Atacama desert in Chile."],
        "gold_rewrite": "When was the Vega telescope launched?",
        "gold_files": ["vega.txt"],
    },
]


def jsonl(rows: list[dict], name: str = "questions.jsonl") -> tuple[str, bytes, str]:
    return name, "".join(json.dumps(r) + "\n" for r in rows).encode(), "application/octet-stream"


def upload_questions(at: AppTest, file: tuple[str, bytes, str]) -> AppTest:
    at.file_uploader(key="eval_questions_file").set_value(file).run()
    assert not at.exception, at.exception
    return at


def table(at: AppTest) -> dict[str, dict[str, float]]:
    """The result table as {mode: {column: value}}."""
    frame = at.dataframe[0].value
    return {row["mode"]: {c: row[c] for c in frame.columns if c != "mode"} for _, row in frame.iterrows()}


def test_evaluate_page_measures_the_indexed_documents() -> None:
    seed(ORION, VEGA)
    at = upload_questions(open_app(PAGE), jsonl(QUESTIONS))
    assert texts(at.title) == ["📏 Evaluate"]
    assert not at.error
    assert "3 question(s): 3 with gold files, 1 follow-up(s)" in " ".join(texts(at.caption))
    assert any("condensed calls the LLM once per follow-up (1 here)" in w for w in texts(at.warning))
    assert at.number_input(key="eval_k").value == 5
    assert at.multiselect(key="eval_modes").value == ["raw", "condensed", "gold"]

    at = click(at, "eval_run")
    assert not at.error
    assert len(at.get("progress")) == 1
    got = table(at)
    assert list(got) == ["raw", "condensed", "gold"]
    # Only the columns some mode has: no page figures (no gold_pages), no unanswerable questions.
    assert list(got["raw"]) == [
        "recall@5",
        "MRR",
        "coverage",
        "answer recall",
        "rewrite F1",
        "false refusals",
    ]
    # Two documents, k = 5: every search returns both, so recall is 1 everywhere. Raw, q3's
    # "launched" puts orion.md first and vega.txt second: MRR (1 + 1 + 1/2) / 3.
    assert [got[m]["recall@5"] for m in got] == [1.0, 1.0, 1.0]
    assert got["raw"]["MRR"] == pytest.approx(round(2.5 / 3, 4))
    assert got["condensed"]["MRR"] == 1.0 and got["gold"]["MRR"] == 1.0
    assert [got[m]["answer recall"] for m in got] == [1.0, 1.0, 1.0]  # "Lisbon" is in orion.md
    assert [got[m]["false refusals"] for m in got] == [0.0, 0.0, 0.0]
    # The extractive rewrite is "When was it launched? (Where does the Vega telescope stand?)":
    # 9 tokens against the gold's 5 (articles dropped), all 5 shared: F1 = 2 * 5/9 * 1 / (5/9 + 1) = 10/14.
    assert got["condensed"]["rewrite F1"] == pytest.approx(round(10 / 14, 4))
    assert math.isnan(got["raw"]["rewrite F1"]) and math.isnan(got["gold"]["rewrite F1"])  # condensed only
    assert escape_markdown("3 question(s) from questions.jsonl, k = 5") in " ".join(texts(at.caption))
    assert "eval_details" in [b.key for b in at.get("download_button")]
    details = at.session_state["eval_result"]["details"]
    assert [d["id"] for d in details] == ["q1", "q2", "q3"]
    assert details[2]["raw"]["files"] == ["orion.md", "vega.txt"]
    assert "Vega" in details[2]["condensed"]["query"]

    before = at.dataframe[0].value
    at.run()  # a rerun (any click) keeps the result
    assert at.dataframe[0].value.equals(before)

    at.number_input(key="eval_k").set_value(1)  # only the first source counts: raw misses q3
    at.multiselect(key="eval_modes").set_value(["raw", "gold"])
    at = click(at, "eval_run")
    got = table(at)
    assert list(got) == ["raw", "gold"] and "rewrite F1" not in got["raw"]
    assert got["raw"]["recall@1"] == pytest.approx(round(2 / 3, 4))
    assert got["gold"]["recall@1"] == 1.0
    assert all(not m.allow_html for m in at.markdown)


def test_the_answer_mode_asks_the_chat_and_shows_answer_accuracy() -> None:
    seed(ORION, VEGA)
    rows = [
        {
            "id": "a1",
            "question": "How many euros was the Orion budget?",
            "gold_files": ["orion.md"],
            "gold_answer": "4 million euros",
        },
        {
            "id": "a2",
            "question": "How many engineers built it, the Vega telescope?",
            "gold_files": ["vega.txt"],
            "gold_answer": "41",
        },  # the document says 40: a wrong gold answer must score as wrong
    ]
    at = upload_questions(open_app(PAGE), jsonl(rows))
    assert "answer" in at.multiselect(key="eval_modes").options
    at.multiselect(key="eval_modes").set_value(["raw", "answer"]).run()
    assert any("answer asks the model once per question (2 here)" in w for w in texts(at.warning))
    at = click(at, "eval_run")
    assert not at.error
    got = table(at)
    assert list(got) == ["raw", "answer"]
    # the extractive provider answers with the best sentence: "4 million euros" is in it, "41" is not
    assert got["answer"]["answer accuracy"] == 0.5
    assert math.isnan(got["raw"]["answer accuracy"])  # the retrieval modes generate no answer
    answers = [d["answer"]["answer"] for d in at.session_state["eval_result"]["details"]]
    assert "4 million euros" in answers[0] and "vega.txt" in answers[1]
    # the trust table, as `eval` prints it: one row per slice, the five outcomes counted
    trust = at.dataframe[1].value.set_index("questions")
    assert trust.loc["all", "scored"] == 2 and trust.loc["all", "right"] == 1
    assert trust.loc["all", "wrong but marked"] + trust.loc["all", "wrong and unmarked"] == 1
    assert trust.loc["figure questions", "scored"] == 2


def test_limit_and_gold_files_that_are_not_indexed() -> None:
    seed(ORION, VEGA)
    rows = [*QUESTIONS, {"question": "What is in the annex?", "gold_files": ["annex.pdf"]}]
    at = upload_questions(open_app(PAGE), jsonl(rows))
    [warning] = [w for w in texts(at.warning) if "Not indexed here" in w]
    assert "annex.pdf" in warning and "orion.md" not in warning
    at.number_input(key="eval_limit").set_value(2)
    at.multiselect(key="eval_modes").set_value(["raw"])
    at = click(at, "eval_run")
    assert at.session_state["eval_result"]["result"]["n"] == 2
    assert table(at)["raw"]["recall@5"] == 1.0


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        (("bad.jsonl", b'{"question": "Where?", "gold_files": ["orion.md"]}\nnot json\n', "text/plain"), "not JSON"),
        (("bad.jsonl", b'{"question": "Where?"}\n{"gold_files": ["orion.md"]}\n', "text/plain"), "non-empty"),
        (("bad.jsonl", b'{"question": "Where?", "history": "hello"}\n', "text/plain"), "must be a list of strings"),
        (("bad.jsonl", b"\n  \n", "text/plain"), "no questions"),
        (("bad.jsonl", b'{"question": "O\xf9?"}\n', "text/plain"), "not UTF-8"),
        (("bad.jsonl", b'{"question": "Where?", "gold_files": "orion.md"}\n', "text/plain"), "list of file names"),
        (("bad.jsonl", b'{"question": "Where?", "gold_pages": "12"}\n', "text/plain"), "list of page numbers"),
    ],
)
def test_a_malformed_questions_file_says_what_is_wrong(file: tuple, reason: str) -> None:
    seed(ORION)
    at = upload_questions(open_app(PAGE), file)
    [error] = texts(at.error)
    assert reason in error and "bad.jsonl" in error
    if reason in ("not JSON", "non-empty"):
        assert escape_markdown("bad.jsonl:2") in error  # the line at fault
    assert at.button(key="eval_run").disabled
    assert not at.dataframe

    at = upload_questions(at, jsonl(QUESTIONS[:1]))  # a good file: the error goes, the run works
    assert not at.error
    at = click(at, "eval_run")
    assert table(at)["raw"]["recall@5"] == 1.0


def test_without_documents_the_page_points_to_upload() -> None:
    at = open_app(PAGE)
    assert texts(at.title) == ["📏 Evaluate"]
    assert "📏 Evaluate" not in texts(open_app().title)  # a page of its own, not the default
    assert any("No document is indexed yet" in i for i in texts(at.info))
    assert at.page_link[-1].proto.page.endswith("upload")
    assert not at.file_uploader and "eval_run" not in [b.key for b in at.button]
    assert build_context(load_settings()).ingestion.documents() == []
