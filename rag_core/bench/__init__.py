"""``python -m rag_core bench``: Docent against the limits and against the naive path.

Every figure is a ratio of two things measured in the same run (these machines are noisy),
with the raw figures beside it; ``docs/performance.md`` has the table and the command.

    python -m rag_core bench --json [--docs DIR] [--questions figures.jsonl] [--quick]
    python -m rag_core bench PDF... [--llm] [--json]     # parsing, embedding, LLM speed only
    python -m rag_core bench --files [--files-growth N] [--json]   # many small files (rag_core.bench.files)
    python -m rag_core bench --team [--people 20] [--json]  # people at once on the team's servers
    python -m rag_core bench --follow-ups           # follow-ups, reading ahead on and off
    python -m rag_core bench --api [--api-runs N]   # the HTTP API against the CLI path (rag_core.bench.api)

With ``--json`` the last line is one object: ``{"targets": {name: {"value", "target", "met"}},
"answer", "follow_up", "ingest", "delete", "retrieval", "app", ...}``; with PDFs given, the
older ``{"parse", "embed", "llm"}`` object.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from rag_core.bench import machine
from rag_core.bench.inputs import ROOT, figure_questions, files_for, scratch, sec_docs
from rag_core.settings import DocentSettings, load_settings, saved_notice

# name -> (section, key, target, "le" | "ge")
TARGETS = {
    "ttft_vs_naive": ("answer", "ttft_vs_naive", 0.4, "le"),
    "accuracy_vs_naive": ("answer", "accuracy_vs_naive", 1.0, "ge"),
    "preview_s": ("answer", "preview_s", 1.5, "le"),
    "followup_vs_first": ("follow_up", "followup_vs_first", 1.1, "le"),
    "ttft_vs_raw": ("answer", "ttft_vs_raw", 1.1, "le"),
    "ingest_vs_limit": ("ingest", "ingest_vs_limit", 0.9, "ge"),
    "ingest_vs_naive": ("ingest", "ingest_vs_naive", 1.5, "ge"),
    "reingest_vs_first": ("ingest", "reingest_vs_first", 0.05, "le"),
    "retrieval_p50_vs_raw_100k": ("retrieval", "retrieval_p50_vs_raw", 1.5, "le"),
    "cold_start_s": ("app", "cold_start_s", 5.0, "le"),
    "cold_start_vs_hello": ("app", "cold_start_vs_hello", 2.0, "le"),
    "delete_1k_s": ("delete", "delete_1k_s", 1.0, "le"),
    "peak_rss_mb": ("rss", "peak_rss_mb", 3072.0, "le"),
    "ttft_busy_vs_idle": ("busy", "ttft_busy_vs_idle", 2.5, "le"),
    "decode_busy_vs_idle": ("busy", "decode_busy_vs_idle", 0.4, "ge"),
    "ttft_ingesting_vs_idle": ("busy", "ttft_ingesting_vs_idle", 2.0, "le"),
    "api_sources_vs_cli": ("api", "api_sources_vs_cli", 1.05, "le"),
    "api_ttft_vs_cli": ("api", "api_ttft_vs_cli", 1.05, "le"),
    "api_ttft_extra_ms": ("api", "api_ttft_extra_ms", 50.0, "le"),
}
FOLLOW_UPS = ROOT / "tests" / "data" / "elliptical_sec.jsonl"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _targets(result: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, (section, key, target, how) in TARGETS.items():
        value = (result.get(section) or {}).get(key)
        met = None if not isinstance(value, (int, float)) else (value <= target if how == "le" else value >= target)
        out[name] = {"value": value, "target": f"{'≤' if how == 'le' else '≥'} {target}", "met": met}
    return out


def run_full(settings: DocentSettings, args: argparse.Namespace, report: Any) -> dict[str, Any]:
    from rag_core.bench.answers import bench_first_turns, bench_follow_ups
    from rag_core.bench.api import bench_api
    from rag_core.bench.app import bench_cold_start, bench_peak_rss
    from rag_core.bench.busy import bench_busy, machine_state
    from rag_core.bench.fills import cache_dir
    from rag_core.bench.ingest import bench_delete, bench_ingest
    from rag_core.bench.retrieval import bench_retrieval
    from rag_core.chat.messages import count_tokens
    from rag_core.context import build_context

    quick = args.quick
    docs = sec_docs(Path(args.docs) if args.docs else None)
    settings = settings.model_copy(update={"llm_max_new_tokens": args.max_new_tokens})
    result: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "commit": _commit(),
        "quick": quick,
        "docs": str(docs),
        "llm_provider": settings.llm_provider,
        "embed_provider": settings.embed_provider,
    }
    result["machine"] = machine_state()
    if not result["machine"]["idle"]:
        report(
            f"warning: the machine is not idle ({_load_line(result['machine'])}): the figures are not an idle machine's"
        )
    started = time.perf_counter()
    sections: dict[str, float] = {}
    result["section_s"] = sections

    def timed(name: str, since: float) -> float:
        now = time.perf_counter()
        sections[name] = round(now - since, 1)
        return now

    files, questions, chosen = _samples(docs, args)
    subset = docs
    if len(files) < len(list(docs.glob("*.pdf"))):
        subset = scratch("docs")
        for f in files:
            (subset / f.name).symlink_to(f.resolve())
    report(f"ingest: Docent, the embedding limit and the naive path over the same {len(files)} PDFs…")
    result["ingest"], data_dir = bench_ingest(settings, subset)
    mark = timed("ingest", started)

    ctx = build_context(settings.model_copy(update={"data_dir": data_dir, "model_cache": settings.model_dir}))
    report(f"answers: {len(questions)} first turns, Docent against the naive path and raw llama.cpp…")
    result["answer"] = bench_first_turns(ctx, questions, count_tokens)
    mark = timed("answer", mark)
    report("api: the same first turns through the HTTP API and through the CLI path…")
    result["api"] = bench_api(ctx, [q["question"] for q in questions[:3]], report) if questions else {}
    mark = timed("api", mark)
    k = min(len(questions), args.busy_n)
    report(f"busy machine: {k} of those questions with one core kept busy, then with an ingest running…")
    result["busy"] = bench_busy(ctx, questions[:k], files, report)
    mark = timed("busy", mark)
    report(f"follow-ups: {len(chosen)} conversations of two questions…")
    result["follow_up"] = bench_follow_ups(ctx, chosen)
    mark = timed("follow_up", mark)

    report("deleting a 1,000-chunk document…")
    result["delete"] = bench_delete(settings)
    report("retrieval at scale (synthetic chunks)…")
    sizes = (10_000,) if quick else (1_000, 100_000)
    result["retrieval"] = bench_retrieval(settings, sizes, fills=cache_dir(settings), refill=args.refill)
    mark = timed("delete_retrieval", mark)
    report("cold start against streamlit hello, in a real browser…")
    result["app"] = bench_cold_start(runs=1 if quick else 3)
    report("peak memory of a process that answered with the local models…")
    result["rss"] = bench_peak_rss(data_dir, questions[0]["question"]) if questions else {}
    timed("app_rss", mark)
    result["machine_after"] = machine_state()
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["targets"] = _targets(result)
    return result


def _samples(docs: Path, args: argparse.Namespace) -> tuple[list[Path], list[dict[str, Any]], list[dict[str, Any]]]:
    """The filings indexed, the first-turn questions and the follow-up conversations timed.

    ``--quick``: 5 filings, the 3 questions they answer and the pairs they allow. Else the
    questions (``--questions-n``) and pairs (``--pairs-n``) first, then the filings they need,
    then others up to ``--docs-n`` (0: the whole folder): the other quarters of the same
    companies stay in the index, so each answer is still picked out from its neighbours."""
    found = figure_questions(Path(args.questions) if args.questions else None, 200)
    every = sorted(docs.glob("*.pdf"))
    if args.quick:  # the filings the first questions are about, then others: 5 in all
        files = files_for(every, found, 3, 5)
        names = {p.name for p in files}
        questions = [q for q in found if set(q.get("gold_files") or []) <= names][:3]
        return files, questions, follow_up_pairs(names, quick=True)
    names = {p.name for p in every}
    questions = [q for q in found if set(q.get("gold_files") or []) <= names][: args.questions_n]
    pairs = follow_up_pairs(names)[: args.pairs_n]
    needed = {name for item in questions + pairs for name in item.get("gold_files") or []}
    if not args.docs_n or args.docs_n >= len(every):
        return every, questions, pairs
    return files_for(every, questions + pairs, len(questions + pairs), max(args.docs_n, len(needed))), questions, pairs


def follow_up_pairs(names: set[str] | None, quick: bool = False) -> list[dict[str, Any]]:
    """The follow-up conversations timed: the first two of the elliptical SEC set (completed by
    rule) and two the model must rewrite, of those whose filings are in ``names`` (None: all)."""
    pairs = [json.loads(line) for line in FOLLOW_UPS.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [p for p in pairs if (names is None or set(p["gold_files"]) <= names) and p["history"][0]]
    chosen = pairs[:1] + [p for p in pairs if p["id"] in ("ellipsis_10", "ellipsis_14")][: (1 if quick else 2)]
    return chosen + ([] if quick else pairs[1:2])


def run_follow_up_levers(settings: DocentSettings, args: argparse.Namespace, report: Any) -> dict[str, Any]:
    """``bench --follow-ups``: the follow-up figures with reading ahead on and off, the model
    reloaded before each (the same empty prompt cache), over the filings the pairs need."""
    from rag_core.bench.answers import bench_follow_ups, docent_turn
    from rag_core.bench.busy import machine_state
    from rag_core.bench.inputs import fresh_context
    from rag_core.context import build_context

    pairs = follow_up_pairs(None)
    docs = sec_docs(Path(args.docs) if args.docs else None)
    needed = sorted({name for p in pairs for name in p["gold_files"]})
    report(f"follow-ups: indexing {len(needed)} filings for {len(pairs)} conversations…")
    base = fresh_context(settings.model_copy(update={"llm_max_new_tokens": args.max_new_tokens}), "follow-ups")
    base.ingestion.ingest_paths([docs / name for name in needed])
    out: dict[str, Any] = {"machine": machine_state(), "levers": {}}
    for on in (True, False):
        ctx = build_context(base.settings.model_copy(update={"llm_read_ahead": on}))
        docent_turn(ctx, "What is this filing about?")  # warm-up: the keyword index, the model loaded
        reload = getattr(ctx.llm(), "reload", None)
        if callable(reload):  # (not at once after a load: xllamacpp may hang stopping a server just started)
            reload()  # the same empty prompt cache for both
        report(f"  reading ahead {'on' if on else 'off'}…")
        out["levers"]["on" if on else "off"] = bench_follow_ups(ctx, pairs)
    out["machine_after"] = machine_state()
    return out


def _load_line(state: dict[str, Any]) -> str:
    return f"load average {state['loadavg_1m']}, other processes using {state['others_busy_cores']} of {state['cores']} cores"


def run(args: argparse.Namespace) -> int:
    import sys

    settings = load_settings(data_dir=Path(args.data_dir)) if args.data_dir else load_settings()
    notice = saved_notice(settings)  # the figures run with the defaults of unusable saved values: say so
    if notice:
        print(f"notice: {notice}", file=sys.stderr)
    if args.pdfs:
        return machine.run(args)

    def report(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.team:
        from rag_core.bench.team import bench_team

        docs = sec_docs(Path(args.docs) if args.docs else None)
        team = bench_team(args.people, docs, report, args.parallel, args.max_new_tokens)
        print(json.dumps({"team": team}, ensure_ascii=False) if args.json else json.dumps(team, indent=1))
        return 0 if team["errors"] == 0 and team["turns_stored_in_order"] == team["turns"] else 1
    if args.busy_levers or args.busy_only:
        from rag_core.bench.busy import LEVERS, run_levers

        docs = sec_docs(Path(args.docs) if args.docs else None)
        found = figure_questions(Path(args.questions) if args.questions else None, 200)
        settings = settings.model_copy(update={"llm_max_new_tokens": args.max_new_tokens})
        only = (LEVERS[0][0],) if args.busy_only else None  # every lever on
        levers = run_levers(settings, docs, found, args.busy_n, report, only)
        print(json.dumps({"date": dt.date.today().isoformat(), "commit": _commit(), **levers}, default=str))
        return 0
    if args.api:
        from rag_core.bench.api import run_api, summary

        figures = run_api(settings, args, report)
        if not args.json:
            print("\n".join(summary(figures)))
        print(json.dumps({"date": dt.date.today().isoformat(), "commit": _commit(), "api": figures}, default=str))
        return 0
    if args.follow_ups:
        figures = run_follow_up_levers(settings, args, report)
        print(json.dumps({"date": dt.date.today().isoformat(), "commit": _commit(), **figures}, default=str))
        return 0
    if args.retrieval:
        from rag_core.bench.fills import cache_dir
        from rag_core.bench.retrieval import bench_retrieval

        sizes = tuple(int(n) for n in args.retrieval.split(","))
        figures = bench_retrieval(settings, sizes, report=report, fills=cache_dir(settings), refill=args.refill)
        print(json.dumps({"date": dt.date.today().isoformat(), "commit": _commit(), "retrieval": figures}))
        return 0
    if args.files:
        from rag_core.bench.files import run_files

        result = run_files(settings, args.files_growth, args.files_uploads, report)
    else:
        result = run_full(settings, args, report)
    busy = result.get("busy") or {}
    if busy.get("loaded") or not (result.get("machine") or {}).get("idle", True):
        print(
            f"warning: not an idle machine ({_load_line(busy.get('machine') or result['machine'])}); "
            "the busy/idle ratios were taken under outside load",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(result, ensure_ascii=False, default=str))
    else:
        for name, figure in result["targets"].items():
            mark = "met" if figure["met"] else ("–" if figure["met"] is None else "NOT met")
            print(f"{name:28} {figure['value']!s:>10}  target {figure['target']:>8}  {mark}")
    return 0


def register_cli(sub: Any) -> None:
    s = sub.add_parser(
        "bench",
        help="Docent against the limits and the naive path (answers, ingestion, retrieval, app); or, with PDFs, "
        "parsing/embedding/LLM speed",
    )
    s.add_argument("pdfs", nargs="*", help="PDF files: only time parsing, embedding (and --llm) on them")
    s.add_argument("--docs", help="folder of PDFs to ingest and ask about (default: the shared SEC 10-Q filings)")
    s.add_argument(
        "--questions",
        help="figure questions with gold answers (JSONL); default: the answerable ones of tests/data/sec_shapes.jsonl",
    )
    s.add_argument("--questions-n", type=int, default=6, help="first-turn questions timed (default 6)")
    s.add_argument(
        "--pairs-n",
        type=int,
        default=4,
        help="follow-up conversations of two questions timed (default 4: 2 by rule, 2 by the model)",
    )
    s.add_argument(
        "--docs-n",
        type=int,
        default=12,
        help="filings indexed: those the questions and pairs need, then others (default 12; 0: every PDF in --docs)",
    )
    s.add_argument("--max-new-tokens", type=int, default=64, help="answer length cap, the same on every path")
    s.add_argument("--quick", action="store_true", help="a few minutes: 5 PDFs, 3 questions, 10k chunks, one start")
    s.add_argument("--busy-n", type=int, default=2, help="questions asked again on a busy machine (default 2)")
    s.add_argument(
        "--busy-levers",
        action="store_true",
        help="only the busy-machine figures, each lever (thread choice, indexing pause) on and off",
    )
    s.add_argument("--busy-only", action="store_true", help="only the busy-machine figures, every lever on")
    s.add_argument(
        "--follow-ups",
        action="store_true",
        help="only the follow-up figures (followup_vs_first), reading ahead (llm_read_ahead) on and off",
    )
    s.add_argument(
        "--api",
        action="store_true",
        help="only the HTTP API against the CLI path: time to sources and to the first token, the same questions "
        "through `serve-api`'s app on loopback and through ChatService.turn, as ratios",
    )
    s.add_argument("--api-runs", type=int, default=1, help="with --api: times each question is asked on each path")
    s.add_argument("--max-pages", type=int, default=100, help="with PDFs: pages per PDF at most")
    s.add_argument("--max-chunks", type=int, default=200, help="with PDFs: chunks to embed")
    s.add_argument("--llm", action="store_true", help="with PDFs: also time the configured LLM")
    s.add_argument(
        "--files",
        action="store_true",
        help="many small files only: 100 through the CLI against their text as one file, the Nth file against "
        "the 50th, the delay until another process finds a new file",
    )
    s.add_argument("--files-growth", type=int, default=500, help="with --files: how many files the growth run ingests")
    s.add_argument(
        "--files-uploads", type=int, default=0, help="with --files: small files through the app's upload path (0: none)"
    )
    s.add_argument(
        "--retrieval",
        metavar="N,N",
        help="only the retrieval figures at these chunk counts (e.g. 10000,100000): hybrid and keyword p50/p95 "
        "against the raw Chroma query, and a new process's start and memory at each (at the largest also with "
        "the folder's Chroma served by `chroma run`); with DOCENT_DATABASE_URL the keyword index is PostgreSQL's "
        "(give it a database of its own)",
    )
    s.add_argument(
        "--refill",
        action="store_true",
        help="fill the retrieval figures' synthetic libraries again instead of copying those kept from an "
        "earlier run (kept beside the model, in bench-fills; a change to the code that writes them refills anyway)",
    )
    s.add_argument("--json", action="store_true", help="one JSON object, the last line")
    s.add_argument(
        "--team",
        action="store_true",
        help="people asking at once through two app processes sharing PostgreSQL, Chroma and serve-model "
        "(docs/team.md); uses the servers in DOCENT_DATABASE_URL/DOCENT_CHROMA_HOST/DOCENT_OPENAI_BASE_URL "
        "or starts its own",
    )
    s.add_argument("--people", type=int, default=20, help="with --team: people, each asking three questions")
    s.add_argument("--parallel", type=int, default=2, help="with --team: slots of the model server it starts")
    s.set_defaults(func=run)
