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
