"""Document names: the identity of a document, the name of its stored copy in ``files/``, and
the name a file is indexed under when a different file has its name (``on_conflict``)."""

from __future__ import annotations

import hashlib
import re
import stat
import time
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rag_core.errors import IngestError

if TYPE_CHECKING:
    from rag_core.storage import DocumentRecord, DocumentRegistry

OnConflict = Literal["ask", "replace", "keep_both"]


class NameTaken(IngestError):
    """A different file of this name is indexed: refused until told to replace it or keep both."""


def free_name(registry: DocumentRegistry, files: Path, name: str, sha: str) -> str:
    """For keep-both: the first ``name (N)`` not taken, or the one that holds this very file."""
    for n in range(2, 10_000):
        candidate = numbered(name, n)
        rec = registry.get(candidate)
        if rec is None and not (files / candidate).exists():
            return candidate
        if rec is not None and rec.status == "indexed" and rec.sha256 == sha:
            return candidate
    raise IngestError(name, "too many files of this name; rename it before uploading")


def index_target(
    registry: DocumentRegistry, files: Path, name: str, sha: str, on_conflict: OnConflict
) -> tuple[str, DocumentRecord | None]:
    """The name to index the file of ``sha`` under, and the indexed document of that name, if
    any; ``NameTaken`` when a different file has the name and ``on_conflict`` is ``ask``."""
    existing = registry.get(name)
    if existing is None or existing.status != "indexed" or existing.sha256 == sha:
        return name, existing
    if on_conflict == "replace":
        return name, existing
    if on_conflict == "keep_both":
        target = free_name(registry, files, name, sha)
        return target, registry.get(target)
    added = time.strftime("%Y-%m-%d %H:%M", time.localtime(existing.added))
    raise NameTaken(
        name,
        f"a different file of this name is already indexed (added {added}); choose to replace it or to keep both",
    )


def safe_name(name: str) -> str:
    """A display/identity name: NFC, no control characters, no '..' or absolute parts,
    and no part longer than the file system takes (the stored copy is a file of that name)."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/")
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C")
    parts = [_fit(p) for p in name.split("/") if p not in ("", ".", "..")]
    return "/".join(parts).strip() or "unnamed"


MAX_NAME_BYTES = 200  # per path part; file systems allow 255 bytes, and '.tmp' is added while copying


def _fit(part: str) -> str:
    """A too-long part (a Windows name of 100 Chinese characters is 300 UTF-8 bytes) keeps its
    extension and gets a short hash of the full part, so two long names stay two documents."""
    if len(part.encode()) <= MAX_NAME_BYTES:
        return part
    stem, dot, ext = part.rpartition(".")
    suffix = f".{ext}" if dot and stem and len(ext.encode()) <= 15 else ""
    stem = stem if suffix else part
    tag = "~" + hashlib.sha256(part.encode()).hexdigest()[:8]
    budget = MAX_NAME_BYTES - len(suffix.encode()) - len(tag)
    return stem.encode()[:budget].decode(errors="ignore") + tag + suffix


def upload_name(name: str) -> str:
    """The document name of an upload: only the last part of what the browser sent."""
    return safe_name(Path(name.replace("\\", "/")).name)


def numbered(name: str, n: int) -> str:
    """``report.pdf`` → ``report (2).pdf`` (folders kept: ``a/report (2).pdf``)."""
    folder, _, base = name.rpartition("/")
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem:
        stem, ext = base, ""
    stem = re.sub(r" \(\d+\)$", "", stem)
    return f"{folder + '/' if folder else ''}{stem} ({n}){'.' + ext if ext else ''}"


def iter_inputs(paths: Iterable[Path]) -> list[tuple[Path, str]]:
    """Expand files and folders into (path, name) pairs; names relative to the folder given."""
    out: list[tuple[Path, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            # Every entry that is not a folder: a named pipe or a socket is listed, so it is refused
            # with its reason rather than skipped in silence.
            for f in sorted(x for x in p.rglob("*") if not x.is_dir()):
                if any(part.startswith(".") for part in f.relative_to(p).parts):
                    continue
                out.append((f, safe_name(f.relative_to(p).as_posix())))
        else:
            out.append((p, safe_name(p.name)))
    return out


def special_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words ("a named pipe")."""
    for test, what in (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return what
    return "a special file"
