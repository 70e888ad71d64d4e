"""The HTTP API's app: ``create_app(ctx, keys)`` over a context built once (``build_context``),
the same services the pages and the CLI call. Its OpenAPI description is at
``/openapi.json`` and Swagger UI at ``/docs``; ``docs/api.md`` describes every route.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.middleware.cors import CORSMiddleware
from fastapi_offline import FastAPIOffline
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_core.api import documents, openai_compat, sessions
from rag_core.api.auth import ApiKeys
from rag_core.api.documents import JobBook
from rag_core.api.errors import install
from rag_core.api.guard import BrowserGuard
from rag_core.context import AppContext

JSON_LIMIT = 64 * 2**20  # a request body other than an upload (a session export is the largest)
UPLOAD_FILES_AT_ONCE = 4  # an upload request carries at most this many times max_file_mb

DESCRIPTION = """Docent's engine over HTTP: sessions and streamed answers with sources, search, documents and
uploads, and an OpenAI-compatible `/v1/chat/completions` (model `docent`). With keys (`serve-api --api-key`),
send one as `Authorization: Bearer KEY`: it says whose conversations a request works with."""


class BodyLimit:
    """Refuses a request body over its limit with a 413 before it is read (by its
    Content-Length), or as soon as it passes the limit (a chunked body)."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app, self.limit_for = app, limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        message = f"The request body is over the limit of {limit / 1e6:.0f} MB."
        try:
            length = int(dict(scope["headers"]).get(b"content-length", b"0"))
        except ValueError:
            length = 0
        if length > limit:
            body = json.dumps({"detail": message}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 413, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            got = await receive()
            if got["type"] == "http.request":
                seen += len(got.get("body", b""))
                if seen > limit:
                    raise HTTPException(413, message)
            return got

        await self.app(scope, limited, send)


def create_app(
    ctx: AppContext,
    keys: ApiKeys | None = None,
    *,
    origins: Iterable[str] = (),
    hosts: Iterable[str] | None = None,
) -> FastAPI:
    """The API over ``ctx``; ``keys``: the keys it accepts (none: every request is the local
    person's); ``origins``: the web front ends allowed to call it from a browser (CORS);
    ``hosts``: the only ``Host`` names it answers (``serve-api`` without a key: loopback's)."""
    # Swagger UI (/docs) and ReDoc (/redoc) from files inside the package: no CDN, offline like the rest
    app = FastAPIOffline(title="Docent API", version="1", description=DESCRIPTION)
    app.state.ctx = ctx
    app.state.keys = keys or ApiKeys()
    app.state.jobs = JobBook()
    install(app)
    app.include_router(sessions.router)
    app.include_router(documents.router)
    app.include_router(openai_compat.router)

    @app.get("/api/health", tags=["health"], summary="Whether the API answers (no key needed)")
    def health() -> dict[str, Any]:
        return {"ok": True, "llm_provider": ctx.settings.llm_provider, "model_ready": ctx.models.llm_ready}

    upload_limit = ctx.settings.max_file_mb * 1024 * 1024 * UPLOAD_FILES_AT_ONCE

    def limit_for(path: str) -> int:
        return upload_limit if path == "/api/documents" else JSON_LIMIT

    app.add_middleware(BodyLimit, limit_for=limit_for)
    allowed = [o.rstrip("/") for o in origins]
    if allowed:
        app.add_middleware(CORSMiddleware, allow_origins=allowed, allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(BrowserGuard, origins=allowed, hosts=hosts)  # the outermost: before anything is read
    return app
