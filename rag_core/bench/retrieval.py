"""Hybrid retrieval at scale: p50/p95 at 1k and 100k chunks (or the sizes asked), against a raw Chroma query
(query embedding + nearest neighbours) on the same collection, and the keyword search alone
(BM25 over the keyword index: ``index.db``, or PostgreSQL when ``DOCENT_DATABASE_URL`` is
set: give the benchmark a database of its own).

The chunks are synthetic (sentences drawn from a Zipf-like vocabulary, random unit vectors):
what is timed is the search machinery, not the answers. They are written to Chroma directly
in LlamaIndex's node format, so the retriever reads them as it reads ingested chunks; the
benchmark fills each size once and copies the kept fill in later runs (``fills.py``).

At each size a new process also opens the folder as an app process does (``build_context``)
and searches once: its start, its first search and its memory are what a person starting
Docent over that library pays (``process``). Its memory holds Chroma's vector index, which
grows with the library by design (384 floats a chunk, in the Chroma server's process instead
with ``DOCENT_CHROMA_HOST``); ``vectors_mb`` is that index's size on disk beside it, so that
what the rest of the process adds can be told apart.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

from rag_core import build_context
from rag_core.bench.fills import filled_copy
from rag_core.bench.inputs import ROOT, child_env, fresh_context
from rag_core.bench.servers import chroma_run
from rag_core.bench.stats import median, p95, ratio, rss_mb
from rag_core.retrieval.keywords import BM25
from rag_core.settings import DocentSettings

_VOCABULARY = (
    "revenue margin quarter segment cash flow operating income expense share dividend debt interest tax "
    "product service cloud device region america europe china japan growth decline inventory supply demand "
    "customer contract lease asset liability equity goodwill acquisition restructuring litigation risk"
).split()


def _sentence(rng: random.Random, words: int) -> str:
    picks = [_VOCABULARY[min(int(rng.paretovariate(1.2)) - 1, len(_VOCABULARY) - 1)] for _ in range(words)]
    picks += [f"w{rng.randrange(50000)}" for _ in range(words // 4)]  # rare terms, as names and figures are
    rng.shuffle(picks)
    return " ".join(picks) + "."


def _texts(seed: int, count: int, sentences: int = 6, words: int = 12) -> list[str]:
    """``count`` chunk texts of ``sentences`` sentences drawn as ``_sentence`` draws them (the
    same Zipf-like vocabulary and share of rare terms), all at once: a tenth of the time, which
    was a sixth of a 100,000-chunk fill."""
    import numpy as np

    gen = np.random.default_rng([seed, 1])  # not the vectors' stream, which is seeded with ``seed``
    rare = words // 4
    shape = (count * sentences, words + rare)
    # paretovariate(a) - 1 is numpy's Lomax draw: the same word ranks
    ranks = np.minimum(np.floor(gen.pareto(1.2, (shape[0], words))), len(_VOCABULARY) - 1).astype(int)
    vocabulary = np.array(_VOCABULARY + [f"w{n}" for n in range(50000)], dtype=object)
    picks = np.concatenate([ranks, len(_VOCABULARY) + gen.integers(0, 50000, (shape[0], rare))], axis=1)
    order = np.argsort(gen.random(shape), axis=1)  # each sentence's words shuffled
    rows = vocabulary[np.take_along_axis(picks, order, axis=1)]
    said = [" ".join(row) + "." for row in rows]
    return [" ".join(said[n : n + sentences]) for n in range(0, len(said), sentences)]


def _fill(ctx: Any, start: int, stop: int, dim: int) -> None:
    import numpy as np

    batch = 2000
    for lo in range(start, stop, batch):
        nodes = []
        vectors = np.random.default_rng(lo).standard_normal((min(batch, stop - lo), dim)).astype("float32")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = _texts(lo, len(vectors))
        for i, vector, text in zip(range(lo, min(stop, lo + batch)), vectors, texts, strict=True):
            doc = f"synthetic-{i // 100:06d}.txt"  # 100 chunks each
            node = TextNode(
                id_=f"syn-{i}",
                text=text,
                metadata={"file_name": doc, "doc_key": doc},
                embedding=vector.tolist(),
            )
            nodes.append(node)
        ctx.index.vector_store.add(nodes)
        for doc in sorted({str(n.metadata["doc_key"]) for n in nodes}):  # registered, as an ingest leaves them
            digest = hashlib.sha256(doc.encode()).hexdigest()
            ctx.ingestion.registry.register(doc, digest, 0, pages=0, chunks=100, kind="text")
    ctx.index.bump()


# A new process over the folder: the time to a usable context, to the first search's end, and
# its resident memory then (VmRSS) and at its peak (VmHWM).
_PROCESS = """
import json, sys, time
t = time.perf_counter()
from pathlib import Path
from rag_core import build_context, load_settings
settings = load_settings(data_dir=Path(sys.argv[1]))
ctx = build_context(settings.model_copy(update={"model_cache": settings.model_dir}))
ready = time.perf_counter() - t
ctx.chat.retrieve(sys.argv[2])
first = time.perf_counter() - t
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
mb = lambda key: round(int(status[key].split()[0]) / 1024, 1)
print(json.dumps({"start_s": round(ready, 2), "first_search_s": round(first, 2), "rss_mb": mb("VmRSS"),
                  "peak_rss_mb": mb("VmHWM"), "chroma": settings.chroma_host or "embedded"}))
