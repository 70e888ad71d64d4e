"""Evaluation: how often retrieval finds the passage that answers a question.

A questions file has one JSON object per line::

    {"id": "q1", "question": "And how likely is it to spread?",
     "history": ["What are the common types of breast cancer?", "Ductal carcinoma ..."],
     "gold_rewrite": "How likely is lobular carcinoma to spread?",
     "gold_files": ["t106_p2.txt"], "gold_pages": [3], "gold_answer": "20% to 40%",
     "answerable": true}

Only ``question`` is required. ``history`` alternates user and assistant turns, oldest
first. ``gold_pages`` are 1-based pages of the ``gold_files``. ``answerable: false`` marks
a question the corpus cannot answer (the relevance gate should refuse it).

Each question is searched in up to three *modes*: ``raw`` (as typed), ``condensed`` (the
engine's rewrite from the history, ``ChatService.condense``, searched as the chat engine
searches a follow-up: with its conversation when ``history_search`` is on) and ``gold``
(the human rewrite alone: the upper bound of condensing). Per mode:

- ``recall``: share of answerable questions with a gold file among the top ``k`` sources;
  ``mrr``: mean reciprocal rank of the first such source (0 beyond ``k``);
  ``page_recall``/``page_mrr``: the same for (file, page) where gold pages are given;
- ``coverage``: mean share of a question's gold files found (differs from recall only for
  questions with several gold files);
- ``answer_recall``: share of questions whose short ``gold_answer`` (a span of at most
  ``SPAN_MAX`` characters) appears in the retrieved text;
- ``rewrite_f1`` (condensed): token F1 of the rewrite against ``gold_rewrite``;
- ``false_refusals``: share of answerable questions for which nothing was retrieved;
  ``correct_refusals``: share of unanswerable ones for which nothing was retrieved.

Retrieval only: no answer is generated, so an evaluation costs one search per question
and mode, plus one LLM call per follow-up for ``condensed``. The CLI indexes a corpus
folder into a cache keyed by the files and the settings that shape the index, so a second
run (or a run with other retrieval settings) starts at once.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import shutil
import string
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.errors import ConfigError, DocentError
from rag_core.retrieval import CJK_RANGES
from rag_core.settings import DocentSettings, load_settings

logger = logging.getLogger(__name__)

MODES = ("raw", "condensed", "gold")
SPAN_MAX = 100  # longer gold answers are prose, not spans: no answer_recall for them
CACHE_VERSION = 1  # bump when ingestion changes what an index holds
READY_MARKER = "eval-ready.json"

Progress = Callable[[str, float], None]  # (message, fraction 0..1), as in ingestion


# ---------------------------------------------------------------------------- questions
@dataclass
class EvalQuestion:
    """One line of a questions file."""

    id: str
    question: str
    history: list[str] = field(default_factory=list)
    gold_rewrite: str | None = None
    gold_files: list[str] = field(default_factory=list)
    gold_pages: list[int] = field(default_factory=list)
    gold_answer: str | None = None
    answerable: bool = True

    @classmethod
    def from_json(cls, obj: dict[str, Any], where: str = "") -> EvalQuestion:
        if not isinstance(obj, dict) or not str(obj.get("question") or "").strip():
            raise ConfigError(f'{where}: each line needs a JSON object with a non-empty "question"')
        history = obj.get("history") or []
        if not isinstance(history, list) or not all(isinstance(t, str) for t in history):
            raise ConfigError(f'{where}: "history" must be a list of strings (user, assistant, user, ...)')
        files = obj.get("gold_files") or []
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ConfigError(f'{where}: "gold_files" must be a list of file names')
        pages = obj.get("gold_pages") or []
        ok = isinstance(pages, list) and all(
            (isinstance(p, int) and not isinstance(p, bool)) or (isinstance(p, str) and p.strip().isdigit())
            for p in pages
        )
        if not ok:
            raise ConfigError(f'{where}: "gold_pages" must be a list of page numbers')
        return cls(
            id=str(obj.get("id") or where),
            question=str(obj["question"]).strip(),
            history=list(history),
            gold_rewrite=(str(obj["gold_rewrite"]).strip() or None) if obj.get("gold_rewrite") else None,
            gold_files=list(files),
            gold_pages=[int(p) for p in pages],
            gold_answer=str(obj["gold_answer"]) if obj.get("gold_answer") else None,
            answerable=bool(obj.get("answerable", True)),
        )

    def history_pairs(self) -> list[tuple[str, str]]:
        """(role, text) pairs, oldest first, as ``ChatService.condense`` takes them."""
        return [("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(self.history)]


def load_questions(path: Path | str) -> list[EvalQuestion]:
    """Read a questions file (JSONL, UTF-8); blank lines are skipped."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"Cannot read the questions file {path}: {e}") from e
    return parse_questions(data, path.name)


