"""The vector index: a Chroma collection (embedded or a ``chroma run`` server), the docstore
the ingestion pipeline upserts against and the keyword index beside it (rows of ``index.db``,
``rag_core.storage.indexstore``; every chunk written to or removed from Chroma is written to or
removed from the keyword index in the same call: ``keyword_index.MirroredChroma``), and the
fingerprint that keeps vectors of two embedding models from ever mixing.

Several processes may share one data folder (the app and the CLI, two CLI ingests). An embedded
Chroma client caches its segments: a process does not see another's vectors until it reopens
them. So every write happens under the folder's write lock (``rag_core.datadir.WriteLock``), and
a process that finds the folder's generation changed reopens its Chroma view before it reads.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.storage.docstore.keyval_docstore import KVDocumentStore
from llama_index.vector_stores.chroma import ChromaVectorStore

from rag_core.chroma_client import chroma_client, place_of, reopen_chroma
from rag_core.chroma_guard import Guarded
from rag_core.datadir import library_key
from rag_core.errors import IndexMismatchError
from rag_core.pglock import write_lock
from rag_core.providers.embeddings import embedding_dimension
from rag_core.settings import DocentSettings
from rag_core.storage.indexstore import (
    DOCSTORE_NAMESPACE,
    IndexStore,
    fill_keywords,
    keywords_complete,
    migrate_docstore,
    open_index_store,
)
from rag_core.storage.keyword_index import KeywordIndex, MirroredChroma, stored_record
from rag_core.storage.kvstore import DatabaseKVStore

logger = logging.getLogger(__name__)
FIRST_READ_WAIT_S = 5.0  # how long a new view waits for another process's write to end before reading beside it


class VectorIndex:
    """Chroma collection + docstore + keyword index, stamped with the embedding model that filled them."""

    def __init__(self, settings: DocentSettings, embed_model: BaseEmbedding, kv: DatabaseKVStore | None = None) -> None:
        self.settings = settings
        self._kv = kv  # the PostgreSQL database's key-value store for the docstore; None: in index.db
        self.embed_model = embed_model
        self.embed_name = embed_model.model_name
        self.embed_dim = embedding_dimension(embed_model)
        self._lock = threading.RLock()
        self._views = threading.local()  # per thread: inside ``one_view`` (how deep)
        self._version = 0
        self._emptiness: tuple[tuple[int, str], bool] | None = None  # (version, empty) last read
        self._writer = write_lock(settings.data_dir, settings.database)
        self.store: IndexStore = open_index_store(
            settings.paths.index_db, kv, self._namespace, database=settings.database, library=settings.paths.library
        )
        self.notices: list[str] = list(self.store.notices)  # what opening the index had to repair
        self.keywords: KeywordIndex = self.store.keywords
        self._docstore = KVDocumentStore(self.store.kvstore, namespace=self._namespace)
        self.client = chroma_client(settings)
        self._open_collection()
        if not settings.chroma_host:
            self._first_read()
        self._migrate()

    def _first_read(self) -> None:
        """The embedded view's first read under the write lock (see ``_catch_up``), waiting
        ``FIRST_READ_WAIT_S`` at most: a process that writes longer (a large PDF being embedded,
        or one stopped half-way) must not keep this one from starting (``check`` tells such an
        ingest from an interrupted one); then the view is read beside it, as before."""
        deadline = time.monotonic() + FIRST_READ_WAIT_S
        waited = False
        while True:
            with self._writer.quiet(wait=False) as held:
                if held or time.monotonic() >= deadline:
                    self._collection.count()
                    return
            if not waited:
                self._waiting()
                waited = True
            time.sleep(0.05)

    def take_notices(self) -> list[str]:
        """What opening the index had to repair or move (once: the next context does not repeat it)."""
        notices, self.notices = self.notices, []
        return notices

    def _open_collection(self) -> None:
        collection = self.client.get_or_create_collection(
            self.settings.collection_name,
            metadata={"hnsw:space": "cosine", "embed_model": self.embed_name, "embed_dim": self.embed_dim},
            embedding_function=None,
        )
        self._collection = Guarded(collection, place_of(self.settings))  # every call: Chroma's failures said plainly
        self._vector_store = MirroredChroma(self._collection, self.keywords)

    def _migrate(self) -> None:
        """An old ``docstore.json`` moved in, a keyword index never filled filled (under the lock)."""
        if self.settings.paths.docstore.exists() or not keywords_complete(self.store):
            with self.writer():
                self.notices += migrate_docstore(self.store, self.settings.paths.docstore)
                total = self._collection.count()
                fill_keywords(self.store, total, lambda: self._chunk_batches(total))

    @property
    def _namespace(self) -> str:
        key = library_key(self.settings.library)
        return f"{DOCSTORE_NAMESPACE}-{key}" if key else DOCSTORE_NAMESPACE

    # ------------------------------------------------------------------ what other processes wrote
    @property
    def collection(self) -> Any:
        self._catch_up()
        return self._collection

    @property
    def vector_store(self) -> ChromaVectorStore:
        self._catch_up()
        return self._vector_store

    @property
    def docstore(self) -> KVDocumentStore:
        return self._docstore

    def _catch_up(self) -> None:
        """Reopen Chroma if another writer changed it since we looked. Nothing to do while
        this process holds the write lock: nobody else can write then.

        A reopened embedded view brings its segments up to date from Chroma's log on its first
        read: a write to the segment files, which must not meet another process's. Found with
        a search beside an ingest in another process: Chroma's "Failed to apply logs to the
        hnsw segment writer", or the searching process killed by a segmentation fault. So the
        reopen and that first read happen under the write lock (``quiet``: nothing is marked
        changed); while another process holds it, the last view is kept (the keyword rows are
        read as they are) and the next read tries again."""
        if self._writer.depth or getattr(self._views, "depth", 0):
            return
        if self.settings.chroma_host:
            self._writer.catch_up(self._reload)
            return
        if self._writer.generation() == self._writer.seen:
            return  # nobody wrote: nothing to reopen (the usual case, on every read)
        with self._writer.quiet(wait=False) as held:
            if held:
                self._writer.catch_up(self._reload)

    @contextlib.contextmanager
    def one_view(self, look: bool = True) -> Iterator[None]:
        """Within the block this thread reads the index as it was at its start: one look at other
        processes' writes, not one per read (14 in a search; ``look=False``: a thread helping a
        search that has looked); theirs show at the next block."""
        if look:
            self._catch_up()
        depth = getattr(self._views, "depth", 0)
        self._views.depth = depth + 1
        try:
            yield
        finally:
            self._views.depth = depth

    def _reload(self) -> None:
        logger.info("another process wrote to %s: reopening the vector index", self.settings.data_dir)
        with self._lock:
            if not self.settings.chroma_host:  # a server is shared, so always current
                self.client = reopen_chroma(self.client, self.settings)
            self._open_collection()
            if not self.settings.chroma_host:
                self._collection.count()  # the first read, up to date from the log, while nobody writes
            self._version += 1

    # ------------------------------------------------------------------ one writer
    @contextlib.contextmanager
    def writer(self, wait: bool = True) -> Iterator[bool]:
        """Hold the write lock of this data folder (``<data_dir>/.write.lock``): one writer
        among this process's threads and every other process (the CLI beside the app).
        With ``wait=False`` yields False instead of waiting when someone else writes.

        Taking it first catches up with what others wrote, so that a read-modify-write of
        Chroma starts from the current state."""

        with self._writer.hold(wait, on_wait=self._waiting, catch_up=self._reload) as acquired:
            yield acquired

    def _waiting(self) -> None:
        logger.info("waiting for the write lock of %s: another process or upload is writing", self.settings.data_dir)

    def held_elsewhere(self) -> bool:
        """True when another process (or another thread here) is writing right now."""
        return self._writer.held_elsewhere()

    # ------------------------------------------------------------------ fingerprint
    def fingerprint(self) -> dict[str, Any]:
        meta = self.collection.metadata or {}
        return {"embed_model": meta.get("embed_model"), "embed_dim": meta.get("embed_dim")}

    def mismatch(self) -> str | None:
        """Why this index cannot take the current model's vectors, or None."""
        fp = self.fingerprint()
        if fp["embed_model"] in (None, self.embed_name) and fp["embed_dim"] in (None, self.embed_dim):
            return None
        return (
            f"The index holds vectors of {fp['embed_model']} ({fp['embed_dim']} dims) but the embedding "
            f"setting is now {self.embed_name} ({self.embed_dim} dims); mixing them would return nonsense. "
            "Rebuild the index (Settings page → Rebuild index, or `python -m rag_core rebuild`), "
            "or switch the embedding back."
        )

    def ensure_compatible(self) -> None:
        problem = self.mismatch()
        if problem:
            raise IndexMismatchError(problem)

    def reset(self) -> None:
        """Drop every vector, the docstore and the keyword index; stamp the collection with
        the current model."""
        with self.writer(), self._lock:
            with contextlib.suppress(Exception):  # already gone
                self.client.delete_collection(self.settings.collection_name)
            self._open_collection()
            self.store.kvstore.clear(f"{self._namespace}/")
            self.keywords.clear()
            self.bump()

    # ------------------------------------------------------------------ docstore
    def ref_doc_ids_for(self, name: str) -> list[str]:
        return self.store.kvstore.keys(self.store.hashes, f"{name}::")

    def docstore_names(self) -> set[str]:
        return self.store.docstore_names()

    # ------------------------------------------------------------------ chroma
    def delete_refs(self, refs: list[str]) -> None:
        """Remove the vectors and docstore entries of some parts (pages, sections) of documents;
        the caller persists the docstore."""
        with self.writer(), self._lock:
            for ref in refs:
                self.vector_store.delete(ref)
                self.docstore.delete_ref_doc(ref, raise_error=False)
                self.docstore.delete_document(ref, raise_error=False)

    def delete_document(self, name: str) -> None:
        """Remove every vector, keyword index row and docstore entry of one document."""
        with self.writer(), self._lock:
            self.collection.delete(where={"doc_key": name})
            self.keywords.delete_docs([name])
            for ref in self.ref_doc_ids_for(name):
                self.docstore.delete_ref_doc(ref, raise_error=False)
                self.docstore.delete_document(ref, raise_error=False)
            self.bump()

    def chunk_count(self, name: str | None = None) -> int:
        if name is None:
            return self.collection.count()
        got = self.collection.get(where={"doc_key": name}, include=[])
        return len(got["ids"])

    def chunk_shas(self, name: str) -> set[str]:
        """The file digests the chunks of one document carry (one, when it is whole)."""
        got = self.collection.get(where={"doc_key": name}, include=["metadatas"])
        return {str((m or {}).get("file_sha256")) for m in got["metadatas"]}

    def chunk_pages(self, name: str) -> int:
        """The highest page number among a document's chunks (0 for files without pages)."""
        got = self.collection.get(where={"doc_key": name}, include=["metadatas"])
        pages = [(m or {}).get("page") for m in got["metadatas"]]
        return max((int(p) for p in pages if isinstance(p, int | float)), default=0)

    def chroma_names(self) -> set[str]:
        names: set[str] = set()
        total = self.collection.count()
        for offset in range(0, total, 5000):
            got = self.collection.get(include=["metadatas"], limit=5000, offset=offset)
            names.update(str((m or {}).get("doc_key")) for m in got["metadatas"])
        return names

    def all_nodes(self, names: list[str] | None = None) -> list[TextNode]:
        """Every chunk (text + metadata), optionally of some documents (a page's or a
        document's outline; never the whole corpus on a search)."""
        from rag_core.storage.keyword_index import to_node

        nodes: list[TextNode] = []
        where = {"doc_key": {"$in": list(names)}} if names else None
        offset = 0
        while True:  # pages of 5,000 until a short one (no count first: it grows with the collection)
            got = self.collection.get(include=["metadatas", "documents"], where=where, limit=5000, offset=offset)
            for id_, meta, text in zip(got["ids"], got["metadatas"], got["documents"]):
                nodes.append(to_node(id_, dict(meta or {}), text))
            if len(got["ids"]) < 5000:
                return nodes
            offset += 5000

    def document_nodes(self, name: str) -> list[TextNode]:
        """One document's chunks, read from the keyword index: it holds the very nodes the
        vector store gives back, written in the same call. Chroma's filtered read grows with
        the collection (docs/performance.md, "Many small files"); this one does not."""
        return self.keywords.doc_nodes(name)

    def mirrored_chunks(self, name: str) -> int:
        """One document's chunks in the keyword index (``chunk_count`` asks Chroma)."""
        return self.keywords.docs([name]).get(name, 0)

    def _chunk_batches(self, total: int, names: list[str] | None = None) -> Iterator[list]:
        """The chunks Chroma holds as keyword index records, 5,000 at a time."""
        where = {"doc_key": {"$in": list(names)}} if names else None
        for offset in range(0, total, 5000):
            got = self._collection.get(include=["metadatas", "documents"], where=where, limit=5000, offset=offset)
            yield [stored_record(i, m, t) for i, m, t in zip(got["ids"], got["metadatas"], got["documents"])]
            if len(got["ids"]) < 5000:
                break

    def resync_keywords(self, name: str) -> None:
        """One document's words again from its chunks in Chroma (``check --repair``; no embedding)."""
        with self.writer(), self._lock:
            self._index_words(name)
            self.bump()

    def _index_words(self, name: str) -> None:
        self.keywords.delete_docs([name])
        for batch in self._chunk_batches(self.chunk_count(name), [name]):
            self.keywords.add(batch)

    # ------------------------------------------------------------------ change counter
    def bump(self) -> None:
        self._version += 1

    def is_empty(self) -> bool:
        """Whether the collection holds no chunk: read once per version (Chroma counts a
        collection of 100k chunks in ~12 ms, as long as the vector search itself)."""
        version = self.version
        if self._emptiness is None or self._emptiness[0] != version:
            self._emptiness = (version, self.collection.count() == 0)
        return self._emptiness[1]

    @property
    def version(self) -> tuple[int, str]:
        """Changes when the content changes, here or in another process: the keyword views
        (``KeywordCache``) are kept per version."""
        self._catch_up()
        return (self._version, self._writer.seen)


_OPEN: dict[tuple, VectorIndex] = {}
_OPEN_LOCK = threading.Lock()


def open_index(settings: DocentSettings, embed_model: BaseEmbedding, kv: DatabaseKVStore | None = None) -> VectorIndex:
    """One ``VectorIndex`` per (data folder, Chroma location, collection, embedding) in a
    process: contexts built for different settings or keys share one Chroma view, one
    ``index.db`` and the write lock. ``kv``: the PostgreSQL database's key-value store, for
    a docstore there (None: in ``index.db``)."""
    key = (
        str(settings.data_dir.resolve()),
        settings.database,
        settings.chroma_host,
        settings.chroma_port if settings.chroma_host else None,
        settings.collection_name,
        embed_model.model_name,
        embedding_dimension(embed_model),
    )
    with _OPEN_LOCK:
        index = _OPEN.get(key)
        if index is None or not settings.data_dir.exists():
            index = VectorIndex(settings, embed_model, kv)
            _OPEN[key] = index
        return index
