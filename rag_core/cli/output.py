"""What commands print: one JSON object per line (the ``--json`` contract), and progress
redrawn on one line of a terminal's stderr (never into a pipe)."""

from __future__ import annotations

import json
import sys
from typing import Any


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
