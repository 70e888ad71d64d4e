"""Document names: the identity of a document, the name of its stored copy in ``files/``, and
the name a file is indexed under when a different file has its name (``on_conflict``)."""

from __future__ import annotations

import functools
import hashlib
import os
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
    and no part longer than the file system takes (the stored copy is a file of that name).
    A byte of a file name that is not UTF-8 (``caf\\xe9.txt``, listed as a lone surrogate) is
    kept as ``%E9``: never dropped, so the name stays that file's alone."""
    name = _UNDECODED.sub(lambda m: f"%{ord(m.group()) - 0xDC00:02X}", name)
    name = unicodedata.normalize("NFC", name).replace("\\", "/")
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C")
    parts = [_fit(p) for p in name.split("/") if p not in ("", ".", "..")]
    return "/".join(parts).strip() or "unnamed"


_UNDECODED = re.compile("[\udc80-\udcff]")  # how Python lists a name's bytes that are not UTF-8
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
    """Expand files and folders into (path, name) pairs; names relative to the folder given.

    A path named here is read even when it is a link: the user named it. Inside a folder, a
    link is followed only when it points inside that folder; a link out of it, and every link
    to a folder, is listed with the reason it is not read (``FolderPath``), so the result says so."""
    out: list[tuple[Path, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(_walk(p), key=lambda pair: pair[0]))
        else:
            out.append((p, safe_name(p.name)))
    return out


class FolderPath(type(Path())):  # type: ignore[misc]
    """A path found in a folder given to ``ingest``: ``root`` is that folder (resolved), and
    ``reason`` says why it is not read ('' when it may be, if it still stays in ``root``)."""

    root: Path | None = None
    reason = ""


def _listed(path: Path, root: Path, reason: str = "") -> FolderPath:
    listed = FolderPath(path)
    listed.root, listed.reason = root, reason
    return listed


def _walk(folder: Path) -> Iterable[tuple[Path, str]]:
    """Every entry under ``folder`` that is not a folder or hidden: a named pipe or a device
    is listed, so that it is refused with its reason rather than skipped in silence."""
    real_root = folder.resolve()
    for where, folders, files in os.walk(folder, followlinks=False):
        here = Path(where)
        folders[:] = sorted(d for d in folders if not d.startswith("."))
        for entry in [*folders, *files]:
            path = here / entry
            if entry.startswith("."):
                continue
            name = safe_name(path.relative_to(folder).as_posix())
            if not path.is_symlink():
                if entry in files:
                    yield _listed(path, real_root), name
                continue
            target = path.resolve()
            if not target.is_relative_to(real_root):
                why = f"a link to {target}, outside the folder given: not followed (name it to ingest it)"
                yield _listed(path, real_root, why), name
            elif target.is_dir():
                why = f"a link to the folder {target}: not followed (its files are ingested from there)"
                yield _listed(path, real_root, why), name
            else:
                yield _listed(path, real_root), name


@functools.cache
def _kernel_devices() -> frozenset[int]:
    """The devices of /proc and /sys: the kernel's view of processes and hardware."""
    return frozenset(os.stat(d).st_dev for d in ("/proc", "/sys") if os.path.isdir(d))


def refusal(path: Path) -> str | None:
    """Why ``path`` is never read, whoever named it (None: it may be): a link a folder
    ingest did not follow, or a file of /proc or /sys (a process's environment, its memory)."""
    if isinstance(path, FolderPath) and path.reason:
        return path.reason
    try:
        device = os.stat(path).st_dev
        real = path.resolve()
    except (OSError, RuntimeError):
        return None  # not there: its turn says so
    if isinstance(path, FolderPath) and path.root is not None and not real.is_relative_to(path.root):
        return f"it leads to {real} now, outside the folder given (a link put there since it was listed): not followed"
    if device in _kernel_devices() or real.is_relative_to("/proc") or real.is_relative_to("/sys"):
        return f"{real} is a file of /proc or /sys, the system's view of its processes, not a document: never read"
    return None


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
