"""The trust table: right, right but marked, wrong but marked, wrong and unmarked, refused;
scored without a model (``rag_core.evaluation.trust``), and FinanceBench read as a set split by
company into a tune half and a held-out half (``rag_core.evaluation.financebench``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.errors import ConfigError
from rag_core.evaluation import EvalQuestion
from rag_core.evaluation.financebench import HELD_OUT, TUNE, is_financebench, load_financebench
from rag_core.evaluation.trust import format_trust, judge, stance, trust_row, trust_table

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "eval" / "financebench"


@pytest.mark.parametrize(
    ("answer", "gold", "right"),
    [
        ("Capital expenditure was $1,577 million [1].", "$1577.00", True),  # the question's millions
        ("Net PP&E was $8,738 million [1].", "$8.70", True),  # "$8.70" is the set's format for 8.7
        ("Net PP&E was $8.9 billion [1].", "$8.70", False),
        ("The ratio is 24.26 [1].", "24.26", True),
        ("The ratio is 24.1 [1].", "24.26", False),
        ("ROA = 0.0134 [1].", "0.01", True),  # rounds to the gold's two decimals
        ("ROA was 1.3% [1].", "0.01", True),  # a ratio written as a percentage
        ("No. Working capital was -$1,561 million [1].", "No, it had negative working capital of -$1561M.", True),
        ("Yes. Working capital was -$1,561 million [1].", "No, it had negative working capital of -$1561M.", False),
        ("The largest liability was customer deposits [1].", "Customer deposits", True),
        ("The largest liability was long-term debt [1].", "Customer deposits", False),
        ("It fell from 24.6% in 2021 to 21.6% in 2022 [1].", "From 24.6% in FY 2021 to 21.6% in FY 2022.", True),
        ("It fell to 21.6% in 2022 [1].", "From 24.6% in FY 2021 to 21.6% in FY 2022.", False),
        # a margin's change as analysts write it: points of a percentage are a percentage
        ("The margin fell 1.74 percentage points [1].", "Operating margin has decreased by 1.7%", True),
        ("The margin fell 2.5 pp [1].", "Operating margin has decreased by 2.5%", True),
        ("The margin fell 1.74 percentage points [1].", "Operating margin has decreased by 1.9%", False),
    ],
)
def test_a_gold_figure_is_said_within_its_rounding_and_a_stance_must_match(answer, gold, right):
    assert judge(answer, gold) is right


def test_a_long_gold_without_figures_or_stance_is_not_scored():
    gold = "Operating margin decreased mainly due to one-off litigation charges and the exit of some product lines"
    assert judge("Margins fell.", gold) is None and trust_row("Margins fell.", gold, marked=False) is None


def test_the_five_rows():
    assert trust_row("It was $1,577 million [1].", "$1577.00", marked=False) == "right"
    assert trust_row("It was $1,577 million [1].", "$1577.00", marked=True) == "right_marked"
    assert trust_row("It was $1,377 million [1].", "$1577.00", marked=True) == "wrong_marked"
    assert trust_row("It was $1,377 million [1].", "$1577.00", marked=False) == "wrong_unmarked"
    assert trust_row("The documents don't say.", "$1577.00", marked=False) == "refused"
    assert stance("**No**, it did not.") == "no" and stance("It did.") is None


def test_the_table_per_group_and_kind():
    qs = [
        EvalQuestion(question="a", gold_answer="$1577.00", gold_pages=[3], group="tune", kind="metrics"),
        EvalQuestion(question="b", gold_answer="Customer deposits", gold_pages=[4], group="held-out", kind="novel"),
        EvalQuestion(question="c", answerable=False),
    ]
    rows = [{"trust": "right", "page_rank": 1}, {"trust": "refused", "page_rank": None}, {"trust": "refused"}]
    table = trust_table(rows, qs)
    assert table["all"]["n"] == 2 and table["all"]["right"] == 1 and table["all"]["refused"] == 1
    assert table["all"]["figure_questions"] == 1 and table["all"]["figure_right"] == 1
    assert table["all"]["page_in_sources"] == 0.5
    assert table["by_group"]["tune"]["right"] == 1 and table["by_group"]["held-out"]["refused"] == 1
    assert set(table["by_kind"]) == {"metrics", "novel"}
    text = format_trust(table)
    assert "tune" in text and "held-out" in text and "figure questions" in text


def test_financebench_split_by_company_from_a_folder_shaped_like_the_set(tmp_path):
    rec = {
        "financebench_id": "fb1",
        "company": "3M",
        "doc_name": "3M_2018_10K",
        "question_type": "metrics-generated",
        "question": "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
        "answer": "$1577.00",
        "evidence": [{"evidence_text": "…", "doc_name": "3M_2018_10K", "evidence_page_num": 59}],
    }
    other = rec | {"financebench_id": "fb2", "company": "Walmart", "doc_name": "WALMART_2018_10K"}
    (tmp_path / "financebench_dev.jsonl").write_text("\n".join(json.dumps(r) for r in (rec, other)) + "\n")
    docs = [{"doc_name": "3M_2018_10K", "company": "3M"}, {"doc_name": "3M_2022_10K", "company": "3M"}]
    (tmp_path / "document_information.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    assert is_financebench(tmp_path) and not is_financebench(tmp_path / "financebench_dev.jsonl")
    qs = load_financebench(tmp_path)
    assert [q.group for q in qs] == ["tune", "held-out"]
    assert qs[0].gold_pages == [60] and qs[0].gold_files == ["3M_2018_10K.pdf"]  # pages count from 1 here
    assert qs[0].entity_files == ["3M_2018_10K.pdf", "3M_2022_10K.pdf"] and qs[0].kind == "metrics-generated"
    assert [q.id for q in load_financebench(tmp_path, group="tune")] == ["fb1"]
    bad = rec | {"company": "Nobody Inc"}
    (tmp_path / "financebench_dev.jsonl").write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match="neither half"):
        load_financebench(tmp_path)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/eval/financebench is absent")
def test_the_real_set_splits_into_the_written_halves():
    qs = load_financebench(SHARED)
    assert len(qs) == 42 and {q.group for q in qs} == {"tune", "held-out"}
    assert len(TUNE) == 7 and len(HELD_OUT) == 6
    assert all(q.gold_pages and q.gold_answer for q in qs)
