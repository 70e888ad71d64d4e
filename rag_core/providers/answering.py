"""The process-wide "an answer is being written" gate: background indexing in the same app
waits while someone waits for an answer.

Embedding a batch of chunks takes both cores for a second or two; the same cores are what
reads the answer's prompt and writes its words. A person asking a question waits on the
answer, not on the indexing: so a ``Turn`` holds the gate while it prepares and writes its
answer, and the embedding (``ingestion.transforms.BatchedEmbedder``) waits before each batch
until no answer holds it. The batch already running finishes first (it cannot be cut).

A hold always ends: it is a context manager, released when the answer's words end, stop or
fail, or when its generator is closed. If one ever leaked, a hold older than ``MAX_HOLD_S``
no longer stops anyone (an indexing job cannot stall for good).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

MAX_HOLD_S = 600.0  # ten minutes: far beyond the longest answer on a busy laptop
POLL_S = 0.5  # how often a waiter checks whether its job was cancelled


class AnswerGate:
    """Counts the answers being written; ``wait_clear`` blocks while there is one."""

    def __init__(self, max_hold_s: float = MAX_HOLD_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_hold_s = max_hold_s
        self._clock = clock
        self._holds: dict[int, float] = {}  # hold id -> when it began
        self._next = 0
        self._last_end = -float("inf")  # when the last hold ended (``quiet_s``)
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the gate for the duration of the ``with`` block (holds may overlap)."""
        with self._changed:
            self._next += 1
            key = self._next
            self._holds[key] = self._clock()
        try:
            yield
        finally:
            with self._changed:
                self._holds.pop(key, None)
                self._last_end = self._clock()
                self._changed.notify_all()

    def hold_if(self, on: bool) -> contextlib.AbstractContextManager[None]:
        """``hold`` when ``on`` (a turn, with ``answer_pauses_indexing``), else nothing."""
        return self.hold() if on else contextlib.nullcontext()

    @property
    def held(self) -> bool:
        with self._changed:
            return self._live()

    def _live(self) -> bool:
        now = self._clock()
        stale = [k for k, began in self._holds.items() if now - began > self.max_hold_s]
        for key in stale:
            logger.warning("an answer held the indexing for over %.0f s: the indexing goes on", self.max_hold_s)
            del self._holds[key]
        return bool(self._holds)

    def quiet_s(self) -> float:
        """Seconds since the last answer ended: 0 while one is being written."""
        with self._changed:
            return 0.0 if self._live() else self._clock() - self._last_end

    def wait_quiet(self, seconds: float) -> None:
        """Block until no answer has been written for ``seconds`` (work nobody waits for, such
        as a document's suggested questions, starts only while the person reads)."""
        while True:
            quiet = self.quiet_s()
            if quiet >= seconds:
                return
            with self._changed:
                self._changed.wait(min(POLL_S, seconds - quiet) if quiet else POLL_S)

    def wait_clear(self, check: Callable[[], None] | None = None) -> float:
        """Block while an answer is being written; the seconds waited. ``check`` runs every
        ``POLL_S`` while waiting and may raise (a cancelled job stops waiting at once)."""
        started = time.perf_counter()
        with self._changed:
            while self._live():
                if check is not None:
                    check()
                self._changed.wait(POLL_S)
        return time.perf_counter() - started


ANSWERING = AnswerGate()
