"""What commands print: one JSON object per line on stdout (the ``--json`` contract), and
progress on stderr: redrawn on one line of a terminal, one line now and then anywhere else
(JSON lines with ``--json``)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from rag_core.files import Progress


def emit(obj: Any) -> None:
    """One JSON object on one line: the ``--json`` contract."""
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def progress_to_stderr(as_json: bool, every: float = 1.0) -> Progress:
    """A ``(message, fraction)`` callback for stderr. On a terminal (without ``--json``) it
    redraws one line; anywhere else (a pipe, a log file) it writes a line when a file starts,
    when it is done and at most once per ``every`` seconds between: with ``as_json`` one JSON
    object per line (``{"progress": 0.42, "message": "report.pdf: embedding ..."}``), so that a
    script sees a long file move, else the message alone."""
    last_at, last_file = -every, ""

    def report(msg: str, frac: float = 0.0) -> None:
        nonlocal last_at, last_file
        if not as_json and sys.stderr.isatty():
            print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)
            return
        now, file = time.monotonic(), msg.partition(": ")[0]
        if frac < 1.0 and file == last_file and now - last_at < every:
            return
        last_at, last_file = now, file
        line = json.dumps({"progress": round(frac, 3), "message": msg}, ensure_ascii=False) if as_json else msg
        print(line, file=sys.stderr, flush=True)

    return report


def clear_line() -> None:
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
