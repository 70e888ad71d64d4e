"""What the converters of the shared evaluation sets have in common: file names, the corpus
folder and the JSONL question files (see docs/evaluation.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def safe_name(stem: str) -> str:
    """A file name made of letters, digits, '-', '_' and '.' only."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)


def write_corpus(folder: Path, files: dict[str, str]) -> None:
    """Write the corpus files, leaving unchanged ones untouched (their mtimes key the
    evaluation's index cache) and removing files that are no longer part of it."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.name not in files:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    for name, text in files.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
