"""Reading the next file while this one is embedded.

A file is read (parsed, OCR'd) in the reading worker process (``loaders.budget``), then
embedded here: one after the other, the cores sat half idle while a file was read. When several
files are ingested in a row (``IngestionService.ingest_each``: the CLI's ``ingest``, a folder),
the next file's reading starts in the worker as soon as this file's own reading is done, and
runs beside its embedding (docs/performance.md, "Reading the next file while this one is
embedded"). Only the reading runs ahead: nothing is written before the file's own turn, which
checks again what it checked, and takes the reading only when it was of the same bytes under
the same name (otherwise it reads the file again). The reading's budgets (time, memory) are the
same as for any file, and its failure is that file's own, said at its turn.
"""

from __future__ import annotations

import contextlib
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_core import loaders
from rag_core.errors import IngestCancelled
from rag_core.files import Progress, file_digest
from rag_core.ingestion.names import refusal
from rag_core.loaders.ocr import sidecar_path
from rag_core.providers.answering import ANSWERING
from rag_core.settings import DocentSettings

POLL_S = 0.25  # how often a file waiting for its reading ahead passes the reading's progress on


def start_reading() -> None:
    """Have the worker that reads files started in the background, before the first file comes:
    the Upload page when it opens, a command about to read files before it builds its context
    (the worker's interpreter and imports, about a second on two cores, then overlap that)."""
    loaders.warm_reader()


def read_file(
    settings: DocentSettings, path: Path, target: str, sha: str, cancelled: Callable[[], bool], report: Progress
) -> loaders.LoadedFile:
    """Read ``path`` as the document ``target`` in the reading worker, within the settings'
    budgets; the reading's progress goes to ``report``."""
    sidecar = sidecar_path(settings.data_dir, sha)
    return loaders.load_file_guarded(
        path,
        target,
        sha,
        timeout_s=settings.parse_timeout_s,
        memory_mb=settings.parse_memory_mb,
        cancelled=cancelled,
        ocr=settings.ocr,
        ocr_cache=sidecar if sidecar.exists() else None,
        progress=lambda message, done: report(f"{target}: {message}", 0.05 + 0.25 * done),
    )


@dataclass
class _Reading:
    key: tuple[str, str, str]  # (the file's path, the name it is read as, its sha256)
    stop: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    box: dict[str, Any] = field(default_factory=dict)  # loaded | error | said (the last progress)


class ReadAhead:
    """The files still to come in one run of ingests, and at most one of them being read in a
    background thread. One per run (``ingest_each``), used from that run's thread only."""

    def __init__(self, settings: DocentSettings) -> None:
        self.settings = settings
        self.upcoming: list[tuple[Path, str]] = []  # (path, name) after the file ingested now, in order
        self._reading: _Reading | None = None

    def start_next(self, target_of: Callable[[str, str], tuple[str, Any]]) -> None:
        """Start reading the next file, unless its own turn would not read it: a file that is
        not there, too large, of a refused type, or unchanged since it was indexed.
        ``target_of(name, sha)``: the name it would be indexed under, and what is indexed there
        (``IngestionService._target``); what it raises (a name taken) is said at its turn."""
        if not self.upcoming or self._reading is not None:
            return
        path, name = self.upcoming[0]
        if refusal(path):
            return  # its turn says why it is not read
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.settings.max_file_mb * 1024 * 1024:
                return
            loaders.check_supported(name)
            sha = file_digest(path)
            target, existing = target_of(name, sha)
        except Exception:  # its own turn finds it again and says why
            return
        if existing is not None and existing.status == "indexed" and existing.sha256 == sha:
            return  # skipped unread at its turn
        reading = self._reading = _Reading((str(path.resolve()), target, sha))

        def stopped() -> None:
            if reading.stop.is_set():
                raise IngestCancelled(target)

        def work() -> None:
            try:
                # Like the embedding, the reading ahead yields to an answer being written: it
                # starts only once none is (its worker would take the cores the prompt needs).
                ANSWERING.wait_clear(stopped)
                said: Progress = lambda message, done: reading.box.__setitem__("said", (message, done))  # noqa: E731
                reading.box["loaded"] = read_file(self.settings, path, target, sha, reading.stop.is_set, said)
            except BaseException as e:  # said at the file's own turn
                reading.box["error"] = e
            finally:
                reading.done.set()

        threading.Thread(target=work, name="docent-read-next", daemon=True).start()

    def take(
        self, path: Path, target: str, sha: str, report: Progress, cancelled: Callable[[], bool]
    ) -> loaders.LoadedFile | None:
        """The reading of ``path`` as ``target``, waited for (its progress passed on); None when
        none ran ahead for these bytes under this name (then it is read as usual). Its failure
        is raised here, as this file's own."""
        reading, self._reading = self._reading, None
        if reading is None:
            return None
        if reading.key != (str(path.resolve()), target, sha):
            reading.stop.set()  # read for another name or other bytes: stopped, not used
            return None
        while not reading.done.wait(POLL_S):
            if cancelled():
                reading.stop.set()
                raise IngestCancelled(target)
            if "said" in reading.box:
                report(*reading.box["said"])
        if "error" in reading.box:
            raise reading.box["error"]
        return reading.box["loaded"]

    def wait(self) -> None:
        """Until the reading ahead, if any, has finished (kept for its file's turn)."""
        if self._reading is not None:
            self._reading.done.wait()

    def close(self) -> None:
        """Stop a reading nobody will take (the run ended early): its worker is stopped."""
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.stop.set()
            with contextlib.suppress(Exception):
                reading.done.wait(5)
