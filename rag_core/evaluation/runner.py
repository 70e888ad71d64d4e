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
from rag_core.evaluation.answers import score_answer, summarise_answers
from rag_core.evaluation.metrics import score_sources, summarise, token_f1
from rag_core.evaluation.questions import EvalQuestion, as_questions
from rag_core.evaluation.trust import format_trust, trust_row, trust_table
from rag_core.files import Progress
from rag_core.payloads import EvalResult
from rag_core.prompts import CONDENSE_PROMPT
from rag_core.settings import DocentSettings

logger = logging.getLogger(__name__)

MODES = ("raw", "condensed", "gold")  # retrieval only: the default
ANSWER = "answer"  # each question asked through the chat's own path, the answer scored
KNOWN_MODES = (*MODES, ANSWER)


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
    unknown = [m for m in modes if m not in KNOWN_MODES]
    if unknown or not modes:
        raise ConfigError(f"Unknown mode(s) {', '.join(unknown) or '(none)'}; known: {', '.join(KNOWN_MODES)}")
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
    if ANSWER in modes:
        timings["answer_s"] = 0.0
    started = time.perf_counter()
    for i, q in enumerate(qs):
        detail: dict[str, Any] = {"id": q.id, "question": q.question}
        for mode in modes:
            if mode == ANSWER:
                row = _answer_row(ctx, q, k, timings)
                detail[mode] = {key: row[key] for key in _ANSWER_DETAIL if key in row}
            else:
                row = _search_row(ctx, cache, q, mode, k, timings, detail)
            rows[mode].append(row)
        if details is not None:
            details.append(detail)
        hits = " ".join(_progress_mark(m, rows[m][-1]) for m in modes)
        report(f"[{i + 1}/{len(qs)}] {q.id}: {hits}", (i + 1) / len(qs))
    result: EvalResult = {
        "n": len(qs),
        "k": k,
        "modes": {m: _summary(m, rows[m], qs) for m in modes},
        "settings": _retrieval_settings(settings),
        "seconds": round(time.perf_counter() - started, 1),
        "timings": {key: round(v, 1) for key, v in timings.items()},
    }
    return result


def _summary(mode: str, rows: list[dict[str, Any]], qs: list[EvalQuestion]) -> dict[str, Any]:
    if mode != ANSWER:
        return summarise(rows, qs)
    out = summarise_answers(rows, qs)
    if any(r.get("trust") for r in rows):
        out["trust"] = trust_table(rows, qs)
    return out


def _progress_mark(mode: str, row: dict[str, Any]) -> str:
    mark = f"{mode}={row.get('file_rank') or '-'}"
    if "correct" in row:
        mark += " right" if row["correct"] else " wrong"
    return mark


def _search_row(
    ctx: AppContext,
    cache: CondenseCache,
    q: EvalQuestion,
    mode: str,
    k: int,
    timings: dict[str, float],
    detail: dict[str, Any],
) -> dict[str, Any]:
    """One search of one question in a retrieval mode, scored (and described in ``detail``)."""
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
    if mode == "condensed":  # searched as the chat engine searches a follow-up
        found = ctx.chat.search(query, top_k=k, history=q.history_pairs(), typed=q.question)
    else:
        found = ctx.chat.search(query, top_k=k)
    timings["retrieve_s"] += time.perf_counter() - t
    stats = found.stats
    row.update(score_sources(q, found.sources, k))
    detail[mode] = {"query": query}
    detail[mode].update({key: row[key] for key in ("file_rank", "page_rank", "refused", "files") if key in row})
    if "answer_found" in row:
        detail[mode]["answer_found"] = row["answer_found"]
    if stats:
        detail[mode]["stats"] = stats
    return row


_ANSWER_DETAIL = (
    "answer",
    "correct",
    "cited_page",
    "page_rank",
    "file_rank",
    "refused_answer",
    "files",
    "timings",
    "figures_checked",
    "figures_unsupported",
    "error",
    "trust",
)


def _answer_row(ctx: AppContext, q: EvalQuestion, k: int, timings: dict[str, float]) -> dict[str, Any]:
    """One question asked as the chat asks it (its history as the conversation), the answer scored."""
    t = time.perf_counter()
    try:
        turn = ctx.chat.ask(q.question, history=q.history_pairs())
    except DocentError as e:  # one failed answer (e.g. a too long prompt) is a data point
        logger.warning("answering %s failed: %s", q.id, e)
        timings["answer_s"] += time.perf_counter() - t
        failed: dict[str, Any] = {"file_rank": None, "page_rank": None, "refused": True, "refused_answer": True}
        failed |= {"error": str(e), "trust": "refused"}
        return failed
    timings["answer_s"] += time.perf_counter() - t
    row = score_sources(q, turn.sources, k)
    row.update(score_answer(q, turn.answer, turn.sources))
    row["answer"] = turn.answer
    row["timings"] = turn.timings
    row["figures_checked"] = turn.figures_checked
    row["figures_unsupported"] = turn.figures_unsupported
    if q.answerable:
        row["trust"] = trust_row(turn.answer, q.gold_answer, bool(turn.figures_unsupported))
    return row


def _condense(ctx: AppContext, cache: CondenseCache, q: EvalQuestion, timings: dict[str, float]) -> str:
    history = ctx.chat.condense_window(q.question, q.history_pairs())
    if not history:
        return q.question
    if ctx.settings.followup_rules:  # as the chat does: the rules first, no LLM call when one applies
        from rag_core.chat.engine import rule_rewrite
        from rag_core.chat.messages import as_chat_messages

        ruled = rule_rewrite(q.question, as_chat_messages(history))
        if ruled is not None:
            return ruled[0]
    key = CondenseCache.key(ctx.settings, q.question, history)
    hit = cache.get(key)
    if hit is not None:
        return hit
    t = time.perf_counter()
    rewrite = ctx.chat.condense(q.question, q.history_pairs(), rules=False)
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
    "followup_rules",
    "answer_context_tokens",
    "llm_provider",
    "multi_query",
    "retry_weak",
    "retry_threshold",
    "relevance_gate",
    "gate_threshold",
    "neighbor_window",
    "cjk_vector_weight",
    "document_weight",
    "entity_scope",
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
        "foreign_sources",
        "answer_accuracy",
        "answer_accuracy_page_retrieved",
        "citation_page",
        "refusal_rate",
        "false_refusal_rate",
        "figures_checked",
        "figures_unsupported",
        "wrong_answers_marked",
        "right_answers_marked",
    ]
    present = [c for c in columns if any(c in figures for figures in result["modes"].values())]
    lines = [f"{result['n']} questions, k={result['k']}, {result['seconds']} s"]
    lines.append("mode        " + "".join(f"{c:>17}" for c in present))
    for mode, figures in result["modes"].items():
        cells = "".join(f"{figures[c]:>17.3f}" if c in figures else f"{'':>17}" for c in present)
        lines.append(f"{mode:<12}{cells}")
    for figures in result["modes"].values():
        if figures.get("trust"):
            lines.append(format_trust(figures["trust"]))
    return "\n".join(lines)
