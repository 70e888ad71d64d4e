"""Background ingestion jobs (rag_core.jobs): progress per file, cancel, results until read.

The embedding is held at a gate so that the test knows where the job stands without
timing: it cancels while the first file is being embedded.
"""

from __future__ import annotations

import json
import re
import threading

from rag_core import Upload, build_context
from rag_core.health import check
from rag_core.providers.embeddings import HashEmbedding

LONG = ("Pumps move water. " * 6000).encode()  # over 64 chunks: several embedding batches


def test_a_job_reports_progress_cancels_between_batches_and_keeps_results_until_read(make_settings, llm, monkeypatch):
    ctx = build_context(make_settings(), llm=llm)
    gate, second_batch = threading.Event(), threading.Event()
    calls = {"n": 0}
    original = HashEmbedding.__call__

    def held(self, nodes, **kwargs):  # one call per batch of chunks
        calls["n"] += 1
        if calls["n"] == 2:  # the second batch of the first file waits for the test
            second_batch.set()
            assert gate.wait(60)
        return original(self, nodes, **kwargs)

    monkeypatch.setattr(HashEmbedding, "__call__", held)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("long.txt", LONG), Upload("next.txt", b"Valves close.")])
    assert second_batch.wait(60)
    view = ctx.jobs.view(job)
    assert view.running and ctx.jobs.running() == [job]
    first, second = view.files
    assert first.state == "running"
    assert re.fullmatch(r"long\.txt: embedding parts? [\d-]+ of \d+: \d+/\d+ passages", first.message), first.message
    assert 0.3 < first.fraction < 0.95
    assert (second.state, second.message) == ("queued", "next.txt: waiting")

    ctx.jobs.cancel(job)
    gate.set()
    view = ctx.jobs.wait(job, timeout=60)
    assert view.state == "cancelled"
    assert [(r.file, r.status) for r in view.results] == [("long.txt", "cancelled"), ("next.txt", "cancelled")]
    assert calls["n"] == 2  # stopped before the third batch
    assert ctx.ingestion.documents() == [] and ctx.index.chunk_count() == 0 and check(ctx)[0] == []
    assert not (ctx.settings.data_dir / "files" / "long.txt").exists()

    ctx.jobs.forget(job)
    assert ctx.jobs.view(job) is None


def test_a_job_indexes_and_asks_nothing_twice(make_settings, llm):
    ctx = build_context(make_settings(), llm=llm)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Alpha text."), Upload("b.epub", b"PK..")])
    view = ctx.jobs.wait(job, timeout=60)
    assert view.state == "done" and view.fraction == 1.0
    assert [(r.file, r.status) for r in view.results] == [("a.txt", "indexed"), ("b.epub", "failed")]
    conflict = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Another alpha.")])
    [refused] = ctx.jobs.wait(conflict, timeout=60).results
    assert (refused.status, refused.conflict) == ("failed", True)
    replaced = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Another alpha.", on_conflict="replace")])
    assert [r.status for r in ctx.jobs.wait(replaced, timeout=60).results] == ["replaced"]


def test_the_next_upload_is_read_while_one_is_embedded_and_nothing_is_left_behind(make_settings, llm, monkeypatch):
    """The uploads' bytes are staged in files of their own; the next one is read in the worker
    while this one's embedding goes on (``ingestion.ahead``). The first file's second batch of
    embeddings waits until the second file was read: it could not be, one after the other."""
    from rag_core.ingestion import ahead

    ctx = build_context(make_settings(), llm=llm)
    read, staged = {}, []
    real_read, real_call = ahead.loaders.load_file_guarded, HashEmbedding.__call__
    calls = {"n": 0}

    def spy(path, name, sha256, **kwargs):
        staged.append(path)
        loaded = real_read(path, name, sha256, **kwargs)
        read[name] = threading.current_thread().name
        return loaded

    def held(self, nodes, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:  # long.txt is still being embedded
            for _ in range(600):
                if "next.txt" in read:
                    break
                threading.Event().wait(0.05)
        return real_call(self, nodes, **kwargs)

    monkeypatch.setattr(ahead.loaders, "load_file_guarded", spy)
    monkeypatch.setattr(HashEmbedding, "__call__", held)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("long.txt", LONG), Upload("next.txt", b"Valves close.")])
    view = ctx.jobs.wait(job, timeout=120)
    assert [(r.file, r.status) for r in view.results] == [("long.txt", "indexed"), ("next.txt", "indexed")]
    assert read["next.txt"] == "docent-read-next" and read["long.txt"] != "docent-read-next"
    assert len(staged) == 2 and not any(p.exists() or p.parent.parent.exists() for p in staged)
    assert [n.get_content() for n in ctx.index.document_nodes("next.txt")] == ["Valves close."]
    assert check(ctx)[0] == []


