"""What the benchmarks report: memory readings, medians, 95th percentiles and ratios, rounded
the way the figures in docs/performance.md are written."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence


def rss_mb() -> float:
    """This process's resident memory now, in MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def p95(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 4)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None
