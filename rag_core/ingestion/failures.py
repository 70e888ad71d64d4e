"""Why one file failed, in words a person can act on.

A file that fails must not stop the batch, and its reason is what the user reads (in the
Upload page, in ``ingest --json``): a full disk says which disk and how much is free, and
whether what the file wrote is gone already; a parser bug is logged with its traceback.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rag_core.errors import DiskFullError, DocentError, disk_full
from rag_core.index import VectorIndex
from rag_core.ingestion.markers import IngestMarkers
from rag_core.settings import DocentSettings
from rag_core.storage import DocumentRegistry

logger = logging.getLogger("rag_core.ingestion.service")


def failure_reason(name: str, error: Exception, data_dir: Path) -> str:
    """The reason a failed file's result gives for ``error``."""
    if isinstance(error, DocentError) and not isinstance(error, DiskFullError):
        return str(error)  # a server gone, a mismatched index: already said plainly
    full = disk_full(data_dir, error)
    if full is not None:
        logger.warning("the disk is full ingesting %s: %s", name, error)
        return full_reason(full, error)
    if isinstance(error, OSError):  # unreadable input, ...: say so, not "unexpected error"
        logger.warning("file system error ingesting %s: %s", name, error)
        return f"file system error: {error.strerror or error}"
    logger.exception("unexpected error ingesting %s", name)
    return f"unexpected error: {type(error).__name__}: {error}"[:300]


def full_reason(full: DiskFullError, cause: BaseException) -> str:
    """A full disk's reason, saying whether what the file wrote is gone already."""
    if getattr(cause, "docent_left_behind", False):
        return (
            f"{full.short}: what it wrote is removed at the next start with room (or `check --repair`); "
            "free some space and ingest it again"
        )
    return f"{full.short}: nothing of it was kept; free some space and ingest it again"


def discard(
    index: VectorIndex,
    registry: DocumentRegistry,
    markers: IngestMarkers,
    settings: DocentSettings,
    name: str,
    source: Path,
    proven: bool = True,
) -> bool:
    """After a failure mid-way: remove what this document left, as recovery would on the
    next start, so the running app stays consistent (the document is absent, never half).
    The stored copy goes too, unless it is the file being ingested (rebuild, repair).
    False when that failed too (a server gone), or cannot be ``proven`` done: on a full disk
    the index may take a delete it cannot write, so the marker stays and the next start
    removes what is left (``rag_core.recovery``)."""
    try:
        index.delete_document(name)
        if index.chunk_count(name):  # the index took the delete but did not apply it
            raise DocentError(f"{name}: its vectors are still in the index")
        registry.remove(name)
        stored = settings.paths.files / name
        if stored.resolve() != source.resolve():
            stored.unlink(missing_ok=True)
        if not proven:
            return False
        markers.drop(name)
    except Exception as e:  # the pending row and marker stay; recovery removes them on the next start
        if isinstance(e, DocentError) or disk_full(settings.data_dir, e):
            logger.warning("what the failed ingestion of %s wrote stays until the next start: %s", name, e)
        else:
            logger.exception("could not clean up after a failed ingestion of %s", name)
        return False
    return True
