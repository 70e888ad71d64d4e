"""Background ingestion for the app: a batch of uploads runs in its own thread, so that a
page can be left and come back to, and stopped.

``JobRunner.submit`` takes the uploads' bytes (a browser's upload is gone once its page is
left) and returns a job id; ``view`` gives a snapshot of every file's progress and result;
``cancel`` stops the batch between files, while a file is read, and between batches of
embeddings — the file being written is left absent, never half, and the files after it
are not started; ``forget`` drops a finished job once its results were read.

There is one runner per data folder in a process (``job_runner``), outside the cached
context, so that a job survives a settings change that rebuilds the context. The runner
knows nothing of browser sessions: each session keeps the ids of its own jobs.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_core.ingestion import IngestionService, IngestResult, OnConflict

KEEP_FINISHED = 100  # finished jobs kept for sessions that never came back to read them


@dataclass
class Upload:
    """One file of a batch: its name, its bytes, what to do if a different file has its name."""

    name: str
    data: bytes
    on_conflict: OnConflict = "ask"


@dataclass
class FileProgress:
    name: str
    state: str = "queued"  # queued | running | done
    message: str = ""  # "name: what it is doing"
    fraction: float = 0.0
    result: IngestResult | None = None


@dataclass
class JobView:
    """A snapshot of one job, safe to read while the job goes on."""

    id: str
    files: list[FileProgress]
    state: str  # running | done | cancelled | failed
    created: float
    finished: float | None = None
    error: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def fraction(self) -> float:
        return sum(1.0 if f.state == "done" else f.fraction for f in self.files) / max(len(self.files), 1)

    @property
    def results(self) -> list[IngestResult]:
        return [f.result for f in self.files if f.result is not None]


@dataclass
class _Job:
    view: JobView
    uploads: list[Upload]
    cancel: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class JobRunner:
    """Jobs of one data folder in this process; every method is safe from any thread."""

    def __init__(self) -> None:
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()

    def submit(self, ingestion: IngestionService, uploads: list[Upload]) -> str:
        job_id = uuid.uuid4().hex[:12]
        view = JobView(
            job_id, [FileProgress(u.name, message=f"{u.name}: waiting") for u in uploads], "running", time.time()
        )
        job = _Job(view, list(uploads))
        job.thread = threading.Thread(
            target=self._run, args=(job, ingestion), name=f"docent-ingest-{job_id}", daemon=True
        )
        with self._lock:
            self._jobs[job_id] = job
            self._prune()
        job.thread.start()
        return job_id

    def view(self, job_id: str) -> JobView | None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            return replace(job.view, files=[replace(f) for f in job.view.files])

    def cancel(self, job_id: str) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            job.cancel.set()

    def forget(self, job_id: str) -> None:
        """Drop a finished job (its results were read); a running one is kept."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and not job.view.running:
                del self._jobs[job_id]

    def wait(self, job_id: str, timeout: float | None = None) -> JobView | None:
        """Block until the job ends (for the CLI-less callers and tests)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None and job.thread is not None:
            job.thread.join(timeout)
        return self.view(job_id)

    def running(self) -> list[str]:
        with self._lock:
            return [i for i, j in self._jobs.items() if j.view.running]

    # ------------------------------------------------------------------ the thread
    def _run(self, job: _Job, ingestion: IngestionService) -> None:
        from rag_core.ingestion import IngestResult, upload_name
        from rag_core.ingestion.ahead import ReadAhead

        # Each upload's bytes go to a file of their own, the next one's before this one is
        # ingested: it is read while this one is embedded (``ingestion.ahead``).
        ahead = ReadAhead(ingestion.settings)
        folder = Path(tempfile.mkdtemp(prefix="docent-upload-"))

        def staged(i: int) -> tuple[Path, str]:
            name = upload_name(job.uploads[i].name)
            path = folder / str(i) / f"upload{Path(name).suffix}"
            if not path.exists():
                path.parent.mkdir(exist_ok=True)
                path.write_bytes(job.uploads[i].data)
            return path, name

        try:
            for i, upload in enumerate(job.uploads):
                entry = job.view.files[i]
                if job.cancel.is_set():
                    self._set(entry, state="done", message=f"{entry.name}: cancelled", fraction=1.0)
                    entry.result = IngestResult(entry.name, "cancelled", reason="cancelled before it started")
                    continue
                self._set(entry, state="running", message=f"{entry.name}: starting")

                def report(message: str, fraction: float, entry: FileProgress = entry) -> None:
                    self._set(entry, message=message, fraction=min(max(float(fraction), 0.0), 1.0))

                path, name = staged(i)
                ahead.upcoming = []
                if i + 1 < len(job.uploads):
                    with contextlib.suppress(OSError):  # no room for the next one yet: it is read at its turn
                        ahead.upcoming = [staged(i + 1)]
                result = ingestion.ingest_file(
                    path, name, report, on_conflict=upload.on_conflict, cancelled=job.cancel.is_set, ahead=ahead
                )
                upload.data = b""  # the bytes are not needed any more
                shutil.rmtree(path.parent, ignore_errors=True)
                with self._lock:
                    entry.name, entry.result, entry.state, entry.fraction = result.file, result, "done", 1.0
            state = "cancelled" if job.cancel.is_set() else "done"
            error = ""
        except Exception as e:  # ingest_file reports file errors itself: this is a bug (or no room to stage), shown
            state, error = "failed", f"{type(e).__name__}: {e}"
        finally:
            ahead.close()
            shutil.rmtree(folder, ignore_errors=True)
        with self._lock:
            job.view.state, job.view.error, job.view.finished = state, error, time.time()

    def _set(self, entry: FileProgress, **changes: object) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(entry, key, value)

    def _prune(self) -> None:
        finished = sorted((j.view.finished or 0.0, i) for i, j in self._jobs.items() if not j.view.running)
        for _, job_id in finished[: max(len(finished) - KEEP_FINISHED, 0)]:
            del self._jobs[job_id]


_RUNNERS: dict[str, JobRunner] = {}
_RUNNERS_LOCK = threading.Lock()


def job_runner(data_dir: Path) -> JobRunner:
    """The runner of this data folder in this process."""
    key = str(Path(data_dir).resolve())
    with _RUNNERS_LOCK:
        return _RUNNERS.setdefault(key, JobRunner())
