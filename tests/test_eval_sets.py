"""The shared evaluation sets converted for ``eval`` (``python -m rag_core eval-set``:
``rag_core/evaluation/sets.py``, ``rag_core/evaluation/sec10q.py``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.evaluation import load_questions, sec10q
from rag_core.evaluation.sec10q import convert_sec10q, figure_questions
from rag_core.evaluation.sets import CAST_TURNS, CMRC_DEV, convert_cast, convert_cmrc
from tests.pdfgen import make_pdf


def test_convert_cast_writes_passages_questions_and_held_out_topics(tmp_path):
    shared = tmp_path / "eval"
    p1, p2 = "Ductal carcinoma is the most common type.", "Lobular carcinoma spreads in 20% of cases."
    rows = [
        {
            "source": "cast2021",
            "topic": 106,
            "turn": 1,
            "history": [],
            "question": "Most common types?",
            "gold_rewrite": "Most common types of breast cancer?",
            "gold_passage_id": "MARCO_D1-7",
            "gold_passage": p1,
        },
        {
            "source": "cast2021",
            "topic": 106,
            "turn": 2,
            "history": ["Most common types?", p1],
            "question": "How likely is it to spread?",
            "gold_rewrite": "How likely is lobular carcinoma to spread?",
            "gold_passage_id": "MARCO_D2-1",
            "gold_passage": p2,
        },
        {
            "source": "cast2022",
            "topic": 132,
            "turn": "1-1",
            "history": [],
            "question": "What was COP26 about?",
            "gold_rewrite": "What was COP26 about?",
            "gold_response": "A UN climate summit.",
            "gold_provenance_ids": ["MARCO_00_1-5"],
        },
        {
            "source": "cast2022",
            "topic": 132,
            "turn": "1-1",
            "history": [],
            "question": "What was COP26 about?",
            "gold_rewrite": "What was COP26 about?",
            "gold_response": "A UN climate summit.",
            "gold_provenance_ids": ["MARCO_00_1-5"],
        },  # flattened trees repeat turns
        {
            "source": "cast2022",
            "topic": 133,
            "turn": "1-1",
            "history": [],
            "question": "Best pizza dough?",
            "gold_rewrite": "What is the best pizza dough?",
            "gold_response": "Use 00 flour.",
        },
    ]
    _write_jsonl(shared / CAST_TURNS, rows)
    stats = convert_cast(shared, tmp_path / "out", holdout_topics=1)
    assert stats == {"files": 3, "questions": 3, "unanswerable": 1, "topics": 2}
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "corpus").iterdir()) == [
        "MARCO_D1-7.txt",
        "MARCO_D2-1.txt",
        "cast2022_132_1-1.txt",
    ]
    qs = load_questions(out / "questions.jsonl")
    # whole conversations, the years alternating
    assert [q.id for q in qs] == ["cast2021_106_1", "cast2021_106_2", "cast2022_132_1-1"]
    assert qs[1].history == ["Most common types?", p1] and qs[1].gold_files == ["MARCO_D2-1.txt"]
    assert qs[1].gold_rewrite == "How likely is lobular carcinoma to spread?"
    (off,) = load_questions(out / "unanswerable.jsonl")
    assert off.question == "What is the best pizza dough?" and off.answerable is False


def test_convert_sec10q_resolves_globs_and_repairs_mojibake(tmp_path):
    shared = tmp_path / "eval"
    docs = shared / sec10q.DOCS
    docs.mkdir(parents=True)
    for name in ("2023 Q3 AAPL.pdf", "2023 Q2 AAPL.pdf", "2023 Q3 MSFT.pdf"):
        (docs / name).write_bytes(b"%PDF-1.4")
    with (shared / sec10q.CSV).open("w", encoding="utf-8-sig", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer"])
        w.writerow(
            ["What was Appleâ€™s gross margin?", "*2023 Q3 AAPL*", "Single-Doc Single-Chunk RAG", "Table", "44.5%"]
        )
        w.writerow(["How has Microsoft's revenue changed?", "*MSFT*", "Multi-Doc RAG", "Text", "Up."])
        w.writerow(["Which company grew faster?", "*AAPL*", "Multi-Doc RAG", "Text", "Apple."])
    stats = convert_sec10q(shared, tmp_path / "out")
    assert stats["questions"] == 3 and stats["unmatched_rows"] == []
    qs = load_questions(tmp_path / "out" / "questions.jsonl")
    assert qs[0].question == "What was Apple’s gross margin?" and qs[0].gold_files == ["2023 Q3 AAPL.pdf"]
    assert qs[2].gold_files == ["2023 Q2 AAPL.pdf", "2023 Q3 AAPL.pdf"]
    off = load_questions(tmp_path / "out" / "unanswerable.jsonl")
    assert [q.question for q in off] == ["What was Tesla’s gross margin?", "How has Pfizer's revenue changed?"]
    assert (tmp_path / "out" / "corpus").resolve() == docs.resolve()


def test_convert_cmrc_writes_paragraph_files_round_robin(tmp_path):
    shared = tmp_path / "eval"
    data = {
        "version": "v1.0",
        "data": [
            {
                "id": f"DEV_{i}",
                "title": f"标题{i}",
                "paragraphs": [
                    {
                        "id": f"DEV_{i}",
                        "context": f"第{i}段的内容。",
                        "qas": [
                            {
                                "id": f"DEV_{i}_QUERY_{j}",
                                "question": f"标题{i}的问题{j}？",
                                "answers": [{"text": f"答案{i}{j}", "answer_start": 0}] * 3,
                            }
                            for j in range(2)
                        ],
                    }
                ],
            }
            for i in range(3)
        ],
    }
    (shared / "cmrc2018").mkdir(parents=True)
    (shared / CMRC_DEV).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    stats = convert_cmrc(shared, tmp_path / "out", holdout=1)
    assert stats == {"files": 2, "questions": 4, "unanswerable": 2, "followups": 2, "standalone": 1}
    assert (tmp_path / "out" / "corpus" / "DEV_0.txt").read_text(encoding="utf-8") == "标题0\n\n第0段的内容。\n"
    qs = load_questions(tmp_path / "out" / "questions.jsonl")
    assert [q.id for q in qs] == ["DEV_0_QUERY_0", "DEV_1_QUERY_0", "DEV_0_QUERY_1", "DEV_1_QUERY_1"]
    assert qs[1].gold_files == ["DEV_1.txt"] and qs[1].gold_answer == "答案10"
    assert all(not q.answerable for q in load_questions(tmp_path / "out" / "unanswerable.jsonl"))
    follow = load_questions(tmp_path / "out" / "followups.jsonl")[0]
    assert follow.question == "它的问题1？" and follow.gold_rewrite == "标题0的问题1？"
    assert follow.history == ["标题0的问题0？", "答案00"] and follow.gold_files == ["DEV_0.txt"]
    (same,) = load_questions(tmp_path / "out" / "standalone.jsonl")
    assert same.question == same.gold_rewrite == "标题1的问题0？" and same.history == ["标题0的问题0？", "答案00"]
    mtime = (tmp_path / "out" / "corpus" / "DEV_0.txt").stat().st_mtime_ns
    convert_cmrc(shared, tmp_path / "out", holdout=1)  # unchanged files keep their mtime (cache key)
    assert (tmp_path / "out" / "corpus" / "DEV_0.txt").stat().st_mtime_ns == mtime


@pytest.mark.shared
def test_converters_on_the_shared_sets(shared_data, tmp_path):
    ev = shared_data / "eval"
    cast = convert_cast(ev, tmp_path / "cast")
    assert cast["questions"] > 300 and cast["files"] > 300 and cast["unanswerable"] > 20
    sec = convert_sec10q(ev, tmp_path / "sec")
    assert sec["questions"] == 195 and sec["files"] == 20 and not sec["unmatched_rows"]
    assert not any("â€" in q.question for q in load_questions(tmp_path / "sec" / "questions.jsonl"))
    cmrc = convert_cmrc(ev, tmp_path / "cmrc")
    assert cmrc["files"] == 800 and cmrc["questions"] > 2900
    names = {p.name for p in (tmp_path / "cmrc" / "corpus").iterdir()}
    assert all(set(q.gold_files) <= names for q in load_questions(tmp_path / "cmrc" / "questions.jsonl"))


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


PAGES = [
    "Condensed Consolidated Statements of Operations (in millions) Total net sales 82,959 83,360",
    "Management's discussion. Net sales were $82,959 million, down 1%. Services 19,604.",
    "Cash flows: operating activities 98,024. Repurchases of common stock 21,865.",
]


def q(id_, answer, files=("10q.pdf",)):
    return {"id": id_, "question": "?", "gold_files": list(files), "reference_answer": answer}


def test_figures_are_located_on_their_pages_and_ambiguous_questions_dropped(tmp_path):
    make_pdf(PAGES, tmp_path / "10q.pdf")
    questions = [
        q("sales", "Total net sales for the quarter ended June 25, 2022 were $82,959 million. SOURCE(S): 10q.pdf"),
        q("cash", "Cash generated by operating activities was $98.024 billion in 2022."),
        q("two", "Services were $19,604 million and repurchases $21,865 million."),  # on different pages
        q("prose", "Apple did not disclose any change to its accounting policies."),
        q("many", "It was $1,000 million, $2,000 million and $3,000 million."),
        q("multi", "Net sales were $82,959 million.", files=("10q.pdf", "other.pdf")),
    ]
    kept, why = figure_questions(questions, tmp_path)
    by_id = {k["id"]: k for k in kept}
    assert by_id["sales"]["gold_pages"] == [1, 2] and by_id["sales"]["gold_answer"] == "$82,959 million"
    assert by_id["cash"]["gold_pages"] == [3]
    assert set(by_id) == {"sales", "cash"}
    assert why == {
        "several filings": 1,
        "no figure": 1,
        "too many figures": 1,
        "figure on no page": 1,
        "figure on too many pages": 0,
        "kept": 2,
    }


def test_eval_set_command_converts_and_says_what_to_run(tmp_path, capsys):
    shared = tmp_path / "eval"
    data = {"data": [{"id": "A", "title": "T", "paragraphs": [{"id": "P1", "context": "C", "qas": []}]}]}
    (shared / CMRC_DEV).parent.mkdir(parents=True)
    (shared / CMRC_DEV).write_text(json.dumps(data), encoding="utf-8")
    assert main(["eval-set", "cmrc", str(shared), str(tmp_path / "out"), "--holdout", "0"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.err.strip().splitlines()[-1])["files"] == 1
    assert out.out.startswith("python -m rag_core eval --corpus ")
    assert (tmp_path / "out" / "corpus" / "P1.txt").read_text(encoding="utf-8") == "T\n\nC\n"
    assert main(["eval-set", "cast", str(shared), str(tmp_path / "cast")]) == 2  # no CAsT file: said, no traceback
    assert "not found: give the shared eval folder" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted((Path(__file__).parent / "data").glob("*.jsonl")), ids=lambda p: p.name)
def test_the_question_sets_written_for_docent_load(path):
    """The sets of tests/data that docs/evaluation.md runs `eval` on are valid question files."""
    questions = load_questions(path)
    assert questions and all(q.question for q in questions)
    assert all(name.endswith(".pdf") for q in questions for name in q.gold_files)
