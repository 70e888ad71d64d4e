"""LlamaIndex's key-value store over Docent's database interface: one row per key (table
``kvstore``), for the ingestion docstore (``KVDocumentStore``), on either backend.

- On the laptop it sits on ``index.db`` (``rag_core.storage.indexdb``, SQLite in WAL mode).
- With ``DOCENT_DATABASE_URL=postgresql://…`` it sits on that database (migration
  ``m006_kvstore``), so that a team's processes share one docstore.

Either way each write lands as it is made (a document writes its own page hashes, nothing is
rewritten whole) and every process reads the current rows (nothing held in memory to reload).
``SimpleDocumentStore``, which Docent used before, held the whole docstore in memory and
wrote it whole as ``docstore.json`` after every document (19 MB for 113 files).
The SQL is portable (``?`` placeholders, ``ON CONFLICT … DO UPDATE``).

LlamaIndex's own ``llama-index-storage-kvstore-postgres`` is not used: it needs two more
drivers (psycopg2 and asyncpg, with SQLAlchemy engines of its own beside our pool), creates
its table outside the numbered migrations, and its docstore package (0.6.0) pins the
kvstore package below 0.5, against its own 0.6.0. Nor DuckDB's docstore package: DuckDB
lets one process at a time open a file for writing, and the app and any number of CLI
commands open one data folder at once.
"""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.storage.kvstore.types import DEFAULT_BATCH_SIZE, DEFAULT_COLLECTION, BaseKVStore

from rag_core.storage.database import Database

UPSERT = (
    "INSERT INTO kvstore (collection, key, value) VALUES (?, ?, ?)"
    " ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value"
)


def _prefix_end(prefix: str) -> str:
    """The smallest string above every string that starts with ``prefix`` (for a range scan)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"


class DatabaseKVStore(BaseKVStore):
    """Collections of JSON values by key, in the ``kvstore`` table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        self.put_all([(key, val)], collection=collection)

    def put_all(
        self,
        kv_pairs: list[tuple[str, dict]],
        collection: str = DEFAULT_COLLECTION,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        """Every pair in one transaction: a batch of nodes lands whole or not at all."""
        if not kv_pairs:
            return
        with self.db.connect() as c:
            for key, val in kv_pairs:
                c.execute(UPSERT, (collection, key, json.dumps(val, ensure_ascii=False)))

    def get(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        rows = self.db.query("SELECT value FROM kvstore WHERE collection = ? AND key = ?", (collection, key))
        return json.loads(rows[0][0]) if rows else None

    def get_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        rows = self.db.query("SELECT key, value FROM kvstore WHERE collection = ?", (collection,))
        return {r[0]: json.loads(r[1]) for r in rows}

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        with self.db.connect() as c:
            return c.execute("DELETE FROM kvstore WHERE collection = ? AND key = ?", (collection, key)).rowcount > 0

    # ------------------------------------------------------------------ what Docent asks beyond it
    def keys(self, collection: str, prefix: str = "") -> list[str]:
        """The keys of a collection that start with ``prefix``: on SQLite an index range (its
        text order is by code point), on PostgreSQL a comparison of the prefix itself (a
        database's collation may order ``a::b`` and ``a:;`` otherwise than by code point)."""
        params: tuple[str | int, ...]
        if self.db.dialect.name == "sqlite":
            sql, params = "key >= ? AND key < ?", (collection, prefix, _prefix_end(prefix))
        else:
            sql, params = "substr(key, 1, ?) = ?", (collection, len(prefix), prefix)
        rows = self.db.query(f"SELECT key FROM kvstore WHERE collection = ? AND {sql} ORDER BY key", params)
        return [r[0] for r in rows]

    def count(self, collection: str) -> int:
        return int(self.db.query("SELECT COUNT(*) FROM kvstore WHERE collection = ?", (collection,))[0][0])

    def clear(self, prefix: str) -> int:
        """Drop every collection whose name starts with ``prefix`` (a docstore's namespace)."""
        with self.db.connect() as c:
            return c.execute("DELETE FROM kvstore WHERE substr(collection, 1, ?) = ?", (len(prefix), prefix)).rowcount

    def load(self, collections: dict[str, dict[str, Any]]) -> None:
        """Every collection of a ``SimpleKVStore``'s JSON (``docstore.json``), in one transaction."""
        with self.db.connect() as c:
            for collection, pairs in collections.items():
                for key, val in pairs.items():
                    c.execute(UPSERT, (collection, key, json.dumps(val, ensure_ascii=False)))

    def holds(self, collections: dict[str, dict[str, Any]]) -> bool:
        """Whether every key of ``collections`` is here with the same value."""
        for collection, pairs in collections.items():
            stored = self.get_all(collection)
            if any(stored.get(key) != json.loads(json.dumps(val, ensure_ascii=False)) for key, val in pairs.items()):
                return False
        return True

    # LlamaIndex's async API, for completeness: Docent calls the sync one.
    async def aput(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        self.put(key, val, collection)

    async def aput_all(
        self,
        kv_pairs: list[tuple[str, dict]],
        collection: str = DEFAULT_COLLECTION,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.put_all(kv_pairs, collection, batch_size)

    async def aget(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        return self.get(key, collection)

    async def aget_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, Any]:
        return self.get_all(collection)

    async def adelete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return self.delete(key, collection)
