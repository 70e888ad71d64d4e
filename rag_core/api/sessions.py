"""Sessions and their messages: the sidebar's and the Chat page's actions over HTTP.

Every session is the caller's person's (``SessionStore`` for that owner): another person's
id is answered as one that does not exist (404). Asking streams the answer as server-sent
events (``rag_core.api.streaming``) through the same ``ChatService.turn`` as the pages.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Query, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from rag_core.api.deps import Ctx, chat_of, person_of
from rag_core.api.streaming import SSE_HEADERS, Waiting, answered, answered_json, sse_events
from rag_core.chat import Turn
from rag_core.exchange import export_json, export_markdown, import_session
from rag_core.storage import Message, Session

router = APIRouter(tags=["sessions"], dependencies=[Depends(person_of)])

OPTIMIZED = Query(
    True,
    description="Condense a follow-up into a standalone question before searching (the chat's default); "
    "false: search with the question as typed.",
)


class NewSession(BaseModel):
    name: str | None = Field(None, max_length=200, description="Default: 'Chat <date> <time>'.")


class SessionChange(BaseModel):
    name: str | None = Field(None, min_length=1, max_length=200, description="A new name.")
    documents: list[str] | None = Field(
        None, description="Limit the session to these documents; [] searches all of them again."
    )


class Question(BaseModel):
    question: str = Field("", max_length=200_000, description="The question (required unless regenerate).")
    rewrite: str | None = Field(None, max_length=20_000, description="The standalone question to search with.")
    regenerate: bool = Field(False, description="Answer the session's last question again, replacing its answer.")
    stream: bool = Field(True, description="Server-sent events (default), or one JSON object once answered.")


def session_json(s: Session, messages: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": s.id,
        "name": s.name,
        "created": s.created,
        "updated": s.updated,
        "documents": s.doc_filter,
    }
    if messages is not None:
        out["messages"] = messages
    return out


def message_json(m: Message) -> dict[str, Any]:
    return {
        "id": m.id,
        "role": m.role,
        "content": m.content,
        "condensed_question": m.condensed_question,
        "sources": m.sources,
        "meta": m.meta,
        "created": m.created,
    }


@router.post("/api/chat/sessions", status_code=201, summary="Create a session")
def create_session(ctx: Ctx, body: NewSession | None = None) -> dict[str, Any]:
    return session_json(ctx.sessions.create(body.name if body else None), 0)


@router.get("/api/chat/sessions", summary="List the caller's sessions, the most recent first")
def list_sessions(ctx: Ctx) -> list[dict[str, Any]]:
    return [session_json(s, len(ctx.sessions.messages(s.id))) for s in ctx.sessions.list()]


@router.post("/api/chat/sessions/import", status_code=201, summary="Import a session export (JSON)")
def import_export(ctx: Ctx, export: Annotated[dict[str, Any], Body(description="A session export")]) -> dict[str, Any]:
    return import_session(ctx, export).as_json()


@router.get("/api/sessions/{session_id}", summary="A session with its messages")
def get_session(ctx: Ctx, session_id: str) -> dict[str, Any]:
    session = ctx.sessions.get(session_id)
    messages = ctx.sessions.messages(session_id)
    return {**session_json(session, len(messages)), "history": [message_json(m) for m in messages]}


@router.patch("/api/sessions/{session_id}", summary="Rename a session, or limit it to documents")
def change_session(ctx: Ctx, session_id: str, change: SessionChange) -> dict[str, Any]:
    ctx.sessions.get(session_id)  # 404 before anything changes
    if change.name is not None:
        ctx.sessions.rename(session_id, change.name)
    if change.documents is not None:
        ctx.sessions.set_doc_filter(session_id, change.documents or None)
    return session_json(ctx.sessions.get(session_id))


@router.delete("/api/sessions/{session_id}", status_code=204, summary="Delete a session and its messages")
def delete_session(ctx: Ctx, session_id: str) -> Response:
    ctx.sessions.delete(session_id)
    return Response(status_code=204)


@router.get("/api/sessions/{session_id}/export", summary="Export a session (JSON to import, or Markdown)")
def export_session(ctx: Ctx, session_id: str, format: Literal["json", "md"] = "json") -> Response:
    session = ctx.sessions.get(session_id)
    if format == "md":
        text, media = export_markdown(ctx, session_id), "text/markdown; charset=utf-8"
    else:
        text, media = export_json(ctx, session_id), "application/json"
    name = f"{session.id}.{format}"
    return Response(text, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/api/sessions/{session_id}/messages", summary="A session's messages, oldest first")
def list_messages(ctx: Ctx, session_id: str) -> list[dict[str, Any]]:
    ctx.sessions.get(session_id)
    return [message_json(m) for m in ctx.sessions.messages(session_id)]


@router.delete("/api/sessions/{session_id}/messages", status_code=204, summary="Clear a session's messages")
def clear_messages(ctx: Ctx, session_id: str) -> Response:
    ctx.sessions.clear(session_id)
    return Response(status_code=204)


@router.post(
    "/api/sessions/{session_id}/messages",
    summary="Ask a question in a session (streamed as server-sent events)",
    response_description="text/event-stream: `sources` (the searched question, the sources and the preview; sent "
    "again after a follow-up's rewrite), `token`… (the answer's words), `message` (the stored answer with its "
    "figure check, timings and follow-ups), then `done`; or `error` then `done`. With stream=false: the `message`.",
)
async def ask(ctx: Ctx, session_id: str, body: Question, use_optimized: bool = OPTIMIZED) -> Response:
    chat = chat_of(ctx, use_optimized)

    def check() -> None:  # 404 for a session not the caller's, 400 for an empty question: before the stream
        ctx.sessions.get(session_id)
        if not body.regenerate:
            chat.check_question(body.question)

    await run_in_threadpool(check)

    def start(waiting: Waiting | None = None) -> Turn:  # claims the session, stores the question, searches
        return chat.turn(body.question, session_id, rewrite=body.rewrite, regenerate=body.regenerate, waiting=waiting)

    if not body.stream:
        turn = await answered(start)
        return JSONResponse(await run_in_threadpool(answered_json, turn))
    return StreamingResponse(sse_events(start), media_type="text/event-stream", headers=SSE_HEADERS)
