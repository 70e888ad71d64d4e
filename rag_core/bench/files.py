"""Many small files: what a file costs beyond embedding its own chunks, and whether that cost
grows with the library.

- ``app``: small text files (1–20 KB) through the app's upload path (the jobs runner the
  Upload page submits to), against the embedding limit on the very chunks they became
  (their texts embedded in one tight batched loop, on an evenly spaced sample);
- ``cli``: ``python -m rag_core ingest`` on 100 small files against the same text as one
  file (the seconds each file took, as the CLI reports them);
- ``growth`` (``--scale``): the CLI on 5,000 small files; what a chunk costs around the 50th
  file against around the 5,000th (hash embedding: the same cost for every file, so what
  remains is Docent's own, and any growth shows undiluted);
- ``visible_s``: from a file's ingestion returning "indexed" to another process (an app
  already running, its search warm) finding it by search.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from llama_index.core.schema import MetadataMode

from rag_core.bench.inputs import ROOT, child_env, fresh_context, scratch
from rag_core.bench.stats import median, ratio
from rag_core.settings import DocentSettings

_WORDS = (
    "the report describes how the team measured water flow in the northern valley during spring and found "
    "that small pumps deliver steady pressure while larger ones vary with demand from farms towns and mills "
    "engineers recorded each reading twice compared notes with the regional office and wrote down what changed "
    "after the new filters were installed costs fell slightly but maintenance took longer than planned because "
    "spare parts arrived late from the supplier in the capital several villages asked for more frequent checks"
).split()


def small_files(folder: Path, n: int, seed: int = 11, start: int = 0) -> list[Path]:
    """``n`` text files of 1 to 20 KB of plain sentences (each with a number and a name of its own)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(start, start + n):
        size = rng.randint(1024, 20 * 1024)
        sentences: list[str] = []
        while sum(len(s) + 1 for s in sentences) < size:
            words = rng.choices(_WORDS, k=rng.randint(8, 20))
            words.insert(rng.randrange(len(words)), f"{rng.randint(10, 99_999)}")
            sentences.append(" ".join(words).capitalize() + ".")
        path = folder / f"note-{i:05d}.txt"
        path.write_text(f"Note {i} from station S{i:05d}.\n\n" + "\n".join(sentences)[:size], encoding="utf-8")
        paths.append(path)
    return paths


