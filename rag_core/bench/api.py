"""``bench --api``: the HTTP API against the CLI path, the same questions in one run.

For each question, in turn (the order alternating, so neither path always comes second):

- the CLI path: ``ChatService.turn`` then its words, as ``python -m rag_core ask --session``
  runs it (``rag_core.cli.chatting``), in this process;
- the API: ``POST /api/sessions/{id}/messages`` on a real uvicorn serving ``create_app`` over
  the same context on a loopback port, read as server-sent events by an HTTP client.

Each path answers in a new session of its own (a first turn both times). Measured: the time
to the sources (the turn returned; the ``sources`` event read) and to the first word (the first
delta; the first ``token`` event read), from the moment the question is asked. The figures
are medians, and the API's cost is given both as a ratio and in milliseconds; the issue's
target is within 50 ms and 1.05× of the CLI path.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from rag_core.context import AppContext

TARGET_MS = 50.0
TARGET_RATIO = 1.05


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """``create_app(ctx)`` on a real uvicorn in a thread of this process, on loopback."""

    def __init__(self, ctx: AppContext) -> None:
        import uvicorn

        from rag_core.api import create_app

        self.port = _free_port()
        config = uvicorn.Config(create_app(ctx), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="docent-bench-api", daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.server.started:
            raise RuntimeError("the API did not start within 30 s")
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)


def cli_turn(ctx: AppContext, question: str) -> dict[str, float]:
    """The CLI path: the turn (its sources), then its words."""
    sid = ctx.sessions.create("bench cli").id
    t = time.perf_counter()
    turn = ctx.chat.turn(question, sid)
    sources = time.perf_counter() - t
    first = None
    for _ in turn:
        if first is None:
            first = time.perf_counter() - t
    total = time.perf_counter() - t
    return {"sources_s": sources, "first_token_s": first if first is not None else total, "total_s": total}


def api_turn(client: Any, ctx: AppContext, question: str) -> dict[str, float]:
    """The API: the same question as server-sent events over HTTP."""
    sid = ctx.sessions.create("bench api").id
    t = time.perf_counter()
    sources = first = None
    with client.stream("POST", f"/api/sessions/{sid}/messages", json={"question": question}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line == "event: sources" and sources is None:
                sources = time.perf_counter() - t
            elif line == "event: token" and first is None:
                first = time.perf_counter() - t
            elif line == "event: error":
                raise RuntimeError(f"the API answered with an error: {r.read()!r}")
    total = time.perf_counter() - t
    return {
        "sources_s": sources if sources is not None else total,
        "first_token_s": first if first is not None else total,
        "total_s": total,
    }


def bench_api(
    ctx: AppContext, questions: list[str], report: Callable[[str], None] = lambda _: None, runs: int = 1
) -> dict[str, Any]:
    """Both paths over ``questions`` (each asked ``runs`` times on each path), after one
    warm-up question on each (the model loaded, the keyword index built)."""
    import httpx

    ctx.models.llm()  # as the CLI does before it asks: the timings are the answers' own
    rows: list[dict[str, Any]] = []
    with Served(ctx) as base, httpx.Client(base_url=base, timeout=600) as client:
        cli_turn(ctx, questions[0])
        api_turn(client, ctx, questions[0])
        for i, question in enumerate(questions * runs):
            if i % 2 == 0:
                cli, api = cli_turn(ctx, question), api_turn(client, ctx, question)
            else:
                api, cli = api_turn(client, ctx, question), cli_turn(ctx, question)
            rows.append({"question": question, "cli": _rounded(cli), "api": _rounded(api)})
            report(
                f"  {i + 1}/{len(questions) * runs}: sources {api['sources_s'] * 1e3:.0f} ms API / "
                f"{cli['sources_s'] * 1e3:.0f} ms CLI, first word {api['first_token_s'] * 1e3:.0f} / "
                f"{cli['first_token_s'] * 1e3:.0f} ms"
            )
    out: dict[str, Any] = {"questions": len(questions), "runs": runs, "llm": ctx.settings.llm_provider}
    for phase in ("sources_s", "first_token_s"):
        api_p50 = statistics.median(r["api"][phase] for r in rows)
        cli_p50 = statistics.median(r["cli"][phase] for r in rows)
        name = "sources" if phase == "sources_s" else "ttft"
        out[f"api_{name}_p50_s"] = round(api_p50, 4)
        out[f"cli_{name}_p50_s"] = round(cli_p50, 4)
        out[f"api_{name}_vs_cli"] = round(api_p50 / cli_p50, 3) if cli_p50 > 0 else None
        out[f"api_{name}_extra_ms"] = round((api_p50 - cli_p50) * 1e3, 1)
        extra = statistics.median((r["api"][phase] - r["cli"][phase]) * 1e3 for r in rows)
        out[f"api_{name}_extra_ms_paired_p50"] = round(extra, 1)
        ratio = out[f"api_{name}_vs_cli"]
        out[f"api_{name}_within_ms"] = out[f"api_{name}_extra_ms"] <= TARGET_MS
        out[f"api_{name}_within_ratio"] = ratio is not None and ratio <= TARGET_RATIO
    out["rows"] = rows
    return out


def _rounded(figures: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in figures.items()}


def summary(result: dict[str, Any]) -> list[str]:
    """The figures as lines to print."""
    lines = []
    for name, label in (("sources", "time to sources"), ("ttft", "time to first token")):
        ratio, extra = result[f"api_{name}_vs_cli"], result[f"api_{name}_extra_ms"]
        ms = "met" if result[f"api_{name}_within_ms"] else "NOT met"
        times = "met" if result[f"api_{name}_within_ratio"] else "NOT met"
        lines.append(
            f"{label:20} API {result[f'api_{name}_p50_s'] * 1e3:8.1f} ms  CLI {result[f'cli_{name}_p50_s'] * 1e3:8.1f} ms"
            f"  +{extra} ms (≤ {TARGET_MS:.0f} ms: {ms})  API/CLI {ratio}× (≤ {TARGET_RATIO}×: {times})"
        )
    return lines


def run_api(settings: Any, args: Any, report: Callable[[str], None]) -> dict[str, Any]:
    """``bench --api``: index the documents the questions need (``--docs``, default the shared
    SEC filings; a folder without them: its first five files, the questions asked all the
    same), then both paths over ``--questions-n`` questions, ``--api-runs`` times each."""
    from pathlib import Path

    from rag_core.bench.inputs import figure_questions, fresh_context, sec_docs
    from rag_core.loaders import SUPPORTED_EXTS

    docs = sec_docs(Path(args.docs) if args.docs else None)
    every = sorted(p for p in docs.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_EXTS)
    found = figure_questions(Path(args.questions) if args.questions else None, 200)
    names = {p.name for p in every}
    n = max(1, args.questions_n)
    asked = [q for q in found if q.get("gold_files") and set(q["gold_files"]) <= names][:n] or found[:n]
    needed = {g for q in asked for g in q.get("gold_files") or []}
    files = [p for p in every if p.name in needed] or every[:5]
    settings = settings.model_copy(update={"llm_max_new_tokens": args.max_new_tokens})
    ctx = fresh_context(settings, "api")
    report(f"api: indexing {len(files)} file(s), then {len(asked)} question(s) through the API and the CLI path…")
    ctx.ingestion.ingest_paths(files)
    return bench_api(ctx, [q["question"] for q in asked], report, runs=max(1, args.api_runs))
