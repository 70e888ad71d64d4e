"""Answers on a machine that is doing other things too: the first token and the decoding speed
of the same questions idle, with one core kept busy by another program (a plain CPU-bound
process this benchmark starts), and with an ingest running in the same app process.

- idle: the questions as first turns, the model reloaded first (every pass starts from the same
  empty prompt cache: no prompt of an earlier pass is reused);
- busy: the questions again, reloaded again, while a ``while True: pass`` process runs;
- ingesting: the same, reloaded again, while a job of this process indexes PDFs into another
  folder (so that the answers' prompts do not change), its embedding sharing the model.

The ratios are only worth reading on a machine otherwise quiet: ``machine_state`` reads the
load average and what other processes use, and the result says when they were not idle.
``run_levers`` (``bench --busy-levers``) measures each lever on and off, but for the short
spin (``llm_short_spin``, off by default): libgomp reads it once per process, so it is measured
by running ``bench --busy-levers`` again with ``DOCENT_LLM_SHORT_SPIN=true``.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_core.bench.answers import docent_turn
from rag_core.bench.inputs import files_for, fresh_context
from rag_core.bench.stats import median, ratio
from rag_core.context import AppContext
from rag_core.providers.threads import others_busy, read_cpu_times, usable_cores
from rag_core.settings import DocentSettings

Report = Callable[[str], None]
# Exits when the benchmark does (its parent changes), even if the benchmark is killed.
SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


def machine_state(seconds: float = 1.0) -> dict[str, Any]:
    """The 1-minute load average and the cores' worth other processes use over ``seconds``;
    ``idle`` when other processes use little enough for the busy/idle ratios to mean what they
    say. The load average is only reported where ``/proc/stat`` can be read: it counts this
    benchmark's own work of the last minute (the indexing before the answers), not the others'."""
    try:
        load = float(Path("/proc/loadavg").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        load = None
    before = read_cpu_times()
    time.sleep(seconds)
    after = read_cpu_times()
    others = others_busy(before, after) if before and after else None
    cores = usable_cores()
    # without /proc/stat the load average is all there is
    idle = others < 0.3 if others is not None else load is None or load < max(0.5, 0.25 * cores)
    return {"loadavg_1m": load, "others_busy_cores": others, "cores": cores, "idle": idle}


@contextmanager
def busy_core() -> Iterator[subprocess.Popen[bytes]]:
    """One core kept busy by another program for the duration of the block."""
    child = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        _until_running(child.pid)
        yield child
    finally:
        child.kill()
        child.wait(10)


def _until_running(pid: int, ticks: int = 20, timeout: float = 10.0) -> None:
    """Until the process has run ``ticks`` clock ticks (it is spinning, not starting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[11]) + int(fields[12]) >= ticks:
                return
        except (OSError, ValueError, IndexError):
            return  # no /proc: give it the timeout's worth of a start below
        time.sleep(0.05)


@contextmanager
def ingesting(settings: DocentSettings, files: list[Path], report: Report) -> Iterator[Callable[[], bool]]:
    """An ingest job of this process over ``files`` (repeated under other names until there
    is enough to index), into a fresh folder; the block starts once it embeds. Yields a
    function that says whether the job still runs; the job is cancelled at the end."""
    ctx = fresh_context(settings, "busy-ingest")
    from rag_core.jobs import Upload

    picked = list(itertools.islice(itertools.cycle(files), max(len(files), 12)))
    uploads = [Upload(f"{n:02d}-{p.name}", p.read_bytes()) for n, p in enumerate(picked)]
    job = ctx.jobs.submit(ctx.ingestion, uploads)

    def running() -> bool:
        view = ctx.jobs.view(job)
        return view is not None and view.running

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and running():
        view = ctx.jobs.view(job)
        if view and any("embedding" in f.message for f in view.files):
            break
        time.sleep(0.1)
    report(f"  an ingest of {len(uploads)} files runs in this process")
    try:
        yield running
    finally:
        ctx.jobs.cancel(job)
        ctx.jobs.wait(job, timeout=120)


def _decode(row: dict[str, Any]) -> float | None:
    timings = row.get("timings") or {}
    return timings.get("decode_tokens_per_s") or timings.get("tokens_per_s")


def ask_all(ctx: AppContext, questions: list[dict[str, Any]], still: Callable[[], bool] | None = None) -> list[dict]:
    """Each question as a first turn: its first token, decoding speed and the threads it ran with."""
    rows = []
    for q in questions:
        d = docent_turn(ctx, q["question"])
        t = d["timings"]
        rows.append(
            {
                "id": q.get("id"),
                "ttft_s": d["ttft_s"],
                "decode_tokens_per_s": _decode(d),
                "threads": [t.get("threads_decode"), t.get("threads_batch")],
                "others_busy_cores": t.get("others_busy_cores"),
                "threads_swap_s": t.get("threads_swap_s"),
                **({"ingest_running": still()} if still else {}),
            }
        )
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ttft_s": median([r["ttft_s"] for r in rows]),
        "decode_tokens_per_s": median([r["decode_tokens_per_s"] for r in rows if r["decode_tokens_per_s"]]),
        "per_question": rows,
    }


