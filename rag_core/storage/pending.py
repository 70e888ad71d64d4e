"""Questions typed but not yet in their conversation.

A question is stored in its conversation only once the conversation is free (one question
at a time, ``rag_core.storage.claims``): it may wait behind another tab's answer, and the
page that asked it may be reloaded, closed or fail meanwhile. So the moment a question is
typed it is *kept* here (migration m010), before anything else happens, and let go once it
is in the conversation. Whatever happens in between, the page finds it here and shows it,
with a way to ask it.

While the run that kept it is asking it (its page draws, it waits behind another tab's
answer), the question is that tab's to show: it holds a lease on it (``asking_until``,
migration m011), renewed while it waits and let go when the run ends, however it ends. Other
tabs, and that tab reloaded, show a kept question only once nobody is asking it; a run that
died without letting go (its process killed) is past its lease after ``LEASE_S``.

When the database cannot take it (a team's PostgreSQL away, a full disk) the question is
kept in this process's memory instead, and written to the database once it answers again:
a reload of the tab on the same server still finds it.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from rag_core.errors import DatabaseUnavailableError, DiskFullError
from rag_core.storage.database import Database

SETTLE_SLACK_S = 1.0  # a stored question this much older than its pending copy still settles it
LEASE_S = 30.0  # a question is being asked until this long after its run last said so
RENEW_EVERY_S = 5.0


@dataclass(frozen=True)
class Pending:
    """A question kept before it reached its conversation. ``in_memory``: the database could
    not take it; this process holds it until it can."""

    id: str
    session_id: str
    question: str
    created: float
    in_memory: bool = False


_memory: dict[tuple[str, str], dict[str, Pending]] = {}  # (database, owner) -> id -> question
_memory_lock = threading.RLock()
_released: set[str] = set()  # ids let go while the database was away, to write once it answers
_renewed: dict[str, float] = {}  # pending id -> when this process last renewed its lease (monotonic)


class PendingQuestions:
    """One owner's questions not yet in their conversations."""

    def __init__(self, db: Database, owner: str = "") -> None:
        self.db, self.owner = db, owner

    def _held(self) -> dict[str, Pending]:
        with _memory_lock:
            return _memory.setdefault((self.db.location, self.owner), {})

    def keep(self, session_id: str, question: str) -> Pending:
        """Keep ``question`` for ``session_id``: in the database, or in memory when it is away."""
        pending = Pending(uuid.uuid4().hex, session_id, question.strip(), time.time())
        try:
            self._write(pending, asking=True)
        except (DatabaseUnavailableError, DiskFullError):
            pending = Pending(pending.id, session_id, question, pending.created, in_memory=True)
            with _memory_lock:
                self._held()[pending.id] = pending
        return pending

    def _write(self, p: Pending, *, asking: bool) -> None:
        until = time.time() + LEASE_S if asking else 0.0
        with self.db.connect() as c:
            c.execute(
                "INSERT INTO pending_questions (id, session_id, question, created, asking_until)"
                " SELECT ?, id, ?, ?, ? FROM sessions WHERE id = ? AND owner = ?",
                (p.id, p.question, p.created, until, p.session_id, self.owner),
            )
        if asking:
            _renewed[p.id] = time.monotonic()

    def renew(self, pending_id: str, *, force: bool = False) -> None:
        """The run asking the question still is (at most one write every ``RENEW_EVERY_S``
        unless ``force``)."""
        if not force and time.monotonic() - _renewed.get(pending_id, 0.0) < RENEW_EVERY_S:
            return
        _renewed[pending_id] = time.monotonic()
        self._lease(pending_id, time.time() + LEASE_S)

    def release(self, pending_id: str) -> None:
        """The run that kept the question ended without it reaching its conversation: any tab
        may show it now, with a way to ask it."""
        _renewed.pop(pending_id, None)
        try:
            self._lease(pending_id, 0.0)
        except (DatabaseUnavailableError, DiskFullError):
            with _memory_lock:  # written once the database answers again (``of``)
                _released.add(pending_id)

    def _lease(self, pending_id: str, until: float) -> None:
        with self.db.connect() as c:
            c.execute(
                "UPDATE pending_questions SET asking_until = ? WHERE id = ?"
                " AND session_id IN (SELECT id FROM sessions WHERE owner = ?)",
                (until, pending_id, self.owner),
            )

    def drop(self, pending_id: str) -> None:
        """Let a question go: it is in its conversation now, or the person dismissed it."""
        _renewed.pop(pending_id, None)
        with _memory_lock:
            self._held().pop(pending_id, None)
        with self.db.connect() as c:
            c.execute(
                "DELETE FROM pending_questions WHERE id = ?"
                " AND session_id IN (SELECT id FROM sessions WHERE owner = ?)",
                (pending_id, self.owner),
            )

    def being_asked(self, session_id: str) -> int:
        """How many questions of ``session_id`` a run is asking now (kept, waiting their turn)."""
        rows = self.db.query(
            "SELECT COUNT(*) FROM pending_questions p JOIN sessions s ON s.id = p.session_id"
            " WHERE p.session_id = ? AND s.owner = ? AND p.asking_until >= ?",
            (session_id, self.owner, time.time()),
        )
        return int(rows[0][0])

    def in_memory(self) -> list[Pending]:
        """The questions this process holds because the database could not take them."""
        with _memory_lock:
            return sorted(self._held().values(), key=lambda p: p.created)

    def of(self, session_id: str) -> list[Pending]:
        """The questions of ``session_id`` not yet in it that nobody is asking, oldest first.
        Those held in memory are written to the database first; those that reached the
        conversation meanwhile (a question typed, then stored by its turn in a run that ended
        before letting it go) are let go here."""
        with _memory_lock:
            let_go = sorted(_released)
        for pending_id in let_go:
            self._lease(pending_id, 0.0)
            with _memory_lock:
                _released.discard(pending_id)
        for p in self.in_memory():
            self._write(p, asking=False)  # the database answers again (or this raises, and they stay in memory)
            with _memory_lock:
                self._held().pop(p.id, None)
        rows = self.db.query(
            "SELECT p.id, p.session_id, p.question, p.created FROM pending_questions p"
            " JOIN sessions s ON s.id = p.session_id WHERE p.session_id = ? AND s.owner = ? AND p.asking_until < ?"
            " ORDER BY p.created",
            (session_id, self.owner, time.time()),
        )
        kept: list[Pending] = []
        for r in rows:
            p = Pending(r["id"], r["session_id"], r["question"], float(r["created"]))
            stored = self.db.query(
                "SELECT 1 FROM messages WHERE session_id = ? AND role = 'user' AND content = ? AND created >= ? LIMIT 1",
                (session_id, p.question, p.created - SETTLE_SLACK_S),
            )
            if stored:
                self.drop(p.id)
            else:
                kept.append(p)
        return kept
