"""Conversations: sessions, their messages with the sources each answer cited, and the
summaries that stand for a long session's older messages."""

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
    """Create, list, rename, delete sessions; append and read their messages. ``claims``:
    who is answering in a session (one question at a time, ``rag_core.storage.claims``)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.claims = SessionClaims(db)

    def create(self, name: str | None = None) -> Session:
        now = time.time()
        sid = uuid.uuid4().hex[:12]
        name = (name or "").strip() or time.strftime("Chat %Y-%m-%d %H:%M", time.localtime(now))
        with self.db.connect() as c:
            c.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, NULL)", (sid, name, now, now))
        return Session(sid, name, now, now)

    def list(self) -> builtins.list[Session]:
        rows = self.db.query("SELECT * FROM sessions ORDER BY updated DESC, created DESC")
        return [self._session(r) for r in rows]

    def unused(self, name: str) -> builtins.list[Session]:
        """The sessions called ``name`` that hold no message yet, the most recent first."""
        rows = self.db.query(
            "SELECT * FROM sessions s WHERE name = ? AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)"
            " ORDER BY updated DESC, created DESC",
            (name,),
        )
        return [self._session(r) for r in rows]

    def get(self, session_id: str) -> Session:
        rows = self.db.query("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise NotFoundError(f"No session with id {session_id!r}; `python -m rag_core sessions list` shows them.")
        return self._session(rows[0])

    def find(self, id_or_name: str) -> Session | None:
        rows = self.db.query(
            "SELECT * FROM sessions WHERE id = ? OR name = ? ORDER BY updated DESC", (id_or_name, id_or_name)
        )
        return self._session(rows[0]) if rows else None

    def rename(self, session_id: str, name: str) -> None:
        name = name.strip()
        if not name:
            raise DocentError("A session name cannot be empty.")
        with self.db.connect() as c:
            if c.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, session_id)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def delete(self, session_id: str) -> None:
        with self.db.connect() as c:
            if c.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def set_doc_filter(self, session_id: str, names: builtins.list[str] | None) -> None:
        value = json.dumps(sorted(names)) if names else None
        with self.db.connect() as c:
            if c.execute("UPDATE sessions SET doc_filter = ? WHERE id = ?", (value, session_id)).rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}.")

    def append(self, session_id: str, message: Message) -> Message:
        now = time.time()
        with self.db.connect() as c:
            if not c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                raise NotFoundError(f"No session with id {session_id!r}.")
            cur = c.execute(
                "INSERT INTO messages (session_id, role, content, condensed_question, sources, meta, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    message.role,
                    message.content,
                    message.condensed_question,
                    json.dumps(message.sources, ensure_ascii=False),
                    json.dumps(message.meta, ensure_ascii=False),
                    now,
                ),
            )
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
        message.id, message.created = cur.lastrowid, now
        return message

    def add_whole(
        self,
        name: str,
        messages: Sequence[Message],
        *,
        created: float | None = None,
        doc_filter: builtins.list[str] | None = None,
    ) -> Session:
        """A new session with all its messages in one transaction (an import: all of it or
        nothing). A name already taken gets " (imported)" appended; a message without a time
        gets now."""
        now = time.time()
        sid = uuid.uuid4().hex[:12]
        with self.db.connect() as c:
            if c.execute("SELECT 1 FROM sessions WHERE name = ?", (name,)).fetchone():
                name = f"{name} (imported)"
            value = json.dumps(sorted(doc_filter)) if doc_filter else None
            started = float(created or now)
            c.execute(
                "INSERT INTO sessions (id, name, created, updated, doc_filter) VALUES (?, ?, ?, ?, ?)",
                (sid, name, started, now, value),
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
        rows = self.db.query("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,))
        return [
            Message(
                role=r["role"],
                content=r["content"],
                condensed_question=r["condensed_question"],
                sources=json.loads(r["sources"] or "[]"),
                meta=json.loads(r["meta"] or "{}"),
                created=r["created"],
                id=r["id"],
            )
            for r in rows
        ]

    def clear(self, session_id: str) -> None:
        with self.db.connect() as c:
            c.execute("DELETE FROM summaries WHERE session_id = ?", (session_id,))
            c.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))

    def drop_after(self, session_id: str, message_id: int) -> int:
        """Remove the session's messages after ``message_id`` (an answer being regenerated),
        and summaries of them; returns how many messages were removed."""
        with self.db.connect() as c:
            c.execute("DELETE FROM summaries WHERE session_id = ? AND upto_message_id > ?", (session_id, message_id))
            return c.execute("DELETE FROM messages WHERE session_id = ? AND id > ?", (session_id, message_id)).rowcount

    def add_summary(self, session_id: str, upto_message_id: int, text: str) -> Summary:
        """Record that ``text`` now stands for the session's messages up to ``upto_message_id``."""
        now = time.time()
        with self.db.connect() as c:
            cur = c.execute(
                "INSERT INTO summaries (session_id, upto_message_id, text, created) VALUES (?, ?, ?, ?)",
                (session_id, upto_message_id, text, now),
            )
        return Summary(text, upto_message_id, now, cur.lastrowid)

    def summaries(self, session_id: str) -> builtins.list[Summary]:
        """The session's summaries, oldest first; the last one is what the model sees."""
        rows = self.db.query("SELECT * FROM summaries WHERE session_id = ? ORDER BY id", (session_id,))
        return [Summary(r["text"], r["upto_message_id"], r["created"], r["id"]) for r in rows]

    @staticmethod
    def _session(r: Row) -> Session:
        f = json.loads(r["doc_filter"]) if r["doc_filter"] else None
        return Session(r["id"], r["name"], r["created"], r["updated"], f)
