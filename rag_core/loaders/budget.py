"""A time and memory budget per file: ``load_file_guarded`` parses in a worker process.

A file can be small and still take minutes and gigabytes to read (a 240 KB .docx holding
95 MB of XML), and a parse running in the app's own process cannot be stopped. So the file
is parsed by ``worker.py`` in a child process, under an address-space limit (RLIMIT_AS) it
sets for each job, while this side waits at most ``timeout_s`` and kills it past that.

OCR (scanned pages) runs in the same worker, under a budget that grows with the pages it has
to read: the worker says how many before the first one, and each scanned page adds
``ocr_page_s`` seconds (by default ``timeout_s``, the same allowance as a whole file's parse:
a ceiling against a hang, not an estimate), which is also the most one page may take; the
file's memory budget gains ``OCR_MEMORY_MB`` for the model and one page image. A refusal
says which budget ran out, and at which page.

The worker is started once and reused: it pays the interpreter start and the imports
(llama_index) once, not per file. Streamlit ingests from several threads: a call
takes the idle worker, or starts another one when that worker is busy; one idle worker is
kept and extra ones exit when done. A killed worker is replaced on the next call.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from rag_core.errors import IngestCancelled, IngestError
from rag_core.loaders.documents import LoadedFile
from rag_core.loaders.worker import BOOTSTRAP

_STARTUP_TIMEOUT_S = 120.0  # importing llama_index on a busy machine
_MAX_IDLE = 1  # workers kept between files
_RETIRE_RSS_MB = 1024  # a worker that kept more than this after a file is replaced
_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds rag_core/
OCR_MEMORY_MB = 1024  # the OCR model (~0.6 GB of address space) and one page image, on top of memory_mb

Progress = Callable[[str, float], None]  # (message, share of the reading done)
logger = logging.getLogger(__name__)


def load_file_guarded(
    path: Path,
    name: str,
    sha256: str,
    *,
    timeout_s: float = 120.0,
    memory_mb: int = 2048,
    cancelled: Callable[[], bool] | None = None,
    ocr: bool | None = None,
    ocr_cache: Path | None = None,
    progress: Progress | None = None,
    ocr_page_s: float | None = None,
    ocr_memory_mb: int = OCR_MEMORY_MB,
) -> LoadedFile:
    """``load_file`` in a worker process: at most ``timeout_s`` seconds, and at most
    ``memory_mb`` MB of memory on top of what the idle worker holds, plus the OCR allowance
    when scanned pages are read (``ocr`` True; False: refused as needing OCR, said to be off;
    None: as ``load_file`` alone). ``ocr_cache``: an earlier result of OCR for this file.
    Raises ``IngestError`` for a refused file, and for one that goes over a budget;
    ``IngestCancelled`` (the worker killed) as soon as ``cancelled()`` turns true."""
    from rag_core.loaders import check_supported, load_file
    from rag_core.loaders.ocr import OcrRequest, read_sidecar

    check_supported(name)  # no worker for a type that is refused anyway
    if os.name != "posix":  # no pass_fds, no RLIMIT_AS: read it here, without a budget
        request = None if ocr is None else OcrRequest(enabled=ocr, cached=read_sidecar(ocr_cache) if ocr else {})
        return load_file(path, name, sha256, request)
    options = (
        {} if ocr is None else {"ocr": ocr, "ocr_memory_mb": ocr_memory_mb, "ocr_cache": ocr_cache and str(ocr_cache)}
    )
    job = (os.path.abspath(path), name, sha256, memory_mb, options)
    scan = _Scan(timeout_s if ocr_page_s is None else ocr_page_s, progress, timeout_s)
    try:
        worker = _checkout(cancelled)  # starting one takes a while on a busy machine: Cancel works meanwhile
    except _Cancelled:
        raise IngestCancelled(name) from None
    try:
        try:
            worker.send(job)
        except OSError:  # the idle worker is gone (killed from outside): one fresh start
            worker.kill()
            worker = _Worker()
            worker.send(job)
        reply = worker.wait(timeout_s, cancelled, scan.event, lambda: scan.page_deadline, scan.tick)
    except _Cancelled:
        worker.kill()
        raise IngestCancelled(name) from None
    except _TimedOut:
        worker.kill()
        if scan.pages:
            raise IngestError(name, scan.too_slow()) from None
        raise IngestError(
            name, f"took too long to read (over {timeout_s:g} s): the file is too complex or damaged"
        ) from None
    except _Died as died:
        worker.kill()
        if died.near_limit or died.returncode == -signal.SIGKILL:
            raise IngestError(name, scan.too_big(memory_mb) if scan.pages else _too_big(memory_mb)) from None
        raise IngestError(name, f"damaged file that cannot be read (the reader stopped: {died.how})") from None
    except BaseException:
        worker.kill()
        raise
    status, *rest, logs, rss_mb = reply
    _replay(logs)
    if status == "memory" or rss_mb > _RETIRE_RSS_MB:
        worker.kill()  # memory it may not give back: start afresh next time
    else:
        _checkin(worker)
    if status == "ok":
        return rest[0]
    if status == "refused":
        raise IngestError(name, rest[0])
    if status == "memory":
        raise IngestError(name, scan.too_big(memory_mb) if scan.pages else _too_big(memory_mb))
    raise RuntimeError(f"reading {name} failed in the worker process: {rest[0]}\n{rest[1]}")


def _too_big(memory_mb: int) -> str:
    return f"needs more than {memory_mb} MB of memory to read: the file is too complex or damaged"


class _Scan:
    """What the worker said about OCR: the pages to read, the one being read; the deadline and
    memory it adds; the progress shown and the refusal written when a budget runs out."""

    def __init__(self, page_s: float, progress: Progress | None, timeout_s: float = 0.0) -> None:
        self.page_s, self.progress, self.timeout_s = page_s, progress, timeout_s
        self.pages = self.page = self.done = self.extra_mb = 0
        self.page_deadline = float("inf")
        self._shown = 0

    def tick(self, elapsed: float) -> None:
        """A long read without pages to count (a huge .docx): the seconds it has taken, out of
        the most it may, every second, so that the wait is seen and can be cancelled."""
        if self.progress is None or self.pages or int(elapsed) <= self._shown:
            return
        self._shown = int(elapsed)
        self.progress(
            f"reading ({self._shown} s; refused past {self.timeout_s:g} s)", min(elapsed / self.timeout_s, 1.0)
        )

    def event(self, message: tuple, worker: _Worker) -> float:
        """Handle one message from the worker; returns the seconds it adds to the deadline."""
        if message[0] == "ocr":
            self.pages, self.extra_mb = int(message[1]), int(message[2])
            worker.limit_kb += self.extra_mb * 1024
            return self.pages * self.page_s
        if message[0] == "progress":
            self.page, k, self.pages = int(message[1]), int(message[2]), int(message[3])
            self.done = k - 1
            self.page_deadline = float(message[4]) + self.page_s  # from when the worker began the page
            if self.progress is not None:
                where = f"{k} of {self.pages}" if k == self.page else f"{self.page} ({k} of {self.pages} scanned pages)"
                self.progress(f"OCR page {where}", self.done / max(self.pages, 1))
        return 0.0

    def too_slow(self) -> str:
        if time.monotonic() >= self.page_deadline:
            what = f"page {self.page} was not read within {self.page_s:g} s, the most one scanned page may take"
        else:
            what = f"the file's time budget ran out at page {self.page or '?'} ({self.page_s:g} s per scanned page)"
        return f"OCR took too long: {what}; {self.done} of {self.pages} scanned pages read"

    def too_big(self, memory_mb: int) -> str:
        return (
            f"OCR needs more than {memory_mb + self.extra_mb} MB of memory ({memory_mb} MB for the file, "
            f"{self.extra_mb} MB for OCR) at page {self.page or '?'}: the page is too large or the file is damaged"
        )


def _replay(records: list[dict]) -> None:
    for rec in records:
        target = logging.getLogger(rec["name"])
        if target.isEnabledFor(rec["levelno"]):
            target.handle(logging.makeLogRecord(rec))


class _TimedOut(Exception):
    pass


class _Cancelled(Exception):
    pass


class _Died(Exception):
    def __init__(self, returncode: int | None, near_limit: bool) -> None:
        super().__init__(returncode)
        self.returncode, self.near_limit = returncode, near_limit
        if returncode is not None and returncode < 0:
            try:
                self.how = signal.Signals(-returncode).name
            except ValueError:
                self.how = f"signal {-returncode}"
        else:
            self.how = f"exit code {returncode}"


class _Worker:
    """One child process and the two pipes to it: jobs in, results out."""

    def __init__(self, cancelled: Callable[[], bool] | None = None) -> None:
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", BOOTSTRAP, str(_ROOT), str(_ROOT / "rag_core"), str(job_r), str(res_w)],
                stdin=subprocess.DEVNULL,
                pass_fds=(job_r, res_w),
            )
        except BaseException:
            for fd in (job_r, job_w, res_r, res_w):
                os.close(fd)
            raise
        os.close(job_r)
        os.close(res_w)
        self.jobs = Connection(job_w, readable=False)
        self.results = Connection(res_r, writable=False)
        self.limit_kb = 0
        ready, deadline = None, time.monotonic() + _STARTUP_TIMEOUT_S
        try:
            while ready is None and time.monotonic() < deadline:
                if cancelled is not None and cancelled():
                    self.kill()
                    raise _Cancelled
                if self.results.poll(0.25):
                    ready = self.results.recv()
        except (EOFError, OSError):
            ready = None
        if not ready or ready[0] != "ready":
            self.kill()
            raise RuntimeError(f"the worker process that reads files did not start (exit code {self.proc.returncode})")

    def send(self, job: tuple) -> None:
        self.limit_kb = self._vm_kb() + job[3] * 1024  # as the worker sets it
        self.jobs.send(job)

    def wait(
        self,
        timeout_s: float,
        cancelled: Callable[[], bool] | None = None,
        on_event: Callable[[tuple, _Worker], float] | None = None,
        step_deadline: Callable[[], float] | None = None,
        tick: Callable[[float], None] | None = None,
    ) -> tuple:
        """The reply to the job sent, waiting at most ``timeout_s`` (and not past a cancel).
        Messages before the reply (OCR's page count and progress) go to ``on_event``, whose
        answer extends the deadline by so many seconds; ``step_deadline()`` is a nearer one
        (the page being read); ``tick`` hears the seconds waited so far."""
        started = time.monotonic()
        deadline = started + timeout_s
        peak_kb = 0
        while True:
            remaining = min(deadline, step_deadline() if step_deadline else deadline) - time.monotonic()
            if remaining <= 0:
                raise _TimedOut
            if cancelled is not None and cancelled():
                raise _Cancelled
            if tick is not None:
                tick(time.monotonic() - started)
            try:
                if self.results.poll(min(0.25, remaining)):
                    reply = self.results.recv()
                    if reply[0] in ("ocr", "progress"):
                        deadline += on_event(reply, self) if on_event else 0.0
                        continue
                    return reply
            except (EOFError, OSError):
                self.proc.wait()
                raise _Died(self.proc.returncode, near_limit=peak_kb > 0.8 * self.limit_kb) from None
            peak_kb = max(peak_kb, self._vm_kb())

    def _vm_kb(self) -> int:
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                return next((int(line.split()[1]) for line in f if line.startswith("VmSize:")), 0)
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        """Let an idle worker exit (it stops when its job pipe closes)."""
        self.jobs.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for conn in (self.jobs, self.results):
            if not conn.closed:
                conn.close()


_lock = threading.Lock()
_changed = threading.Condition(_lock)  # a worker started ahead (``warm``) is ready, or failed
_idle: list[_Worker] = []
_warming = 0  # workers being started ahead of a file
_warmed = False  # ``warm`` ran in this process: once is enough (a busy worker must not get a twin)


def warm() -> threading.Thread | None:
    """Start the worker before the first file comes, in a background thread: the first upload
    then does not wait for its interpreter and imports (about a second on two cores). Once per process;
    nothing when a worker is idle already, or where files are read without one (not POSIX)."""
    global _warming, _warmed
    if os.name != "posix":
        return None
    with _lock:
        if _warmed or _idle:
            return None
        _warmed = True
        _warming += 1

    def start() -> None:
        global _warming
        worker = None
        try:
            worker = _Worker()
        except Exception as e:  # the first file starts its own, and says why if it cannot
            logger.debug("the reading worker was not started ahead: %s", e)
        finally:
            with _lock:
                _warming -= 1
                if worker is not None and len(_idle) < _MAX_IDLE:
                    _idle.append(worker)
                    worker = None
                _changed.notify_all()
        if worker is not None:
            worker.close()

    thread = threading.Thread(target=start, name="docent-reader-ahead", daemon=True)
    thread.start()
    return thread


def _checkout(cancelled: Callable[[], bool] | None = None) -> _Worker:
    with _lock:
        while _warming and not _idle:  # one is starting ahead: take it rather than start another
            if cancelled is not None and cancelled():
                raise _Cancelled
            _changed.wait(0.25)
        if _idle:
            return _idle.pop()
    return _Worker(cancelled)  # started outside the lock: another thread's file need not wait for it


def _checkin(worker: _Worker) -> None:
    with _lock:
        if len(_idle) < _MAX_IDLE:
            _idle.append(worker)
            return
    worker.close()


@atexit.register
def _close_idle() -> None:
    with _lock:
        workers, _idle[:] = list(_idle), []
    for worker in workers:
        worker.kill()
