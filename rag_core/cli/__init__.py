"""``python -m rag_core``: the command line over the same services the app uses.

``--json`` outputs are a contract for scripts: fields are added, never renamed.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence

from rag_core.bench import register_cli as register_bench
from rag_core.cli.api import register_api
from rag_core.cli.chatting import cmd_ask, cmd_chat, cmd_sessions
from rag_core.cli.documents import cmd_check, cmd_docs, cmd_ingest, cmd_rebuild
from rag_core.cli.evalsets import register_eval_sets
from rag_core.cli.measure import register_eval
from rag_core.cli.serving import register_serving
from rag_core.errors import DocentError
from rag_core.loaders import SUPPORTED_LABEL


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rag_core", description="Docent: chat with your documents, offline.")
    p.add_argument("--data-dir", help="state folder (default: DOCENT_DATA_DIR or ~/.docent)")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("ingest", help=f"add or update files/folders ({SUPPORTED_LABEL})")
    s.add_argument("paths", nargs="+")
    s.add_argument("--json", action="store_true", help="one JSON object per file; progress as JSON lines on stderr")
    s.add_argument("--strict", action="store_true", help="exit 1 if any file failed")
    same = s.add_mutually_exclusive_group()
    same.add_argument("--replace", action="store_true", help="a different file of a name already indexed replaces it")
    same.add_argument("--keep-both", action="store_true", help="... is indexed beside it, as 'NAME (2).ext'")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("ask", help="answer one question")
    s.add_argument("question")
    s.add_argument("--session", help="session id or name (created if new); default: a one-off question")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("chat", help="questions from stdin, one per line; /clear, /stats, /quit")
    s.add_argument("--session", help="session name or id (created if new)")
    s.add_argument("--json", action="store_true", help="one JSON object per answer")
    s.set_defaults(func=cmd_chat)

    s = sub.add_parser("docs", help="list or delete documents")
    s.add_argument("action", choices=["list", "delete"])
    s.add_argument("names", nargs="*")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_docs)

    s = sub.add_parser(
        "sessions",
        help="list, delete, export or import sessions",
        description="sessions list | sessions delete ID... | sessions export ID_OR_NAME [--format json|md] [-o FILE]"
        " | sessions import FILE",
    )
    s.add_argument("action", choices=["list", "delete", "export", "import"])
    s.add_argument("ids", nargs="*", help="session ids or names (delete, export); the file to import")
    s.add_argument("--json", action="store_true")
    s.add_argument("--format", choices=["json", "md"], default="json", help="export: JSON (to import) or Markdown")
    s.add_argument("-o", "--output", help="export: write to this file instead of stdout")
    s.set_defaults(func=cmd_sessions)

    s = sub.add_parser("check", help="verify that docstore, Chroma and SQLite agree")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--repair",
        action="store_true",
        help="first repair: remove what interrupted ingestions left, register documents the registry lost, "
        "ingest again from stored copies what the index lost, rebuild a damaged docent.db",
    )
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("rebuild", help="re-embed every stored document with the current settings")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_rebuild)

    register_eval(sub)
    register_eval_sets(sub)
    register_bench(sub)
    register_serving(sub)
    register_api(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        return args.func(args)
    except DocentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a write the stores did not translate, on a disk that says it is full
        if not said_full(e):
            raise
        print(
            f"error: the disk is full ({e}): free some space, then try again. Nothing saved before is lost.",
            file=sys.stderr,
        )
        return 2


def said_full(error: BaseException) -> bool:
    """Whether ``error`` or what caused it says the disk is full (ENOSPC, EDQUOT, SQLITE_FULL)."""
    seen: BaseException | None = error
    for _ in range(20):  # a chain of causes, never a loop
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if getattr(seen, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
