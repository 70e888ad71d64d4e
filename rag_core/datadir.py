"""The data folder: what lives where in it, and the one lock its writers share.

    <data_dir>/
      settings.json          what the Settings page saved (never a key)
      docent.db              sessions, messages, the document registry (and -wal, -shm)
      backups/               online copies of docent.db, rotated
      index.db               the ingestion docstore and the keyword index (and -wal, -shm)
      docstore.json          the docstore of earlier versions: moved into index.db on open
      chroma/                the embedded Chroma index (unless a server holds it)
      files/                 a copy of every ingested file: rebuilds and repairs read it
                             (``files_dir`` may put it elsewhere: a team's shared mount)
      ingesting/             one marker per document being ingested (survives a lost docent.db)
      models/                the assembled local model (unless model_cache says elsewhere)
      cache/pages/           PDF pages the viewer rendered
      suggestions.json       suggested questions, cached by content
      eval-cache/            evaluation corpora, indexed once
      condense-cache.jsonl   the evaluation's rewrites of follow-ups, reused by reruns
      .write.lock            the write lock (``WriteLock``)
      .generation            a token every writer changes when it takes and lets go of the lock

The names are what existing folders hold: renaming one would orphan a user's data.

A person's own library (``libraries = "per_user"``) keeps its stored files in
``files/.libraries/<key>/``, its markers in ``ingesting/<key>/`` and its docstore in
``index-<key>.db`` (``docstore-<key>.json`` in earlier versions), named by ``library_key``, beside the shared library's.

Several processes may share one folder (the app and the CLI, two CLI ingests), and each
keeps some of it in memory (an embedded Chroma client's segments). So every write happens under
the folder's write lock, and every holder changes the generation when it takes the lock and
when it lets it go: a process that finds the generation changed since it last looked knows
that what it holds in memory is stale.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rag_core.errors import ConfigError, disk_full
from rag_core.files import FolderLock, atomic_write

SETTINGS_FILE = "settings.json"
DB_FILE = "docent.db"
BACKUPS_DIR = "backups"
DOCSTORE_FILE = "docstore.json"
INDEX_DB_FILE = "index.db"
CHROMA_DIR = "chroma"
FILES_DIR = "files"
LIBRARIES_DIR = ".libraries"  # inside files/: a person's own library, one folder each
MARKERS_DIR = "ingesting"
MODELS_DIR = "models"
PAGE_CACHE_DIR = "cache/pages"
SUGGESTIONS_FILE = "suggestions.json"
EVAL_CACHE_DIR = "eval-cache"
CONDENSE_CACHE_FILE = "condense-cache.jsonl"
WRITE_LOCK_FILE = ".write.lock"
GENERATION_FILE = ".generation"


def library_key(library: str) -> str:
    """The name a person's library goes by in folders and Chroma ('' for the shared library):
    a digest, so that an address never becomes a path or a collection name."""
    if not library:
        return ""
    return "lib-" + hashlib.sha256(library.strip().lower().encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class DataDir:
    """The paths inside one data folder (``settings.paths``), for one library."""

    root: Path
    files_root: Path | None = None  # the stored files' folder, when not <root>/files
    library: str = ""  # ``library_key`` of a person's library; '' the shared one

    def create(self) -> None:
        """Make the folder if it is missing; a ``ConfigError`` that says what to do when it
        cannot be (a file of that name, a file where a parent folder should be, no permission)."""
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(
                f"The data folder {self.root} is a file, not a folder. Point DOCENT_DATA_DIR (or --data-dir) "
                "at a folder: it is created if missing."
            )
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError(
                f"The data folder {self.root} cannot be created ({e.strerror or e}). Point DOCENT_DATA_DIR "
                "(or --data-dir) at a folder you can write to: it is created if missing."
            ) from None

    @property
    def settings_file(self) -> Path:
        return self.root / SETTINGS_FILE

    @property
    def database(self) -> Path:
        return self.root / DB_FILE

    @property
    def backups(self) -> Path:
        return self.root / BACKUPS_DIR

    @property
    def docstore(self) -> Path:
        if self.library:
            return self.root / f"docstore-{self.library}.json"
        return self.root / DOCSTORE_FILE

    @property
    def index_db(self) -> Path:
        if self.library:
            return self.root / f"index-{self.library}.db"
        return self.root / INDEX_DB_FILE

    @property
    def chroma(self) -> Path:
        return self.root / CHROMA_DIR

    @property
    def files(self) -> Path:
        root = self.files_root or self.root / FILES_DIR
        # Hidden from the shared library, which takes every file not under a dot-folder as its own.
        return root / LIBRARIES_DIR / self.library if self.library else root

    @property
    def markers(self) -> Path:
        return self.root / MARKERS_DIR / self.library if self.library else self.root / MARKERS_DIR

    @property
    def models(self) -> Path:
        return self.root / MODELS_DIR

    @property
    def page_cache(self) -> Path:
        return self.root / PAGE_CACHE_DIR

    @property
    def suggestions(self) -> Path:
        return self.root / SUGGESTIONS_FILE

    @property
    def eval_cache(self) -> Path:
        return self.root / EVAL_CACHE_DIR

    @property
    def condense_cache(self) -> Path:
        return self.root / CONDENSE_CACHE_FILE


class WriteLock:
    """One writer per data folder, among this process's threads and every other process,
    and the generation that tells each of them whether another wrote since it last looked.

    Re-entrant within a thread. Taking it (outermost) first lets the holder catch up with
    what others wrote, then marks the folder changed, so that a writer killed half-way
    still tells the others to look again; letting it go marks it changed once more, with
    everything written."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = FolderLock(self.root / WRITE_LOCK_FILE)
        self._generation = self.root / GENERATION_FILE
        self._mutex = threading.RLock()  # a catch-up here never interleaves with a bump here
        self._seen = self.generation()

    @property
    def depth(self) -> int:
        """How often the calling thread holds the lock (0: it does not)."""
        return self._lock.depth

    @property
    def seen(self) -> str:
        """The generation this lock last caught up with (or made)."""
        return self._seen

    def generation(self) -> str:
        """The folder's current generation token ('' before anyone wrote)."""
        try:
            return self._generation.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return ""

    def catch_up(self, reload: Callable[[], None]) -> None:
        """Call ``reload`` if another writer changed the folder since this lock last looked."""
        with self._mutex:
            token = self.generation()
            if token != self._seen:
                reload()
                self._seen = token

    def _bump(self) -> None:
        with self._mutex:
            token = uuid.uuid4().hex
            try:
                atomic_write(self._generation, token)
            except OSError as e:  # a full disk: said as such, not as a traceback
                raise disk_full(self.root, e) or e from e
            self._seen = token

    @contextmanager
    def hold(
        self,
        wait: bool = True,
        *,
        on_wait: Callable[[], None] | None = None,
        catch_up: Callable[[], None] | None = None,
    ) -> Iterator[bool]:
        """Yields True while held; with ``wait=False`` yields False at once when someone else
        writes. ``on_wait`` is called before waiting; ``catch_up`` when the outermost hold finds
        that another writer changed the folder since this lock last looked."""
        with self._lock.hold(wait, on_wait=on_wait) as acquired:
            if not acquired:
                yield False
                return
            outermost = self._lock.depth == 1
            if outermost:
                with self._mutex:
                    if catch_up is not None:
                        self.catch_up(catch_up)
                    self._bump()
            try:
                yield True
            finally:
                if outermost:
                    self._bump()

    @contextmanager
    def quiet(self, wait: bool = True, on_wait: Callable[[], None] | None = None) -> Iterator[bool]:
        """The lock held for something that must not meet a write but writes nothing of
        Docent's (an embedded Chroma view read for the first time): no catch-up, and the
        generation is left as it is, so nobody else reopens for it."""
        with self._lock.hold(wait, on_wait=on_wait) as acquired:
            yield acquired

    def held_elsewhere(self) -> bool:
        """True when another process (or another thread here) is writing right now."""
        return self._lock.held_elsewhere()