"""


def fresh_process(settings: DocentSettings, data_dir: Path, query: str, **env: str) -> dict[str, Any]:
    """A new process's start, first search and memory over ``data_dir`` (see ``_PROCESS``);
    ``env``: its Chroma server (``DOCENT_CHROMA_HOST``/``_PORT``), else the folder's own."""
    out = subprocess.run(
        [sys.executable, "-c", _PROCESS, str(data_dir), query],
        cwd=ROOT,
        env=child_env(settings, chroma=bool(env), **env),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]}
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def served_process(settings: DocentSettings, data_dir: Path, chroma: Path, query: str) -> dict[str, Any]:
    """``fresh_process`` with the folder's Chroma served by ``chroma run`` (a team's layout,
    docs/team.md): the vectors are then in the server's memory, not the app process's."""
    with chroma_run(chroma, data_dir / "chroma-run.log", timeout=600) as port:
        return fresh_process(settings, data_dir, query, DOCENT_CHROMA_HOST="127.0.0.1", DOCENT_CHROMA_PORT=str(port))


def vectors_mb(data_dir: Path) -> float:
    """The size on disk of Chroma's vector index files (its HNSW segments) under ``data_dir``."""
    names = ("data_level0.bin", "link_lists.bin", "length.bin", "header.bin", "index_metadata.pickle")
    return round(sum(f.stat().st_size for f in data_dir.rglob("*") if f.name in names) / 2**20, 1)