def _reload(ctx: AppContext) -> None:
    reload = getattr(ctx.llm(), "reload", None)
    if callable(reload):
        reload()  # the same empty prompt cache for every pass


def bench_busy(ctx: AppContext, questions: list[dict[str, Any]], files: list[Path], report: Report) -> dict[str, Any]:
    """``ttft_busy_vs_idle``, ``decode_busy_vs_idle``, ``ttft_ingesting_vs_idle`` over ``questions``,
    asked three times in a row, each pass from the same empty prompt cache (the model reloaded)."""
    state = machine_state()
    _reload(ctx)
    report(f"  idle: {len(questions)} questions")
    idle = summary(ask_all(ctx, questions))
    _reload(ctx)
    with busy_core():
        report(f"  busy: {len(questions)} questions with one core kept busy by another process")
        busy = summary(ask_all(ctx, questions))
    _reload(ctx)
    with ingesting(ctx.settings, files, report) as still:
        report(f"  ingesting: {len(questions)} questions while the ingest runs")
        ingest = summary(ask_all(ctx, questions, still))
    out = {
        "questions": len(questions),
        "short_spin": ctx.settings.llm_short_spin,
        "llm_threads": ctx.settings.llm_threads,
        "machine": state,
        "loaded": not state["idle"],
        "idle": idle,
        "busy": busy,
        "ingesting": ingest,
        "ttft_busy_vs_idle": ratio(busy["ttft_s"], idle["ttft_s"]),
        "decode_busy_vs_idle": ratio(busy["decode_tokens_per_s"], idle["decode_tokens_per_s"]),
        "ttft_ingesting_vs_idle": ratio(ingest["ttft_s"], idle["ttft_s"]),
    }
    if out["loaded"]:
        out["note"] = (
            f"other processes used {state['others_busy_cores']} cores (load average {state['loadavg_1m']}) "
            "when this section began: 'idle' was not idle, and the ratios are not an idle machine's"
        )
    return out


# name -> (settings changed, passes): each lever off, beside all of them on
LEVERS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("all on", {}, ("idle", "busy", "ingesting")),
    ("threads fixed at every core", {"llm_threads": -1}, ("idle", "busy")),
    ("threads fixed at one", {"llm_threads": 1}, ("idle", "busy")),
    ("indexing does not pause for answers", {"answer_pauses_indexing": False}, ("idle", "ingesting")),
]


def run_levers(
    settings: DocentSettings,
    docs: Path,
    questions: list[dict[str, Any]],
    n: int,
    report: Report,
    only: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Each lever on and off (``LEVERS``; ``only`` these), the same questions idle / busy /
    ingesting, with the model reloaded before each pass; 5 filings indexed to ask about
    (``bench --busy-levers``; ``bench --busy-only``: all of them on, nothing else)."""
    from rag_core.context import build_context

    files = sorted(docs.glob("*.pdf"))
    indexed = files_for(files, questions, n, 5)
    names = {p.name for p in indexed}
    questions = [q for q in questions if set(q.get("gold_files") or []) <= names][:n]
    report(f"levers: indexing {len(indexed)} filings for {len(questions)} questions…")
    base = fresh_context(settings, "levers")
    base.ingestion.ingest_paths(indexed)
    out: dict[str, Any] = {
        "machine": machine_state(),
        "questions": len(questions),
        "short_spin": settings.llm_short_spin,
        "levers": {},
    }
    cores = usable_cores()
    for name, update, passes in [lever for lever in LEVERS if only is None or lever[0] in only]:
        update = {**update, "llm_threads": cores} if update.get("llm_threads") == -1 else update
        ctx = build_context(base.settings.model_copy(update=update))
        report(f"lever '{name}': {', '.join(passes)}…")
        docent_turn(ctx, "What is this filing about?")  # warm-up: the keyword index, the model's first pass
        figures: dict[str, Any] = {}
        for kind in passes:
            _reload(ctx)
            if kind == "busy":
                with busy_core():
                    figures[kind] = summary(ask_all(ctx, questions))
            elif kind == "ingesting":
                with ingesting(ctx.settings, files, report) as still:
                    figures[kind] = summary(ask_all(ctx, questions, still))
            else:
                figures[kind] = summary(ask_all(ctx, questions))
        idle = figures["idle"]
        for kind in passes[1:]:
            figures[f"ttft_{kind}_vs_idle"] = ratio(figures[kind]["ttft_s"], idle["ttft_s"])
            rate = figures[kind]["decode_tokens_per_s"]
            figures[f"decode_{kind}_vs_idle"] = ratio(rate, idle["decode_tokens_per_s"])
        out["levers"][name] = {"settings": update, **figures}
        unload = getattr(ctx.llm(), "unload", None)
        if callable(unload):
            unload()  # the next lever may load another engine: one model in memory at a time
    out["machine_after"] = machine_state()
    return out
