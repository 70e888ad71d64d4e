"""``python -m rag_core bench --team``: people at once against two app processes that share
PostgreSQL, a Chroma server and one model server (docs/team.md, "What was measured").

Each person has their own session and asks a question and two follow-ups; everyone starts
at the same moment. Reported: p50/p95 of the time to the sources and to the first token,
the errors, and whether every turn is stored, in order, in the right person's session.

The servers are the ones in ``DOCENT_DATABASE_URL``, ``DOCENT_CHROMA_HOST``/``PORT`` and
``DOCENT_OPENAI_BASE_URL`` (with ``DOCENT_LLM_PROVIDER=openai``) when set, as
``scripts/team.sh`` sets them; otherwise this starts its own for the run, in a temporary
folder: a PostgreSQL cluster (Debian's binaries), ``chroma run`` and ``serve-model``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_core.bench.inputs import ROOT
from rag_core.bench.servers import answers, chroma_run, free_port, server_process
from rag_core.bench.stats import median, p95
from rag_core.errors import ConfigError

if TYPE_CHECKING:
    from rag_core.context import AppContext

PROCESSES = 2
FOLLOW_UPS = ROOT / "tests" / "data" / "elliptical_sec.jsonl"
SECOND_FOLLOW_UP = "And how does that compare with the same quarter a year earlier?"
MODEL_NAME = "qwen2.5-coder-1.5b"
Report = Callable[[str], None]


@contextlib.contextmanager
def _postgres(folder: Path) -> Iterator[str]:
    """A throw-away PostgreSQL cluster (as ``nobody`` when run as root: the server refuses root)."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    if not bins:
        raise ConfigError("bench --team needs PostgreSQL: set DOCENT_DATABASE_URL or apt-get install postgresql.")
    pgbin, data, port = bins[0].parent, folder / "pg", free_port()
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    folder.mkdir(parents=True, exist_ok=True)
    if as_user:
        shutil.chown(folder, "nobody")
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": str(folder)}

    def run(*cmd: str) -> None:
        done = subprocess.run([*as_user, *cmd], cwd=folder, env=env, capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise ConfigError(f"{Path(cmd[0]).name} failed: {(done.stdout + done.stderr)[-1500:]}")

    run(str(pgbin / "initdb"), "-D", str(data), "-U", "docent", "--auth=trust", "-E", "UTF8")
    opts = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder} -c fsync=on"
    run(str(pgbin / "pg_ctl"), "-D", str(data), "-l", str(folder / "postgres.log"), "-o", opts, "-w", "start")
    try:
        run(str(pgbin / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "docent", "docent")
        yield f"postgresql://docent@127.0.0.1:{port}/docent"
    finally:
        with contextlib.suppress(ConfigError, subprocess.SubprocessError):
            run(str(pgbin / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")


@contextlib.contextmanager
def team_servers(folder: Path, report: Report, parallel: int) -> Iterator[dict[str, str]]:
    """The servers' variables for the app processes: those set here, or started for the run."""
    env = {k: v for k, v in os.environ.items() if k.startswith("DOCENT_")}
    with contextlib.ExitStack() as stack:
        if not env.get("DOCENT_DATABASE_URL"):
            report("starting PostgreSQL…")
            env["DOCENT_DATABASE_URL"] = stack.enter_context(_postgres(folder / "postgres"))
        if not env.get("DOCENT_CHROMA_HOST"):
            report("starting chroma run…")
            port = stack.enter_context(chroma_run(folder / "chroma", folder / "chroma.log"))
            env.update(DOCENT_CHROMA_HOST="127.0.0.1", DOCENT_CHROMA_PORT=str(port))
        if env.get("DOCENT_LLM_PROVIDER") != "openai" or not env.get("DOCENT_OPENAI_BASE_URL"):
            report(f"starting serve-model (--parallel {parallel}; loading the model)…")
            port = free_port()
            cmd = [sys.executable, "-m", "rag_core", "serve-model"]  # the model assembled once, where the app keeps it
            cmd += ["--port", str(port), "--parallel", str(parallel)]
            url = f"http://127.0.0.1:{port}"
            stack.enter_context(
                server_process("serve-model", cmd, folder / "model.log", lambda: answers(url + "/health"), 900)
            )
            env.update(DOCENT_LLM_PROVIDER="openai", DOCENT_OPENAI_BASE_URL=url + "/v1", DOCENT_OPENAI_MODEL=MODEL_NAME)
        yield env


def conversations(people: int) -> tuple[list[list[str]], set[str]]:
    """``people`` conversations of three questions over the SEC filings (a question, its
    elliptical follow-up from tests/data/elliptical_sec.jsonl, one more follow-up), and the
    files they need: the pairs whose files are among the two most asked about."""
    pairs = [json.loads(line) for line in FOLLOW_UPS.read_text(encoding="utf-8").splitlines() if line.strip()]
    counts: dict[str, int] = {}
    for p in pairs:
        for name in p["gold_files"]:
            counts[name] = counts.get(name, 0) + 1
    files = set(sorted(counts, key=lambda n: (-counts[n], n))[:2])
    chosen = [p for p in pairs if set(p["gold_files"]) <= files]
    return [[chosen[i % len(chosen)]["history"][0], chosen[i % len(chosen)]["question"], SECOND_FOLLOW_UP]
            for i in range(people)], files  # fmt: skip


def _ingest(env: dict[str, str], folder: Path, docs: Path, files: set[str], report: Report) -> None:
    """The filings, through a process of its own (as an upload through one app would)."""
    paths = [str(docs / name) for name in sorted(files)]
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise ConfigError(f"bench --team: {', '.join(missing)} not found (give --docs: the SEC 10-Q PDFs).")
    report(f"ingesting {len(paths)} filings into the shared stores…")
    run_env = {**os.environ, **env, "DOCENT_DATA_DIR": str(folder / "ingest")}
    done = subprocess.run([sys.executable, "-m", "rag_core", "ingest", *paths], cwd=ROOT, env=run_env,
                          capture_output=True, text=True, timeout=3600)  # fmt: skip
    if done.returncode:
        raise ConfigError(f"bench --team: ingest failed: {done.stderr[-1500:]}")


def _run_processes(env: dict[str, str], folder: Path, people: list[dict[str, Any]], report: Report) -> list[dict]:
    """Two app processes, half the people each; all start at once; every row they print."""
    procs, rows, lock = [], [], threading.Lock()
    for n in range(PROCESSES):
        share = people[n::PROCESSES]
        spec = folder / f"people{n}.json"
        spec.write_text(json.dumps(share), encoding="utf-8")
        run_env = {**os.environ, **env, "DOCENT_DATA_DIR": str(folder / f"app{n}")}
        procs.append(subprocess.Popen([sys.executable, "-m", "rag_core.bench.team_worker", str(spec)], cwd=ROOT,
                     env=run_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))  # fmt: skip
    for n, proc in enumerate(procs):
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if not first.strip():
            raise ConfigError(f"bench --team: app process {n} did not start (its output is above)")
        rows.append({**json.loads(first), "process": n})
    report(f"{len(people)} people in {PROCESSES} app processes: asking…")
    start_at = time.time() + 1.0
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(f"{start_at}\n")
        proc.stdin.close()

    def read(n: int, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            row = {**json.loads(line), "process": n}
            with lock:
                rows.append(row)
            if "turn" in row:
                report(f"  {row['person']} turn {row['turn']}: {row.get('error') or row.get('first_token_s')}")

    readers = [threading.Thread(target=read, args=(n, p)) for n, p in enumerate(procs)]
    for t in readers:
        t.start()
    for t, p in zip(readers, procs):
        t.join()
        p.wait()
    return rows


def stored_in_order(ctx: AppContext, turns: list[dict], people: list[dict]) -> dict[str, Any]:
    """Every person's session read back through their own view of the database: theirs alone
    (else none of their turns counts), each question stored in the order asked and followed by
    its answer; a turn counts when it and every one before it are so stored."""
    sessions = {r["person"]: r["session"] for r in turns}
    good, problems = 0, []
    for p in people:
        who, sid = p["person"], sessions.get(p["person"])
        mine = ctx.for_person(who)
        listed = [s.id for s in mine.sessions.list()]
        shape = [(m.role, m.content) for m in mine.sessions.messages(sid)] if sid in listed else []
        stored = 0  # the turns stored in order: each question, then its answer, from the first on
        if listed == [sid]:
            for n, question in enumerate(p["questions"]):
                pair = shape[2 * n : 2 * n + 2]
                if (
                    len(pair) < 2
                    or pair[0] != ("user", question)
                    or pair[1][0] != "assistant"
                    or not pair[1][1].strip()
                ):
                    break
                stored += 1
        good += stored
        if stored < len(p["questions"]) or len(shape) != 2 * len(p["questions"]):
            problems.append(f"{who}: sessions {listed}, stored {[m[0] for m in shape]}")
    return {"turns_stored_in_order": good, "problems": problems[:10]}


def _read_back(env: dict[str, str], folder: Path, turns: list[dict], people: list[dict]) -> dict[str, Any]:
    from rag_core.context import build_context
    from rag_core.settings import load_settings

    os.environ.update(env)  # this process is the bench's: it reads the same servers as the apps
    return stored_in_order(build_context(load_settings(data_dir=folder / "check"), recover=False), turns, people)


QUEUE_TIMEOUT_S = 3600  # the OpenAI client's wait for the model server (``llm_timeout``'s most)


def bench_team(
    people_n: int, docs: Path, report: Report, parallel: int = 2, max_new_tokens: int | None = None
) -> dict[str, Any]:
    own_model = not os.environ.get("DOCENT_OPENAI_BASE_URL")  # (read before the read-back sets the servers')
    folder = Path(tempfile.mkdtemp(prefix="docent-bench-team-"))
    folder.chmod(0o755)  # PostgreSQL runs as nobody under root: it must reach its folder inside
    questions, files = conversations(people_n)
    people = [{"person": f"p{i + 1:02d}@bench.example.org", "questions": q} for i, q in enumerate(questions)]
    with team_servers(folder, report, parallel) as env:
        if max_new_tokens:  # the answers' length cap, as in the other answer figures
            env["DOCENT_LLM_MAX_NEW_TOKENS"] = str(max_new_tokens)
        # Everyone asks at once of a model server with a few slots: a request waits for a slot
        # as long as the queue ahead of it takes. The figure is that queue, not a client timeout
        # (a team sizes both to its people: docs/team.md).
        env.setdefault("DOCENT_LLM_TIMEOUT", str(QUEUE_TIMEOUT_S))
        _ingest(env, folder, docs, files, report)
        started = time.perf_counter()
        rows = _run_processes(env, folder, people, report)
        seconds = time.perf_counter() - started
        turns = [r for r in rows if "turn" in r]
        stored = _read_back(env, folder, turns, people)
    ok = [r for r in turns if "error" not in r]
    if len(ok) == len(people) * 3:
        shutil.rmtree(folder, ignore_errors=True)  # else kept: the servers' logs say what went wrong
    sources = [r["sources_s"] for r in ok]
    first = [r["first_token_s"] for r in ok if "first_token_s" in r]
    errors = [f"{r['person']} turn {r['turn']}: {r['error']}" for r in turns if "error" in r]
    return {
        "people": people_n,
        "processes": PROCESSES,
        "turns": len(people) * 3,
        "turns_answered": len(ok),
        "sources_p50_s": median(sources),
        "sources_p95_s": p95(sources),
        "first_token_p50_s": median(first),
        "first_token_p95_s": p95(first),
        "total_p50_s": median([r["total_s"] for r in ok if "total_s" in r]),
        "errors": len(errors) + len(people) * 3 - len(turns),
        "error_samples": errors[:5],
        **stored,
        "seconds": round(seconds, 1),
        "model_slots": parallel if own_model else None,
        "files": sorted(files),
        "max_new_tokens": max_new_tokens,
        "llm_timeout_s": float(env.get("DOCENT_LLM_TIMEOUT") or QUEUE_TIMEOUT_S),
    }
