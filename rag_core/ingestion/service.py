"""The ingestion service: files in, chunks with vectors out, through one LlamaIndex IngestionPipeline.

Identity is the document's *name* (a file's name, or its path relative to a folder
given to ``ingest``). For one document:

1. Its bytes' sha256 equals the registry's → ``skipped`` without parsing.
2. Otherwise the registry row goes ``pending``, the file is parsed into page/section
   Documents with stable ids (``name::p0003``), pages that disappeared are deleted,
   and the pipeline (``DocstoreStrategy.UPSERTS``) re-embeds only pages whose content
   hash changed. Vectors, keyword index rows and docstore hashes are written as they are
   made (``index.db``, a row per page); a copy of the file is kept (for rebuilds), and only
   then does the row turn ``indexed``.
3. A crash at any point leaves a ``pending`` row and a marker file (``markers``);
   ``rag_core.recovery.recover`` (run on start-up) removes that document's vectors, docstore
   entries and row, so a document is either fully indexed or absent. Nothing else is removed.

A *different* file under a name already indexed is a conflict: ``on_conflict`` says what
to do — ``ask`` (the default: refused, ``conflict`` set, nothing changed), ``replace``, or
``keep_both`` (indexed as ``report (2).pdf``). ``cancelled`` is polled while the file is
read and between batches of embeddings; a cancelled document is left absent.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter

from rag_core import loaders
from rag_core.entities import read_and_keep
from rag_core.errors import IngestCancelled, IngestError, NotFoundError, disk_full
from rag_core.files import Progress, atomic_copy, atomic_write, file_digest
from rag_core.index import VectorIndex
from rag_core.ingestion.ahead import ReadAhead, read_file, start_reading
from rag_core.ingestion.failures import discard, failure_reason
from rag_core.ingestion.markers import IngestMarkers
from rag_core.ingestion.names import (
    NameTaken,
    OnConflict,
    free_name,
    index_target,
    iter_inputs,
    refusal,
    safe_name,
    special_kind,
    upload_name,
)
from rag_core.ingestion.transforms import BatchedEmbedder, ChunkContext
from rag_core.loaders.ocr import sidecar_json, sidecar_path
from rag_core.settings import DocentSettings
from rag_core.storage import DocumentRecord, DocumentRegistry

Cancelled = Callable[[], bool]

logger = logging.getLogger(__name__)


@dataclass
class IngestResult:
    """The outcome for one file; ``as_json`` is the CLI's ``--json`` contract."""

    file: str
    status: str  # indexed | skipped | replaced | failed | cancelled (app jobs only)
    reason: str = ""
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    conflict: bool = False  # failed because a different file of this name is indexed
    ocr_pages: int = 0  # pages without a text layer read by OCR

    def as_json(self) -> dict:
        d = asdict(self)
        d["seconds"] = round(self.seconds, 3)
        return d


@dataclass
class Conflict:
    """A different file already indexed under an upload's name, for the app to ask about."""

    name: str
    existing: DocumentRecord
    answers: int  # earlier answers whose sources cite the indexed version
    conversations: int
    keep_both_name: str


