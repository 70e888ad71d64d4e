"""Commands that talk: ask, chat, and the sessions they leave."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rag_core.chat import ChatTurn
from rag_core.cli.output import emit
from rag_core.cli.startup import context, stores
from rag_core.context import AppContext
from rag_core.errors import ConfigError, DocentError
from rag_core.exchange import ExchangeContext, export_json, export_markdown, import_session
from rag_core.files import atomic_write
from rag_core.storage import Busy


def _llm_progress(args: argparse.Namespace):
    if getattr(args, "json", False) or not sys.stderr.isatty():
        return None
    return lambda msg: print(f"\r\033[K{msg}", end="", file=sys.stderr, flush=True)


def _print_turn(turn: ChatTurn, typed: str) -> None:
    if turn.condensed_question and turn.condensed_question != typed:
        print(f"[searched: {turn.condensed_question}]")
    for n in turn.notices:
        print(f"[{n}]")
    print("Sources:")
    for i, s in enumerate(turn.sources, 1):
        page = f", page {s['page']}" if s.get("page") else ""
        snippet = " ".join(s["text"].split())[:160]
        print(f"  [{i}] {s['file']}{page} (score {s['score']:.2f}): {snippet}")


def _waiting_notice():
    """Says once, on stderr, that the question waits for another one answered in its session
    (the app, another command): a session answers one question at a time."""
    said: list[bool] = []

    def waiting(busy: Busy) -> None:
        if not said:
            said.append(True)
            print(f"waiting: this session is answering another question first ({busy.describe()})", file=sys.stderr)

    return waiting


def _answer(ctx: AppContext, question: str, session_id: str | None, as_json: bool) -> None:
    # The model loads before the question is asked, so an answer's timings are its own (the
    # app, which cannot wait before showing the sources, lets the turn load it and says so).
    ctx.models.llm(_llm_progress(argparse.Namespace(json=as_json)))
    if sys.stderr.isatty() and not as_json:
        print("\r\033[K", end="", file=sys.stderr)
    turn = ctx.chat.turn(question, session_id, waiting=_waiting_notice())
    if as_json:
        emit(turn.result().as_json())
        return
    for delta in turn:
        print(delta, end="", flush=True)
    print()
    _print_turn(turn.result(), question)


def cmd_ask(args: argparse.Namespace) -> int:
    ctx = context(args)
    sid = None
    if args.session:
        s = ctx.sessions.find(args.session)
        sid = s.id if s else ctx.sessions.create(args.session).id
    _answer(ctx, args.question, sid, args.json)
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    ctx = context(args)
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
            stats = {
                "command": "stats",
                "session_id": session.id,
                "messages": n,
                "turns": turns,
                "documents": len(ctx.ingestion.documents()),
                "seconds": round(time.perf_counter() - started, 1),
            }
            _say(args, stats, json.dumps(stats))
            continue
        try:
            _answer(ctx, q, session.id, args.json)
            turns += 1
        except DocentError as e:
            if args.json:
                emit({"error": str(e), "question": q})
            else:
                print(f"error: {e}", file=sys.stderr)
    return 0


def _say(args: argparse.Namespace, obj: dict, text: str) -> None:
    if args.json:
        emit(obj)
    else:
        print(text)


def cmd_sessions(args: argparse.Namespace) -> int:
    if args.action in ("list", "export"):  # reading: the database alone, on a disk too full for the index
        read = stores(args)
        return _export(read, args) if args.action == "export" else _list(read, args)
    ctx = context(args)
    if args.action == "import":
        return _import(ctx, args)
    if args.action == "delete":
        for sid in args.ids:
            s = ctx.sessions.find(sid)
            if s is None:
                raise DocentError(f"No session {sid!r}")
            ctx.sessions.delete(s.id)
            print(f"deleted {s.id} ({s.name})")
    return 0


def _list(ctx: ExchangeContext, args: argparse.Namespace) -> int:
    for s in ctx.sessions.list():
        n = len(ctx.sessions.messages(s.id))
        if args.json:
            emit({"id": s.id, "name": s.name, "messages": n, "updated": s.updated})
        else:
            print(f"{s.id}\t{s.name}\t{n} messages")
    return 0


def _export(ctx: ExchangeContext, args: argparse.Namespace) -> int:
    if len(args.ids) != 1:
        raise DocentError("Give one session to export: sessions export ID_OR_NAME [--format json|md] [-o FILE].")
    session = ctx.sessions.find(args.ids[0])
    if session is None:
        raise DocentError(f"No session {args.ids[0]!r}; `python -m rag_core sessions list` shows them.")
    text = export_markdown(ctx, session.id) if args.format == "md" else export_json(ctx, session.id)
    if args.output:
        atomic_write(Path(args.output), text)
        print(f"exported {session.id} ({session.name}) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _import(ctx: AppContext, args: argparse.Namespace) -> int:
    if len(args.ids) != 1:
        raise DocentError("Give one file to import: sessions import FILE.")
    path = Path(args.ids[0])
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"Cannot read {path}: {e.strerror or e}.") from None
    report = import_session(ctx, data)
    if args.json:
        emit(report.as_json())
        return 0
    print(f"Imported session {report.name!r} ({report.session_id}): {report.messages} messages.")
    if report.missing:
        print(
            f"Not indexed here (their passages show, but new questions cannot search them): {', '.join(report.missing)}"
        )
    if report.changed:
        print(f"Indexed here with other content (a new answer may differ): {', '.join(report.changed)}")
    if report.cited and not report.missing and not report.changed:
        print("Every cited document is indexed here with the same content.")
    return 0
