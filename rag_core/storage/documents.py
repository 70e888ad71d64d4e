"""The document registry: which documents are indexed, with their digest, size, pages and
chunks; the row that makes a half-ingested document recognisable after a crash.

A registry is one library's: the shared one ('') or, with ``libraries = "per_user"``, one
person's. A document's name is unique within its library."""

from __future__ import annotations

import builtins
import time
from dataclasses import dataclass

from rag_core.storage.database import Database

COLUMNS = "name, sha256, size, pages, chunks, kind, status, added, updated"


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

    def __init__(self, db: Database, library: str = "") -> None:
        self.db = db
        self.library = library

    def get(self, name: str) -> DocumentRecord | None:
        rows = self.db.query(f"SELECT {COLUMNS} FROM documents WHERE library = ? AND name = ?", (self.library, name))
        return DocumentRecord(**dict(rows[0])) if rows else None

    def list(self, status: str | None = "indexed") -> builtins.list[DocumentRecord]:
        if status is None:
            rows = self.db.query(f"SELECT {COLUMNS} FROM documents WHERE library = ? ORDER BY name", (self.library,))
        else:
            rows = self.db.query(
                f"SELECT {COLUMNS} FROM documents WHERE library = ? AND status = ? ORDER BY name",
                (self.library, status),
            )
        return [DocumentRecord(**dict(r)) for r in rows]

    def find_by_sha(self, sha256: str) -> builtins.list[DocumentRecord]:
        rows = self.db.query(
            f"SELECT {COLUMNS} FROM documents WHERE library = ? AND sha256 = ? AND status = 'indexed'",
            (self.library, sha256),
        )
        return [DocumentRecord(**dict(r)) for r in rows]

    def mark_pending(self, name: str, sha256: str, size: int, kind: str) -> None:
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                "INSERT INTO documents (library, name, sha256, size, kind, status, added, updated)"
                " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)"
                " ON CONFLICT(library, name) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,"
                " kind = excluded.kind, status = 'pending', updated = excluded.updated",
                (self.library, name, sha256, size, kind, now, now),
            )

    def register(self, name: str, sha256: str, size: int, pages: int, chunks: int, kind: str) -> None:
        """An 'indexed' row for a document found whole in the index (recovery)."""
        now = time.time()
        with self.db.connect() as c:
            c.execute(
                "INSERT INTO documents (library, name, sha256, size, pages, chunks, kind, status, added, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'indexed', ?, ?)"
                " ON CONFLICT(library, name) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,"
                " pages = excluded.pages, chunks = excluded.chunks, kind = excluded.kind, status = 'indexed',"
                " added = excluded.added, updated = excluded.updated",
                (self.library, name, sha256, size, pages, chunks, kind, now, now),
            )

    def citations(self, name: str) -> tuple[int, int]:
        """(answers, conversations) whose stored sources cite this document. In a person's own
        library, only that person's conversations can cite it."""
        source, cited_file = self.db.dialect.cites("m.sources")
        mine = " AND s.owner = ?" if self.library else ""
        row = self.db.query(
            f"SELECT COUNT(DISTINCT m.id), COUNT(DISTINCT m.session_id) FROM messages m"
            f" JOIN sessions s ON s.id = m.session_id CROSS JOIN {source}"
            f" WHERE m.role = 'assistant' AND {cited_file} = ?{mine}",
            (name, self.library) if self.library else (name,),
        )[0]
        return int(row[0]), int(row[1])

    def mark_indexed(self, name: str, pages: int, chunks: int) -> None:
        with self.db.connect() as c:
            c.execute(
                "UPDATE documents SET status = 'indexed', pages = ?, chunks = ?, updated = ?"
                " WHERE library = ? AND name = ?",
                (pages, chunks, time.time(), self.library, name),
            )

    def remove(self, name: str) -> None:
        with self.db.connect() as c:
            c.execute("DELETE FROM document_entities WHERE library = ? AND name = ?", (self.library, name))
            c.execute("DELETE FROM documents WHERE library = ? AND name = ?", (self.library, name))

    # ------------------------------------------------------------------ what each one is about
    def entities(self) -> dict[str, tuple[str, int, str]]:
        """Per document of this library: (the sha256 it was read from, the reader's version,
        its JSON) — ``rag_core.entities`` writes and reads the JSON."""
        rows = self.db.query(
            "SELECT name, sha256, reader, data FROM document_entities WHERE library = ?", (self.library,)
        )
        return {r["name"]: (r["sha256"], int(r["reader"]), r["data"]) for r in rows}

    def set_entities(self, name: str, sha256: str, reader: int, data: str) -> bool:
        """Keep what ``name`` is about; False (nothing kept) when the document is no longer
        registered with this digest (deleted or replaced meanwhile)."""
        with self.db.connect() as c:
            current = c.execute(
                "SELECT sha256 FROM documents WHERE library = ? AND name = ?", (self.library, name)
            ).fetchone()
            if current is None or current[0] != sha256:
                return False
            c.execute(
                "INSERT INTO document_entities (library, name, sha256, reader, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(library, name) DO UPDATE SET sha256 = excluded.sha256, reader = excluded.reader,"
                " data = excluded.data",
                (self.library, name, sha256, reader, data),
            )
        return True
