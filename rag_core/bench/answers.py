"""Time to the first word: Docent against the naive LlamaIndex path and raw llama.cpp, first
turns and follow-ups, in one run on the same index and the same model.

- naive: ``CondensePlusContextChatEngine.from_defaults`` over a ``VectorStoreIndex`` on the same
  Chroma collection, top-k 5, LlamaIndex's default prompts;
- raw: llama.cpp reading Docent's own final prompt, with its prompt cache off (the overhead
  of everything Docent does around the model);
- every answer is capped at the same number of new tokens on both paths.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage

from rag_core.bench.stats import median, ratio
from rag_core.context import AppContext
from rag_core.evaluation.answers import answer_correct


class PromptRecorder:
    """Wraps the LLM's ``messages_to_prompt`` to keep the last prompt it was asked to read."""

    def __init__(self, llm: Any, count_tokens: Callable[[str], int]) -> None:
        self.llm = llm
        self.count_tokens = count_tokens
        self.inner = llm.messages_to_prompt
        self.last = ""

    def __call__(self, messages: Sequence[ChatMessage]) -> str:
        self.last = self.inner(messages)
        return self.last

    def __enter__(self) -> PromptRecorder:
        self.llm.messages_to_prompt = self
        return self

    def __exit__(self, *exc: object) -> None:
        self.llm.messages_to_prompt = self.inner

    @property
    def tokens(self) -> int:
        return self.count_tokens(self.last)


def docent_turn(ctx: AppContext, question: str, session_id: str | None = None) -> dict[str, Any]:
    t = time.perf_counter()
    asked = ctx.chat.turn(question, session_id)
    preview = time.perf_counter() - t
    first = None
    for _ in asked:
        if first is None:
            first = time.perf_counter() - t
    turn = asked.result()
    return {
        "ttft_s": round(first or (time.perf_counter() - t), 3),
        "preview_s": round(preview, 3),
        "answer": turn.answer,
        "condense": turn.served_by.get("condense"),
        "timings": turn.timings,
    }


def naive_turn(engine: Any, question: str) -> dict[str, Any]:
    engine.reset()
    t = time.perf_counter()
    response = engine.stream_chat(question)
    first = None
    parts = []
    for token in response.response_gen:
        if first is None:
            first = time.perf_counter() - t
        parts.append(token)
    return {"ttft_s": round(first or (time.perf_counter() - t), 3), "answer": "".join(parts)}


def raw_turn(llm: Any, prompt: str) -> float:
    """Seconds to llama.cpp's first token on ``prompt``, read in full (no prompt cache)."""
    t = time.perf_counter()
    for _delta, _raw in llm._generate_stream(prompt, cache_prompt=False, max_tokens=4):
        return round(time.perf_counter() - t, 3)
    return round(time.perf_counter() - t, 3)


def naive_engine(ctx: AppContext, llm: Any) -> Any:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.chat_engine import CondensePlusContextChatEngine

    index = VectorStoreIndex.from_vector_store(ctx.index.vector_store, embed_model=ctx.embed_model)
    return CondensePlusContextChatEngine.from_defaults(retriever=index.as_retriever(similarity_top_k=5), llm=llm)


def bench_first_turns(ctx: AppContext, questions: list[dict[str, Any]], count_tokens: Callable[[str], int]) -> dict:
    """``ttft_vs_naive``, ``accuracy_vs_naive``, ``ttft_vs_raw`` and ``preview_s`` over ``questions``."""
    llm = ctx.llm()
    naive = naive_engine(ctx, llm)
    docent_turn(ctx, "What is this filing about?")  # warm-up: the keyword index, the model's first pass
    rows: list[dict[str, Any]] = []
    for q in questions:
        with PromptRecorder(llm, count_tokens) as rec:
            n = naive_turn(naive, q["question"])
            n["prompt_tokens"] = rec.tokens
            d = docent_turn(ctx, q["question"])
            d["prompt_tokens"] = rec.tokens
            docent_prompt = rec.last
        raw_s = raw_turn(llm, docent_prompt) if hasattr(llm, "_generate_stream") else None
        gold = q.get("gold_answer") or ""
        rows.append(
            {
                "id": q.get("id"),
                "docent": {**d, "correct": answer_correct(d["answer"], gold)},
                "naive": {**n, "correct": answer_correct(n["answer"], gold)},
                "raw_ttft_s": raw_s,
            }
        )
    docent_ttft = median([r["docent"]["ttft_s"] for r in rows])
    naive_ttft = median([r["naive"]["ttft_s"] for r in rows])
    docent_acc = sum(r["docent"]["correct"] for r in rows) / len(rows)
    naive_acc = sum(r["naive"]["correct"] for r in rows) / len(rows)
    return {
        "questions": len(rows),
        "ttft_vs_naive": ratio(docent_ttft, naive_ttft),
        "ttft_s": {"docent": docent_ttft, "naive": naive_ttft},
        "prompt_tokens": {
            "docent": median([r["docent"]["prompt_tokens"] for r in rows]),
            "naive": median([r["naive"]["prompt_tokens"] for r in rows]),
        },
        "accuracy_vs_naive": ratio(docent_acc, naive_acc) if naive_acc else (None if not docent_acc else float("inf")),
        "answer_accuracy": {"docent": round(docent_acc, 3), "naive": round(naive_acc, 3)},
        "ttft_vs_raw": ratio(docent_ttft, median([r["raw_ttft_s"] for r in rows if r["raw_ttft_s"] is not None])),
        "raw_ttft_s": median([r["raw_ttft_s"] for r in rows if r["raw_ttft_s"] is not None]),
        "preview_s": median([r["docent"]["preview_s"] for r in rows]),
        "per_question": rows,
    }


THINK_S = 8.0  # a person reading a short answer and typing the next question, at the least


def bench_follow_ups(ctx: AppContext, pairs: list[dict[str, Any]], think_s: float = THINK_S) -> dict:
    """``followup_vs_first``: a follow-up's time to first token (its rewrite included) ÷ the
    first turn's, on conversations of two questions (some completed by rule, some by the LLM).
    The follow-up is asked ``think_s`` after the first answer ended, as a person would ask it
    (the model reads ahead meanwhile, ``llm_read_ahead``); its prompt tokens read and reused
    are reported with it."""
    rows: list[dict[str, Any]] = []
    for pair in pairs:
        sid = ctx.sessions.create("bench").id
        first = docent_turn(ctx, pair["history"][0], sid)
        time.sleep(think_s)
        follow = docent_turn(ctx, pair["question"], sid)
        t = follow["timings"]
        rows.append(
            {
                "id": pair.get("id"),
                "first_ttft_s": first["ttft_s"],
                "follow_up_ttft_s": follow["ttft_s"],
                "condense": follow["condense"],
                "condense_s": round(t["condense_s"], 2) if t.get("condense_s") else None,
                "prompt_read_tokens": t.get("prompt_read_tokens"),
                "prompt_cached_tokens": t.get("prompt_cached_tokens"),
            }
        )
    first_m = median([r["first_ttft_s"] for r in rows])
    follow_m = median([r["follow_up_ttft_s"] for r in rows])
    return {
        "pairs": len(rows),
        "followup_vs_first": ratio(follow_m, first_m),
        "first_ttft_s": first_m,
        "follow_up_ttft_s": follow_m,
        "think_s": think_s,
        "read_ahead": ctx.settings.llm_read_ahead,
        "per_pair": rows,
    }
