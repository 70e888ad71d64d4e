"""Any OpenAI client: ``/v1/models`` and ``/v1/chat/completions`` (streamed and not), model
``docent``, answered by the same turn as the chat.

The conversation in ``messages`` is the chat: the last message is the question (a user's),
the user and assistant messages before it its history, as a one-off question of the CLI
(nothing stored). ``system`` messages are left out: Docent answers with its own prompt, over
the documents. Given ``session_id`` (an extension; ``extra_body`` in the Python client), the
question is asked in that stored session instead, with the session's history.

The answer carries its ``[n]`` markers; the sources come in the extension field ``docent``:
on the response, and in a streamed answer on the first chunk (``sources``, before the words)
and on the last one (the stored answer: ``sources``, ``timings``, figure check, ``notices``).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from rag_core.api.deps import Ctx, person_of
from rag_core.api.streaming import SSE_HEADERS, Start, Waiting, answered, answered_json, run_turn
from rag_core.chat import Turn
from rag_core.chat.messages import History, count_tokens
from rag_core.errors import DocentError, NotFoundError

router = APIRouter(tags=["openai"], dependencies=[Depends(person_of)])

MODEL = "docent"
CREATED = int(time.time())


class Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[Part] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class CompletionRequest(BaseModel):
    """OpenAI's request; sampling fields (temperature, max_tokens, …) are accepted and left
    to Docent's settings."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(MODEL, description="`docent`")
    messages: list[ChatMessageIn] = Field(..., min_length=1, description="The conversation; the last is the question.")
    stream: bool = False
    session_id: str | None = Field(None, description="Docent extension: ask in this stored session.")


@router.get("/v1/models", summary="The one model: docent")
def models() -> dict[str, Any]:
    return {"object": "list", "data": [{"id": MODEL, "object": "model", "created": CREATED, "owned_by": "docent"}]}


@router.get("/v1/models/{model}", summary="The model docent")
def model(model: str) -> dict[str, Any]:
    if model != MODEL:
        raise NotFoundError(f"No model {model!r}: this server has one, `{MODEL}`.")
    return {"id": MODEL, "object": "model", "created": CREATED, "owned_by": "docent"}


def _question(body: CompletionRequest) -> tuple[str, History]:
    if body.model != MODEL:
        raise NotFoundError(f"No model {body.model!r}: this server has one, `{MODEL}` (model='{MODEL}').")
    said: History = [(str(m.role), m.text) for m in body.messages if m.role in ("user", "assistant")]
    if not said or said[-1][0] != "user":
        raise DocentError("The last message must be the user's question (role 'user').")
    return said[-1][1], said[:-1]


DOCENT_FIELDS = (
    "condensed_question",
    "sources",
    "preview",
    "notices",
    "timings",
    "served_by",
    "stopped",
    "figures_checked",
    "figures_unsupported",
    "session_id",
    "message_id",
    "saved",
    "answer",
    "follow_ups",
)


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def _docent(data: dict[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in DOCENT_FIELDS if k in data}


@router.post(
    "/v1/chat/completions",
    summary="OpenAI-compatible chat completion (model docent), streamed or not",
    response_description="OpenAI's chat.completion (or chat.completion.chunk events), plus the `docent` field.",
)
async def completions(ctx: Ctx, body: CompletionRequest) -> Response:
    question, history = _question(body)
    session_id = body.session_id

    def check() -> None:  # 404 for a session not the caller's, 400 for an empty question
        if session_id is not None:
            ctx.sessions.get(session_id)
        ctx.chat.check_question(question)

    await run_in_threadpool(check)

    def start(waiting: Waiting | None = None) -> Turn:
        if session_id is not None:
            return ctx.chat.turn(question, session_id, waiting=waiting)
        return ctx.chat.turn(question, None, history=history)

    cid = _completion_id()
    if body.stream:
        return StreamingResponse(_chunks(cid, start), media_type="text/event-stream", headers=SSE_HEADERS)
    turn = await answered(start)
    data = await run_in_threadpool(answered_json, turn)
    prompt = int(turn.timings.get("prompt_tokens", 0))
    written = count_tokens(data["answer"])
    return JSONResponse(
        {
            "id": cid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": data["answer"]},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": written, "total_tokens": prompt + written},
            "docent": _docent(data),
        }
    )


def _chunk(cid: str, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    chunk = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        **extra,
    }
    return f"data: {json.dumps(chunk, ensure_ascii=False, default=str)}\n\n"


async def _chunks(cid: str, start: Start) -> AsyncIterator[str]:
    """The turn as OpenAI's chunks: the role and the sources first, the words, then the end
    with the stored answer in ``docent``; an error as OpenAI's ``error`` event."""
    began = False
    async with contextlib.aclosing(run_turn(start)) as events:
        async for kind, data in events:
            if kind == "sources":
                delta = {"role": "assistant", "content": ""} if not began else {}
                began = True
                yield _chunk(cid, delta, docent=_docent(data))
            elif kind == "token":
                yield _chunk(cid, {"content": data["text"]})
            elif kind == "message":
                yield _chunk(cid, {}, "stop", docent=_docent(data))
            elif kind == "ping":
                yield ": ping\n\n"  # an SSE comment: OpenAI clients skip it
            elif kind == "error":
                error = {"message": data["detail"], "type": "server_error", "code": data["status"]}
                yield f"data: {json.dumps({'error': error}, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"
