"""``python -m rag_core``: the command line over the same services the app uses.

``--json`` outputs are a contract for scripts: fields are added, never renamed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_core.context import AppContext, build_context
from rag_core.errors import DocentError
from rag_core.settings import load_settings


def _context(args: argparse.Namespace, recover: bool = True) -> AppContext:
    overrides: dict[str, Any] = {}
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    return build_context(load_settings(**overrides), recover=recover)


def _emit(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def _progress_to_stderr(quiet: bool):
    if quiet:
        return None

    def report(msg: str, frac: float = 0.0) -> None:
        if sys.stderr.isatty():
            print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)

    return report


# ---------------------------------------------------------------------------- commands
def cmd_ingest(args: argparse.Namespace) -> int:
    ctx = _context(args)
    from rag_core.ingestion import iter_inputs

    failed = 0
    progress = _progress_to_stderr(args.json)
    for path, name in iter_inputs([Path(p) for p in args.paths]):
        r = ctx.ingestion.ingest_file(path, name, progress)
        if progress and sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr)
        failed += r.status == "failed"
        if args.json:
            _emit(r.as_json())
        else:
            detail = f"{r.pages} pages, {r.chunks} chunks" if r.status != "failed" else r.reason
            extra = f" [{'; '.join(r.warnings)}]" if r.warnings else ""
            print(f"{r.status:8} {r.file}  ({detail}, {r.seconds:.1f}s){extra}")
    return 1 if failed and args.strict else 0


def _llm_progress(args: argparse.Namespace):
    if getattr(args, "json", False) or not sys.stderr.isatty():
        return None
    return lambda msg: print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)


def _print_turn(turn, typed: str) -> None:
    if turn.condensed_question and turn.condensed_question != typed:
        print(f"[searched: {turn.condensed_question}]")
    for n in turn.notices:
        print(f"[{n}]")
    print("Sources:")
    for i, s in enumerate(turn.sources, 1):
        page = f", page {s['page']}" if s.get("page") else ""
        snippet = " ".join(s["text"].split())[:160]
        print(f"  [{i}] {s['file']}{page} (score {s['score']:.2f}): {snippet}")


def _answer(ctx: AppContext, question: str, session_id: str | None, as_json: bool) -> None:
    ctx.llm(_llm_progress(argparse.Namespace(json=as_json)))
    if sys.stderr.isatty() and not as_json:
        print("\r\033[K", end="", file=sys.stderr)
    stream = ctx.chat.stream(question, session_id)
    if as_json:
        turn = stream.result()
        _emit(turn.as_json())
        return
    for delta in stream:
        print(delta, end="", flush=True)
    print()
    _print_turn(stream.turn, question)


def cmd_ask(args: argparse.Namespace) -> int:
    ctx = _context(args)
    sid = None
    if args.session:
        s = ctx.sessions.find(args.session)
        sid = s.id if s else ctx.sessions.create(args.session).id
    _answer(ctx, args.question, sid, args.json)
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    ctx = _context(args)
    name = args.session or time.strftime("CLI chat %Y-%m-%d %H:%M")
    session = ctx.sessions.find(name) or ctx.sessions.create(name)
    interactive = sys.stdin.isatty() and not args.json
    if interactive:
        print(f"Session {session.name} ({session.id}). /clear, /stats, /quit.")
    turns = 0
    started = time.perf_counter()
    while True:
        if interactive:
            try:
                line = input("you> ")
            except EOFError:
                break
        else:
            line = sys.stdin.readline()
            if not line:
                break
        q = line.strip()
        if not q:
            continue
        if q == "/quit":
            break
        if q == "/clear":
            ctx.sessions.clear(session.id)
            _say(args, {"command": "clear", "session_id": session.id}, "History cleared.")
            continue
        if q == "/stats":
            n = len(ctx.sessions.messages(session.id))
            stats = {"command": "stats", "session_id": session.id, "messages": n, "turns": turns,
                     "documents": len(ctx.ingestion.documents()), "seconds": round(time.perf_counter() - started, 1)}
            _say(args, stats, json.dumps(stats))
            continue
        try:
            _answer(ctx, q, session.id, args.json)
            turns += 1
        except DocentError as e:
            if args.json:
                _emit({"error": str(e), "question": q})
            else:
                print(f"error: {e}", file=sys.stderr)
    return 0


def _say(args: argparse.Namespace, obj: dict, text: str) -> None:
    if args.json:
        _emit(obj)
    else:
        print(text)


def cmd_docs(args: argparse.Namespace) -> int:
    ctx = _context(args)
    if args.action == "delete":
        for name in args.names:
            ctx.ingestion.delete(name)
            print(f"deleted {name}")
        return 0
    docs = ctx.ingestion.documents()
    if args.json:
        for d in docs:
            _emit({"name": d.name, "pages": d.pages, "chunks": d.chunks, "size": d.size, "added": d.added})
    else:
        for d in docs:
            added = time.strftime("%Y-%m-%d %H:%M", time.localtime(d.added))
            print(f"{d.name}\t{d.pages} pages\t{d.chunks} chunks\t{d.size} bytes\t{added}")
        if not docs:
            print("No documents yet: python -m rag_core ingest FILE...")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    ctx = _context(args)
    if args.action == "delete":
        for sid in args.ids:
            s = ctx.sessions.find(sid)
            if s is None:
                raise DocentError(f"No session {sid!r}")
            ctx.sessions.delete(s.id)
            print(f"deleted {s.id} ({s.name})")
        return 0
    for s in ctx.sessions.list():
        n = len(ctx.sessions.messages(s.id))
        if args.json:
            _emit({"id": s.id, "name": s.name, "messages": n, "updated": s.updated})
        else:
            print(f"{s.id}\t{s.name}\t{n} messages")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from rag_core.health import check

    ctx = _context(args, recover=args.repair)
    problems, summary = check(ctx)
    if ctx.recovered:
        summary["repaired"] = ctx.recovered
    if args.json:
        _emit({"ok": not problems, "problems": problems, **summary})
    else:
        for p in problems:
            print(f"PROBLEM: {p}")
        print(("OK: " if not problems else "") + ", ".join(f"{k}={v}" for k, v in summary.items()))
    return 1 if problems else 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    ctx = _context(args)
    for r in ctx.ingestion.rebuild():
        if args.json:
            _emit(r.as_json())
        else:
            print(f"{r.status:8} {r.file} {r.reason}")
    return 0


# ---------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rag_core", description="Docent: chat with your documents, offline.")
    p.add_argument("--data-dir", help="state folder (default: DOCENT_DATA_DIR or ~/.docent)")
    p.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("ingest", help="add or update files/folders (PDF, DOCX, HTML, TXT, Markdown)")
    s.add_argument("paths", nargs="+")
    s.add_argument("--json", action="store_true", help="one JSON object per file")
    s.add_argument("--strict", action="store_true", help="exit 1 if any file failed")
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

    s = sub.add_parser("sessions", help="list or delete sessions")
    s.add_argument("action", choices=["list", "delete"])
    s.add_argument("ids", nargs="*")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_sessions)

    s = sub.add_parser("check", help="verify that docstore, Chroma and SQLite agree")
    s.add_argument("--json", action="store_true")
    s.add_argument("--repair", action="store_true", help="first remove what interrupted ingestions left behind")
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("rebuild", help="re-embed every stored document with the current settings")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_rebuild)

    _register_extra(sub)
    return p


def _register_extra(sub: Any) -> None:
    """Commands that live in their own modules (evaluation, benchmarks)."""
    for module in ("rag_core.evaluation", "rag_core.bench"):
        try:
            mod = __import__(module, fromlist=["register_cli"])
        except ImportError:
            continue
        mod.register_cli(sub)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        return args.func(args)
    except DocentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
