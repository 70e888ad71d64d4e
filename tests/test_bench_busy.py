"""The busy-machine benchmark's parts (rag_core.bench.busy, bench.inputs.files_for): the other
program it starts, the files it indexes, the medians it reports."""

from __future__ import annotations

import os
from pathlib import Path

from rag_core.bench.busy import busy_core, summary
from rag_core.bench.inputs import files_for


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def test_the_busy_core_is_a_running_process_and_ends_with_the_block():
    with busy_core() as child:
        assert child.poll() is None and _alive(child.pid)
        stat = Path(f"/proc/{child.pid}/stat").read_text(encoding="ascii")
        fields = stat[stat.rindex(")") + 2 :].split()
        assert int(fields[1]) == os.getpid()  # ours: it exits when this process does
        assert int(fields[11]) + int(fields[12]) > 0  # it has run (the block starts once it spins)
    assert child.returncode is not None and not _alive(child.pid)


def test_the_files_the_first_questions_need_come_first(tmp_path):
    files = [tmp_path / f"{name}.pdf" for name in ("a", "b", "c", "d", "e", "f", "g")]
    questions = [
        {"question": "q1", "gold_files": ["f.pdf"]},
        {"question": "not indexed", "gold_files": ["missing.pdf"]},
        {"question": "q2", "gold_files": ["g.pdf", "f.pdf"]},
        {"question": "too many", "gold_files": ["a.pdf", "b.pdf", "c.pdf"]},
        {"question": "q3", "gold_files": ["c.pdf"]},
        {"question": "beyond the three", "gold_files": ["d.pdf"]},
    ]
    picked = files_for(files, questions, n_questions=3, n_files=4)
    assert [p.name for p in picked] == ["f.pdf", "g.pdf", "c.pdf", "a.pdf"]


def test_the_summary_is_the_median_of_the_questions_answered():
    rows = [
        {"ttft_s": 3.0, "decode_tokens_per_s": 10.0},
        {"ttft_s": 1.0, "decode_tokens_per_s": None},
        {"ttft_s": 2.0, "decode_tokens_per_s": 20.0},
    ]
    out = summary(rows)
    assert out["ttft_s"] == 2.0 and out["decode_tokens_per_s"] == 15.0 and out["per_question"] is rows


def test_idle_is_judged_by_what_other_processes_use_not_by_the_load_average(monkeypatch):
    """The load average counts the benchmark's own indexing of the last minute: a machine whose
    other processes use nothing is idle whatever it says; one core used by others is not."""
    from rag_core.bench import busy

    monkeypatch.setattr(busy, "others_busy", lambda before, after: 0.02)
    assert busy.machine_state(seconds=0.0)["idle"] is True
    monkeypatch.setattr(busy, "others_busy", lambda before, after: 0.9)
    state = busy.machine_state(seconds=0.0)
    assert state["idle"] is False and state["others_busy_cores"] == 0.9
