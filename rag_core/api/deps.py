"""What every route depends on: the caller's context (their key's person, as on the pages),
and the chat service a request asks through."""

from __future__ import annotations

import copy
from typing import Annotated

from fastapi import Depends, HTTPException, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from rag_core.api.auth import LOCAL, ApiKeys
from rag_core.chat import ChatService
from rag_core.context import AppContext

bearer = HTTPBearer(auto_error=False, description="An API key of `serve-api` (--api-key / DOCENT_API_KEYS)")
header_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The same key, in X-API-Key")

UNAUTHORIZED = "A valid API key is needed: send it as `Authorization: Bearer KEY` (or `X-API-Key: KEY`)."


async def person_of(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    key: Annotated[str | None, Security(header_key)],
) -> str:
    """The caller's person: the one local person without keys, else their key's (401 without one).
    On the event loop: a digest and a comparison, nothing that blocks."""
    keys: ApiKeys = request.app.state.keys
    if not keys:
        return LOCAL
    person = keys.person_of(credentials.credentials if credentials else key)
    if person is None:
        raise HTTPException(401, UNAUTHORIZED, headers={"WWW-Authenticate": "Bearer"})
    return person


async def context_of(request: Request, person: Annotated[str, Depends(person_of)]) -> AppContext:
    """The context as the caller's person sees it: the local one at once, a signed-in person's
    in a worker thread (the first time, opening their library reads Chroma)."""
    ctx: AppContext = request.app.state.ctx
    if person == ctx.person:
        return ctx
    return await run_in_threadpool(ctx.for_person, person)


Ctx = Annotated[AppContext, Depends(context_of)]
Person = Annotated[str, Depends(person_of)]


def chat_of(ctx: AppContext, use_optimized: bool = True) -> ChatService:
    """The chat service to ask through; ``use_optimized`` off: a follow-up is searched as typed,
    never condensed (the exam assistant's comparison), everything else the same service."""
    if use_optimized or not ctx.settings.condense:
        return ctx.chat
    chat = copy.copy(ctx.chat)
    chat.components = copy.copy(ctx.chat.components)
    chat.settings = chat.components.settings = ctx.settings.model_copy(update={"condense": False})
    return chat
