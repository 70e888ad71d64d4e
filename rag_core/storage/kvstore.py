"""LlamaIndex's key-value store over Docent's database: one row per key (table ``kvstore``).

The ingestion docstore (``KVDocumentStore``) sits on it when the database is PostgreSQL, so
that a team's processes share one docstore, each write lands as it is made (no file
rewritten whole), and no process holds a copy to reload. The SQL is portable: the same
class serves SQLite.

LlamaIndex's own ``llama-index-storage-kvstore-postgres`` is not used: it needs two more
drivers (psycopg2 and asyncpg, with SQLAlchemy engines of its own beside our pool), creates
its table outside the numbered migrations, and its docstore package (0.6.0) pins the
kvstore package below 0.5, against its own 0.6.0.
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

    def clear(self, prefix: str) -> int:
        """Drop every collection whose name starts with ``prefix`` (a docstore's namespace)."""
        with self.db.connect() as c:
            return c.execute("DELETE FROM kvstore WHERE substr(collection, 1, ?) = ?", (len(prefix), prefix)).rowcount

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
