#!/usr/bin/env python
"""Benchmark the default local LLM: assembly, load, first-token latency, tokens/s.

Why: the local model is what a Docent user waits for, on a laptop-class CPU. This
script gives the figures quoted in the notes, on one fixed ~300-token RAG-style
prompt (a context passage + a question), so runs and runtimes can be compared.

    python scripts/bench_llm.py                         # xllamacpp via rag_core (the app's path)
    python scripts/bench_llm.py --skip-assembly         # reuse the cached GGUF
    /path/to/other-venv/bin/python scripts/bench_llm.py \\
        --runtime llama-cpp-python --model /path/to/model.gguf   # same prompt on llama_cpp.Llama

Each generation run starts with a unique marker so that neither runtime can reuse a
cached prompt prefix: first-token latency includes evaluating the whole prompt.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent

SYSTEM = (
    "You are Docent, an assistant that answers questions about the user's documents. "
    "Answer only from the context below. If the context does not contain the answer, say so. "
    "Cite the passage you used."
)

CONTEXT = """\
[1] handbook.pdf, page 12
Expense reports must be submitted within 30 days of the purchase date through the finance portal.
Each report needs an itemised receipt for every purchase above 25 euros; card statements alone are
not accepted. Travel expenses follow a separate policy: train travel is reimbursed in second class
for trips under four hours and in first class for longer trips, while flights require the written
approval of a department head before booking. Hotel costs are capped at 150 euros per night in
most cities and at 220 euros per night in Paris, London and Zurich. Meals during business travel
are reimbursed up to 60 euros per day, alcohol excluded. Reports submitted after the 30-day
deadline are reviewed by the finance director and may be refused. Reimbursements are paid with
the next monthly salary, provided the report was approved before the 20th of the month; reports
approved later are paid one month after. Questions about a specific expense should be sent to
the finance team by email, with the report number in the subject line.
"""

QUESTION = "What is the nightly hotel cap in Zurich, and how late can I submit an expense report?"


def messages(run: int) -> list[dict[str, str]]:
    """The benchmark conversation; ``run`` makes each prompt unique (no prefix cache reuse)."""
    return [
        {"role": "system", "content": f"[run {run}] {SYSTEM}"},
        {"role": "user", "content": f"Context:\n{CONTEXT}\nQuestion: {QUESTION}"},
    ]


def default_cache() -> Path:
    return Path(os.environ.get("DOCENT_MODEL_CACHE") or Path.home() / ".cache" / "docent-test-models")


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_stream(deltas: Iterator[str]) -> dict[str, Any]:
    """Consume a stream of text deltas; return first-token latency and decode speed."""
    started = time.perf_counter()
    stamps: list[float] = []
    text = ""
    for delta in deltas:
        if delta:
            stamps.append(time.perf_counter() - started)
            text += delta
    total = time.perf_counter() - started
    decode = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else float("nan")
    return {
        "first_token_s": stamps[0] if stamps else float("nan"),
        "total_s": total,
        "tokens": len(stamps),
        "tokens_per_s": decode,
        "text": text,
    }


# --------------------------------------------------------------------------- runtimes


def xllamacpp_runtime(
    model: Path, n_ctx: int, threads: int, max_tokens: int
) -> tuple[float, Callable[[int], Iterator[str]]]:
    sys.path.insert(0, str(REPO_ROOT))
    from llama_index.core.base.llms.types import ChatMessage

    from rag_core.providers.local_llm import build_local_llm

    llm = build_local_llm(model, context_window=n_ctx, max_new_tokens=max_tokens, temperature=0.0, n_threads=threads)
    load_s = llm.load()

    def generate(run: int) -> Iterator[str]:
        chat = [ChatMessage(role=m["role"], content=m["content"]) for m in messages(run)]
        return (r.delta or "" for r in llm.stream_chat(chat))

    return load_s, generate


def llama_cpp_python_runtime(
    model: Path, n_ctx: int, threads: int, max_tokens: int
) -> tuple[float, Callable[[int], Iterator[str]]]:
    from llama_cpp import Llama

    started = time.perf_counter()
    llm = Llama(
        model_path=str(model),
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        chat_format="chatml",
        seed=0,
        verbose=False,
    )
    load_s = time.perf_counter() - started

    def generate(run: int) -> Iterator[str]:
        stream = llm.create_chat_completion(
            messages(run), max_tokens=max_tokens, temperature=0.0, stop=["<|im_end|>", "<|endoftext|>"], stream=True
        )
        return (chunk["choices"][0]["delta"].get("content") or "" for chunk in stream)

    return load_s, generate


RUNTIMES = {"xllamacpp": xllamacpp_runtime, "llama-cpp-python": llama_cpp_python_runtime}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", choices=sorted(RUNTIMES), default="xllamacpp")
    parser.add_argument("--model", type=Path, help="GGUF to load (default: assemble/verify into --cache-dir)")
    parser.add_argument("--cache-dir", type=Path, default=default_cache())
    parser.add_argument("--skip-assembly", action="store_true", help="do not time a cold assembly")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    figures: dict[str, object] = {
        "runtime": args.runtime,
        "threads": args.threads,
        "cpu_count": os.cpu_count(),
        # Other work on the machine skews every figure; llama.cpp threads wait on each other.
        "loadavg_1m_at_start": round(os.getloadavg()[0], 2),
    }

    model = args.model
    if model is None:
        sys.path.insert(0, str(REPO_ROOT))
        from rag_core.model_store import ensure_local_model

        if not args.skip_assembly:
            with tempfile.TemporaryDirectory(prefix="docent-bench-") as tmp:
                started = time.perf_counter()
                ensure_local_model(Path(tmp))
                figures["assembly_cold_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        model = ensure_local_model(args.cache_dir)
        figures["ensure_cached_s"] = round(time.perf_counter() - started, 4)

    load_s, generate = RUNTIMES[args.runtime](model, args.n_ctx, args.threads, args.max_tokens)
    figures["load_s"] = round(load_s, 2)
    figures["rss_after_load_mib"] = round(rss_mib())

    runs = [timed_stream(generate(run)) for run in range(args.runs)]
    figures["first_token_s_runs"] = [round(r["first_token_s"], 2) for r in runs]
    figures["first_token_s_median"] = round(statistics.median(r["first_token_s"] for r in runs), 2)
    figures["tokens_per_s_median"] = round(statistics.median(r["tokens_per_s"] for r in runs), 2)
    figures["generated_tokens"] = [r["tokens"] for r in runs]
    figures["max_rss_mib"] = round(rss_mib())
    figures["loadavg_1m_at_end"] = round(os.getloadavg()[0], 2)
    figures["answer"] = runs[0]["text"]

    if args.json:
        print(json.dumps(figures, indent=2))
        return
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
