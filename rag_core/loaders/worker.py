"""The child side of ``load_file_guarded``: a long-lived process that reads one file per job
under an address-space limit and sends back the ``LoadedFile`` or the refusal.

Started by ``budget.py`` with the two pipe ends it talks through; it exits when the job
pipe closes (the app is done with it) or when its parent process is gone.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path

try:
    import resource
except ImportError:  # not POSIX: the time budget still holds
    resource = None  # type: ignore[assignment]

# The parent starts this module without running rag_core/__init__.py (the app: the chat
# engine, Chroma...): the loaders need only themselves, rag_core.errors, rag_core.pdfium and llama_index.
# llama_index.core's own __init__ likewise imports every index, engine and LLM class (1.1 s of
# the worker's 1.9 s start on two cores): the loaders need its schema only, so that package
# stands in empty too, its modules found where they are.
BOOTSTRAP = (
    "import importlib.util, sys, types\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "pkg = types.ModuleType('rag_core')\n"
    "pkg.__path__ = [sys.argv[2]]\n"
    "sys.modules['rag_core'] = pkg\n"
    "core = types.ModuleType('llama_index.core')\n"
    "core.__path__ = list(importlib.util.find_spec('llama_index.core').submodule_search_locations)\n"
    "sys.modules['llama_index.core'] = core\n"
    "from rag_core.loaders.worker import main\n"
    "main(int(sys.argv[3]), int(sys.argv[4]))\n"
)


_RECORD_FIELDS = ("name", "levelno", "levelname", "pathname", "lineno", "funcName", "created")


class _Capture(logging.Handler):
    """Log records of the current job, sent back so that they reach the app's own logging."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < 200:
            fields = {key: getattr(record, key) for key in _RECORD_FIELDS}
            self.records.append({**fields, "msg": record.getMessage(), "args": None})

    def take(self) -> list[dict]:
        out, self.records = self.records, []
        return out


def _status_kb(field: str) -> int:
    """A field of /proc/self/status in kB (VmSize, VmRSS), 0 where there is no /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


@contextmanager
def _memory_limit(memory_mb: int) -> Iterator[Callable[[int], None]]:
    """Let this job add at most ``memory_mb`` of address space to what the idle worker holds:
    past it, allocations fail and Python raises MemoryError. Yields a function that raises
    the limit by some MB (OCR: its model and page images come on top of the file's budget)."""
    if resource is None or not _status_kb("VmSize"):
        yield lambda mb: None
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _status_kb("VmSize") * 1024 + memory_mb * 2**20

    def set_limit(value: int) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))

    def extend(mb: int) -> None:
        nonlocal limit
        limit += mb * 2**20
        set_limit(limit)

    set_limit(limit)
    try:
        yield extend
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _exit_when_orphaned(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def main(job_fd: int, result_fd: int) -> None:
    jobs, results = Connection(job_fd, writable=False), Connection(result_fd, readable=False)
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    capture = _Capture()
    root = logging.getLogger()
    root.addHandler(capture)
    root.setLevel(logging.INFO)

    from rag_core.errors import IngestError
    from rag_core.loaders import load_file

    try:
        results.send(("ready", os.getpid()))
    except OSError:  # the parent is gone already (a command that stopped at a bad setting): nothing to tell
        return
    while True:
        try:
            path, name, sha256, memory_mb, *more = jobs.recv()
        except (EOFError, OSError):
            return
        options: dict = more[0] if more else {}
        capture.take()
        try:
            with _memory_limit(memory_mb) as extend:
                request = _ocr_request(options, results, extend) if "ocr" in options else None
                reply: tuple = ("ok", load_file(Path(path), name, sha256, request))
        except IngestError as e:
            reply = ("refused", e.reason)
        except MemoryError:
            reply = ("memory",)
        except BaseException as e:  # a bug: the parent raises it with this traceback
            reply = ("error", f"{type(e).__name__}: {e}", traceback.format_exc())
        try:
            results.send((*reply, capture.take(), _status_kb("VmRSS") // 1024))
        except (EOFError, OSError):
            return
        except Exception as e:  # the result would not pickle
            results.send(("error", f"cannot send the result back: {e}", traceback.format_exc(), [], 0))


def _ocr_request(options: dict, results: Connection, extend: Callable[[int], None]):
    """OCR as the job's options ask, telling the parent before the first page (how many, and
    the memory added) and before each page (which), so that it can extend its deadline and
    show progress."""
    from rag_core.loaders.ocr import OcrRequest, read_sidecar

    extra_mb = int(options.get("ocr_memory_mb", 0))

    def before_ocr(pages: int) -> None:
        extend(extra_mb)
        results.send(("ocr", pages, extra_mb))

    def progress(page: int, k: int, of: int) -> None:
        results.send(("progress", page, k, of, time.monotonic()))  # the clock is the system's: the parent's too

    return OcrRequest(
        enabled=bool(options.get("ocr")),
        cached=read_sidecar(options.get("ocr_cache")) if options.get("ocr") else {},
        progress=progress,
        before_ocr=before_ocr,
    )


if __name__ == "__main__":  # python -m rag_core.loaders.worker JOB_FD RESULT_FD
    main(int(sys.argv[1]), int(sys.argv[2]))
