"""Commands over the documents and the index: ingest, docs, check, rebuild."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rag_core.cli.common import clear_line, context, emit, progress_to_stderr
from rag_core.health import check
from rag_core.ingestion import iter_inputs


def cmd_ingest(args: argparse.Namespace) -> int:
    ctx = context(args)
    failed = 0
    progress = progress_to_stderr(args.json)
    for path, name in iter_inputs([Path(p) for p in args.paths]):
        r = ctx.ingestion.ingest_file(path, name, progress)
        if progress:
            clear_line()
        failed += r.status == "failed"
        if args.json:
            emit(r.as_json())
        else:
            detail = f"{r.pages} pages, {r.chunks} chunks" if r.status != "failed" else r.reason
            extra = f" [{'; '.join(r.warnings)}]" if r.warnings else ""
            print(f"{r.status:8} {r.file}  ({detail}, {r.seconds:.1f}s){extra}")
    return 1 if failed and args.strict else 0


def cmd_docs(args: argparse.Namespace) -> int:
    ctx = context(args)
    if args.action == "delete":
        for name in args.names:
            ctx.ingestion.delete(name)
            print(f"deleted {name}")
        return 0
    docs = ctx.ingestion.documents()
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
    ctx = context(args, recover=args.repair)
    problems, summary = check(ctx)
    if ctx.recovered:
        summary["repaired"] = ctx.recovered
    if args.json:
        emit({"ok": not problems, "problems": problems, **summary})
    else:
        for p in problems:
            print(f"PROBLEM: {p}")
        print(("OK: " if not problems else "") + ", ".join(f"{k}={v}" for k, v in summary.items()))
    return 1 if problems else 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    ctx = context(args)
    for r in ctx.ingestion.rebuild():
        if args.json:
            emit(r.as_json())
        else:
            print(f"{r.status:8} {r.file} {r.reason}")
    return 0
