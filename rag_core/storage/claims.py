"""One question at a time per conversation: a claim on the session, held in the database.

Two tabs on one chat, two app processes, or the app and the CLI can ask in one session at
once. Answered side by side, the session was stored question, question, answer, answer,
and the second answer read the first question, unanswered, as its history. So a turn
first *claims* its session: a row in ``session_claims`` (migration m007), written only
if nobody holds it (an insert that does nothing on a conflict, or an update of the very
claim found stale: a compare-and-swap), so that the database, which every process shares
(one SQLite file, or a team's PostgreSQL), decides who answers; a second turn waits until the row is gone, then sees the first question *and
its answer* as history. The question is stored only once the claim is held, the answer
before it is let go: the stored order is always question, answer.

A claim that nobody will let go must not lock the chat forever. It is stale, and taken
over, when:

- its process is gone (the same machine, a pid that no longer runs: a crash, ``kill -9``);
- its process lives but the claim object is gone (this process: a turn dropped without
  ending, collected by Python) — each process knows which of its claims are alive;
- it was not renewed for ``LEASE_S`` seconds (a hung holder, or one on another machine:
  the answer renews it while it loads the model and writes).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from rag_core.errors import DocentError, NotFoundError
from rag_core.storage.database import Database

LEASE_S = 300.0  # a claim not renewed for this long is taken over
RENEW_EVERY_S = 15.0  # how often a holder renews while it works
POLL_S = 0.5  # how often a waiting turn looks again
MAX_WAIT_S = 900.0  # the longest a turn waits for another one before giving up

HOST = socket.gethostname()
_alive: set[str] = set()  # the tokens of this process's claims still held by a live object
_alive_lock = threading.Lock()


class SessionBusyError(DocentError):
    """The conversation is answering another question, and waiting for it was given up."""


@dataclass(frozen=True)
class Busy:
    """Another turn holds the session: what it answers, and since when (``time.time()``)."""

    question: str
    since: float
    elsewhere: bool  # held by another process (another app, the CLI), not by this one

    def describe(self, now: float | None = None) -> str:
        waited = max(0, int((now or time.time()) - self.since))
        where = "in another window or by the command line" if self.elsewhere else "in another tab"
        question = " ".join(self.question.split())
        if len(question) > 80:
            question = question[:79] + "…"
        return f"“{question}”, asked {where} {waited} s ago"


class Claim:
    """This turn's hold on a session: renew it while working, release it when done (both
    are safe to call again, and after the claim was lost)."""

    def __init__(self, db: Database, session_id: str, token: str) -> None:
        self.db, self.session_id, self.token = db, session_id, token
        self.renewed = time.monotonic()
        self.released = False
        with _alive_lock:
            _alive.add(token)
        self._forget = weakref.finalize(self, _forget, token)

    def renew(self, *, force: bool = False) -> None:
        """Push the lease on (at most every ``RENEW_EVERY_S`` unless ``force``)."""
        if self.released or (not force and time.monotonic() - self.renewed < RENEW_EVERY_S):
            return
        with self.db.connect() as c:
            c.execute(
                "UPDATE session_claims SET expires = ? WHERE session_id = ? AND token = ?",
                (time.time() + LEASE_S, self.session_id, self.token),
            )
        self.renewed = time.monotonic()

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        try:
            with self.db.connect() as c:
                c.execute(
                    "DELETE FROM session_claims WHERE session_id = ? AND token = ?", (self.session_id, self.token)
                )
        finally:
            self._forget()


def _forget(token: str) -> None:
    with _alive_lock:
        _alive.discard(token)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


def _stale(host: str, pid: int, token: str, expires: float, now: float) -> bool:
    if expires < now:
        return True
    if host != HOST:
        return False
    if pid == os.getpid():
        with _alive_lock:
            return token not in _alive
    return not pid_alive(pid)


class SessionClaims:
    """Who answers in which of ``owner``'s sessions (see the module docstring)."""

    def __init__(self, db: Database, owner: str = "") -> None:
        self.db, self.owner = db, owner

    def try_take(self, session_id: str, question: str) -> Claim | Busy:
        """The claim on ``session_id`` if nobody (alive) holds it, else who does."""
        token = uuid.uuid4().hex
        with _alive_lock:  # alive before it is written: a thread of this process that reads it
            _alive.add(token)  # between the write and ``Claim`` must not take it for a dead holder's
        try:
            return self._try_take(session_id, question, token)
        except BaseException:
            _forget(token)
            raise

    def _try_take(self, session_id: str, question: str, token: str) -> Claim | Busy:
        while True:  # a write that found the claim taken meanwhile looks again: it then sees who took it
            now = time.time()
            values = (token, HOST, os.getpid(), question, now, now + LEASE_S)
            with self.db.connect() as c:
                if not c.execute(
                    "SELECT 1 FROM sessions WHERE id = ? AND owner = ?", (session_id, self.owner)
                ).fetchone():
                    raise NotFoundError(f"No session with id {session_id!r}.")
                row = c.execute(
                    "SELECT token, host, pid, question, claimed, expires FROM session_claims WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
                if row is None:
                    took = c.execute(
                        "INSERT INTO session_claims (session_id, token, host, pid, question, claimed, expires)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING",
                        (session_id, *values),
                    ).rowcount
                elif _stale(row[1], int(row[2]), row[0], float(row[5]), now):
                    took = c.execute(  # only the claim found stale, not one another process took since
                        "UPDATE session_claims SET token = ?, host = ?, pid = ?, question = ?, claimed = ?, expires = ?"
                        " WHERE session_id = ? AND token = ?",
                        (*values, session_id, row[0]),
                    ).rowcount
                else:
                    _forget(token)
                    return Busy(str(row[3]), float(row[4]), row[1] != HOST or int(row[2]) != os.getpid())
            if took == 1:
                return Claim(self.db, session_id, token)

    def take(
        self,
        session_id: str,
        question: str,
        waiting: Callable[[Busy], None] | None = None,
        max_wait_s: float = MAX_WAIT_S,
    ) -> Claim:
        """The claim on ``session_id``, waiting while another turn holds it; ``waiting``
        hears who that is each time it looks (and may raise to stop waiting). Raises
        ``SessionBusyError`` after ``max_wait_s``."""
        deadline = time.monotonic() + max_wait_s
        while True:
            got = self.try_take(session_id, question)
            if isinstance(got, Claim):
                return got
            if time.monotonic() >= deadline:
                raise SessionBusyError(
                    f"This conversation is still answering another question ({got.describe()}). Yours was not "
                    "asked; ask it again once that answer is there."
                )
            if waiting is not None:
                waiting(got)
            time.sleep(POLL_S)

    def holder(self, session_id: str) -> Busy | None:
        """Who answers in ``session_id`` now (a stale claim counts as nobody)."""
        row = self.db.query(
            "SELECT c.token, c.host, c.pid, c.question, c.claimed, c.expires FROM session_claims c"
            " JOIN sessions s ON s.id = c.session_id WHERE c.session_id = ? AND s.owner = ?",
            (session_id, self.owner),
        )
        if not row:
            return None
        r = row[0]
        if _stale(r["host"], int(r["pid"]), r["token"], float(r["expires"]), time.time()):
            return None
        return Busy(str(r["question"]), float(r["claimed"]), r["host"] != HOST or int(r["pid"]) != os.getpid())
