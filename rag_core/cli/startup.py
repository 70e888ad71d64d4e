"""How a command starts: the context from the command line's settings, with what start-up
had to say (never only in a log)."""

from __future__ import annotations

import argparse
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