def _limit_s(ctx: Any, sample: int) -> tuple[float, int, int]:
    """Seconds to embed an even sample of the stored chunks in one batched loop; (seconds,
    sampled, total)."""
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in ctx.index.all_nodes()]
    sampled = texts[:: max(1, len(texts) // sample)][:sample]
    size = ctx.settings.embed_batch_size
    t = time.perf_counter()
    for start in range(0, len(sampled), size):
        ctx.embed_model.get_text_embedding_batch(sampled[start : start + size])
    return time.perf_counter() - t, len(sampled), len(texts)


def bench_app_uploads(settings: DocentSettings, files: int = 500, sample: int = 640) -> dict[str, Any]:
    """Small files through the jobs runner, against the embedding limit on their own chunks."""
    from rag_core.jobs import Upload

    ctx = fresh_context(settings, "uploads")
    paths = small_files(scratch("small"), files)
    uploads = [Upload(p.name, p.read_bytes()) for p in paths]
    t = time.perf_counter()
    job = ctx.jobs.submit(ctx.ingestion, uploads)
    view = ctx.jobs.wait(job)
    app_s = time.perf_counter() - t
    results = view.results if view else []
    chunks = sum(r.chunks for r in results)
    limit_s, sampled, _stored = _limit_s(ctx, sample)
    app_rate = chunks / app_s if app_s else None
    limit_rate = sampled / limit_s if limit_s else None
    out = {
        "files": files,
        "indexed": sum(r.status == "indexed" for r in results),
        "chunks": chunks,
        "app_s": round(app_s, 1),
        "app_s_per_file": round(app_s / files, 3),
        "app_chunks_per_s": round(app_rate, 2) if app_rate else None,
        "limit_chunks": sampled,
        "limit_chunks_per_s": round(limit_rate, 2) if limit_rate else None,
        "uploads_vs_limit": ratio(app_rate, limit_rate),
    }
    out.update(bench_visible(ctx))
    return out


def _cli_ingest(data: Path, paths: list[Path], env: dict[str, str]) -> tuple[list[dict], float]:
    t = time.perf_counter()
    ran = subprocess.run(
        [sys.executable, "-m", "rag_core", "--data-dir", str(data), "ingest", *map(str, paths), "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=6 * 3600,
    )  # fmt: skip
    wall = time.perf_counter() - t
    if ran.returncode != 0:
        raise RuntimeError(f"ingest failed: {ran.stderr[-2000:]}")
    return [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")], wall


def bench_cli_files(settings: DocentSettings, files: int = 100) -> dict[str, Any]:
    """``python -m rag_core ingest`` on ``files`` small files and on their text as one file."""
    work = scratch("cli")
    paths = small_files(work / "small", files, seed=12)
    one = work / "one" / "all-notes.txt"
    one.parent.mkdir()
    one.write_text("\n\n".join(p.read_text(encoding="utf-8") for p in paths), encoding="utf-8")
    env = child_env(settings)
    many, many_wall = _cli_ingest(work / "data-many", paths, env)
    single, single_wall = _cli_ingest(work / "data-one", [one], env)
    many_s = sum(r["seconds"] for r in many)
    one_s = sum(r["seconds"] for r in single)
    return {
        "files": files,
        "chunks": sum(r["chunks"] for r in many),
        "one_file_chunks": sum(r["chunks"] for r in single),
        "files_s": round(many_s, 2),
        "one_file_s": round(one_s, 2),
        "files_vs_one": ratio(many_s, one_s),
        "files_wall_s": round(many_wall, 1),
        "one_file_wall_s": round(single_wall, 1),
    }


def bench_growth(settings: DocentSettings, files: int = 5000, window: int = 50) -> dict[str, Any]:
    """The CLI on ``files`` small files (hash embedding): a chunk's cost around the 50th file
    against around the last."""
    work = scratch("growth")
    paths = small_files(work / "small", files, seed=13)
    results, wall = _cli_ingest(work / "data", paths, child_env(settings, DOCENT_EMBED_PROVIDER="hash"))

    def per_chunk(rows: list[dict]) -> float:
        return sum(r["seconds"] for r in rows) / max(1, sum(r["chunks"] for r in rows))

    early = results[50 - window // 2 : 50 + window // 2]
    late = results[-window:]
    return {
        "files": files,
        "chunks": sum(r["chunks"] for r in results),
        "wall_s": round(wall, 1),
        "early_s_per_file": median([r["seconds"] for r in early]),
        "late_s_per_file": median([r["seconds"] for r in late]),
        "early_ms_per_chunk": round(1000 * per_chunk(early), 2),
        "late_ms_per_chunk": round(1000 * per_chunk(late), 2),
        "last_vs_50th": ratio(per_chunk(late), per_chunk(early)),
    }


_READER = """
import json, sys, time
from rag_core import build_context, load_settings
ctx = build_context(load_settings())
ctx.chat.retrieve("water flow in the valley")  # a warm app: its views open, its search done once
print("ready", flush=True)
for line in sys.stdin:
    word = line.strip()
    while True:
        if any(word in (s.get("text") or "") for s in ctx.chat.retrieve(word, top_k=3)):
            print(json.dumps({"found": time.time()}), flush=True)
            break
        time.sleep(0.01)
"""


def bench_visible(ctx: Any, trials: int = 3) -> dict[str, Any]:
    """Seconds from ``ingest_file`` returning "indexed" here to a search finding the file in
    another process that was already running."""
    env = child_env(ctx.settings, chroma=True, DOCENT_DATA_DIR=str(ctx.settings.data_dir))
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER], cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    delays = []
    try:
        assert reader.stdout is not None and reader.stdin is not None
        if reader.stdout.readline().strip() != "ready":
            return {"visible_error": "the reader did not start"}
        folder = scratch("visible")
        for trial in range(trials):
            word = f"quetzalmarker{trial}x{int(time.time())}"
            path = folder / f"visible-{trial}.txt"
            path.write_text(f"The {word} station logged a reading of {trial} cubic metres.", encoding="utf-8")
            reader.stdin.write(word + "\n")
            reader.stdin.flush()
            result = ctx.ingestion.ingest_file(path)
            indexed = time.time()
            if result.status != "indexed":
                return {"visible_error": result.reason}
            line = reader.stdout.readline()
            if not line:  # it failed: say so beside the other figures instead of losing them
                return {"visible_error": f"the reader process ended ({reader.wait(10)})"}
            found = json.loads(line)["found"]
            delays.append(max(0.0, found - indexed))
    finally:
        reader.kill()
        reader.wait()
    return {"visible_s": median(delays), "visible_runs_s": [round(d, 3) for d in delays]}


# name -> (section, key, target, "le" | "ge"): the targets for many small files
FILE_TARGETS = {
    "files_vs_one": ("cli", "files_vs_one", 1.5, "le"),
    "last_vs_50th": ("growth", "last_vs_50th", 1.2, "le"),
    "visible_s": ("visible", "visible_s", 1.0, "le"),
    "uploads_vs_limit": ("app", "uploads_vs_limit", 0.8, "ge"),
}


def run_files(settings: DocentSettings, growth: int, uploads: int, report: Any) -> dict[str, Any]:
    """``bench --files``: the CLI's 100 files against one, the ``growth``-th file against the
    50th, the delay to another process's search, and (``uploads`` > 0) the app's upload path."""
    started = time.perf_counter()
    result: dict[str, Any] = {"kind": "files"}
    report("100 small files through the CLI, and their text as one file…")
    result["cli"] = bench_cli_files(settings)
    report(f"cli: {json.dumps(result['cli'])}")
    report("from indexed to searchable in another process…")
    result["visible"] = bench_visible(fresh_context(settings, "visible"))
    report(f"visible: {json.dumps(result['visible'])}")
    report(f"{growth} small files through the CLI (hash embedding)…")
    result["growth"] = bench_growth(settings, files=growth)
    report(f"growth: {json.dumps(result['growth'])}")
    if uploads:
        report(f"{uploads} small files through the app's upload path…")
        result["app"] = bench_app_uploads(settings, files=uploads)
        report(f"app: {json.dumps(result['app'])}")
    result["seconds"] = round(time.perf_counter() - started, 1)
    targets = {}
    for name, (section, key, target, sense) in FILE_TARGETS.items():
        value = result.get(section, {}).get(key)
        met = None if value is None else (value <= target if sense == "le" else value >= target)
        targets[name] = {"value": value, "target": target, "met": met}
    result["targets"] = targets
    return result
