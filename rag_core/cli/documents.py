"""Commands over the documents and the index: ingest, docs, check, rebuild."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rag_core import recovery
from rag_core.cli.output import clear_line, emit, progress_to_stderr
from rag_core.cli.startup import context, stores
from rag_core.entities import EntityIndex
from rag_core.errors import DatabaseDamagedError, DatabaseUnavailableError
from rag_core.health import check
from rag_core.ingestion import OnConflict, iter_inputs, start_reading


def cmd_ingest(args: argparse.Namespace) -> int:
    start_reading()  # the reading worker starts while the models and the index are opened
    ctx = context(args)
    failed = conflicts = 0
    progress = progress_to_stderr(args.json)
    policy: OnConflict = "replace" if args.replace else "keep_both" if args.keep_both else "ask"
    for r in ctx.ingestion.ingest_each(iter_inputs([Path(p) for p in args.paths]), progress, on_conflict=policy):
        if not args.json:
            clear_line()
        failed += r.status == "failed"
        conflicts += r.conflict
        if args.json:
            emit(r.as_json())
        else:
            detail = f"{r.pages} pages, {r.chunks} chunks" if r.status != "failed" else r.reason
            extra = f" [{'; '.join(r.warnings)}]" if r.warnings else ""
            print(f"{r.status:8} {r.file}  ({detail}, {r.seconds:.1f}s){extra}")
    if conflicts:
        print(
            f"{conflicts} file(s) not ingested: a different file of the same name is indexed. Run again with "
            "--replace to replace it, or --keep-both to index the new one as 'NAME (2).ext'.",
            file=sys.stderr,
        )
    return 1 if failed and args.strict else 0


def cmd_docs(args: argparse.Namespace) -> int:
    if args.action == "delete":
        ctx = context(args)
        for name in args.names:
            ctx.ingestion.delete(name)
            print(f"deleted {name}")
        return 0
    docs = stores(args).registry.list()  # the documents' list: the database alone, on a full disk
    if args.json:
        for d in docs:
            emit({"name": d.name, "pages": d.pages, "chunks": d.chunks, "size": d.size, "added": d.added})
    else:
        for d in docs:
            added = time.strftime("%Y-%m-%d %H:%M", time.localtime(d.added))
            print(f"{d.name}\t{d.pages} pages\t{d.chunks} chunks\t{d.size} bytes\t{added}")
        if not docs:
            print("No documents yet: python -m rag_core ingest FILE...")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    try:
        ctx = context(args, recover=args.repair)
    except DatabaseDamagedError as e:  # reported, left as it is: `--repair` moves it aside
        problem = str(e).replace("Restart Docent, or run", "Run")
        if args.json:
            emit({"ok": False, "problems": [problem], "damaged_database": True})
        else:
            print(f"PROBLEM: {problem}")
        return 1
    except DatabaseUnavailableError as e:  # PostgreSQL away: said the same way
        if args.json:
            emit({"ok": False, "problems": [str(e)], "database_unavailable": True})
        else:
            print(f"PROBLEM: {e}")
        return 1
    reingested = recovery.repair(ctx.ingestion) if args.repair else []
    profiled = EntityIndex(ctx.index, ctx.registry).fill() if args.repair else []  # what each one is about
    if reingested:
        done = [f"{r.file}: {r.status}" + (f" ({r.reason})" if r.reason else "") for r in reingested]
        ctx.notices.append("Ingested again from the stored copy: " + "; ".join(done))
    problems, summary = check(ctx)
    if ctx.recovered:
        summary["repaired"] = ctx.recovered
    if ctx.reregistered:
        summary["reregistered"] = ctx.reregistered
    if reingested:
        summary["reingested"] = [r.file for r in reingested]
    if profiled:
        summary["profiled"] = profiled
    if ctx.notices:
        summary["notices"] = ctx.notices
    if args.json:
        emit({"ok": not problems, "problems": problems, **summary})
    else:
        for p in problems:
            print(f"PROBLEM: {p}")
        for name in summary["ingesting"]:
            print(f"INGESTING: {name} (another process holds the write lock; check again when it is done)")
        shown = {k: v for k, v in summary.items() if k not in ("ingesting", "interrupted", "notices")}
        print(("OK: " if not problems else "") + ", ".join(f"{k}={v}" for k, v in shown.items()))
    return 1 if problems else 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    start_reading()
    ctx = context(args)
    results = recovery.rebuild(ctx.ingestion)
    if not results and not args.json:
        print("Nothing to rebuild: no stored files in files/ and no registered documents.")
    for r in results:
        if args.json:
            emit(r.as_json())
        else:
            print(f"{r.status:8} {r.file} {r.reason}")
    return 0
