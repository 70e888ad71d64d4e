"""The retrieval benchmark's synthetic libraries, filled once and kept for later runs.

Filling 100,000 synthetic chunks took 212 s of a 22-minute run on a slow machine: Chroma's
``add`` builds its vector index while holding the GIL, so nothing overlaps it. What the
benchmark times is the search over the chunks and a new process over the folder, not the
fill. A fill is made by a child process into a folder of its own, which is kept under a key of
everything that shapes what it writes: its size, the embedding, Chroma's version and the
source of the code that writes and reads the chunks (the fill itself, the index, the
storage). A later run with the same key copies the kept folder instead of filling again, and
takes its figures on the copy as on a new fill (``fill_reused`` says which it was;
``insert_s`` is the fill's time when it was made). Any change to that code or to Chroma makes
a new key and a new fill; ``bench --refill`` makes one regardless.

The child has ended before its folder is kept or copied: all it wrote is on disk, and the
benchmark opens the copy as a new app process opens a library.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rag_core.bench.inputs import ROOT, child_env, scratch
from rag_core.settings import DocentSettings

FILL_VERSION = 1  # raise when what ``retrieval._fill`` writes changes in a way its source does not show
# what writes the chunks or shapes what is written (with rag_core/storage/): a change refills
_SHAPING = (
    "rag_core/bench/retrieval.py",
    "rag_core/bench/fills.py",
    "rag_core/index.py",
    "rag_core/chroma_client.py",
    "rag_core/chroma_guard.py",
    "rag_core/datadir.py",
    "rag_core/payloads.py",
    "rag_core/text.py",  # the keyword index's tokens
    "rag_core/providers/embeddings.py",
)
_FILLED = "filled.json"  # in a kept folder: written last, so a folder without it is not a finished fill


def fill_key(settings: DocentSettings, size: int) -> str:
    """The key of a fill of ``size`` chunks under ``settings`` (see the module's docstring)."""
    import chromadb

    digest = hashlib.sha256()
    shaping = [ROOT / p for p in _SHAPING] + sorted((ROOT / "rag_core" / "storage").glob("*.py"))
    for path in shaping:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    shape = [FILL_VERSION, size, settings.embed_provider, settings.collection_name, chromadb.__version__]
    digest.update(json.dumps(shape).encode())
    return digest.hexdigest()[:16]


def cache_dir(settings: DocentSettings) -> Path:
    """Where fills are kept: beside the assembled model (``.cache/bench-fills`` with the
    README's ``DOCENT_MODEL_CACHE``), so that a new data folder does not fill again."""
    return settings.model_dir.parent / "bench-fills"


def filled_copy(settings: DocentSettings, size: int, cache: Path, refill: bool = False) -> tuple[Path, float, bool]:
    """A new scratch folder holding ``size`` synthetic chunks: a copy of the kept fill, made
    first by a child process when there is none (or ``refill``). Returns the folder, the
    fill's seconds when it was made, and whether this run reused it."""
    key = fill_key(settings, size)
    kept = cache / f"fill-{size}-{key}"
    reused = (kept / _FILLED).is_file() and not refill
    if not reused:
        _make(settings, size, kept)
    fill_s = float(json.loads((kept / _FILLED).read_text(encoding="utf-8"))["fill_s"])
    folder = scratch(f"retrieval-{size}")
    shutil.copytree(kept / "data", folder, dirs_exist_ok=True)
    return folder, fill_s, reused


def _make(settings: DocentSettings, size: int, kept: Path) -> None:
    kept.parent.mkdir(parents=True, exist_ok=True)
    _drop_abandoned(kept.parent)
    work = kept.parent / f".making-{kept.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "rag_core.bench.retrieval", str(work / "data"), str(size)],  # its ``fill_folder``
        cwd=ROOT,
        env=child_env(settings),
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if out.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise RuntimeError(f"the synthetic fill of {size} chunks failed: {last}")
    filled = json.loads(out.stdout.strip().splitlines()[-1])
    (work / _FILLED).write_text(json.dumps({**filled, "made_s": round(time.perf_counter() - t, 1)}), encoding="utf-8")
    for old in kept.parent.glob(f"fill-{size}-*"):  # the same size under an older key: of no use any more
        shutil.rmtree(old, ignore_errors=True)
    try:
        work.rename(kept)
    except OSError:  # another benchmark kept the same fill meanwhile
        shutil.rmtree(work, ignore_errors=True)


def _drop_abandoned(cache: Path) -> None:
    """A fill a benchmark was making when it was killed (a GB at 100k chunks): its maker's
    process is gone, so nothing will finish it. Only this module makes ``.making-*-<pid>``."""
    for work in cache.glob(".making-fill-*"):
        pid = work.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists() and Path("/proc/self").exists():
            shutil.rmtree(work, ignore_errors=True)
