"""Hybrid retrieval at scale: p50/p95 at 10k and 100k chunks, against a raw Chroma query
(query embedding + nearest neighbours) on the same collection, and the keyword search alone
(BM25 over the keyword index: ``index.db``, or PostgreSQL when ``DOCENT_DATABASE_URL`` is
set: give the benchmark a database of its own).

The chunks are synthetic (sentences drawn from a Zipf-like vocabulary, random unit vectors):
what is timed is the search machinery, not the answers. They are written to Chroma directly
in LlamaIndex's node format, so the retriever reads them as it reads ingested chunks.
"""

from __future__ import annotations

import random
import time
from typing import Any

from llama_index.core.schema import TextNode

from rag_core.bench.inputs import fresh_context
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


def _fill(ctx: Any, start: int, stop: int, dim: int, rng: random.Random) -> None:
    import numpy as np

    batch = 2000
    for lo in range(start, stop, batch):
        nodes = []
        vectors = np.random.default_rng(lo).standard_normal((min(batch, stop - lo), dim)).astype("float32")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for i, vector in zip(range(lo, min(stop, lo + batch)), vectors, strict=True):
            doc = f"synthetic-{i // 100:05d}.txt"
            node = TextNode(
                id_=f"syn-{i}",
                text=" ".join(_sentence(rng, 12) for _ in range(6)),
                metadata={"file_name": doc, "doc_key": doc},
                embedding=vector.tolist(),
            )
            nodes.append(node)
        ctx.index.vector_store.add(nodes)
    ctx.index.bump()


def bench_retrieval(settings: DocentSettings, sizes: tuple[int, ...] = (10_000, 100_000), queries: int = 40) -> dict:
    ctx = fresh_context(settings, "retrieval")
    rng = random.Random(7)
    dim = ctx.index.embed_dim
    asks = [" ".join(_sentence(rng, 5).rstrip(".").split()[:5]) + "?" for _ in range(queries)]
    out: dict[str, Any] = {}
    filled = 0
    base = rss_mb()
    for size in sizes:
        t = time.perf_counter()
        _fill(ctx, filled, size, dim, rng)
        fill_s = time.perf_counter() - t
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
            "rss_mb": rss_mb(),
            "rss_added_mb": round(rss_mb() - base, 1),
        }
    largest = out[str(sizes[-1])]
    out["retrieval_p50_vs_raw"] = largest["p50_vs_raw"]
    out["chunks"] = sizes[-1]
    out["keyword_index"] = "postgres" if settings.database else "sqlite"
    return out
