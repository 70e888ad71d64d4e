"""What every command shares: the context from the command line's settings, JSON output, progress."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.settings import load_settings


def context(args: argparse.Namespace, recover: bool = True) -> AppContext:
    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    ctx = build_context(load_settings(**overrides), recover=recover)
    for notice in ctx.notices:  # what start-up had to repair: never only in a log
        print(f"notice: {notice}", file=sys.stderr)
    return ctx


def emit(obj: Any) -> None:
    """One JSON object on one line: the ``--json`` contract."""
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def progress_to_stderr(quiet: bool):
    """A ``(message, fraction)`` callback that redraws one line on a terminal, or None."""
    if quiet:
        return None

    def report(msg: str, frac: float = 0.0) -> None:
        if sys.stderr.isatty():
            print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)

    return report


def clear_line() -> None:
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
