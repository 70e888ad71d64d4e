"""What the benchmarks run on: where the shared evaluation data is, the SEC figure questions,
and a context over a throw-away data folder."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.errors import ConfigError
from rag_core.settings import DocentSettings

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/data lives there)


def shared_eval_dir() -> Path | None:
    """``../shared/data/eval`` beside the checkout (or ``DOCENT_SHARED_DIR/data/eval``), if present."""
    base = Path(os.environ.get("DOCENT_SHARED_DIR", ROOT.parent / "shared")) / "data" / "eval"
    return base if base.is_dir() else None


def sec_docs(docs: Path | None) -> Path:
    """The folder of SEC 10-Q PDFs to benchmark on."""
    if docs is not None:
        if not docs.is_dir():
            raise ConfigError(f"--docs {docs} is not a folder of documents.")
        return docs
    shared = shared_eval_dir()
    if shared is None:
        raise ConfigError("No --docs folder given and ../shared/data/eval not found: give --docs DIR (PDFs).")
    return shared / "sec10q" / "data" / "v1" / "docs"


SHAPES = ROOT / "tests" / "data" / "sec_shapes.jsonl"  # figure questions written over the SEC filings


def figure_questions(path: Path | None, limit: int) -> list[dict[str, Any]]:
    """SEC 10-Q questions whose answer is a figure, with gold pages: from ``path`` (figures.jsonl
    of ``python -m rag_core eval-set sec10q --figures``, or any such file); by default the answerable questions
    of ``tests/data/sec_shapes.jsonl`` (one figure each, asked for a stated period: the shape
    users ask), else built now from the shared set into a temporary folder."""
    if path is None and SHAPES.exists():
        rows = [json.loads(line) for line in SHAPES.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [r for r in rows if r.get("answerable", True) and r.get("gold_answer")][:limit]
    if path is None:
        shared = shared_eval_dir()
        if shared is None:
            raise ConfigError("No --questions file and ../shared/data/eval not found: give --questions figures.jsonl.")
        from rag_core.evaluation.sec10q import convert_sec10q, write_figure_questions

        out = scratch("questions")
        convert_sec10q(shared, out)
        write_figure_questions(out)
        path = out / "figures.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit]


def files_for(files: list[Path], questions: list[dict[str, Any]], n_questions: int, n_files: int) -> list[Path]:
    """The files the first ``n_questions`` answerable ones need, then the first others, up to
    ``n_files`` (the gold files come first, whatever their names sort as)."""
    by_name = {p.name: p for p in files}
    picked: list[Path] = []
    asked = 0
    for q in questions:
        gold = [by_name.get(name) for name in q.get("gold_files") or []]
        if asked == n_questions or not gold or None in gold:
            continue
        new = [p for p in gold if p is not None and p not in picked]
        if len(picked) + len(new) > n_files:
            continue
        picked += new
        asked += 1
    return picked + [p for p in files if p not in picked][: max(0, n_files - len(picked))]


_RUN: list[Path] = []  # this process's scratch folder, made at first use


def scratch(name: str) -> Path:
    """A new empty folder for one part of a run, inside one folder per benchmark process that
    is removed when the process ends (a full run writes several GB: indexes of the filings,
    100k synthetic chunks; they are of no use once the figures are printed)."""
    if not _RUN:
        _RUN.append(Path(tempfile.mkdtemp(prefix="docent-bench-")))
        atexit.register(shutil.rmtree, _RUN[0], True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=_RUN[0]))


def child_env(settings: DocentSettings, chroma: bool = False, **extra: str) -> dict[str, str]:
    """The environment of a Docent process the benchmark starts: its own, with the model
    folder and the embedding of ``settings``; without a Chroma server unless ``chroma`` (the
    benchmark's folders are embedded ones)."""
    env = {
        **os.environ,
        "DOCENT_MODEL_CACHE": str(settings.model_dir),
        "DOCENT_EMBED_PROVIDER": settings.embed_provider,
    }
    if not chroma:
        env.pop("DOCENT_CHROMA_HOST", None)
    return {**env, **extra}


def fresh_context(settings: DocentSettings, name: str, **kwargs: Any) -> AppContext:
    """A context over a new, empty data folder (the model stays where it is)."""
    folder = scratch(name)
    return build_context(
        settings.model_copy(update={"data_dir": folder, "model_cache": settings.model_dir, "chroma_host": None}),
        **kwargs,
    )
