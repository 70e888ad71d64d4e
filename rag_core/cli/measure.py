"""``eval``: measure retrieval on a questions file over a corpus folder (docs/evaluation.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_core.cli.startup import settings_for
from rag_core.errors import ConfigError
from rag_core.evaluation import ANSWER, MODES, EvalQuestion, format_table, load_questions, prepare_corpus, run_eval
from rag_core.evaluation.financebench import is_financebench, load_financebench
from rag_core.settings import leaf_fields


def register_eval(subparsers: Any) -> None:
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
        help="JSONL questions file, or a FinanceBench folder (repeatable: e.g. answerable and unanswerable questions)",
    )
    s.add_argument("--group", help="only the questions of this group (a set's half: tune or held-out)")
    s.add_argument("--k", type=int, default=5, help="sources per search (default 5)")
    s.add_argument("--limit", type=int, help="only the first N questions of each questions file")
    s.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated: raw,condensed,gold (retrieval), answer (each question answered by the LLM and scored)",
    )
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
        if not sep or name not in leaf_fields():
            raise ConfigError(
                f"--set {pair!r}: expected FIELD=VALUE with a settings field (see rag_core/settings/tree.py)"
            )
        out[name] = value
    return out


def cmd_eval(args: argparse.Namespace) -> int:
    settings = settings_for(args, **_overrides(args.set))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    questions: list[EvalQuestion] = []
    for path in args.questions:
        loaded = load_financebench(path) if is_financebench(path) else load_questions(path)
        if args.group:
            loaded = [q for q in loaded if q.group == args.group]
        questions.extend(loaded[: args.limit or None])
    if not questions:
        raise ConfigError(f"No questions{f' in the group {args.group!r}' if args.group else ''}.")
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
    if ANSWER in modes or ("condensed" in modes and any(q.history for q in questions)):
        progress("loading the LLM…", 0.0)
        ctx.llm()
    condense_cache = None if args.no_condense_cache else ctx.settings.paths.condense_cache
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
