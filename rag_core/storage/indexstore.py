"""The index's stores beside the vectors: the ingestion docstore (a LlamaIndex key-value
store) and the keyword index, opened together, and their two one-time migrations.

On the laptop both live in ``index.db`` (``rag_core.storage.indexdb`` says why not in
``docent.db``). With PostgreSQL both are in that database instead: the docstore's rows through
the same ``DatabaseKVStore`` (``rag_core.storage.kvstore``), the keyword index in a schema per
library (``rag_core.storage.pg_keywords``), so that every process of a team, on any machine,
reads one keyword index that is current the moment a write commits.

The migrations, each under the data folder's write lock, each proven before it counts:

- a ``docstore.json`` left by an earlier version is copied into the key-value store, every
  key compared with the file, and only then moved aside as ``docstore.json.migrated-<time>``
  (never deleted); a file that cannot be read is moved aside as ``.damaged-<time>``;
- a keyword index that was never filled (an existing folder, or a damaged ``index.db``
  started afresh) is filled from the chunks the vector store holds, and marked complete
  only once every batch is in: an interrupted fill is started again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rag_core.errors import ConsistencyError
from rag_core.storage.fts import SQLiteKeywordIndex
from rag_core.storage.fts_tables import KeywordDB
from rag_core.storage.indexdb import open_index_db
from rag_core.storage.keyword_index import ChunkRecord, KeywordIndex
from rag_core.storage.kvstore import DatabaseKVStore

logger = logging.getLogger(__name__)

KEYWORDS_COMPLETE = "keywords_complete"  # index_meta: the keyword index holds every chunk of the vector store
DOCSTORE_NAMESPACE = "docstore"  # LlamaIndex's: collections docstore/data, docstore/metadata, docstore/ref_doc_info
HASHES = f"{DOCSTORE_NAMESPACE}/metadata"  # the shared library's page hashes (IndexStore.hashes)


@dataclass
class IndexStore:
    db: KeywordDB  # the keyword index's tables: index.db (also the docstore's on the laptop), or a PostgreSQL schema
    kvstore: DatabaseKVStore  # the docstore's rows: in index.db, or in PostgreSQL
    keywords: KeywordIndex
    namespace: str = DOCSTORE_NAMESPACE  # the docstore's: a person's library has its own
    notices: list[str] = field(default_factory=list)  # what opening it had to repair

    @property
    def hashes(self) -> str:
        """The collection of page hashes: node or page id -> {"doc_hash": ...}."""
        return f"{self.namespace}/metadata"

    def docstore_names(self) -> set[str]:
        """The documents the docstore holds page hashes of (``name::p0003`` → ``name``)."""
        return {key.split("::", 1)[0] for key in self.kvstore.keys(self.hashes) if "::" in key}

    def docstore_entries(self) -> int:
        return self.kvstore.count(self.hashes)


def open_index_store(
    path: Path,
    kv: DatabaseKVStore | None = None,
    namespace: str = DOCSTORE_NAMESPACE,
    *,
    database: str | None = None,
    library: str = "",
) -> IndexStore:
    """The keyword index in the SQLite file ``path`` (``<data_dir>/index.db``), and the docstore
    there too unless ``kv`` (the PostgreSQL database's key-value store) is given. With
    ``database`` (a PostgreSQL URL) the keyword index is in that database, in the schema of
    ``library`` (its ``library_key``), and no ``index.db`` is opened."""
    if database and kv is not None:
        from rag_core.storage.pg_keywords import PgIndexDB, PostgresKeywordIndex

        pg = PgIndexDB(database, library)
        return IndexStore(pg, kv, PostgresKeywordIndex(pg), namespace)
    db, notices = open_index_db(path)
    return IndexStore(db, kv or DatabaseKVStore(db), SQLiteKeywordIndex(db), namespace, notices)


def migrate_docstore(store: IndexStore, legacy: Path) -> list[str]:
    """Copy ``docstore.json`` into the store, prove it there, move the file aside. Returns
    what the user should be told (a file that could not be read)."""
    if not legacy.is_file():
        return []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        collections = json.loads(legacy.read_text(encoding="utf-8"))
        if not isinstance(collections, dict) or not all(isinstance(v, dict) for v in collections.values()):
            raise ValueError("not a docstore: a JSON object of collections was expected")
    except (OSError, ValueError) as e:
        aside = legacy.with_name(f"{legacy.name}.damaged-{stamp}")
        legacy.rename(aside)
        logger.warning("%s could not be read (%s): moved aside as %s", legacy, e, aside)
        return [
            f"The old docstore ({legacy.name}) could not be read ({e}); it was moved aside as {aside.name}. "
            "`python -m rag_core check` lists the documents to ingest again (`check --repair` does it)."
        ]
    # A SimpleDocumentStore's collections are named docstore/…: here they take the store's namespace.
    collections = {
        store.namespace + name[len(DOCSTORE_NAMESPACE) :] if name.startswith(f"{DOCSTORE_NAMESPACE}/") else name: pairs
        for name, pairs in collections.items()
    }
    store.kvstore.load(collections)
    if not store.kvstore.holds(collections):
        raise ConsistencyError(
            f"{legacy} was copied into {store.kvstore.db.location} but the copy differs from it: the file is kept as it is "
            "and Docent cannot use the index until it is copied whole; is the disk full?"
        )
    aside = legacy.with_name(f"{legacy.name}.migrated-{stamp}")
    legacy.rename(aside)
    keys = sum(len(v) for v in collections.values())
    logger.info(
        "moved the docstore (%d keys) from %s into %s; the old file is kept as %s",
        keys,
        legacy,
        store.kvstore.db.location,
        aside,
    )
    return []


def fill_keywords(store: IndexStore, total: int, batches: Callable[[], Iterable[list[ChunkRecord]]]) -> None:
    """Fill a keyword index that was never filled from the vector store's ``total`` chunks
    (``batches`` reads them); marked complete once every batch is in."""
    if store.db.meta(KEYWORDS_COMPLETE) == "1":
        return
    if total:
        logger.info("building the keyword index from the %d chunks of the vector index…", total)
        store.keywords.clear()  # a fill cut short before: from the start
        done = 0
        for batch in batches():
            store.keywords.add(batch)
            done += len(batch)
            logger.info("keyword index: %d of %d chunks", done, total)
    store.db.set_meta(KEYWORDS_COMPLETE, "1")


def keywords_complete(store: IndexStore) -> bool:
    return store.db.meta(KEYWORDS_COMPLETE) == "1"