def parse_questions(data: bytes | str, name: str = "questions") -> list[EvalQuestion]:
    """Questions from the text of a questions file (as uploaded); errors name ``name`` and the line."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ConfigError(f"{name}: not UTF-8 text (byte {e.start}); save the file as UTF-8") from None
    out = []
    for no, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise ConfigError(f"{name}:{no}: not JSON ({e})") from None
        out.append(EvalQuestion.from_json(obj, f"{name}:{no}"))
    if not out:
        raise ConfigError(f"{name}: no questions (one JSON object per line)")
    return out


def _as_questions(questions: Iterable[EvalQuestion | dict[str, Any]] | Path | str) -> list[EvalQuestion]:
    if isinstance(questions, (str, Path)):
        return load_questions(questions)
    return [
        q if isinstance(q, EvalQuestion) else EvalQuestion.from_json(q, f"question {i + 1}")
        for i, q in enumerate(questions)
    ]


# ---------------------------------------------------------------------------- metrics
_CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
_PUNCT = set(string.punctuation) | set("，。！？；：、“”‘’（）《》【】「」『』…—·")
_ARTICLES = {"a", "an", "the"}


def f1_tokens(text: str) -> list[str]:
    """SQuAD-style tokens: lower-cased words without punctuation or articles; CJK per character."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _CJK_CHAR.sub(lambda m: f" {m.group(0)} ", text)
    return [t for t in text.split() if t not in _ARTICLES]


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall (bag of tokens), as SQuAD scores answers."""
    pred, ref = f1_tokens(prediction), f1_tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def file_matches(source_file: str | None, gold: str) -> bool:
    """A source matches a gold file by its name in the corpus, or by its base name."""
    if not source_file:
        return False
    a = unicodedata.normalize("NFC", source_file).replace("\\", "/")
    b = unicodedata.normalize("NFC", gold).replace("\\", "/")
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text or "").lower())


def score_sources(q: EvalQuestion, sources: Sequence[dict[str, Any]], k: int) -> dict[str, Any]:
    """File/page hit ranks (1-based, None when absent from the top ``k``) for one search."""
    top = list(sources)[:k]
    file_rank = page_rank = None
    found: set[str] = set()
    for rank, src in enumerate(top, 1):
        for gold in q.gold_files:
            if file_matches(src.get("file"), gold):
                found.add(gold)
                file_rank = file_rank or rank
                if q.gold_pages and src.get("page") in q.gold_pages:
                    page_rank = page_rank or rank
    out: dict[str, Any] = {
        "file_rank": file_rank,
        "coverage": len(found) / len(set(q.gold_files)) if q.gold_files else None,
        "page_rank": page_rank if q.gold_pages else None,
        "refused": not top,
        "files": [s.get("file") for s in top],
    }
    if q.gold_answer and len(q.gold_answer) <= SPAN_MAX:
        text = _squash(" ".join(str(s.get("text") or "") for s in top))
        out["answer_found"] = _squash(q.gold_answer) in text
    return out


def summarise(rows: list[dict[str, Any]], questions: list[EvalQuestion]) -> dict[str, Any]:
    """Per-mode figures from per-question rows (see the module docstring)."""
    answerable = [(q, r) for q, r in zip(questions, rows, strict=False) if q.answerable]
    graded = [(q, r) for q, r in answerable if q.gold_files]
    off = [r for q, r in zip(questions, rows, strict=False) if not q.answerable]

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    out: dict[str, Any] = {"n": len(graded)}
    if graded:
        out["recall"] = mean([1.0 if r["file_rank"] else 0.0 for _, r in graded])
        out["mrr"] = mean([1.0 / r["file_rank"] if r["file_rank"] else 0.0 for _, r in graded])
        out["coverage"] = mean([r["coverage"] for _, r in graded])
    paged = [r for q, r in graded if q.gold_pages]
    if paged:
        out["page_recall"] = mean([1.0 if r["page_rank"] else 0.0 for r in paged])
        out["page_mrr"] = mean([1.0 / r["page_rank"] if r["page_rank"] else 0.0 for r in paged])
    spans = [r["answer_found"] for _, r in answerable if "answer_found" in r]
    if spans:
        out["answer_recall"] = mean([1.0 if s else 0.0 for s in spans])
        out["n_answers"] = len(spans)
    rewrites = [r["rewrite_f1"] for r in rows if r.get("rewrite_f1") is not None]
    if rewrites:
        out["rewrite_f1"] = mean(rewrites)
    errors = sum(1 for r in rows if r.get("condense_error"))
    if errors:
        out["condense_errors"] = errors
    if answerable:
        out["false_refusals"] = mean([1.0 if r["refused"] else 0.0 for _, r in answerable])
    if off:
        out["n_unanswerable"] = len(off)
        out["correct_refusals"] = mean([1.0 if r["refused"] else 0.0 for r in off])
    return out


# ---------------------------------------------------------------------------- corpus cache
def corpus_key(corpus: Path, settings: DocentSettings) -> str:
    """Hash of the corpus file list (names, sizes, mtimes) and the settings that shape the index."""
    from rag_core.ingestion import iter_inputs

    h = hashlib.sha256()
    shape = {
        "v": CACHE_VERSION,
        "embed": settings.embed_provider,
        "chunk_size": settings.chunk_size,
        "chunk_overlap": settings.chunk_overlap,
    }
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
    cache_root = Path(cache_root or settings.data_dir / "eval-cache")
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
    from rag_core.ingestion import iter_inputs

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


# ---------------------------------------------------------------------------- condense cache
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
        from rag_core.chat import CONDENSE_PROMPT

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


# ---------------------------------------------------------------------------- run
def run_eval(
    ctx_or_settings: AppContext | DocentSettings,
    questions: Iterable[EvalQuestion | dict[str, Any]] | Path | str,
    k: int = 5,
    modes: Sequence[str] = MODES,
    limit: int | None = None,
    progress: Progress | None = None,
    *,
    condense_cache: Path | None = None,
    details: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Search every question in every mode over the documents already indexed in the context.

    ``questions``: EvalQuestion objects, dicts in the file format, or a path to a JSONL file.
    ``progress(message, fraction)`` is called after each question. ``details``, if given,
    receives one dict per question and mode (query searched, ranks, files retrieved, retriever
    stats). Returns
    ``{"n", "k", "modes": {mode: {...figures...}}, "settings", "seconds"}``."""
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigError(f"Unknown mode(s) {', '.join(unknown) or '(none)'}; known: {', '.join(MODES)}")
    ctx = ctx_or_settings if isinstance(ctx_or_settings, AppContext) else build_context(ctx_or_settings)
    qs = _as_questions(questions)
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
            query, row = q.question, {}
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
    result = {
        "n": len(qs),
        "k": k,
        "modes": {m: summarise(rows[m], qs) for m in modes},
        "settings": _retrieval_settings(settings),
        "seconds": round(time.perf_counter() - started, 1),
        "timings": {key: round(v, 1) for key, v in timings.items()},
    }
    return result