class IngestionService:
    """Adds, replaces, deletes and lists documents; keeps Chroma, docstore and registry in step."""

    def __init__(self, settings: DocentSettings, index: VectorIndex, registry: DocumentRegistry) -> None:
        self.settings = settings
        self.index = index
        self.registry = registry
        self.markers = IngestMarkers(settings.paths.markers)

    # ------------------------------------------------------------------ pipeline
    def _pipeline(self, step: Callable[[int, int], None], texts: dict[str, str] | None = None) -> IngestionPipeline:
        splitter = SentenceSplitter(
            chunk_size=self.settings.chunk_size,
            chunk_overlap=min(self.settings.chunk_overlap, self.settings.chunk_size // 2),
        )
        context = [ChunkContext(texts=texts)] if texts is not None and self.settings.chunk_context else []
        return IngestionPipeline(
            transformations=[splitter, *context, BatchedEmbedder(embed_model=self.index.embed_model, step=step)],
            docstore=self.index.docstore,
            vector_store=self.index.vector_store,
            docstore_strategy=DocstoreStrategy.UPSERTS,
            disable_cache=True,
        )

    # ------------------------------------------------------------------ public API
    def ingest_paths(
        self, paths: Iterable[Path], progress: Progress | None = None, on_conflict: OnConflict = "ask"
    ) -> list[IngestResult]:
        return list(self.ingest_each(iter_inputs(paths), progress, on_conflict))

    def ingest_each(
        self,
        inputs: list[tuple[Path, str]],
        progress: Progress | None = None,
        on_conflict: OnConflict = "ask",
        ahead: ReadAhead | None = None,
    ) -> Iterator[IngestResult]:
        """``ingest_file`` over (path, name) pairs, each result as it is done; the next file is
        read while this one is embedded (``ahead``: given by a caller that waits for it)."""
        ahead = ahead or ReadAhead(self.settings)
        try:
            for k, (path, name) in enumerate(inputs):
                ahead.upcoming = inputs[k + 1 : k + 2]  # the next one: read while this one is embedded
                yield self.ingest_file(path, name, progress, on_conflict=on_conflict, ahead=ahead)
        finally:
            ahead.close()

    def ingest_file(
        self,
        path: Path,
        name: str | None = None,
        progress: Progress | None = None,
        *,
        on_conflict: OnConflict = "ask",
        cancelled: Cancelled | None = None,
        ahead: ReadAhead | None = None,
    ) -> IngestResult:
        """Ingest one file; never raises for a bad file (the result says why it failed).
        ``ahead``: the run of ingests this one is part of (``ingest_each``)."""
        path = path if isinstance(path, Path) else Path(path)  # a ``FolderPath`` stays one
        name = safe_name(name or path.name)
        started = time.perf_counter()
        report = progress or (lambda msg, frac: None)
        try:
            result = self._ingest(path, name, report, on_conflict, cancelled or (lambda: False), ahead)
        except IngestCancelled:
            result = IngestResult(name, "cancelled", reason="cancelled: nothing of it was kept")
        except IngestError as e:
            result = IngestResult(name, "failed", reason=e.reason, conflict=isinstance(e, NameTaken))
        except Exception as e:  # a parser bug, a full disk, a server gone: said, and the batch goes on
            result = IngestResult(name, "failed", reason=failure_reason(name, e, self.settings.data_dir))
        result.seconds = time.perf_counter() - started
        report(f"{result.file}: {result.status}" + (f" ({result.reason})" if result.reason else ""), 1.0)
        return result

    def ingest_bytes(
        self,
        data: bytes,
        name: str,
        progress: Progress | None = None,
        *,
        on_conflict: OnConflict = "ask",
        cancelled: Cancelled | None = None,
    ) -> IngestResult:
        """For uploads: write to a temp file, then ingest under ``name``."""
        name = upload_name(name)
        suffix = Path(name).suffix
        with tempfile.TemporaryDirectory(prefix="docent-upload-") as tmp:
            tmp_path = Path(tmp) / f"upload{suffix}"
            tmp_path.write_bytes(data)
            return self.ingest_file(tmp_path, name, progress, on_conflict=on_conflict, cancelled=cancelled)

    def conflict(self, name: str, data: bytes) -> Conflict | None:
        """When an upload of ``name`` would replace a different indexed file: what is there."""
        name = upload_name(name)
        existing = self.registry.get(name)
        if existing is None or existing.status != "indexed":
            return None
        if existing.sha256 == hashlib.sha256(data).hexdigest():
            return None
        answers, conversations = self.registry.citations(name)
        return Conflict(
            name, existing, answers, conversations, free_name(self.registry, self.settings.paths.files, name, "")
        )

    def delete(self, name: str) -> None:
        with self.index.writer():
            known = self.registry.get(name) is not None or name in self.index.docstore_names()
            if not known and not self.index.chunk_count(name):
                raise NotFoundError(f"No document named {name!r}; `python -m rag_core docs list` shows them.")
            record = self.registry.get(name)
            self.index.delete_document(name)
            self.registry.remove(name)
            self.markers.drop(name)
            stored = self.settings.paths.files / name
            stored.unlink(missing_ok=True)
            if record is not None and not self.registry.find_by_sha(record.sha256):  # no other name holds it
                sidecar_path(self.settings.data_dir, record.sha256).unlink(missing_ok=True)

    def documents(self) -> list[DocumentRecord]:
        return self.registry.list()

    def warm(self) -> None:
        """Have the worker that reads files started before the first file comes (the Upload
        page asks when it opens): the first upload then does not wait for its start."""
        start_reading()

    # ------------------------------------------------------------------ internals
    def _target(self, name: str, sha: str, on_conflict: OnConflict) -> tuple[str, DocumentRecord | None]:
        """The name to index under, and the indexed document of that name, if any."""
        return index_target(self.registry, self.settings.paths.files, name, sha, on_conflict)

    def _ingest(
        self,
        path: Path,
        name: str,
        report: Progress,
        on_conflict: OnConflict,
        cancelled: Cancelled,
        ahead: ReadAhead | None = None,
    ) -> IngestResult:
        refused = refusal(path)
        if refused:
            raise IngestError(name, refused)
        if not path.exists():
            raise IngestError(name, "file not found")
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
            # A named pipe would block the first read until something writes to it: never open one.
            raise IngestError(name, f"not a regular file ({special_kind(info.st_mode)}): only files can be indexed")
        size = info.st_size
        limit = self.settings.max_file_mb * 1024 * 1024
        if size > limit:
            raise IngestError(name, f"too large: {size / 1e6:.1f} MB (limit {self.settings.max_file_mb} MB)")
        loaders.check_supported(name)
        self.index.ensure_compatible()
        sha = file_digest(path)
        target, existing = self._target(name, sha, on_conflict)
        if existing and self._unchanged(existing, sha):
            why = "unchanged" if target == name else f"unchanged (kept as {target})"
            return IngestResult(target, "skipped", reason=why, pages=existing.pages, chunks=existing.chunks)
        if cancelled():
            raise IngestCancelled(target)

        report(f"{target}: reading", 0.05)
        loaded = ahead.take(path, target, sha, report, cancelled) if ahead else None
        if loaded is None:
            loaded = read_file(self.settings, path, target, sha, cancelled, report)
        if ahead:  # the next file is read while this one is embedded
            ahead.start_next(lambda next_name, next_sha: self._target(next_name, next_sha, on_conflict))
        if target != name:
            loaded.warnings.append(f"a different {name} is indexed: this one was kept as {target}")
        same = [r.name for r in self.registry.find_by_sha(sha) if r.name not in (name, target)]
        if same:
            loaded.warnings.append(f"same content as {', '.join(same)} (indexed under both names)")
        report(f"{target}: {len(loaded.documents)} part(s) read; waiting to write", 0.3)

        with self.index.writer(), self._written(target, path):
            # Another process may have indexed this name while the file was read.
            if self._target(name, sha, on_conflict)[0] != target:
                raise IngestError(target, "another upload took this name meanwhile; try again")
            existing = self.registry.get(target)
            if existing and self._unchanged(existing, sha):
                return IngestResult(target, "skipped", reason="unchanged", pages=existing.pages, chunks=existing.chunks)
            if cancelled():
                raise IngestCancelled(target)
            replacing = existing is not None and existing.status == "indexed" and existing.sha256 != sha
            citing = self.registry.citations(target) if replacing else (0, 0)
            self.markers.put(target, sha)
            self.registry.mark_pending(target, sha, size, loaded.kind)
            if replacing:  # pages whose text is unchanged keep their vectors (the docstore's hashes say which)
                keep = {d.id_ for d in loaded.documents}
                self.index.delete_refs([ref for ref in self.index.ref_doc_ids_for(target) if ref not in keep])
            elif self.index.chunk_count(target) or self.index.ref_doc_ids_for(target):
                # nothing registered to build on: what a failed run left of the name goes, every page is embedded
                self.index.delete_document(target)
            self._run_pipeline(loaded, target, report, cancelled)
            self._keep_copy(path, target)
            if loaded.ocr:  # the line boxes of OCR'd pages, for the viewer (and a re-read skips OCR)
                atomic_write(sidecar_path(self.settings.data_dir, sha), sidecar_json(loaded.ocr).encode("utf-8"))
            chunks = self.index.mirrored_chunks(target)
            self._read_subjects(target, sha)
            self.registry.mark_indexed(target, loaded.pages, chunks)
            self.markers.drop(target)
            self.index.bump()
        if citing[0]:
            loaded.warnings.append(
                f"{citing[0]} earlier answer(s) in {citing[1]} conversation(s) cite the previous version; "
                "they keep the passages they quoted, which may differ from this version"
            )
        status = "replaced" if replacing else "indexed"
        result = IngestResult(target, status, pages=loaded.pages, chunks=chunks, warnings=loaded.warnings)
        result.ocr_pages = len(loaded.ocr)
        return result

    def _unchanged(self, existing: DocumentRecord, sha: str) -> bool:
        """Whether the indexed document is this very file, whole: registered with its digest,
        and its stored copy kept (a copy is written only once every page is embedded; without
        it, ingesting the file again is how the user restores the document)."""
        return (
            existing.status == "indexed"
            and existing.sha256 == sha
            and (self.settings.paths.files / existing.name).is_file()
        )

    def _read_subjects(self, name: str, sha: str) -> None:
        """What the document is about, read from its chunks now that they are stored
        (``rag_core.entities``). A failure costs nothing but the reading: it is tried again
        the first time a question needs it."""
        try:
            read_and_keep(self.index, self.registry, name, sha)
        except Exception:
            logger.exception("could not read what %s is about; it is read again when a question needs it", name)

    @contextlib.contextmanager
    def _written(self, name: str, source: Path) -> Iterator[None]:
        """Whatever fails (or is cancelled) while a document is written leaves it absent (at
        once, or, when even removing fails, at the next start: the error then says so)."""
        try:
            yield
        except BaseException as e:
            full = isinstance(e, Exception) and disk_full(self.settings.data_dir, e) is not None
            if not self._discard(name, source, proven=not full):
                with contextlib.suppress(AttributeError, TypeError):
                    e.docent_left_behind = True  # type: ignore[attr-defined]
            raise

    def _run_pipeline(self, loaded: loaders.LoadedFile, name: str, report: Progress, cancelled: Cancelled) -> None:
        docs = loaded.documents
        batch = 16  # pages per run: bounded memory
        for start in range(0, len(docs), batch):
            end = min(start + batch, len(docs))

            def step(done: int, total: int, start: int = start, end: int = end) -> None:
                if cancelled():
                    raise IngestCancelled(name)
                frac = (start + (end - start) * done / max(total, 1)) / len(docs)
                where = f"part {end}" if end - start == 1 else f"parts {start + 1}-{end}"
                report(f"{name}: embedding {where} of {len(docs)}: {done}/{total} passages", 0.3 + 0.65 * frac)

            texts = {d.id_: d.text for d in docs[start:end]}
            # The docstore keeps each page's hash (what the upserts compare), not its text: the
            # chunks' text is in Chroma and the keyword index already.
            self._pipeline(step, texts).run(documents=docs[start:end], store_doc_text=False)

    def _discard(self, name: str, source: Path, proven: bool = True) -> bool:
        """After a failure mid-way: remove what this document left (``failures.discard``)."""
        return discard(self.index, self.registry, self.markers, self.settings, name, source, proven)

    def _keep_copy(self, path: Path, name: str) -> None:
        dest = self.settings.paths.files / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.resolve() == dest.resolve():
            return
        atomic_copy(path, dest)
