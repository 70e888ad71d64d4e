"""The corpus an evaluation searches: a folder of documents indexed once into its own
data folder, cached by the files and the settings that shape the index."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.errors import ConfigError
from rag_core.files import Progress
from rag_core.ingestion import iter_inputs
from rag_core.settings import DocentSettings

CACHE_VERSION = 2  # bump when ingestion changes what an index holds (settings that do are in the key); 2: no-break spaces read as spaces
READY_MARKER = "eval-ready.json"


def corpus_key(corpus: Path, settings: DocentSettings) -> str:
    """Hash of the corpus file list (names, sizes, mtimes) and the settings that shape the index."""
    h = hashlib.sha256()
    shape: dict[str, object] = {
        "v": CACHE_VERSION,
        "embed": settings.embed_provider,
        "chunk_size": settings.chunk_size,
        "chunk_overlap": settings.chunk_overlap,
    }
    if settings.chunk_context:  # added later: off, the key stays what it was before the switch existed
        shape["chunk_context"] = "answer"  # for the answering model only (not embedded)
    h.update(json.dumps(shape, sort_keys=True).encode())
    for path, name in iter_inputs([corpus]):
        st = path.stat()
        h.update(f"\n{name}\t{st.st_size}\t{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def eval_settings(settings: DocentSettings, data_dir: Path) -> DocentSettings:
    """The same settings over another data folder (the model stays where it is)."""
    return settings.model_copy(update={"data_dir": data_dir, "model_cache": settings.model_dir, "chroma_host": None})


def prepare_corpus(
    settings: DocentSettings,
    corpus: Path | str,
    cache_root: Path | None = None,
    progress: Progress | None = None,
    fresh: bool = False,
    **context_kwargs: Any,
) -> AppContext:
    """A context whose index holds exactly ``corpus`` (a folder), built once and cached.

    The cache folder is named by ``corpus_key``: the same files with the same chunking and
    embedding reuse it; anything else indexes into a new one. A folder without the
    ready marker (an interrupted run) is indexed again from scratch. ``context_kwargs``
    go to ``build_context`` (tests pass ``llm=``)."""
    corpus = Path(corpus)
    if not corpus.is_dir():
        raise ConfigError(f"--corpus must be a folder of documents; {corpus} is not one.")
    cache_root = Path(cache_root or settings.paths.eval_cache)
    key = corpus_key(corpus, settings)
    folder = cache_root / key
    marker = folder / READY_MARKER
    if fresh or not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
    report = progress or (lambda msg, frac: None)
    ctx = build_context(eval_settings(settings, folder), **context_kwargs)
    if marker.exists():
        report(f"corpus {corpus} already indexed ({folder})", 1.0)
        return ctx
    inputs = iter_inputs([corpus])
    if not inputs:
        raise ConfigError(f"{corpus} holds no files to index.")
    started = time.perf_counter()
    failed = []
    for i, (path, name) in enumerate(inputs):
        result = ctx.ingestion.ingest_file(path, name)
        if result.status == "failed":
            failed.append(f"{name}: {result.reason}")
        report(f"indexing {i + 1}/{len(inputs)}: {name} ({result.status})", (i + 1) / len(inputs))
    info = {
        "corpus": str(corpus.resolve()),
        "files": len(inputs),
        "failed": failed,
        "chunks": ctx.index.chunk_count(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(info, indent=2), encoding="utf-8")
    return ctx
