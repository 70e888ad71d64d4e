"""Evaluation (rag_core.evaluation), the retrieval switches it measures, and the converters
of the shared evaluation sets. Hash embedding and a scripted LLM: fast and deterministic."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rag_core.cli import main as cli_main
from rag_core.evaluation import (
    EvalQuestion,
    corpus_key,
    f1_tokens,
    load_questions,
    prepare_corpus,
    run_eval,
    score_sources,
    summarise,
    token_f1,
)

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
sys.path.insert(0, str(SCRIPTS))


# ---------------------------------------------------------------------------- metrics
def test_token_f1_is_squad_style_and_handles_chinese():
    # pred 7 tokens, gold 6, 5 shared: P=5/7, R=5/6, F1=50/65
    assert token_f1("How likely is lobular carcinoma to spread?", "how likely is it to spread") == pytest.approx(
        50 / 65
    )
    assert f1_tokens("The Zephyr's pump, a unit.") == ["zephyr", "s", "pump", "unit"]
    assert token_f1("熊猫吃什么", "熊猫吃竹子") == pytest.approx(0.6)  # 3 of 5 characters each way
    assert token_f1("same words", "Same words!") == 1.0
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0


def _q(**kw):
    return EvalQuestion.from_json({"question": "q", **kw})


def test_recall_mrr_page_and_coverage_by_hand():
    qs = [
        _q(gold_files=["a.pdf"], gold_pages=[2]),
        _q(gold_files=["b.txt", "c.txt"]),
        _q(gold_files=["d.txt"]),
        _q(answerable=False),
    ]
    searches = [
        [{"file": "a.pdf", "page": 1}, {"file": "a.pdf", "page": 2}],  # file rank 1, page rank 2
        [{"file": "x.txt"}, {"file": "y.txt"}, {"file": "sub/c.txt"}],  # rank 3, one of two gold files
        [{"file": "x.txt"}] * 5 + [{"file": "d.txt"}],  # beyond k=5: a miss
        [],  # refused, as it should
    ]
    rows = [score_sources(q, s, k=5) for q, s in zip(qs, searches, strict=True)]
    assert [r["file_rank"] for r in rows[:3]] == [1, 3, None]
    got = summarise(rows, qs)
    assert got["n"] == 3
    assert got["recall"] == pytest.approx(round(2 / 3, 4))
    assert got["mrr"] == pytest.approx(round((1 + 1 / 3 + 0) / 3, 4))
    assert got["coverage"] == pytest.approx(round((1 + 0.5 + 0) / 3, 4))
    assert got["page_recall"] == 1.0 and got["page_mrr"] == 0.5
    assert got["false_refusals"] == 0.0 and got["correct_refusals"] == 1.0 and got["n_unanswerable"] == 1


def test_answer_recall_only_counts_short_span_answers():
    q = _q(gold_files=["a.txt"], gold_answer="42 litres")
    long = _q(gold_files=["a.txt"], gold_answer="x" * 500)
    src = [{"file": "a.txt", "text": "It delivers 42\nlitres per minute."}]
    assert score_sources(q, src, 5)["answer_found"] is True  # whitespace-insensitive
    assert "answer_found" not in score_sources(long, src, 5)


def test_questions_file_is_validated(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text('{"id": "1", "question": "Hi?", "history": ["a", "b"], "gold_pages": ["3"]}\n\n')
    (q,) = load_questions(p)
    assert q.history_pairs() == [("user", "a"), ("assistant", "b")] and q.gold_pages == [3]
    p.write_text('{"question": "x", "history": "not a list"}\n')
    with pytest.raises(Exception, match="history"):
        load_questions(p)


# ---------------------------------------------------------------------------- end to end
QUESTIONS = [
    {
        "id": "cap",
        "question": "How many litres per minute does the Zephyr pump deliver?",
        "gold_files": ["zephyr.pdf"],
        "gold_pages": [2],
        "gold_answer": "42 litres per minute",
    },
    {
        "id": "follow",
        "question": "And what is the reason?",
        "history": ["How much current does one Zephyr pump draw?", "Each pump draws 8 amperes."],
        "gold_rewrite": "Why can't two Zephyr pumps share one battery?",
        "gold_files": ["zephyr.pdf"],
        "gold_pages": [3],
    },
    {"id": "banana", "question": "What colour are bananas?", "gold_files": ["bananas.txt"]},
    {"id": "off", "question": "Who won the 1998 football world cup final?", "answerable": False},
]


def test_run_eval_measures_each_mode_with_the_engine_rewrite(make_settings, llm, three_docs):
    ctx = prepare_corpus(make_settings(), three_docs, llm=llm)
    llm.script(condense=["Why can't two Zephyr pumps share one battery?"])
    details: list[dict] = []
    result = run_eval(ctx, QUESTIONS, k=1, modes=["raw", "condensed", "gold"], details=details)
    assert result["n"] == 4 and result["k"] == 1
    # the rewrite and the gold rewrite find page 3
    assert details[1]["condensed"]["page_rank"] == 1 and details[1]["gold"]["page_rank"] == 1
    assert len(llm.prompts) == 1  # one condense call: only the follow-up has history
    assert "Each pump draws 8 amperes." in llm.prompts[0] and "And what is the reason?" in llm.prompts[0]
    condensed = result["modes"]["condensed"]
    assert condensed["rewrite_f1"] == 1.0
    assert condensed["page_recall"] == 1.0 and condensed["recall"] == 1.0
    assert details[1]["condensed"]["files"] == ["zephyr.pdf"]
    assert result["modes"]["raw"]["answer_recall"] == 1.0
    assert result["modes"]["gold"]["n_unanswerable"] == 1


def test_limit_and_unknown_mode(ctx, three_docs):
    ctx.ingestion.ingest_paths([three_docs])
    assert run_eval(ctx, QUESTIONS, k=2, modes=["raw"], limit=1)["modes"]["raw"]["n"] == 1
    with pytest.raises(Exception, match="Unknown mode"):
        run_eval(ctx, QUESTIONS, modes=["nope"])


def _cli(capsys, *args):
    code = cli_main(["eval", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli_env(monkeypatch, tmp_path, three_docs):
    monkeypatch.setenv("DOCENT_EMBED_PROVIDER", "hash")
    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "extractive")
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return three_docs, qfile


def test_cli_json_last_line_is_the_result_and_runs_are_reproducible(capsys, cli_env):
    three_docs, qfile = cli_env
    code, out, err = _cli(capsys, "--corpus", three_docs, "--questions", qfile, "--k", 3, "--json")
    assert code == 0
    first = json.loads(out.strip().splitlines()[-1])
    assert set(first) >= {"n", "k", "modes"} and first["k"] == 3
    assert set(first["modes"]) == {"raw", "condensed", "gold"}
    assert {"recall", "mrr", "page_recall"} <= set(first["modes"]["gold"])
    assert "rewrite_f1" in first["modes"]["condensed"]
    assert "indexing" in err and "[4/4]" in err  # progress on stderr
    code, out, err = _cli(capsys, "--corpus", three_docs, "--questions", qfile, "--k", 3, "--json")
    assert "already indexed" in err  # the cached index was reused
    second = json.loads(out.strip().splitlines()[-1])
    assert second["modes"] == first["modes"]


def test_cli_limit_modes_and_settings_override(capsys, cli_env, tmp_path):
    three_docs, qfile = cli_env
    details = tmp_path / "details.jsonl"
    _code, out, _ = _cli(
        capsys,
        "--corpus",
        three_docs,
        "--questions",
        qfile,
        "--limit",
        2,
        "--modes",
        "raw",
        "--set",
        "retrieval_mode=vector",
        "--details",
        details,
        "--json",
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert result["n"] == 2 and list(result["modes"]) == ["raw"]
    assert result["settings"]["retrieval_mode"] == "vector"
    assert len(details.read_text().splitlines()) == 2
    assert _cli(capsys, "--corpus", three_docs, "--questions", qfile, "--set", "nonsense=1")[0] == 2


def test_corpus_cache_key_follows_files_and_chunking(make_settings, three_docs):
    s = make_settings()
    key = corpus_key(three_docs, s)
    assert corpus_key(three_docs, s) == key
    assert corpus_key(three_docs, make_settings(chunk_size=128)) != key
    assert corpus_key(three_docs, make_settings(top_k=9)) == key  # retrieval settings don't re-index
    (three_docs / "new.txt").write_text("another file")
    assert corpus_key(three_docs, s) != key


# ---------------------------------------------------------------------------- retrieval switches
def test_a_rewrite_that_echoes_a_prompt_example_is_discarded():
    from rag_core.chat import clean_condensed

    # seen with the local 1.5B model: an unrelated question "rewritten" as an example's answer
    assert clean_condensed("What is the capital of Australia?", "锣鼓经是什么？") == "锣鼓经是什么？"
    assert clean_condensed("What is the capital of Australia?", "What is the capital of Australia?") == (
        "What is the capital of Australia?"
    )
    assert clean_condensed("Standalone question: How much does each Zephyr pump draw?", "x") == (
        "How much does each Zephyr pump draw?"
    )


# ---------------------------------------------------------------------------- converters
