"""LlamaIndex's key-value store interface over SQLite, for the ingestion docstore.

LlamaIndex's ``KVDocumentStore`` runs on any ``BaseKVStore``; the ``SimpleDocumentStore``
Docent used before holds the whole docstore in memory and writes it whole as
``docstore.json`` after every document (19 MB for 113 files), and every other process read
it whole again. Here each key is a row of ``index.db``: a document writes its own page
hashes, and every process reads the current rows, so there is nothing to reload.

Why SQLite and not DuckDB's docstore package: the app and any number of CLI commands open
one data folder at once, and DuckDB lets one process at a time open a file for writing;
SQLite in WAL mode lets them all read while one writes, ships with Python, and already
holds the rest of Docent's state.
"""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.storage.kvstore.types import DEFAULT_BATCH_SIZE, DEFAULT_COLLECTION, BaseKVStore

from rag_core.storage.indexdb import IndexDB


def _prefix_end(prefix: str) -> str:
    """The smallest string above every string that starts with ``prefix`` (for a range scan)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"


class SQLiteKVStore(BaseKVStore):
    """Collections of JSON values by key, one row each in ``index.db``'s ``kv`` table."""

    def __init__(self, db: IndexDB) -> None:
        self.db = db

    # ------------------------------------------------------------------ BaseKVStore
    def put(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        self.put_all([(key, val)], collection)

    async def aput(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        self.put(key, val, collection)

    def put_all(
        self,
        kv_pairs: list[tuple[str, dict]],
        collection: str = DEFAULT_COLLECTION,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        """Every pair in one transaction, whatever ``batch_size`` says."""
        if not kv_pairs:
            return
        with self.db.transaction() as c:
            c.executemany(
                "INSERT OR REPLACE INTO kv (collection, key, value) VALUES (?, ?, ?)",
                [(collection, key, json.dumps(val, ensure_ascii=False)) for key, val in kv_pairs],
            )

    async def aput_all(
        self,
        kv_pairs: list[tuple[str, dict]],
        collection: str = DEFAULT_COLLECTION,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.put_all(kv_pairs, collection, batch_size)

    def get(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        rows = self.db.query("SELECT value FROM kv WHERE collection = ? AND key = ?", (collection, key))
        return json.loads(rows[0][0]) if rows else None

    async def aget(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        return self.get(key, collection)

    def get_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        rows = self.db.query("SELECT key, value FROM kv WHERE collection = ?", (collection,))
        return {key: json.loads(value) for key, value in rows}

    async def aget_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        return self.get_all(collection)

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        with self.db.transaction() as c:
            return c.execute("DELETE FROM kv WHERE collection = ? AND key = ?", (collection, key)).rowcount > 0

    async def adelete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return self.delete(key, collection)

    # ------------------------------------------------------------------ what Docent asks beyond it
    def keys(self, collection: str, prefix: str = "") -> list[str]:
        """The keys of a collection that start with ``prefix`` (an index range, not a scan)."""
        rows = self.db.query(
            "SELECT key FROM kv WHERE collection = ? AND key >= ? AND key < ? ORDER BY key",
            (collection, prefix, _prefix_end(prefix)),
        )
        return [r[0] for r in rows]

    def count(self, collection: str) -> int:
        return int(self.db.query("SELECT COUNT(*) FROM kv WHERE collection = ?", (collection,))[0][0])

    def delete_prefix(self, prefix: str) -> int:
        """Remove the keys starting with ``prefix`` from every collection."""
        with self.db.transaction() as c:
            return c.execute("DELETE FROM kv WHERE key >= ? AND key < ?", (prefix, _prefix_end(prefix))).rowcount

    def clear(self) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM kv")

    def load(self, collections: dict[str, dict[str, Any]]) -> None:
        """Every collection of a ``SimpleKVStore``'s JSON (``docstore.json``), in one transaction."""
        with self.db.transaction():
            for collection, pairs in collections.items():
                self.put_all(list(pairs.items()), collection)

    def holds(self, collections: dict[str, dict[str, Any]]) -> bool:
        """Whether every key of ``collections`` is here with the same value."""
        for collection, pairs in collections.items():
            stored = self.get_all(collection)
            if any(stored.get(key) != json.loads(json.dumps(val, ensure_ascii=False)) for key, val in pairs.items()):
                return False
        return True
