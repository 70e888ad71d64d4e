"""``eval-set``: the shared evaluation sets converted for ``eval`` (docs/evaluation.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rag_core.errors import ConfigError
from rag_core.evaluation.sec10q import convert_sec10q, write_figure_questions
from rag_core.evaluation.sets import convert_cast, convert_cmrc

SETS = ("cast", "cmrc", "sec10q")


def register_eval_sets(subparsers: Any) -> None:
    s = subparsers.add_parser(
        "eval-set",
        help="convert a shared evaluation set (cast, cmrc, sec10q) into a corpus folder and questions files",
        description="Reads the shared eval folder (../shared/data/eval) and writes OUT/corpus, OUT/questions.jsonl, "
        "OUT/unanswerable.jsonl (and, per set, more), for `python -m rag_core eval`.",
    )
    s.add_argument("set", choices=SETS)
    s.add_argument("shared", type=Path, help="the shared eval folder, e.g. ../shared/data/eval")
    s.add_argument("out", type=Path, help="output folder")
    s.add_argument("--holdout", type=int, help="cast: topics (default 4); cmrc: paragraphs (default 48) left out")
    s.add_argument("--figures", action="store_true", help="sec10q: also the figure questions with page gold")
    s.set_defaults(func=cmd_eval_set)


def cmd_eval_set(args: argparse.Namespace) -> int:
    shared, out = Path(args.shared), Path(args.out)
    try:
        if args.set == "cast":
            stats = convert_cast(shared, out, 4 if args.holdout is None else args.holdout)
        elif args.set == "cmrc":
            stats = convert_cmrc(shared, out, 48 if args.holdout is None else args.holdout)
        else:
            stats = convert_sec10q(shared, out)
            if args.figures:
                stats["figures"] = write_figure_questions(out)
    except FileNotFoundError as e:
        raise ConfigError(str(e)) from e
    print(json.dumps(stats), file=sys.stderr)
    print(f"python -m rag_core eval --corpus {out / 'corpus'} --questions {out / 'questions.jsonl'}")
    return 0