def _other_process(db_target: str, code: str) -> str:
    """Run ``code`` in a new Python process with ``store``, a JobStore over the same database
    (a SQLite file's path, or a PostgreSQL URL); what it prints."""
    import subprocess
    import sys

    prelude = (
        "import sys, json\n"
        "from rag_core.storage.jobs import JobStore\n"
        "target = sys.argv[1]\n"
        "if target.startswith('postgresql'):\n"
        "    from rag_core.storage.postgres import PostgresDatabase as D\n"
        "else:\n"
        "    from rag_core.storage.sqlite import SQLiteDatabase as D\n"
        "    from pathlib import Path; target = Path(target)\n"
        "store = JobStore(D(target))\n"
    )
    p = subprocess.run([sys.executable, "-c", prelude + code, db_target], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _shared_progress_and_cancel(ctx, db_target: str, monkeypatch) -> None:
    monkeypatch.setattr("rag_core.jobs.ASK_EVERY_S", 0.0)
    gate, second_batch = threading.Event(), threading.Event()
    calls = {"n": 0}
    original = HashEmbedding.__call__

    def held(self, nodes, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            second_batch.set()
            assert gate.wait(60)
        return original(self, nodes, **kwargs)

    monkeypatch.setattr(HashEmbedding, "__call__", held)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("long.txt", LONG), Upload("next.txt", b"Valves close.")], owner="ann")
    assert second_batch.wait(60)
    seen = json.loads(
        _other_process(
            db_target,
            f"row = store.load('{job}'); mine = [r['id'] for r in store.running('ann')]\n"
            "print(json.dumps([row['state'], row['lost'], [f['state'] for f in row['files']],"
            " row['files'][0]['message'], mine, [r['id'] for r in store.running('bob')]]))\n"
            f"store.ask_cancel('{job}')\n",
        )
    )
    state, lost, files, message, mine, bobs = seen
    assert (state, lost, files, mine, bobs) == ("running", False, ["running", "queued"], [job], [])
    assert message.startswith("long.txt: embedding"), message
    gate.set()
    view = ctx.jobs.wait(job, timeout=60)
    assert view.state == "cancelled" and calls["n"] == 2  # stopped, asked by the other process, before batch 3
    assert [(r.file, r.status) for r in view.results] == [("long.txt", "cancelled"), ("next.txt", "cancelled")]
    ended = json.loads(
        _other_process(db_target, f"row = store.load('{job}'); print(json.dumps([row['state'], row['files'][1]]))")
    )
    assert ended[0] == "cancelled" and ended[1]["result"]["status"] == "cancelled"


def test_another_process_sees_a_jobs_progress_and_stops_it_through_the_database(make_settings, llm, monkeypatch):
    """Two app processes on one data folder: an upload running in one is seen from the other
    (its files, what it is doing), by its owner only, and a Cancel pressed there stops it."""
    ctx = build_context(make_settings(), llm=llm)
    _shared_progress_and_cancel(ctx, str(ctx.settings.paths.database), monkeypatch)


def test_a_team_on_postgres_shares_job_progress_and_cancel(make_settings, llm, monkeypatch, pg_url):
    ctx = build_context(make_settings(database_url=pg_url), llm=llm)
    _shared_progress_and_cancel(ctx, pg_url, monkeypatch)


def test_a_job_whose_process_died_is_shown_lost_with_what_it_finished_and_can_be_cleared(make_settings, llm):
    """The process running an upload is killed: the job stays "running" in the database, but
    its pid no longer runs. Another process shows it as lost, with the file it finished,
    and clears it when asked; a running job of a live process is never cleared."""
    ctx = build_context(make_settings(), llm=llm)
    db_target = str(ctx.settings.paths.database)
    _other_process(  # a process that wrote its job's progress, then died (its pid is gone once it exits)
        db_target,
        "files = [{'name': 'a.txt', 'state': 'done', 'message': 'a.txt: indexed', 'fraction': 1.0,"
        " 'result': {'file': 'a.txt', 'status': 'indexed', 'chunks': 3}},"
        " {'name': 'b.txt', 'state': 'running', 'message': 'b.txt: embedding', 'fraction': 0.4, 'result': None}]\n"
        "store.save({'id': 'deadbeef0001', 'owner': '', 'state': 'running', 'files': files, 'created': 1.0})\n",
    )
    assert ctx.jobs.running_elsewhere("") == ["deadbeef0001"] and ctx.jobs.running_elsewhere("ann") == []
    view = ctx.jobs.view("deadbeef0001")
    assert view.state == "lost" and not view.running
    assert "stopped" in view.error and [(r.file, r.status) for r in view.results] == [("a.txt", "indexed")]
    ctx.jobs.forget("deadbeef0001")
    assert ctx.jobs.view("deadbeef0001") is None and ctx.jobs.running_elsewhere("") == []

    live = ctx.jobs.submit(ctx.ingestion, [Upload("c.txt", b"Gears turn.")])
    ctx.jobs.wait(live, timeout=60)
    from rag_core.storage.jobs import JobStore

    store = JobStore(ctx.db)
    store.save({"id": "live00000001", "owner": "", "state": "running", "files": [], "created": 2.0})
    store.forget("live00000001")  # this process runs it: kept
    assert store.load("live00000001") is not None and store.load(live)["state"] == "done"


def test_a_database_that_fails_while_a_job_runs_costs_only_the_shared_progress(make_settings, llm, monkeypatch, caplog):
    """Progress written to the database is for the other processes: the database failing (a
    team's server restarted) leaves the upload running and its own process showing it."""
    from rag_core import DatabaseUnavailableError
    from rag_core.storage.jobs import JobStore

    ctx = build_context(make_settings(), llm=llm)

    def down(self, job):
        raise DatabaseUnavailableError("the database server went away")

    monkeypatch.setattr(JobStore, "save", down)
    job = ctx.jobs.submit(ctx.ingestion, [Upload("a.txt", b"Alpha text."), Upload("b.txt", b"Beta text.")])
    view = ctx.jobs.wait(job, timeout=60)
    assert view.state == "done" and [r.status for r in view.results] == ["indexed", "indexed"]
    assert "job progress not shared through the database" in caplog.text
