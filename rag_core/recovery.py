"""What start-up, ``check --repair`` and ``rebuild`` do after a crash or a lost registry.

The rule: nothing is deleted unless a *pending marker* proves it was left by an interrupted
ingestion. Two kinds of marker exist, and both are written before the first vector:

- the registry row's ``pending`` status (SQLite), and
- a file ``<data_dir>/ingesting/<digest>.json`` naming the document and the file's sha256,
  kept outside SQLite so that it survives an emptied or damaged ``docent.db``
  (``rag_core.ingestion.markers``).

A document whose vectors are in Chroma with neither marker is never deleted. If its registry
row is missing (``docent.db`` emptied, damaged, or restored from an older backup) it is
registered again from what Chroma's chunks say (name, pages, chunk count) when it is
provably whole: every chunk carries one file digest, and the stored copy in ``files/`` has
that digest (a copy is kept only once every page is embedded). Otherwise it is kept
unregistered, and ``check`` says what the user can do.

Every function works on the ``IngestionService`` it is given (its index, registry, markers
and settings): start-up (``build_context``), ``check --repair``, ``rebuild`` and the app's
Rebuild button call them directly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rag_core import loaders
from rag_core.errors import DiskFullError, DocentError, disk_full
from rag_core.files import Progress, file_digest
from rag_core.ingestion import IngestionService, IngestResult

logger = logging.getLogger(__name__)


@dataclass
class RecoveryReport:
    removed: list[str] = field(default_factory=list)  # interrupted ingestions, removed
    reregistered: list[str] = field(default_factory=list)  # whole documents the registry had lost
    unresolved: list[str] = field(default_factory=list)  # neither provably whole nor interrupted: kept
    why: dict[str, str] = field(default_factory=dict)  # an unresolved document: why, and what to do
    postponed: str = ""  # why what is left could not be done now (a full disk): the next start tries again

    def notices(self) -> list[str]:
        out = []
        if self.postponed:
            out.append(
                f"What an interrupted ingestion left could not be removed yet ({self.postponed}); it stays marked "
                "and is removed at the next start (or `check --repair`). Everything else works meanwhile."
            )
        if self.removed:
            out.append(f"Removed what interrupted ingestions left of: {', '.join(self.removed)}.")
        if self.reregistered:
            out.append(
                f"Registered again {len(self.reregistered)} document(s) that were fully indexed but missing "
                f"from the registry (docent.db): {', '.join(self.reregistered[:10])}"
                + ("…" if len(self.reregistered) > 10 else ".")
            )
        for name in self.unresolved:
            out.append(f"{name}: {self.why.get(name, UNRESOLVED)}")
        return out


UNRESOLVED = (
    "its chunks do not name one version of one file, so it cannot be told whole; it is kept. "
    "`python -m rag_core docs delete NAME` removes it, uploading the file again restores it"
)
UNPROVEN = (
    "no stored copy of the file its chunks name was kept, so it cannot be told whole (an ingestion stopped "
    "part-way, by a full disk say); it is kept. Ingesting or uploading the file again under its name makes it "
    "whole; `python -m rag_core docs delete NAME` removes it"
)


def unresolved(service: IngestionService, name: str) -> str:
    """Why a document with vectors and no registry row cannot be registered again, and what to do."""
    shas = service.index.chunk_shas(name)
    one = len(shas) == 1 and len(next(iter(shas))) == 64
    return UNPROVEN if one else UNRESOLVED


def interrupted(service: IngestionService) -> dict[str, str]:
    """Name → why it counts as interrupted, for every pending marker of either kind."""
    out = {r.name: "pending" for r in service.registry.list(status="pending")}
    for name in service.markers.all():
        out.setdefault(name, "marker")
    return out


def recover(service: IngestionService) -> RecoveryReport:
    """Remove what interrupted ingestions left; register again documents the registry lost.

    Skipped while another context or process holds the write lock: its pending document
    is being ingested, not abandoned. Looking for lost documents reads every chunk's
    metadata in Chroma, which at a million chunks takes a minute: it is done only when
    Chroma holds another number of chunks than the registry says it should (a registered
    document is counted once it is whole, an unregistered one adds to Chroma alone)."""
    report = RecoveryReport()
    try:
        _recover(service, report)
    except DocentError as e:  # a full disk, a server gone: markers stay, so nothing is lost
        report.postponed = e.short if isinstance(e, DiskFullError) else str(e)
    except Exception as e:  # never a start-up that crashes: the markers stay, `check` names them
        full = disk_full(service.settings.data_dir, e)
        if full is None:
            logger.exception("start-up recovery stopped")
        report.postponed = full.short if full else f"{type(e).__name__}: {e}"
    for line in report.notices():
        logger.warning("%s", line)
    return report


def _recover(service: IngestionService, report: RecoveryReport) -> None:
    index, registry, markers = service.index, service.registry, service.markers
    with index.writer(wait=False) as acquired:
        if not acquired:
            return
        started = markers.all()
        for name in sorted(interrupted(service)):
            row = registry.get(name)
            sha = started.get(name)
            # Killed after the row turned 'indexed' (finished), or before it turned 'pending'
            # (nothing touched yet, if no chunk carries the new file's digest): nothing to remove.
            finished = row is not None and row.status == "indexed" and sha is not None
            if finished and (row.sha256 == sha or sha not in index.chunk_shas(name)):  # type: ignore[union-attr]
                markers.drop(name)
                continue
            index.delete_document(name)
            if index.chunk_count(name):  # the delete was taken but not applied (a full disk): the marker stays
                raise DocentError(f"the vectors of {name} could not be removed yet")
            registry.remove(name)
            markers.drop(name)
            report.removed.append(name)
        records = registry.list(status=None)
        known = {r.name for r in records}
        if index.chunk_count() != sum(r.chunks for r in records):  # else no document can be unregistered
            chroma = index.chroma_names()
            for name in sorted(chroma - known):
                if reregister(service, name):
                    report.reregistered.append(name)
                else:
                    report.unresolved.append(name)
                    report.why[name] = unresolved(service, name)
            for name in sorted(index.docstore_names() - known - chroma):
                index.delete_document(name)  # docstore hashes without a single vector: nothing to keep


def whole_sha(service: IngestionService, name: str) -> str | None:
    """The file digest of a document that is provably whole: every chunk carries it, and the
    stored copy has it (kept only after every page was embedded). None otherwise: chunks that
    disagree, were not written by Docent, or a run that never got as far as keeping the copy."""
    shas = service.index.chunk_shas(name)
    sha = shas.pop() if len(shas) == 1 else None
    if not sha or len(sha) != 64:
        return None
    stored = service.settings.paths.files / name
    return sha if stored.is_file() and file_digest(stored) == sha else None


def reregister(service: IngestionService, name: str) -> bool:
    """Register a document from its chunks and its stored copy; False when it is not provably
    whole (``whole_sha``): then it is left alone, unregistered, and ``check`` says so."""
    index = service.index
    sha = whole_sha(service, name)
    if sha is None:
        return False
    size = (service.settings.paths.files / name).stat().st_size
    service.registry.register(
        name, sha, size, pages=index.chunk_pages(name), chunks=index.chunk_count(name), kind=loaders.kind_of(name)
    )
    return True


def stored_names(service: IngestionService) -> list[str]:
    """Every document with a stored copy in ``files/`` (temporary files left out)."""
    folder = service.settings.paths.files
    if not folder.is_dir():
        return []
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def rebuild(service: IngestionService, progress: Progress | None = None) -> list[IngestResult]:
    """Drop the index and ingest every stored file again, whatever the registry says:
    the stored copies in ``files/`` are the source (an emptied registry loses nothing)."""
    with service.index.writer():
        records = {r.name for r in service.registry.list(status=None)}
        names = sorted(records | set(stored_names(service)))
        service.index.reset()
        for name in names:
            service.registry.remove(name)
        for name in service.markers.all():
            service.markers.drop(name)
    folder = service.settings.paths.files
    present = [name for name in names if (folder / name).is_file()]
    done = service.ingest_each([(folder / name, name) for name in present], progress, on_conflict="replace")
    kept = set(present)  # ingested in this order, each read while the one before is embedded
    return [
        next(done) if name in kept else IngestResult(name, "failed", reason="stored copy missing; upload it again")
        for name in names
    ]


def repair(service: IngestionService, progress: Progress | None = None) -> list[IngestResult]:
    """``check --repair``'s second step: ingest again, from the stored copy, every registered
    document whose docstore entries or chunks do not match the registry (after two writers
    overwrote each other's docstore, say); the vectors are replaced, never just dropped. A
    document whose vectors are whole but whose keyword index rows are not gets those again
    from its vectors (no embedding)."""
    index, registry = service.index, service.registry
    folder = service.settings.paths.files
    docstore = index.docstore_names()
    keywords = index.keywords.docs()
    results = []
    for name in sorted(set(keywords) - {r.name for r in registry.list(status=None)} - index.chroma_names()):
        index.keywords.delete_docs([name])  # words of a document without a vector: nothing to keep
    for rec in registry.list():
        if (
            rec.name in docstore
            and index.chunk_count(rec.name) == rec.chunks
            and index.chunk_shas(rec.name) == {rec.sha256}
        ):
            if keywords.get(rec.name, 0) != rec.chunks:  # the vectors are whole: its words again, from them
                index.resync_keywords(rec.name)
            continue
        src = folder / rec.name
        if not src.is_file():
            continue  # `check` keeps reporting it: only a new upload can restore it
        with index.writer():  # pending first: a crash in between leaves it absent, the copy kept
            registry.mark_pending(rec.name, rec.sha256, rec.size, rec.kind)
            index.delete_document(rec.name)  # node ids are new on every run: no duplicates
            results.append(service.ingest_file(src, rec.name, progress, on_conflict="replace"))
    return results
