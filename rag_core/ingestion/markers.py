"""The pending markers an ingestion writes before its first vector, outside SQLite.

A file ``<data_dir>/ingesting/<digest>.json`` names the document and the sha256 of the
file whose ingestion started. It survives an emptied or damaged ``docent.db``, so that
recovery (``rag_core.recovery``) can still prove which chunks an interrupted ingestion
left, and remove those alone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path

from rag_core.files import atomic_write

logger = logging.getLogger(__name__)


class IngestMarkers:
    """One small file per document being ingested; removed once it is indexed or discarded."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def _path(self, name: str) -> Path:
        return self.folder / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.json"

    def put(self, name: str, sha256: str) -> None:
        record = {"name": name, "sha256": sha256, "pid": os.getpid(), "started": time.time()}
        atomic_write(self._path(name), json.dumps(record, ensure_ascii=False))

    def drop(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def all(self) -> dict[str, str]:
        """Name → the sha256 of the file whose ingestion started."""
        out: dict[str, str] = {}
        if not self.folder.is_dir():
            return out
        for path in sorted(self.folder.glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                out[str(record["name"])] = str(record["sha256"])
            except (OSError, ValueError, KeyError, TypeError):
                logger.warning("unreadable ingestion marker %s left in place", path)
        return out
