"""One question at a time per conversation (rag_core.storage.claims), through the chat
service and across real processes: the stored order is always question, answer, a waiting
question hears what it waits for, and no claim outlives the turn or process that held it.

Real SQLite file, real ``python -m rag_core`` processes; a scripted model in this process.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rag_core import Busy, ProviderError, SessionBusyError, build_context
from rag_core.storage import SessionStore, SQLiteDatabase, claims
from rag_core.storage.postgres import PostgresDatabase
from tests.pdfgen import ZEPHYR_PAGES, make_pdf

ROOT = Path(__file__).resolve().parents[1]
FIRST = "How many litres per minute does the Zephyr pump deliver?"
SECOND = "What battery does the Zephyr pump run on?"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path):
    if request.param == "sqlite":
        return SQLiteDatabase(tmp_path / "docent.db")
    return PostgresDatabase(request.getfixturevalue("pg_url"))


@pytest.fixture
def indexed(ctx, tmp_path):
    p = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, p)
    ctx.ingestion.ingest_paths([p])
    return ctx


def roles_and_texts(ctx, sid: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in ctx.sessions.messages(sid)]


def test_a_second_question_waits_for_the_first_answer_and_reads_it_as_history(indexed, llm):
    """Two tabs ask in one session at once. Before: stored question, question, answer,
    answer, and the second answer read the first question, unanswered, as history."""
    sid = indexed.sessions.create().id
    llm.script(answers=["It delivers 42 litres per minute [1].", "It runs on a 12 V battery [1]."])
    first = indexed.chat.turn(FIRST, sid)  # asked, searched, not answered yet: the first tab is writing
    heard: list[Busy] = []
    done: list[object] = []

    def second_tab() -> None:
        try:
            done.append(indexed.chat.ask(SECOND, sid, waiting=heard.append))
        except BaseException as e:  # handed to the test thread
            done.append(e)

    thread = threading.Thread(target=second_tab)
    thread.start()
    deadline = time.monotonic() + 30
    while not heard and time.monotonic() < deadline:
        time.sleep(0.05)
    assert heard, "the second question did not wait"
    assert heard[0].question == FIRST and not heard[0].elsewhere  # this process, another tab
    assert roles_and_texts(indexed, sid) == [("user", FIRST)]  # the second question is not stored yet
    first.result()
    thread.join(timeout=60)
    assert not thread.is_alive() and not isinstance(done[0], BaseException), done
    assert roles_and_texts(indexed, sid) == [
        ("user", FIRST),
        ("assistant", "It delivers 42 litres per minute [1]."),
        ("user", SECOND),
        ("assistant", "It runs on a 12 V battery [1]."),
    ]
    second_prompt = llm.chats[-1]
    assert any(m.content == "It delivers 42 litres per minute." for m in second_prompt)  # its history (uncited)
    assert indexed.sessions.claims.holder(sid) is None


def test_a_failed_or_dropped_answer_frees_the_session_and_is_no_history(indexed, llm):
    sid = indexed.sessions.create().id
    llm.script(answers=[RuntimeError("connection refused by endpoint")])
    with pytest.raises(ProviderError):
        indexed.chat.ask(FIRST, sid)
    assert indexed.sessions.claims.holder(sid) is None  # nothing to wait for
    llm.script(answers=["A 12 V battery [1]."])
    indexed.chat.ask(SECOND, sid, waiting=lambda busy: pytest.fail(f"waited for {busy}"))
    assert FIRST not in [m.content for m in llm.chats[-1]]  # a question without its answer is not history

    dropped = indexed.chat.turn(FIRST, sid)  # a page that went away before reading the words
    assert indexed.sessions.claims.holder(sid) is not None
    dropped.close()
    assert indexed.sessions.claims.holder(sid) is None
    forgotten = indexed.chat.turn(SECOND, sid)  # never closed, never read: only dropped
    del forgotten
    gc.collect()
    assert indexed.sessions.claims.holder(sid) is None  # its claim went with it


def test_waiting_gives_up_with_a_clear_message(indexed, monkeypatch):
    sid = indexed.sessions.create().id
    held = indexed.chat.turn(FIRST, sid)
    monkeypatch.setattr(claims, "POLL_S", 0.01)
    with pytest.raises(SessionBusyError, match=r"still answering another question .*Yours was not asked"):
        indexed.sessions.claims.take(sid, SECOND, max_wait_s=0.1)
    assert [m.content for m in indexed.sessions.messages(sid)] == [FIRST]
    held.close()


def test_a_claim_of_another_machine_counts_until_its_lease_runs_out(db):
    store = SessionStore(db)
    sid = store.create().id
    now = time.time()
    with db.connect() as c:
        c.execute(
            "INSERT INTO session_claims VALUES (?, 'theirs', 'another-host', 1, ?, ?, ?)",
            (sid, FIRST, now - 10, now + 60),
        )
    busy = store.claims.try_take(sid, SECOND)
    assert isinstance(busy, Busy) and busy.elsewhere and busy.question == FIRST
    assert "asked in another window or by the command line 10 s ago" in busy.describe(now)
    with db.connect() as c:  # it was not renewed: a hung or crashed holder
        c.execute("UPDATE session_claims SET expires = ? WHERE session_id = ?", (now - 1, sid))
    taken = store.claims.try_take(sid, SECOND)
    assert isinstance(taken, claims.Claim)
    taken.release()


def test_of_turns_racing_in_separate_connections_exactly_one_takes_the_claim(db, tmp_path):
    """Eight turns, each with its own database object (its own connections, as separate
    processes have), ask at the same instant: one holds the session, seven hear who does.
    Then the claim goes stale and they race to take it over: again exactly one."""
    pg = db.dialect.name == "postgres"
    stores = [SessionStore(db)]
    stores += [
        SessionStore(PostgresDatabase(db.url) if pg else SQLiteDatabase(tmp_path / "docent.db")) for _ in range(7)
    ]
    sid = stores[0].create().id

    def race(question: str) -> list[claims.Claim | Busy]:
        start = threading.Barrier(len(stores))
        got: list[claims.Claim | Busy] = []

        def one(store: SessionStore) -> None:
            start.wait()
            got.append(store.claims.try_take(sid, question))

        threads = [threading.Thread(target=one, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(got) == len(stores)
        return got

    first = race(FIRST)
    held = [g for g in first if isinstance(g, claims.Claim)]
    assert len(held) == 1 and all(g.question == FIRST for g in first if isinstance(g, Busy))
    with db.connect() as c:  # the holder stopped renewing (another machine's, hung)
        c.execute(
            "UPDATE session_claims SET expires = ?, host = 'another-host' WHERE session_id = ?", (time.time() - 1, sid)
        )
    second = race(SECOND)
    taken = [g for g in second if isinstance(g, claims.Claim)]
    assert len(taken) == 1
    assert {g.question for g in second if isinstance(g, Busy)} <= {SECOND}  # they wait for the new holder
    assert stores[0].claims.holder(sid) is not None
    held[0].release()  # the old holder letting go late removes nothing: the claim is no longer its own
    assert stores[0].claims.holder(sid) is not None
    taken[0].release()
    assert stores[0].claims.holder(sid) is None


@pytest.mark.slow
def test_a_process_killed_while_answering_leaves_the_session_free(db, tmp_path):
    """A real process takes the claim (as a turn does) and is SIGKILLed: its pid is gone,
    so the next question does not wait for the lease."""
    store = SessionStore(db)
    sid = store.create().id
    where = db.url if db.dialect.name == "postgres" else str(tmp_path / "docent.db")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from rag_core.storage import SessionStore, SQLiteDatabase\n"
            "from rag_core.storage.postgres import PostgresDatabase\n"
            "where = sys.argv[1]\n"
            "db = PostgresDatabase(where) if where.startswith('postgresql') else SQLiteDatabase(Path(where))\n"
            "claim = SessionStore(db).claims.take(sys.argv[2], 'the question being answered')\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n",
            where,
            sid,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        busy = store.claims.holder(sid)
        assert busy is not None and busy.elsewhere and busy.question == "the question being answered"
        assert isinstance(store.claims.try_take(sid, SECOND), Busy)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        assert store.claims.holder(sid) is None
        taken = store.claims.try_take(sid, SECOND)
        assert isinstance(taken, claims.Claim)
        taken.release()
    finally:
        if holder.poll() is None:
            holder.kill()


@pytest.mark.slow
def test_the_cli_waits_for_an_answer_the_app_is_writing(indexed, llm, tmp_path):
    """The app (this process) is answering in a session; ``python -m rag_core ask --session``
    in the same data folder waits, says so on stderr, and asks once the answer is stored."""
    session = indexed.sessions.create("shared chat")
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    writing = indexed.chat.turn(FIRST, session.id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_")}
    env.update(
        DOCENT_DATA_DIR=str(indexed.settings.data_dir),
        DOCENT_EMBED_PROVIDER="hash",
        DOCENT_LLM_PROVIDER="extractive",
    )
    cli = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "ask", SECOND, "--session", session.id, "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stderr is not None
        line = ""
        deadline = time.monotonic() + 180
        while "waiting" not in line and time.monotonic() < deadline and cli.poll() is None:
            line = cli.stderr.readline()
        assert line.startswith("waiting: this session is answering another question first"), line
        assert FIRST in line
        assert [m.role for m in indexed.sessions.messages(session.id)] == ["user"]
        writing.result()
        out, err = cli.communicate(timeout=180)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, err
    assert json.loads(out)["answer"]  # --json on stdout as ever: the waiting note went to stderr
    assert [m.role for m in indexed.sessions.messages(session.id)] == ["user", "assistant", "user", "assistant"]
    assert [m.content for m in indexed.sessions.messages(session.id)][::2] == [FIRST, SECOND]


@pytest.mark.slow
def test_two_app_processes_on_one_postgresql_answer_one_question_at_a_time(
    pg_url, chroma_server, make_settings, llm, tmp_path
):
    """The team's set-up (docs/team.md): processes with their own data folders, one
    PostgreSQL, one Chroma server. One process is answering in a session; a second process
    asked in it waits, says so, and asks once the answer is stored, with it as history."""
    server = {"chroma_host": "127.0.0.1", "chroma_port": chroma_server}
    app = build_context(make_settings(database_url=pg_url, files_dir=tmp_path / "files", **server), llm=llm)
    pdf = tmp_path / "zephyr.pdf"
    make_pdf(ZEPHYR_PAGES, pdf)
    app.ingestion.ingest_paths([pdf])
    session = app.sessions.create("team chat")
    llm.script(answers=["It delivers 42 litres per minute [1]."])
    writing = app.chat.turn(FIRST, session.id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_")}
    env.update(
        DOCENT_DATA_DIR=str(tmp_path / "second-process"),
        DOCENT_DATABASE_URL=pg_url,
        DOCENT_CHROMA_HOST="127.0.0.1",
        DOCENT_CHROMA_PORT=str(chroma_server),
        DOCENT_EMBED_PROVIDER="hash",
        DOCENT_LLM_PROVIDER="extractive",
    )
    other = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "ask", SECOND, "--session", session.id, "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stderr is not None
        line = ""
        deadline = time.monotonic() + 180
        while "waiting" not in line and time.monotonic() < deadline and other.poll() is None:
            line = other.stderr.readline()
        assert line.startswith("waiting: this session is answering another question first"), line
        assert FIRST in line and "another window or by the command line" in line
        assert [m.role for m in app.sessions.messages(session.id)] == ["user"]  # its question waits, unstored
        writing.result()
        out, err = other.communicate(timeout=180)
    finally:
        if other.poll() is None:
            other.kill()
    assert other.returncode == 0, err
    assert json.loads(out)["answer"]
    stored = app.sessions.messages(session.id)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert [m.content for m in stored][::2] == [FIRST, SECOND]
    assert not (tmp_path / "second-process" / "docent.db").exists()  # the claim was decided in PostgreSQL
    assert app.sessions.claims.holder(session.id) is None
