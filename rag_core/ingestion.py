"""Ingestion: files in, chunks with vectors out, through one LlamaIndex IngestionPipeline.

Identity is the document's *name* (a file's name, or its path relative to a folder
given to ``ingest``). For one document:

1. Its bytes' sha256 equals the registry's → ``skipped`` without parsing.
2. Otherwise the registry row goes ``pending``, the file is parsed into page/section
   Documents with stable ids (``name::p0003``), pages that disappeared are deleted,
   and the pipeline (``DocstoreStrategy.UPSERTS``) re-embeds only pages whose content
   hash changed. The docstore is persisted atomically, a copy of the file is kept
   (for rebuilds), and only then does the row turn ``indexed``.
3. A crash at any point leaves a ``pending`` row; ``recover()`` (run on start-up)
   removes that document's vectors, docstore entries and row, so a document is
   either fully indexed or absent.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter

from rag_core import loaders
from rag_core.errors import DocentError, IngestError, NotFoundError
from rag_core.files import Progress, atomic_copy, file_digest
from rag_core.index import VectorIndex, stored_files_dir
from rag_core.settings import DocentSettings
from rag_core.store import DocumentRecord, DocumentRegistry

logger = logging.getLogger(__name__)


@dataclass
class IngestResult:
    """The outcome for one file; ``as_json`` is the CLI's ``--json`` contract."""

    file: str
    status: str  # indexed | skipped | replaced | failed
    reason: str = ""
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        d = asdict(self)
        d["seconds"] = round(self.seconds, 3)
        return d


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