def bench_retrieval(
    settings: DocentSettings,
    sizes: tuple[int, ...] = (1_000, 100_000),
    queries: int = 40,
    report: Callable[[str], None] | None = None,
    fills: Path | None = None,
    refill: bool = False,
) -> dict:
    """The figures at each of ``sizes`` chunks; ``report`` is told each size's figures as
    soon as they are taken (a fill to a million chunks takes an hour). With ``fills`` (a
    folder), each size is a copy of a fill kept there from an earlier run, made first when
    there is none or ``refill`` (``rag_core.bench.fills``); a PostgreSQL keyword index or a
    Chroma server cannot be copied, so with either the chunks are filled in this process, in
    turn, as without ``fills``."""
    keep = fills is not None and not settings.database and not settings.chroma_host
    ctx = None if keep else fresh_context(settings, "retrieval")
    rng = random.Random(7)
    asks = [" ".join(_sentence(rng, 5).rstrip(".").split()[:5]) + "?" for _ in range(queries)]
    out: dict[str, Any] = {}
    filled = 0
    base = rss_mb()
    for size in sizes:
        reused = False
        if fills is not None and keep:
            ctx = None  # the last size's library, let go before the next is opened
            folder, fill_s, reused = filled_copy(settings, size, fills, refill)
            ctx = build_context(settings.model_copy(update={"data_dir": folder, "model_cache": settings.model_dir}))
        else:
            assert ctx is not None
            t = time.perf_counter()
            _fill(ctx, filled, size, ctx.index.embed_dim)
            fill_s = time.perf_counter() - t
        assert ctx is not None
        filled = size
        t = time.perf_counter()
        ctx.chat.retrieve(asks[0])  # builds the keyword index for this many chunks
        build_s = time.perf_counter() - t
        hybrid, raw, keyword = [], [], []
        for q in asks:
            t = time.perf_counter()
            BM25(ctx.index.keywords).search(q, settings.retrieval.top_k)
            keyword.append(time.perf_counter() - t)
            t = time.perf_counter()
            ctx.chat.retrieve(q)
            hybrid.append(time.perf_counter() - t)
            t = time.perf_counter()
            vector = ctx.embed_model.get_query_embedding(q)
            ctx.index.collection.query(query_embeddings=[vector], n_results=settings.retrieval.top_k)
            raw.append(time.perf_counter() - t)
        out[str(size)] = {
            "hybrid_p50_s": median(hybrid),
            "hybrid_p95_s": p95(hybrid),
            "raw_p50_s": median(raw),
            "raw_p95_s": p95(raw),
            "p50_vs_raw": ratio(median(hybrid), median(raw)),
            "keyword_p50_s": median(keyword),
            "keyword_p95_s": p95(keyword),
            "keyword_index_build_s": round(build_s, 1),
            "insert_s": round(fill_s, 1),
            "fill_reused": reused,
            "rss_mb": rss_mb(),
            "rss_added_mb": round(rss_mb() - base, 1),
            "process": fresh_process(settings, ctx.settings.data_dir, asks[1]),
            "vectors_mb": vectors_mb(ctx.settings.data_dir),
        }
        if report is not None:
            how = (
                f"a copy of a fill kept from an earlier run (filled in {fill_s:.0f} s)"
                if reused
                else f"filled in {fill_s:.0f} s"
            )
            report(f"  {size} chunks ({how}): {json.dumps(out[str(size)])}")
    largest = out[str(sizes[-1])]
    out["retrieval_p50_vs_raw"] = largest["p50_vs_raw"]
    out["chunks"] = sizes[-1]
    out["keyword_index"] = "postgres" if settings.database else "sqlite"
    assert ctx is not None
    if not settings.chroma_host:  # the same folder with its vectors in a Chroma server's memory
        largest["process_served"] = served_process(settings, ctx.settings.data_dir, ctx.settings.paths.chroma, asks[1])
    smallest, process, served = out[str(sizes[0])]["process"], largest["process"], largest.get("process_served", {})
    if len(sizes) > 1 and "rss_mb" in smallest and "rss_mb" in process:
        # what a new process holds more at the largest size than at the smallest (embedded: with
        # Chroma's vector index, which is ``process_vectors_added_mb`` of it; served: without)
        out["process_rss_added_mb"] = round(process["rss_mb"] - smallest["rss_mb"], 1)
        out["process_vectors_added_mb"] = round(largest["vectors_mb"] - out[str(sizes[0])]["vectors_mb"], 1)
        if "rss_mb" in served:
            out["served_process_rss_added_mb"] = round(served["rss_mb"] - smallest["rss_mb"], 1)
    return out


def fill_folder(folder: Path, size: int) -> None:
    """``size`` synthetic chunks into a new library at ``folder``, in this process; prints
    the fill's seconds (``python -m rag_core.bench.retrieval FOLDER SIZE``: a kept fill is made
    so, ``fills.py``)."""
    from rag_core import load_settings

    settings = load_settings(data_dir=folder)
    ctx = build_context(settings.model_copy(update={"model_cache": settings.model_dir, "chroma_host": None}))
    t = time.perf_counter()
    _fill(ctx, 0, size, ctx.index.embed_dim)
    print(json.dumps({"fill_s": round(time.perf_counter() - t, 1), "chunks": ctx.index.chunk_count()}))


if __name__ == "__main__":
    fill_folder(Path(sys.argv[1]), int(sys.argv[2]))
