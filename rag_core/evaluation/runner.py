"""Running an evaluation: every question searched in every mode, scored, summarised."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from rag_core.context import AppContext
from rag_core.errors import ConfigError, DocentError
from rag_core.evaluation.metrics import score_sources, summarise, token_f1
from rag_core.evaluation.questions import EvalQuestion, as_questions
from rag_core.files import Progress
from rag_core.payloads import EvalResult
from rag_core.prompts import CONDENSE_PROMPT
from rag_core.settings import DocentSettings

logger = logging.getLogger(__name__)

MODES = ("raw", "condensed", "gold")


class CondenseCache:
    """Rewrites already computed, keyed by everything that shapes them (prompt, history,
    model, sampling). Makes repeated runs identical and lets a retrieval experiment reuse
    the slow LLM calls of an earlier run."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, str] = {}
        if path and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    obj = json.loads(line)
                    self.data[obj["key"]] = obj["rewrite"]
                except (ValueError, KeyError):
                    continue

    @staticmethod
    def key(settings: DocentSettings, question: str, history: list[tuple[str, str]]) -> str:
        model = settings.openai_model if settings.llm_provider == "openai" else settings.llm_provider
        payload = [CONDENSE_PROMPT, model, settings.llm_temperature, settings.condense, history, question]
        return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()

    def get(self, key: str) -> str | None:
        return self.data.get(key)

    def put(self, key: str, rewrite: str) -> None:
        self.data[key] = rewrite
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "rewrite": rewrite}, ensure_ascii=False) + "\n")


def run_eval(
    ctx: AppContext,
    questions: Iterable[EvalQuestion | dict[str, Any]] | Path | str,
    k: int = 5,
    modes: Sequence[str] = MODES,
    limit: int | None = None,
    progress: Progress | None = None,
    *,
    condense_cache: Path | None = None,
    details: list[dict[str, Any]] | None = None,
) -> EvalResult:
    """Search every question in every mode over the documents already indexed in the context.

    ``questions``: EvalQuestion objects, dicts in the file format, or a path to a JSONL file.
    ``progress(message, fraction)`` is called after each question. ``details``, if given,
    receives one dict per question and mode (query searched, ranks, files retrieved, retriever
    stats). Returns
    ``{"n", "k", "modes": {mode: {...figures...}}, "settings", "seconds"}``."""
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigError(f"Unknown mode(s) {', '.join(unknown) or '(none)'}; known: {', '.join(MODES)}")
    qs = as_questions(questions)
    if limit:
        qs = qs[:limit]
    if not qs:
        raise ConfigError("No questions to evaluate.")
    if k < 1:
        raise ConfigError("k must be at least 1.")
    settings = ctx.settings
    cache = CondenseCache(condense_cache)
    report = progress or (lambda msg, frac: None)
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    timings: dict[str, float] = {"condense_s": 0.0, "retrieve_s": 0.0}
    started = time.perf_counter()
    for i, q in enumerate(qs):
        detail: dict[str, Any] = {"id": q.id, "question": q.question}
        for mode in modes:
            query, row = q.question, cast(dict[str, Any], {})
            if mode == "condensed":
                try:
                    query = _condense(ctx, cache, q, timings)
                except DocentError as e:  # one failed rewrite (e.g. a too long history) is a data point
                    logger.warning("condensing %s failed: %s", q.id, e)
                    row["condense_error"] = True
                    detail["condense_error"] = str(e)
                if q.gold_rewrite:
                    row["rewrite_f1"] = round(token_f1(query, q.gold_rewrite), 4)
            elif mode == "gold":
                query = q.gold_rewrite or q.question
            t = time.perf_counter()
            stats: dict[str, Any] = {}
            if mode == "condensed":  # searched as the chat engine searches a follow-up
                sources = ctx.chat.retrieve(query, top_k=k, stats=stats, history=q.history_pairs(), typed=q.question)
            else:
                sources = ctx.chat.retrieve(query, top_k=k, stats=stats)
            timings["retrieve_s"] += time.perf_counter() - t
            row.update(score_sources(q, sources, k))
            rows[mode].append(row)
            detail[mode] = {"query": query}
            detail[mode].update({key: row[key] for key in ("file_rank", "page_rank", "refused", "files") if key in row})
            if "answer_found" in row:
                detail[mode]["answer_found"] = row["answer_found"]
            if stats:
                detail[mode]["stats"] = stats
        if details is not None:
            details.append(detail)
        hits = " ".join(f"{m}={'-' if not rows[m][-1]['file_rank'] else rows[m][-1]['file_rank']}" for m in modes)
        report(f"[{i + 1}/{len(qs)}] {q.id}: {hits}", (i + 1) / len(qs))
    result: EvalResult = {
        "n": len(qs),
        "k": k,
        "modes": {m: summarise(rows[m], qs) for m in modes},
        "settings": _retrieval_settings(settings),
        "seconds": round(time.perf_counter() - started, 1),
        "timings": {key: round(v, 1) for key, v in timings.items()},
    }
    return result


def _condense(ctx: AppContext, cache: CondenseCache, q: EvalQuestion, timings: dict[str, float]) -> str:
    history = ctx.chat.condense_window(q.question, q.history_pairs())
    if not history:
        return q.question
    key = CondenseCache.key(ctx.settings, q.question, history)
    hit = cache.get(key)
    if hit is not None:
        return hit
    t = time.perf_counter()
    rewrite = ctx.chat.condense(q.question, q.history_pairs())
    timings["condense_s"] += time.perf_counter() - t
    cache.put(key, rewrite)
    return rewrite


_RETRIEVAL_FIELDS = (
    "embed_provider",
    "chunk_size",
    "chunk_overlap",
    "retrieval_mode",
    "top_k",
    "similarity_cutoff",
    "rerank_provider",
    "condense",
    "history_search",
    "memory_token_limit",
    "condense_token_limit",
    "llm_provider",
    "multi_query",
    "retry_weak",
    "retry_threshold",
    "relevance_gate",
    "gate_threshold",
    "neighbor_window",
    "cjk_vector_weight",
    "document_weight",
)


def _retrieval_settings(settings: DocentSettings) -> dict[str, Any]:
    return {name: _jsonable(settings.value(name)) for name in _RETRIEVAL_FIELDS}


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


def format_table(result: EvalResult) -> str:
    """The per-mode figures as a plain-text table."""
    columns = [
        "recall",
        "mrr",
        "coverage",
        "page_recall",
        "page_mrr",
        "answer_recall",
        "rewrite_f1",
        "false_refusals",
        "correct_refusals",
    ]
    present = [c for c in columns if any(c in figures for figures in result["modes"].values())]
    lines = [f"{result['n']} questions, k={result['k']}, {result['seconds']} s"]
    lines.append("mode        " + "".join(f"{c:>17}" for c in present))
    for mode, figures in result["modes"].items():
        cells = "".join(f"{figures[c]:>17.3f}" if c in figures else f"{'':>17}" for c in present)
        lines.append(f"{mode:<12}{cells}")
    return "\n".join(lines)