def condense_history(settings: DocentSettings, q: EvalQuestion) -> list[tuple[str, str]]:
    """The history the chat engine would condense with: the session's messages trimmed,
    oldest first, to ``memory_token_limit`` (as ``ChatService.stream`` builds its memory), then
    to ``condense_token_limit`` if set (as ``DocentChatEngine`` trims it for the rewrite)."""
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory import ChatMemoryBuffer

    messages = [ChatMessage(role=MessageRole(r), content=t) for r, t in q.history_pairs()]
    if not messages:
        return []
    memory = ChatMemoryBuffer.from_defaults(chat_history=messages, token_limit=max(settings.memory_token_limit, 1))
    kept = memory.get(input=q.question)
    if settings.condense_token_limit:
        from rag_core.chat import trim_history

        kept = trim_history(kept, settings.condense_token_limit)
    return [(m.role.value, m.content or "") for m in kept]


def _condense(ctx: AppContext, cache: CondenseCache, q: EvalQuestion, timings: dict[str, float]) -> str:
    history = condense_history(ctx.settings, q)
    if not history:
        return q.question
    key = CondenseCache.key(ctx.settings, q.question, history)
    hit = cache.get(key)
    if hit is not None:
        return hit
    t = time.perf_counter()
    rewrite = ctx.chat.condense(q.question, history)
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
    return {name: _jsonable(getattr(settings, name)) for name in _RETRIEVAL_FIELDS}


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


