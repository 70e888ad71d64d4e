"""Figures written for people rather than for code."""

from __future__ import annotations


def human_size(size: int) -> str:
    """``512 B``, ``1.5 MB``: a file's size as a person reads it (powers of 1024)."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