def iter_inputs(paths: Iterable[Path]) -> list[tuple[Path, str]]:
    """Expand files and folders into (path, name) pairs; names relative to the folder given."""
    out: list[tuple[Path, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                if any(part.startswith(".") for part in f.relative_to(p).parts):
                    continue
                out.append((f, safe_name(f.relative_to(p).as_posix())))
        else:
            out.append((p, safe_name(p.name)))
    return out


class IngestionService:
    """Adds, replaces, deletes and lists documents; keeps Chroma, docstore and registry in step."""

    def __init__(self, settings: DocentSettings, index: VectorIndex, registry: DocumentRegistry) -> None:
        self.settings = settings
        self.index = index
        self.registry = registry

    # ------------------------------------------------------------------ pipeline
    def _pipeline(self) -> IngestionPipeline:
        splitter = SentenceSplitter(
            chunk_size=self.settings.chunk_size,
            chunk_overlap=min(self.settings.chunk_overlap, self.settings.chunk_size // 2),
        )
        return IngestionPipeline(
            transformations=[splitter, self.index.embed_model],
            docstore=self.index.docstore,
            vector_store=self.index.vector_store,
            docstore_strategy=DocstoreStrategy.UPSERTS,
            disable_cache=True,
        )

    # ------------------------------------------------------------------ public API
    def ingest_paths(self, paths: Iterable[Path], progress: Progress | None = None) -> list[IngestResult]:
        return [self.ingest_file(p, name, progress) for p, name in iter_inputs(paths)]

    def ingest_file(self, path: Path, name: str | None = None, progress: Progress | None = None) -> IngestResult:
        """Ingest one file; never raises for a bad file (the result says why it failed)."""
        name = safe_name(name or Path(path).name)
        started = time.perf_counter()
        report = progress or (lambda msg, frac: None)
        try:
            result = self._ingest(Path(path), name, report)
        except IngestError as e:
            result = IngestResult(name, "failed", reason=e.reason)
        except DocentError as e:
            result = IngestResult(name, "failed", reason=str(e))
        except OSError as e:  # unreadable input, disk full, ...: say so, not "unexpected error"
            logger.warning("file system error ingesting %s: %s", name, e)
            result = IngestResult(name, "failed", reason=f"file system error: {e.strerror or e}")
        except Exception as e:  # a parser bug must not stop the batch
            logger.exception("unexpected error ingesting %s", name)
            result = IngestResult(name, "failed", reason=f"unexpected error: {type(e).__name__}: {e}"[:300])
        result.seconds = time.perf_counter() - started
        report(f"{name}: {result.status}" + (f" ({result.reason})" if result.reason else ""), 1.0)
        return result

    def ingest_bytes(self, data: bytes, name: str, progress: Progress | None = None) -> IngestResult:
        """For uploads: write to a temp file, then ingest under ``name``."""
        name = safe_name(Path(name.replace("\\", "/")).name)
        suffix = Path(name).suffix
        with tempfile.TemporaryDirectory(prefix="docent-upload-") as tmp:
            tmp_path = Path(tmp) / f"upload{suffix}"
            tmp_path.write_bytes(data)
            return self.ingest_file(tmp_path, name, progress)

    def delete(self, name: str) -> None:
        with self.index.writer():
            if self.registry.get(name) is None and name not in self.index.docstore_names():
                raise NotFoundError(f"No document named {name!r}; `python -m rag_core docs list` shows them.")
            self.index.delete_document(name)
            self.registry.remove(name)
            stored = stored_files_dir(self.settings) / name
            stored.unlink(missing_ok=True)

    def documents(self) -> list[DocumentRecord]:
        return self.registry.list()

    def recover(self) -> list[str]:
        """Remove what an interrupted ingestion left behind. Returns the names cleaned.

        Skipped while another context or process holds the write lock: its 'pending'
        document is being ingested, not abandoned."""
        cleaned = []
        with self.index.writer(wait=False) as acquired:
            if not acquired:
                return []
            for rec in self.registry.list(status="pending"):
                self.index.delete_document(rec.name)
                self.registry.remove(rec.name)
                cleaned.append(rec.name)
            indexed = {r.name for r in self.registry.list()}
            for name in (self.index.docstore_names() | self.index.chroma_names()) - indexed:
                self.index.delete_document(name)
                cleaned.append(name)
        if cleaned:
            logger.warning("removed half-ingested documents: %s", ", ".join(sorted(set(cleaned))))
        return sorted(set(cleaned))

    def rebuild(self, progress: Progress | None = None) -> list[IngestResult]:
        """Drop the index and re-ingest every stored file with the current settings."""
        with self.index.writer():
            records = self.registry.list(status=None)
            self.index.reset()
            for rec in records:
                self.registry.remove(rec.name)
        files = stored_files_dir(self.settings)
        results = []
        for rec in records:
            src = files / rec.name
            if src.exists():
                results.append(self.ingest_file(src, rec.name, progress))
            else:
                results.append(IngestResult(rec.name, "failed", reason="stored copy missing; upload it again"))
        return results

    # ------------------------------------------------------------------ internals
    def _ingest(self, path: Path, name: str, report: Progress) -> IngestResult:
        if not path.exists():
            raise IngestError(name, "file not found")
        size = path.stat().st_size
        limit = self.settings.max_file_mb * 1024 * 1024
        if size > limit:
            raise IngestError(name, f"too large: {size / 1e6:.1f} MB (limit {self.settings.max_file_mb} MB)")
        loaders.check_supported(name)
        self.index.ensure_compatible()
        sha = file_digest(path)
        existing = self.registry.get(name)
        if existing and existing.status == "indexed" and existing.sha256 == sha:
            return IngestResult(name, "skipped", reason="unchanged", pages=existing.pages, chunks=existing.chunks)

        report(f"{name}: reading", 0.05)
        loaded = loaders.load_file_guarded(
            path, name, sha, timeout_s=self.settings.parse_timeout_s, memory_mb=self.settings.parse_memory_mb
        )
        same = [r.name for r in self.registry.find_by_sha(sha) if r.name != name]
        if same:
            loaded.warnings.append(f"same content as {', '.join(same)} (indexed under both names)")
        report(f"{name}: {len(loaded.documents)} part(s) read; embedding", 0.3)

        with self.index.writer():
            kind = loaded.kind
            self.registry.mark_pending(name, sha, size, kind)
            try:
                keep = {d.id_ for d in loaded.documents}
                self.index.delete_refs([ref for ref in self.index.ref_doc_ids_for(name) if ref not in keep])
                self._run_pipeline(loaded, name, report)
                self.index.persist_docstore()
                self._keep_copy(path, name)
                chunks = self.index.chunk_count(name)
                self.registry.mark_indexed(name, loaded.pages, chunks)
                self.index.bump()
            except Exception:
                self._discard(name)
                raise
        status = "replaced" if existing and existing.status == "indexed" else "indexed"
        return IngestResult(name, status, pages=loaded.pages, chunks=chunks, warnings=loaded.warnings)

    def _run_pipeline(self, loaded: loaders.LoadedFile, name: str, report: Progress) -> None:
        pipeline = self._pipeline()
        docs = loaded.documents
        batch = 16  # pages per run: progress for long PDFs, bounded memory
        for start in range(0, len(docs), batch):
            pipeline.run(documents=docs[start : start + batch])
            done = min(start + batch, len(docs))
            report(f"{name}: embedded {done}/{len(docs)} part(s)", 0.3 + 0.65 * done / len(docs))

    def _discard(self, name: str) -> None:
        """After a failure mid-way: remove what this document left, as recovery would on the
        next start, so the running app stays consistent (the document is absent, never half)."""
        try:
            self.index.delete_document(name)
            self.registry.remove(name)
            (stored_files_dir(self.settings) / name).unlink(missing_ok=True)
        except Exception:  # the pending row stays; recovery removes it on the next start
            logger.exception("could not clean up after a failed ingestion of %s", name)

    def _keep_copy(self, path: Path, name: str) -> None:
        dest = stored_files_dir(self.settings) / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.resolve() == dest.resolve():
            return
        atomic_copy(path, dest)
