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

With a database (``use``: the context gives it the one it opened, SQLite or a team's
PostgreSQL) every job's progress is written there too (``rag_core.storage.jobs``): another
process shows it (``view`` of an id it does not run, ``running_elsewhere`` for a person's),
and stops it (``cancel`` asks through the database; the job's thread looks while it works).
A job whose process is gone is shown as lost, with what it finished.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_core.errors import DocentError

if TYPE_CHECKING:
    from rag_core.ingestion import IngestionService, IngestResult, OnConflict
    from rag_core.storage.jobs import JobStore

logger = logging.getLogger(__name__)
ASK_EVERY_S = 1.0  # how often a running job looks whether another process asked it to stop
TOUCH_EVERY_S = 30.0  # how often a job with no progress to write says it still runs

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
    state: str  # running | done | cancelled | failed | lost (its process is gone)
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
    owner: str = ""
    written: float = 0.0  # when its progress was last written to the database
    asked: float = 0.0  # when the database was last asked whether to stop
    pending: threading.Timer | None = None  # progress held back, written when the timer fires


class JobRunner:
    """Jobs of one data folder in this process; every method is safe from any thread."""

    def __init__(self) -> None:
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()
        self.store: JobStore | None = None

    def use(self, store: JobStore | None) -> None:
        """Write the jobs' progress to ``store`` from now on (and read other processes' there)."""
        self.store = store

    def submit(self, ingestion: IngestionService, uploads: list[Upload], owner: str = "") -> str:
        """Start ingesting ``uploads`` for ``owner`` (the signed-in person, '' without sign-in)."""
        job_id = uuid.uuid4().hex[:12]
        view = JobView(
            job_id, [FileProgress(u.name, message=f"{u.name}: waiting") for u in uploads], "running", time.time()
        )
        job = _Job(view, list(uploads), owner=owner)
        job.thread = threading.Thread(
            target=self._run, args=(job, ingestion), name=f"docent-ingest-{job_id}", daemon=True
        )
        with self._lock:
            self._jobs[job_id] = job
            self._prune()
        self._write(job, force=True)
        job.thread.start()
        return job_id

    def view(self, job_id: str) -> JobView | None:
        """A snapshot of the job: this process's own, or one another process runs (from the database)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                return replace(job.view, files=[replace(f) for f in job.view.files])
        row = self._stored(lambda store: store.load(job_id))
        return _view_of(row) if row else None

    def running_elsewhere(self, owner: str) -> list[str]:
        """The ids of ``owner``'s jobs that other processes run (or ran, and were lost)."""
        rows = self._stored(lambda store: store.running(owner)) or []
        with self._lock:
            return [r["id"] for r in rows if r["id"] not in self._jobs]

    def cancel(self, job_id: str) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            job.cancel.set()
        else:  # another process runs it: it looks in the database while it works
            self._stored(lambda store: store.ask_cancel(job_id))

    def forget(self, job_id: str) -> None:
        """Drop a finished job (its results were read); a running one is kept."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and not job.view.running:
                del self._jobs[job_id]
        self._stored(lambda store: store.forget(job_id))

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
                self._write(job, force=True)

                def report(message: str, fraction: float, entry: FileProgress = entry) -> None:
                    self._set(entry, message=message, fraction=min(max(float(fraction), 0.0), 1.0))
                    self._write(job)

                path, name = staged(i)
                ahead.upcoming = []
                if i + 1 < len(job.uploads):
                    with contextlib.suppress(OSError):  # no room for the next one yet: it is read at its turn
                        ahead.upcoming = [staged(i + 1)]
                result = ingestion.ingest_file(
                    path,
                    name,
                    report,
                    on_conflict=upload.on_conflict,
                    cancelled=lambda: self._cancelled(job),
                    ahead=ahead,
                )
                upload.data = b""  # the bytes are not needed any more
                shutil.rmtree(path.parent, ignore_errors=True)
                with self._lock:
                    entry.name, entry.result, entry.state, entry.fraction = result.file, result, "done", 1.0
                self._write(job, force=True)
            state = "cancelled" if job.cancel.is_set() else "done"
            error = ""
        except Exception as e:  # ingest_file reports file errors itself: this is a bug (or no room to stage), shown
            state, error = "failed", f"{type(e).__name__}: {e}"
        finally:
            ahead.close()
            shutil.rmtree(folder, ignore_errors=True)
        with self._lock:
            job.view.state, job.view.error, job.view.finished = state, error, time.time()
        self._write(job, force=True)

    def _set(self, entry: FileProgress, **changes: object) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(entry, key, value)

    def _cancelled(self, job: _Job) -> bool:
        """Whether the job is to stop: asked here, or through the database by another process
        (looked up at most every ``ASK_EVERY_S``; a job with nothing new to write says it runs)."""
        if job.cancel.is_set():
            return True
        now = time.monotonic()
        if self.store is None or now - job.asked < ASK_EVERY_S:
            return False
        job.asked = now
        touch = now - job.written > TOUCH_EVERY_S
        if touch:
            job.written = now
        if self._stored(lambda store: store.cancel_asked(job.view.id, touch=touch)):
            job.cancel.set()
        return job.cancel.is_set()

    def _write(self, job: _Job, force: bool = False) -> None:
        """The job's progress to the database: at once when ``force``, else at most every
        ``WRITE_EVERY_S``."""
        from rag_core.storage.jobs import WRITE_EVERY_S

        now = time.monotonic()
        if self.store is None:
            return
        if not force and now - job.written < WRITE_EVERY_S:
            with self._lock:  # written a moment ago: this progress goes out when the moment is over
                if job.pending is None:
                    job.pending = threading.Timer(WRITE_EVERY_S - (now - job.written), self._write_pending, (job,))
                    job.pending.daemon = True
                    job.pending.start()
            return
        job.written = now
        with self._lock:
            v = job.view
            row = {
                "id": v.id,
                "owner": job.owner,
                "state": v.state,
                "error": v.error,
                "created": v.created,
                "finished": v.finished,
                "files": [_file_row(f) for f in v.files],
            }
        self._stored(lambda store: store.save(row))

    def _write_pending(self, job: _Job) -> None:
        with self._lock:
            job.pending = None
        self._write(job, force=True)

    def _stored(self, call: Any) -> Any:
        """``call(store)``, or None without a store or when the database fails: the job goes
        on, and its own process still shows it."""
        store = self.store
        if store is None:
            return None
        try:
            return call(store)
        except DocentError as e:  # the database is down or full: said once per failure, the job goes on
            logger.warning("job progress not shared through the database: %s", e)
        except Exception:  # a bug: logged with its traceback, never the ingest's end
            logger.exception("job progress not shared through the database")
        return None

    def _prune(self) -> None:
        finished = sorted((j.view.finished or 0.0, i) for i, j in self._jobs.items() if not j.view.running)
        for _, job_id in finished[: max(len(finished) - KEEP_FINISHED, 0)]:
            del self._jobs[job_id]


def _file_row(f: FileProgress) -> dict[str, Any]:
    return {
        "name": f.name,
        "state": f.state,
        "message": f.message,
        "fraction": f.fraction,
        "result": f.result.as_json() if f.result is not None else None,
    }


def _view_of(row: dict[str, Any]) -> JobView:
    """A job another process runs, as its database row says."""
    from rag_core.ingestion import IngestResult

    files = [
        FileProgress(
            f["name"],
            f["state"],
            f["message"],
            float(f["fraction"]),
            IngestResult(**f["result"]) if f.get("result") else None,
        )
        for f in row["files"]
    ]
    state, error = row["state"], row["error"]
    if row.get("lost"):
        state = "lost"
        error = "the app process that ran this upload stopped; the files marked done are indexed, the rest are not"
    return JobView(row["id"], files, state, float(row["created"]), row["finished"], error)


_RUNNERS: dict[str, JobRunner] = {}
_RUNNERS_LOCK = threading.Lock()


def job_runner(data_dir: Path) -> JobRunner:
    """The runner of this data folder in this process."""
    key = str(Path(data_dir).resolve())
    with _RUNNERS_LOCK:
        return _RUNNERS.setdefault(key, JobRunner())
