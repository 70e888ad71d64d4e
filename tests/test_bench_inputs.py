"""The benchmark's scratch folders (rag_core.bench.inputs): one folder per benchmark process,
removed when the process ends. Before, every run left its indexes behind (~1 GB a run, 37 runs
filled this machine's disk)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_benchmark_process_removes_its_scratch_folders_when_it_ends():
    code = (
        "from rag_core.bench.inputs import scratch\n"
        "a, b = scratch('ingest'), scratch('retrieval')\n"
        "(a / 'chunks.bin').write_bytes(b'x' * 1000)\n"
        "assert a.parent == b.parent and a != b and a.name.startswith('ingest-')\n"
        "print(a.parent)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    run_folder = Path(ran.stdout.strip())
    assert run_folder.name.startswith("docent-bench-")
    assert not run_folder.exists()


def test_the_full_run_indexes_what_its_questions_and_pairs_need_then_neighbours_up_to_docs_n(tmp_path):
    """``bench``'s samples: every filing a timed question or follow-up pair is about, then the
    folder's others in order up to ``--docs-n``; ``--docs-n 0`` the whole folder; ``--quick``
    its own 5 filings and the questions they answer."""
    import argparse

    from rag_core.bench import _samples

    companies = ("AAPL", "AMZN", "INTC", "MSFT", "NVDA")
    quarters = ("2022 Q3", "2023 Q1", "2023 Q2", "2023 Q3")
    for quarter in quarters:
        for company in companies:
            (tmp_path / f"{quarter} {company}.pdf").write_bytes(b"%PDF-1.4\n")

    def samples(**given):
        args = {"questions": None, "quick": False, "questions_n": 6, "pairs_n": 4, "docs_n": 12, **given}
        files, questions, pairs = _samples(tmp_path, argparse.Namespace(**args))
        return [f.name for f in files], questions, pairs

    files, questions, pairs = samples()
    assert len(questions) == 6 and len(pairs) == 4 and len(files) == 12 == len(set(files))
    needed = [name for item in questions + pairs for name in item["gold_files"]]
    assert set(needed) <= set(files)
    assert files[: len(set(needed))] == list(dict.fromkeys(needed))  # the needed ones first, in order
    assert files[len(set(needed)) :] == sorted(files[len(set(needed)) :])  # then the folder's own order
    assert [p["id"] for p in pairs] == [
        "ellipsis_01",
        "ellipsis_10",
        "ellipsis_14",
        "ellipsis_02",
    ]  # 2 by rule, 2 by the model

    few, _, _ = samples(docs_n=2)  # fewer than they need: what they need, no less
    assert sorted(few) == sorted(set(needed))
    every, _, _ = samples(docs_n=0)
    assert every == sorted(p.name for p in tmp_path.glob("*.pdf"))
    quick, quick_questions, _ = samples(quick=True)
    assert len(quick) == 5 and len(quick_questions) == 3
    assert {n for q in quick_questions for n in q["gold_files"]} <= set(quick)
