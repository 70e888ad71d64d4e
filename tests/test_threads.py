"""The local model's threads, chosen for the cores other programs leave free
(rag_core.providers.threads): readings of a fake /proc, the choice, the window of a reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.providers import threads
from rag_core.providers.threads import (
    CpuTimes,
    LoadWatch,
    ThreadChoice,
    choose_threads,
    others_busy,
    read_cpu_times,
)


def write_proc(root: Path, per_cpu: dict[int, tuple[int, int]], own: int) -> Path:
    """A fake /proc: ``per_cpu`` {cpu: (busy ticks, idle ticks)}; ``own`` this process's ticks."""
    lines = ["cpu  1 2 3 4 5 6 7 8 0 0"]  # the machine-wide line: not what is summed
    for cpu, (busy, idle) in per_cpu.items():
        # user nice system idle iowait irq softirq steal guest guest_nice
        lines.append(f"cpu{cpu} {busy - 3} 1 1 {idle - 2} 2 0 1 0 0 0")
    lines.append("intr 12345 0 0")
    (root / "self").mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text("\n".join(lines) + "\n", encoding="ascii")
    fields = ["S"] + ["0"] * 10 + [str(own - 7), "7"] + ["0"] * 30
    (root / "self" / "stat").write_text(f"4242 (python (a) b) {' '.join(fields)}\n", encoding="ascii")
    return root


def test_a_reading_sums_the_cores_this_process_may_run_on(tmp_path):
    proc = write_proc(tmp_path, {0: (500, 100), 1: (50, 550), 2: (900, 0)}, own=120)
    reading = read_cpu_times(proc, cpus={0, 1})
    assert reading is not None
    assert (reading.busy, reading.total, reading.own, reading.cores) == (550, 1200, 120, 2)
    every = read_cpu_times(proc, cpus={0, 1, 2})
    assert every is not None and (every.busy, every.cores) == (1450, 3)


def test_no_proc_no_reading(tmp_path):
    assert read_cpu_times(tmp_path / "missing") is None


def reading(wall: float, busy: int, total: int, own: int, cores: int = 2) -> CpuTimes:
    return CpuTimes(wall, busy, total, own, cores)


def test_others_use_what_is_busy_minus_this_process():
    before = reading(10.0, 1000, 4000, 300)
    # 1 s on 2 cores = 200 ticks: 150 busy, 40 of them ours -> others used 110 ticks = 1.1 cores
    after = reading(11.0, 1150, 4200, 340)
    assert others_busy(before, after) == pytest.approx(1.1)
    # This process alone kept both cores busy: nobody else.
    assert others_busy(before, reading(11.0, 1200, 4200, 500)) == 0.0
    # Too short a window (ticks are 10 ms) or cores that do not pair: no figure.
    assert others_busy(before, reading(10.1, 1010, 4020, 300)) is None
    assert others_busy(before, reading(11.0, 1150, 4300, 340, cores=3)) is None


@pytest.mark.parametrize(
    ("cores", "others", "decode", "batch"),
    [
        (2, 0.05, 2, 2),  # idle: every core for both
        (2, 0.2, 2, 2),  # a browser ticking over: still a free core
        (2, 0.4, 2, 2),  # a browser redrawing: two threads still decode faster than one
        (2, 0.7, 1, 2),  # most of a core taken: decoding leaves it, prompt reading not
        (2, 1.0, 1, 2),  # one core busy (the case)
        (2, 1.9, 1, 1),  # both busy: one thread, no barrier to wait at
        (8, 2.0, 6, 7),
        (1, 0.0, 1, 1),
    ],
)
def test_threads_follow_the_free_cores(cores, others, decode, batch):
    assert choose_threads(cores, others) == ThreadChoice(decode, batch)


def test_no_reading_keeps_the_threads_or_takes_every_core():
    assert choose_threads(4, None) == ThreadChoice(4, 4)
    assert choose_threads(4, None, ThreadChoice(1, 2)) == ThreadChoice(1, 2)


def test_fewer_threads_at_once_more_only_by_a_margin():
    both, one = ThreadChoice(2, 2), ThreadChoice(1, 2)
    assert choose_threads(2, 0.7, both) == one  # others took most of a core: at once
    assert choose_threads(2, 0.55, one) == one  # near the bar: keep (no reload each answer)
    assert choose_threads(2, 0.55, both) == both
    assert choose_threads(2, 0.45, one) == both  # clearly free again


class FakeProc:
    """Readings on a clock the test moves; ``sleep`` moves it too (no real waiting)."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.busy = self.total = self.own = 0
        self.slept: list[float] = []

    def read(self) -> CpuTimes:
        return CpuTimes(self.wall, self.busy, self.total, self.own, 2)

    def run(self, seconds: float, others: float, own: float = 0.0) -> None:
        ticks = int(seconds * 100)
        self.wall += seconds
        self.total += 2 * ticks
        self.busy += int((others + own) * ticks)
        self.own += int(own * ticks)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.run(seconds, others=0.0)


def test_the_load_is_read_from_the_last_mark_old_enough():
    proc = FakeProc()
    watch = LoadWatch(proc.read, proc.sleep)
    watch.mark()
    proc.run(60.0, others=0.0)  # a quiet minute of reading the last answer
    watch.mark()  # the question arrives; another program is started meanwhile
    proc.run(0.5, others=1.0, own=0.8)  # the search: ours does not count
    assert watch.others() == pytest.approx(1.0, abs=0.05)
    assert proc.slept == []


def test_a_stale_window_waits_for_the_young_mark_at_most_the_window():
    proc = FakeProc()
    watch = LoadWatch(proc.read, proc.sleep)
    watch.mark()
    proc.run(120.0, others=0.0)
    watch.mark()  # just now: too young alone, but the other window is two minutes old
    others = watch.others()
    assert proc.slept and sum(proc.slept) <= threads.MIN_WINDOW_S + 0.02
    assert others == pytest.approx(0.0)


def test_without_any_mark_a_reading_makes_its_own_window():
    proc = FakeProc()
    watch = LoadWatch(proc.read, proc.sleep)
    assert watch.others() == pytest.approx(0.0)
    assert len(proc.slept) == 1
    assert LoadWatch(lambda: None, proc.sleep).others() is None
