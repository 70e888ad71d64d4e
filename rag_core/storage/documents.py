"""The document registry: which documents are indexed, with their digest, size, pages and
chunks; the row that makes a half-ingested document recognisable after a crash."""

from __future__ import annotations

import builtins
import time
from dataclasses import dataclass

from rag_core.storage.database import Database


@dataclass
class DocumentRecord:
    name: str
    sha256: str
    size: int
    pages: int
    chunks: int
    kind: str
    status: str
    added: float
    updated: float


class DocumentRegistry:
    """Which documents are indexed. A row turns 'indexed' only after Chroma and the
    docstore hold all of the document, so a crash mid-way leaves a 'pending' row that
    recovery removes (the document is then absent, never half there)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, name: str) -> DocumentRecord | None:
        rows = self.db.query("SELECT * FROM documents WHERE name = ?", (name,))
        return DocumentRecord(**dict(rows[0])) if rows else None

    def list(self, status: str | None = "indexed") -> builtins.list[DocumentRecord]:
        if status is None:
            rows = self.db.query("SELECT * FROM documents ORDER BY name")
        else:
            rows = self.db.query("SELECT * FROM documents WHERE status = ? ORDER BY name", (status,))
        return [DocumentRecord(**dict(r)) for r in rows]

    def find_by_sha(self, sha256: str) -> builtins.list[DocumentRecord]:
        rows = self.db.query("SELECT * FROM documents WHERE sha256 = ? AND status = 'indexed'", (sha256,))
        return [DocumentRecord(**dict(r)) for r in rows]

    def mark_pending(self, name: str, sha256: str, size: int, kind: str) -> None:
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                "INSERT INTO documents (name, sha256, size, kind, status, added, updated)"
                " VALUES (?, ?, ?, ?, 'pending', ?, ?)"
                " ON CONFLICT(name) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,"
                " kind = excluded.kind, status = 'pending', updated = excluded.updated",
                (name, sha256, size, kind, now, now),
            )

    def register(self, name: str, sha256: str, size: int, pages: int, chunks: int, kind: str) -> None:
        """An 'indexed' row for a document found whole in the index (recovery)."""
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                "INSERT OR REPLACE INTO documents (name, sha256, size, pages, chunks, kind, status, added, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, 'indexed', ?, ?)",
                (name, sha256, size, pages, chunks, kind, now, now),
            )

    def citations(self, name: str) -> tuple[int, int]:
        """(answers, conversations) whose stored sources cite this document."""
        row = self.db.query(
            "SELECT COUNT(DISTINCT m.id), COUNT(DISTINCT m.session_id) FROM messages m,"
            " json_each(CASE WHEN json_valid(m.sources) THEN m.sources ELSE '[]' END) j"
            " WHERE m.role = 'assistant' AND json_extract(j.value, '$.file') = ?",
            (name,),
        )[0]
        return int(row[0]), int(row[1])

    def mark_indexed(self, name: str, pages: int, chunks: int) -> None:
        with self.db.connect() as c:
            c.execute(
                "UPDATE documents SET status = 'indexed', pages = ?, chunks = ?, updated = ? WHERE name = ?",
                (pages, chunks, time.time(), name),
            )

    def remove(self, name: str) -> None:
        with self.db.connect() as c:
            c.execute("DELETE FROM document_entities WHERE name = ?", (name,))
            c.execute("DELETE FROM documents WHERE name = ?", (name,))

    # ------------------------------------------------------------------ what each one is about
    def entities(self) -> dict[str, tuple[str, int, str]]:
        """Per document: (the sha256 it was read from, the reader's version, its JSON) —
        ``rag_core.entities`` writes and reads the JSON."""
        rows = self.db.query("SELECT name, sha256, reader, data FROM document_entities")
        return {r["name"]: (r["sha256"], int(r["reader"]), r["data"]) for r in rows}

    def set_entities(self, name: str, sha256: str, reader: int, data: str) -> bool:
        """Keep what ``name`` is about; False (nothing kept) when the document is no longer
        registered with this digest (deleted or replaced meanwhile)."""
        with self.db.connect() as c:
            current = c.execute("SELECT sha256 FROM documents WHERE name = ?", (name,)).fetchone()
            if current is None or current[0] != sha256:
                return False
            c.execute(
                "INSERT OR REPLACE INTO document_entities (name, sha256, reader, data) VALUES (?, ?, ?, ?)",
                (name, sha256, reader, data),
            )
        return True
