"""Conversations: sessions, their messages with the sources each answer cited, and the
summaries that stand for a long session's older messages.

Each conversation is someone's: a ``SessionStore`` is opened for one ``owner`` (the signed-in
person, or '' for the one local person when nobody signs in) and sees, changes and counts
that owner's conversations alone. Another person's session id is answered as one that does
not exist: the store never says whether it does."""

from __future__ import annotations

import builtins
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.errors import DocentError, NotFoundError
from rag_core.payloads import Source
from rag_core.storage.claims import SessionClaims
from rag_core.storage.database import Database, Row
from rag_core.storage.pending import PendingQuestions


@dataclass
class Session:
    id: str
    name: str
    created: float
    updated: float
    doc_filter: list[str] | None = None


@dataclass
class Message:
    role: str
    content: str
    condensed_question: str | None = None
    sources: list[Source] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    created: float = 0.0
    id: int | None = None


@dataclass
class Summary:
    """What the model sees instead of a session's older messages (up to ``upto_message_id``)."""

    text: str
    upto_message_id: int
    created: float
    id: int | None = None


class SessionStore:
    """Create, list, rename, delete sessions; append and read their messages: one owner's.
    ``claims``: who is answering in a session (one question at a time, ``rag_core.storage.claims``);
    ``pending``: questions typed but not yet in their session (``rag_core.storage.pending``)."""

    def __init__(self, db: Database, owner: str = "") -> None:
        self.db = db
        self.owner = owner
        self.claims = SessionClaims(db, owner)
        self.pending = PendingQuestions(db, owner)

    def for_owner(self, owner: str) -> SessionStore:
        """The same database, seen by another person."""
        return SessionStore(self.db, owner)

    def total(self) -> int:
        """Every owner's sessions (``check`` counts them all)."""
        return int(self.db.query("SELECT COUNT(*) FROM sessions")[0][0])

    def _mine(self, c: Any, session_id: str) -> None:
        if not c.execute("SELECT 1 FROM sessions WHERE id = ? AND owner = ?", (session_id, self.owner)).fetchone():
            raise NotFoundError(f"No session with id {session_id!r}.")

    def create(self, name: str | None = None) -> Session:
        now = time.time()
        sid = uuid.uuid4().hex[:12]
        name = (name or "").strip() or time.strftime("Chat %Y-%m-%d %H:%M", time.localtime(now))
        with self.db.connect() as c:
            c.execute(
                "INSERT INTO sessions (id, name, created, updated, doc_filter, owner) VALUES (?, ?, ?, ?, NULL, ?)",
                (sid, name, now, now, self.owner),
            )
        return Session(sid, name, now, now)

    def list(self) -> builtins.list[Session]:
        rows = self.db.query(
            "SELECT * FROM sessions WHERE owner = ? ORDER BY updated DESC, created DESC", (self.owner,)
        )
        return [self._session(r) for r in rows]

    def latest(self, limit: int, search: str = "") -> tuple[builtins.list[Session], int]:
        """The ``limit`` most recent sessions whose name holds every word of ``search`` (any
        case; empty: all), and how many sessions match in all: a sidebar of thousands of
        chats shows the first and says the number, the rest found by searching."""
        words = search.casefold().split()
        if not words:
            rows = self.db.query(
                "SELECT * FROM sessions WHERE owner = ? ORDER BY updated DESC, created DESC LIMIT ?",
                (self.owner, max(limit, 0)),
            )
            total = self.db.query("SELECT COUNT(*) FROM sessions WHERE owner = ?", (self.owner,))[0][0]
            return [self._session(r) for r in rows], int(total)
        names = self.db.query(
            "SELECT id, name FROM sessions WHERE owner = ? ORDER BY updated DESC, created DESC", (self.owner,)
        )
        found = [r["id"] for r in names if all(w in str(r["name"]).casefold() for w in words)]
        shown = [self.get(sid) for sid in found[: max(limit, 0)]]
        return shown, len(found)

    def unused(self, name: str) -> builtins.list[Session]:
        """The sessions called ``name`` that hold no message yet, the most recent first."""
        rows = self.db.query(
            "SELECT * FROM sessions s WHERE owner = ? AND name = ?"
            " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id) ORDER BY updated DESC, created DESC",
            (self.owner, name),
        )
        return [self._session(r) for r in rows]

    def get(self, session_id: str) -> Session:
        rows = self.db.query("SELECT * FROM sessions WHERE id = ? AND owner = ?", (session_id, self.owner))
        if not rows:
            raise NotFoundError(f"No session with id {session_id!r}; `python -m rag_core sessions list` shows them.")
        return self._session(rows[0])

    def find(self, id_or_name: str) -> Session | None:
        rows = self.db.query(
            "SELECT * FROM sessions WHERE (id = ? OR name = ?) AND owner = ? ORDER BY updated DESC",
            (id_or_name, id_or_name, self.owner),
        )
        return self._session(rows[0]) if rows else None

    def rename(self, session_id: str, name: str) -> None:
        name = name.strip()
        if not name:
            raise DocentError("A session name cannot be empty.")
        with self.db.connect() as c:
            done = c.execute("UPDATE sessions SET name = ? WHERE id = ? AND owner = ?", (name, session_id, self.owner))
            if done.rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def delete(self, session_id: str) -> None:
        with self.db.connect() as c:
            if c.execute("DELETE FROM sessions WHERE id = ? AND owner = ?", (session_id, self.owner)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def set_doc_filter(self, session_id: str, names: builtins.list[str] | None) -> None:
        value = json.dumps(sorted(names)) if names else None
        with self.db.connect() as c:
            done = c.execute(
                "UPDATE sessions SET doc_filter = ? WHERE id = ? AND owner = ?", (value, session_id, self.owner)
            )
            if done.rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def append(self, session_id: str, message: Message) -> Message:
        now = time.time()
        with self.db.connect() as c:
            self._mine(c, session_id)
            row = c.execute(
                "INSERT INTO messages (session_id, role, content, condensed_question, sources, meta, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    session_id,
                    message.role,
                    message.content,
                    message.condensed_question,
                    json.dumps(message.sources, ensure_ascii=False),
                    json.dumps(message.meta, ensure_ascii=False),
                    now,
                ),
            ).fetchone()
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
        message.id, message.created = int(row[0]), now
        return message

    def add_whole(
        self,
        name: str,
        messages: Sequence[Message],
        *,
        created: float | None = None,
        doc_filter: builtins.list[str] | None = None,
    ) -> Session:
        """A new session of this owner with all its messages in one transaction (an import: all
        of it or nothing). A name this owner already has gets " (imported)" appended; a message
        without a time gets now."""
        now = time.time()
        sid = uuid.uuid4().hex[:12]
        with self.db.connect() as c:
            if c.execute("SELECT 1 FROM sessions WHERE name = ? AND owner = ?", (name, self.owner)).fetchone():
                name = f"{name} (imported)"
            value = json.dumps(sorted(doc_filter)) if doc_filter else None
            started = float(created or now)
            c.execute(
                "INSERT INTO sessions (id, name, created, updated, doc_filter, owner) VALUES (?, ?, ?, ?, ?, ?)",
                (sid, name, started, now, value, self.owner),
            )
            for m in messages:
                c.execute(
                    "INSERT INTO messages (session_id, role, content, condensed_question, sources, meta, created)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        sid,
                        m.role,
                        m.content,
                        m.condensed_question,
                        json.dumps(m.sources, ensure_ascii=False),
                        json.dumps(m.meta, ensure_ascii=False),
                        float(m.created or now),
                    ),
                )
        return Session(sid, name, started, now, sorted(doc_filter) if doc_filter else None)

    def messages(self, session_id: str) -> builtins.list[Message]:
        rows = self.db.query(
            "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.session_id = ? AND s.owner = ? ORDER BY m.id",
            (session_id, self.owner),
        )
        return [self._message(r) for r in rows]

    def recent(self, session_id: str, limit: int, before: int | None = None) -> builtins.list[Message]:
        """The session's last ``limit`` messages (those before message id ``before``, when
        given), oldest first: a long conversation is drawn from its end, a page at a time."""
        rows = self.db.query(
            "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.session_id = ? AND s.owner = ? AND m.id < ? ORDER BY m.id DESC LIMIT ?",
            (session_id, self.owner, before if before is not None else 2**62, max(limit, 0)),
        )
        return [self._message(r) for r in reversed(rows)]

    def count(self, session_id: str) -> int:
        """How many messages the session holds."""
        rows = self.db.query(
            "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.session_id = ? AND s.owner = ?",
            (session_id, self.owner),
        )
        return int(rows[0][0])

    def message(self, session_id: str, message_id: int) -> Message | None:
        """One message of the session (a citation link names it), or None."""
        rows = self.db.query(
            "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.session_id = ? AND s.owner = ? AND m.id = ?",
            (session_id, self.owner, message_id),
        )
        return self._message(rows[0]) if rows else None

    @staticmethod
    def _message(r: Row) -> Message:
        return Message(
            role=r["role"],
            content=r["content"],
            condensed_question=r["condensed_question"],
            sources=json.loads(r["sources"] or "[]"),
            meta=json.loads(r["meta"] or "{}"),
            created=r["created"],
            id=r["id"],
        )

    def clear(self, session_id: str) -> None:
        with self.db.connect() as c:
            self._mine(c, session_id)
            c.execute("DELETE FROM summaries WHERE session_id = ?", (session_id,))
            c.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    def drop_after(self, session_id: str, message_id: int) -> int:
        """Remove the session's messages after ``message_id`` (an answer being regenerated),
        and summaries of them; returns how many messages were removed."""
        with self.db.connect() as c:
            self._mine(c, session_id)
            c.execute("DELETE FROM summaries WHERE session_id = ? AND upto_message_id > ?", (session_id, message_id))
            return c.execute("DELETE FROM messages WHERE session_id = ? AND id > ?", (session_id, message_id)).rowcount

    def add_summary(self, session_id: str, upto_message_id: int, text: str) -> Summary:
        """Record that ``text`` now stands for the session's messages up to ``upto_message_id``."""
        now = time.time()
        with self.db.connect() as c:
            self._mine(c, session_id)
            row = c.execute(
                "INSERT INTO summaries (session_id, upto_message_id, text, created) VALUES (?, ?, ?, ?) RETURNING id",
                (session_id, upto_message_id, text, now),
            ).fetchone()
        return Summary(text, upto_message_id, now, int(row[0]))

    def summaries(self, session_id: str) -> builtins.list[Summary]:
        """The session's summaries, oldest first; the last one is what the model sees."""
        rows = self.db.query(
            "SELECT m.* FROM summaries m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.session_id = ? AND s.owner = ? ORDER BY m.id",
            (session_id, self.owner),
        )
        return [Summary(r["text"], r["upto_message_id"], r["created"], r["id"]) for r in rows]

    @staticmethod
    def _session(r: Row) -> Session:
        f = json.loads(r["doc_filter"]) if r["doc_filter"] else None
        return Session(r["id"], r["name"], r["created"], r["updated"], f)
