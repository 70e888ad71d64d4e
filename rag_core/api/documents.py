"""Search, documents and uploads: the Upload page's actions and the chat's search over HTTP.

An upload goes to the same background job as the Upload page's (``JobRunner.submit``): the
response gives the job's id at once, and ``GET /api/jobs/{id}`` its progress per file, then
each file's result (indexed, skipped, replaced, failed with the reason, cancelled). A file
over ``max_file_mb`` refuses the whole request with a 413 before anything is stored.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Request, Response, UploadFile
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from rag_core.api.deps import Ctx, Person, person_of
from rag_core.api.errors import PayloadTooLarge
from rag_core.errors import DocentError, NotFoundError
from rag_core.jobs import JobView, Upload

router = APIRouter(tags=["documents"], dependencies=[Depends(person_of)])

MAX_FILES = 100  # files in one upload request


class SearchRequest(BaseModel):
    query: str = Field(..., min_length=1, max_length=20_000, description="What to search for.")
    top_k: int | None = Field(None, ge=1, le=200, description="Passages to return (default: the settings' top_k).")
    documents: list[str] | None = Field(None, description="Search only these documents (default: all).")
    history: list[tuple[Literal["user", "assistant"], str]] | None = Field(
        None, description="The conversation before the query, oldest first, as [role, text] pairs."
    )


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@router.post("/api/vector/search", tags=["search"], summary="The hybrid search alone (no answer)")
def search(ctx: Ctx, body: SearchRequest) -> dict[str, Any]:
    history = [(str(r), t) for r, t in body.history] if body.history else None
    found = ctx.chat.search(body.query, body.documents or None, body.top_k, history)
    return {"query": body.query, "sources": found.sources, "stats": _plain(found.stats)}


@router.get("/api/documents", summary="The indexed documents")
def list_documents(ctx: Ctx) -> list[dict[str, Any]]:
    return [asdict(d) for d in ctx.ingestion.documents()]


@router.delete("/api/documents/{name}", status_code=204, summary="Delete a document from the index")
def delete_document(ctx: Ctx, name: str) -> Response:
    ctx.ingestion.delete(name)
    return Response(status_code=204)


@router.post(
    "/api/documents",
    status_code=202,
    summary="Upload documents (multipart), indexed by a background job",
    response_description="The job's id and its first view; follow it at /api/jobs/{id}.",
)
async def upload(
    ctx: Ctx,
    person: Person,
    request: Request,
    files: Annotated[list[UploadFile], File(description="PDF, DOCX, HTML, TXT or Markdown files")],
    on_conflict: Annotated[
        Literal["ask", "replace", "keep_both"],
        Form(
            description="A different file of a name already indexed: 'ask' fails that file saying so (conflict: "
            "true), 'replace' replaces it, 'keep_both' indexes it beside it as 'NAME (2).ext'."
        ),
    ] = "ask",
) -> dict[str, Any]:
    if len(files) > MAX_FILES:
        raise DocentError(f"At most {MAX_FILES} files per upload; send the others in another request.")
    limit = ctx.settings.max_file_mb * 1024 * 1024
    for f in files:
        if (f.size or 0) > limit:
            raise PayloadTooLarge(
                f"{f.filename}: too large: {(f.size or 0) / 1e6:.1f} MB (limit {ctx.settings.max_file_mb} MB, "
                "max_file_mb in the settings). Nothing was uploaded."
            )
    uploads = [Upload(f.filename or "upload", await f.read(), on_conflict) for f in files]
    job_id = await run_in_threadpool(ctx.jobs.submit, ctx.ingestion, uploads, person)
    jobs: JobBook = request.app.state.jobs
    jobs.add(job_id, person)
    view = await run_in_threadpool(ctx.jobs.view, job_id)
    assert view is not None
    return job_json(view)


class JobBook:
    """Which person each job started through this API is (a job's view says nobody's)."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, job_id: str, person: str) -> None:
        with self._lock:
            self._owner[job_id] = person

    def mine(self, job_id: str, person: str) -> bool:
        with self._lock:
            return self._owner.get(job_id) == person

    def of(self, person: str) -> list[str]:
        with self._lock:
            return [j for j, p in self._owner.items() if p == person]


def job_json(view: JobView) -> dict[str, Any]:
    out = asdict(view)
    out["fraction"] = round(view.fraction, 3)
    return out


def _job(ctx: Ctx, request: Request, person: str, job_id: str) -> JobView:
    jobs: JobBook = request.app.state.jobs
    view = None
    if jobs.mine(job_id, person) or job_id in ctx.jobs.running_elsewhere(person):
        view = ctx.jobs.view(job_id)
    if view is None:
        raise NotFoundError(f"No upload job {job_id!r}; GET /api/jobs lists yours.")
    return view


@router.get("/api/jobs", tags=["documents"], summary="The caller's upload jobs")
def list_jobs(ctx: Ctx, person: Person, request: Request) -> list[dict[str, Any]]:
    jobs: JobBook = request.app.state.jobs
    ids = jobs.of(person) + ctx.jobs.running_elsewhere(person)
    return [job_json(v) for v in map(ctx.jobs.view, ids) if v is not None]


@router.get("/api/jobs/{job_id}", tags=["documents"], summary="An upload job's progress per file, then results")
def get_job(ctx: Ctx, person: Person, request: Request, job_id: str) -> dict[str, Any]:
    return job_json(_job(ctx, request, person, job_id))


@router.delete(
    "/api/jobs/{job_id}", tags=["documents"], summary="Cancel an upload job (the file being indexed is left absent)"
)
def cancel_job(ctx: Ctx, person: Person, request: Request, job_id: str) -> dict[str, Any]:
    _job(ctx, request, person, job_id)
    ctx.jobs.cancel(job_id)
    return job_json(_job(ctx, request, person, job_id))
