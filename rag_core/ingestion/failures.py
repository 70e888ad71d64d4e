"""Why one file failed, in words a person can act on.

A file that fails must not stop the batch, and its reason is what the user reads (in the
Upload page, in ``ingest --json``): a full disk says which disk and how much is free, and
whether what the file wrote is gone already; a parser bug is logged with its traceback.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rag_core.errors import DiskFullError, DocentError, disk_full

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