# ---------------------------------------------------------------------------- report
def format_table(result: dict[str, Any]) -> str:
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


# ---------------------------------------------------------------------------- CLI
def register_cli(subparsers: Any) -> None:
    s = subparsers.add_parser(
        "eval",
        help="measure retrieval on a questions file over a corpus folder",
        description="Index a corpus folder (cached) and report recall@k / MRR per search mode.",
    )
    s.add_argument("--corpus", required=True, help="folder of documents to index (cached by content and settings)")
    s.add_argument(
        "--questions",
        required=True,
        action="append",
        help="JSONL questions file (repeatable: e.g. answerable and unanswerable questions)",
    )
    s.add_argument("--k", type=int, default=5, help="sources per search (default 5)")
    s.add_argument("--limit", type=int, help="only the first N questions of each questions file")
    s.add_argument("--modes", default=",".join(MODES), help="comma-separated: raw,condensed,gold")
    s.add_argument("--json", action="store_true", help="print the result as one JSON object (the last line)")
    s.add_argument("--details", help="write one JSON line per question to this file")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a setting for this run, e.g. --set retrieval_mode=vector (repeatable)",
    )
    s.add_argument("--cache-dir", help="where indexed corpora are kept (default: <data dir>/eval-cache)")
    s.add_argument("--fresh", action="store_true", help="index the corpus again even if cached")
    s.add_argument("--no-condense-cache", action="store_true", help="call the LLM for every rewrite")
    s.set_defaults(func=cmd_eval)


def _overrides(pairs: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or name not in DocentSettings.model_fields:
            raise ConfigError(f"--set {pair!r}: expected FIELD=VALUE with a settings field (see rag_core/settings.py)")
        out[name] = value
    return out


def cmd_eval(args: argparse.Namespace) -> int:
    overrides = _overrides(args.set)
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    settings = load_settings(**overrides)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    questions: list[EvalQuestion] = []
    for path in args.questions:
        questions.extend(load_questions(path)[: args.limit or None])
    tty = sys.stderr.isatty()

    def progress(msg: str, frac: float) -> None:
        if tty:
            print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)
        else:
            print(msg, file=sys.stderr, flush=True)

    cache_root = Path(args.cache_dir) if args.cache_dir else None
    ctx = prepare_corpus(settings, Path(args.corpus), cache_root, progress, fresh=args.fresh)
    if tty:
        print("\r\033[K", end="", file=sys.stderr)
    if "condensed" in modes and any(q.history for q in questions):
        progress("loading the LLM for condensing…", 0.0)
        ctx.llm()
    condense_cache = None if args.no_condense_cache else ctx.settings.data_dir / "condense-cache.jsonl"
    details: list[dict[str, Any]] = []
    result = run_eval(
        ctx, questions, k=args.k, modes=modes, progress=progress, condense_cache=condense_cache, details=details
    )
    if tty:
        print("\r\033[K", end="", file=sys.stderr)
    if args.details:
        with open(args.details, "w", encoding="utf-8") as f:
            for d in details:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
    print(format_table(result), flush=True)
    if args.json:
        print(json.dumps(result, ensure_ascii=False), flush=True)
    return 0
