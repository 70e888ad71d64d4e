"""How many threads the local model gets: chosen for the cores other programs leave free,
again before each answer (``docs/performance.md``, "A busy laptop").

Why it matters: llama.cpp's threads meet at a barrier after every operation of the model's
graph (hundreds per decoded token). When one of two threads shares its core with another
program, the scheduler parks it for milliseconds at a time, the other thread waits at each
barrier, and decoding falls to a quarter of its idle speed; one thread on the free core keeps
most of it. Prompt reading is made of large matrix products whose chunks the threads take in
turn, so a thread on a shared core still helps there: it gets one thread more than decoding.

How the free cores are read: the CPU time of the cores this process may run on (``/proc/stat``)
over a recent window, minus this process's own (``/proc/self/stat``: an ingest in the same app
yields to the answer, see ``answering``), in cores' worth. ``/proc/loadavg`` would not do: it
counts this process's own threads and follows a change over a minute. The window starts at the
newest *mark* (a question arriving, the end of the last generation) at least ``MIN_WINDOW_S``
old. Where ``/proc`` cannot be read (not Linux) every core is used, as before.

The team server (``serve-model``) reuses ``choose_threads`` and ``LoadWatch``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
MIN_WINDOW_S = 0.2  # ticks are 10 ms: 0.2 s on 2 cores reads the load within about 0.05 core
MAX_AGE_S = 30.0  # a window older than this is stale when a younger mark can be waited for
DECODE_SLACK = 0.6  # a core counts for decoding while others use at most 0.6 of it (measured: docs/performance.md)
HYSTERESIS = 0.1  # more threads than now only when the free cores clear the bar by this much


@dataclass(frozen=True)
class CpuTimes:
    """One reading: clock ticks of the cores this process may run on, and its own."""

    wall: float  # time.monotonic()
    busy: int  # ticks the cores spent running anything
    total: int  # ticks the cores spent in all (busy, idle, waiting for disk)
    own: int  # ticks this process spent (all its threads; not its children)
    cores: int  # how many cores the two figures above are summed over


@dataclass(frozen=True)
class ThreadChoice:
    """Threads for decoding (``n_threads``) and for prompt reading (``n_threads_batch``)."""

    decode: int
    batch: int


def usable_cores() -> int:
    """The cores this process may run on (its affinity), not merely those the machine has."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _affinity() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return None


def read_cpu_times(proc: Path = PROC, cpus: set[int] | None = None) -> CpuTimes | None:
    """A reading of ``proc``/stat and ``proc``/self/stat; None where they cannot be read.

    ``cpus``: the cores to sum (default: this process's affinity; every core if unknown)."""
    try:
        stat = (proc / "stat").read_text(encoding="ascii")
        own_stat = (proc / "self" / "stat").read_text(encoding="ascii")
    except OSError:
        return None
    wanted = _affinity() if cpus is None else cpus
    busy = total = cores = 0
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            number = int(name[3:])
            fields = [int(v) for v in rest.split()]
        except ValueError:
            continue
        if wanted is not None and number not in wanted:
            continue
        # user nice system idle iowait irq softirq steal (guest is counted in user already)
        fields += [0] * (8 - len(fields))
        idle = fields[3] + fields[4]
        work = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
        busy, total, cores = busy + work, total + work + idle, cores + 1
    try:
        after_name = own_stat[own_stat.rindex(")") + 2 :].split()
        own = int(after_name[11]) + int(after_name[12])  # utime, stime (fields 14 and 15)
    except (ValueError, IndexError):
        return None
    if not cores:
        return None
    return CpuTimes(time.monotonic(), busy, total, own, cores)


def others_busy(before: CpuTimes, after: CpuTimes) -> float | None:
    """Cores' worth of CPU other processes used between two readings (0 … cores); None when
    the window is too short to tell or the readings do not pair."""
    if after.cores != before.cores or after.wall - before.wall < MIN_WINDOW_S:
        return None
    total = after.total - before.total
    if total <= 0:
        return None
    per_core = total / after.cores  # the window's length in ticks
    busy = (after.busy - before.busy) / per_core
    own = (after.own - before.own) / per_core
    return round(min(float(after.cores), max(0.0, busy - own)), 3)


def _pick(cores: int, others: float) -> ThreadChoice:
    free = max(0.0, cores - others)
    decode = min(cores, max(1, math.floor(free + DECODE_SLACK)))
    batch = min(cores, max(decode, math.floor(free + DECODE_SLACK) + 1))
    return ThreadChoice(decode, batch)


def choose_threads(cores: int, others: float | None, current: ThreadChoice | None = None) -> ThreadChoice:
    """The threads for ``cores`` usable cores while other programs use ``others`` of them.

    Decoding gets the cores that are free, at least one (a core others use 0.6 of or less
    counts: on two cores, two threads decoded faster than one up to half a core taken, as fast
    at 0.65-0.9, and half as fast at a full core); prompt reading one more, at most ``cores``.
    Fewer threads than ``current`` are taken at once (a wrong choice costs most of the speed);
    more only when the cores are free by a margin (``HYSTERESIS``), so that a load near the
    bar does not flip the choice (and reload the model) at every answer. No reading
    (``others`` None): keep ``current``, or every core."""
    cores = max(1, cores)
    if others is None:
        return current or ThreadChoice(cores, cores)
    down = _pick(cores, others)
    if current is None:
        return down
    up = _pick(cores, others + HYSTERESIS)

    def settle(now: int, fewer: int, more: int) -> int:
        return fewer if fewer < now else (more if more > now else now)

    decode = settle(current.decode, down.decode, up.decode)
    batch = settle(current.batch, down.batch, up.batch)
    return ThreadChoice(decode, max(decode, batch))


class LoadWatch:
    """Readings taken at marks, so that the load before an answer is read over a recent
    window without waiting for one. Thread safe; one per process (``LOAD``)."""

    def __init__(
        self,
        read: Callable[[], CpuTimes | None] = read_cpu_times,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._read = read
        self._sleep = sleep
        self._marks: deque[CpuTimes] = deque(maxlen=4)
        self._lock = threading.Lock()

    def mark(self) -> None:
        """Start a window here (a question arrives; a generation ended)."""
        reading = self._read()
        if reading is not None:
            with self._lock:
                self._marks.append(reading)

    def others(self) -> float | None:
        """Cores' worth other processes use now: over the window since the newest mark at
        least ``MIN_WINDOW_S`` old, unless that one is stale and a younger mark can be waited
        for (at most ``MIN_WINDOW_S``). None where ``/proc`` cannot be read."""
        now = self._read()
        if now is None:
            return None
        with self._lock:
            marks = list(self._marks)
        old_enough = [m for m in marks if now.wall - m.wall >= MIN_WINDOW_S]
        start = old_enough[-1] if old_enough else None
        younger = [m for m in marks if now.wall - m.wall < MIN_WINDOW_S]
        if start is None or (now.wall - start.wall > MAX_AGE_S and younger):
            if younger:
                start = younger[-1]
            else:
                start, now = now, now  # no mark at all: make one and wait for the window
            self._sleep(max(0.0, MIN_WINDOW_S - (now.wall - start.wall)) + 0.01)
            now = self._read() or now
        return others_busy(start, now)


LOAD = LoadWatch()
