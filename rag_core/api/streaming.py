"""A turn streamed to an HTTP client: the chat service's own ``Turn``, run in a thread of
its own, its phases handed to the event loop in order.

The turn is the one the Chat page and ``python -m rag_core ask`` run (``ChatService.turn``):
the question stored, searched (the sources and the preview), then the model's words, then the
answer stored. Here it runs in a worker thread (Chroma, SQL and the model block), which puts
each phase on a queue the response reads from, so the event loop only ever waits on that
queue: ten clients at once are ten threads, and a slow reader holds up no one else.

A client that goes away (the response is cancelled when Starlette hears ``http.disconnect``)
stops the turn as the page's Stop does: after the current word, the part written stored and
marked as stopped (``Turn.stop``); before its first word, stored as stopped before it began
(``Turn.abandon``). Either way the session's claim is let go.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from rag_core.api.errors import status_for
from rag_core.chat import Turn
from rag_core.errors import DocentError
from rag_core.storage import Busy

logger = logging.getLogger(__name__)

PING_S = 15.0  # a stream silent this long gets a comment, so that no proxy closes it as idle
INTERNAL = "Internal error while answering; the server log has the details. Your question is kept; try again."

Event = tuple[str, dict[str, Any]]  # (kind, data): waiting | sources | loading | token | message | error | ping
Waiting = Callable[[Busy], None]
Start = Callable[[Waiting], Turn]  # starts the turn (ChatService.turn), hearing what it waits for


def turn_json(turn: Turn) -> dict[str, Any]:
    """What a client shows before the words: the question searched, the sources, the preview."""
    return {
        "condensed_question": turn.condensed_question,
        "sources": turn.sources,
        "preview": turn.preview,
        "notices": turn.notices,
    }


def answered_json(turn: Turn) -> dict[str, Any]:
    """The answered turn (the CLI's ``--json`` fields) with the stored message's id and follow-ups."""
    assert turn.answered is not None
    out = turn.answered.as_json()
    out["message_id"] = turn.stored.id if turn.stored is not None else None
    out["saved"] = turn.stored is not None
    out["preview"] = turn.preview
    try:
        out["follow_ups"] = turn.follow_ups()
    except DocentError:
        out["follow_ups"] = []
    return out


class TurnRun:
    """One turn, run by ``work`` in a worker thread; ``put`` hands each event on, ``leave``
    says the client went away."""

    def __init__(self, start: Start, put: Callable[[Event | None], None]) -> None:
        self.start, self.put = start, put
        self.gone = threading.Event()
        self.turn: Turn | None = None
        self._lock = threading.Lock()
        self._waited = False

    def waiting(self, busy: Busy) -> None:
        """The session answers another question first (the app, the CLI, another client):
        said once; a client that goes away meanwhile stops the wait, its question not asked."""
        if self.gone.is_set():
            raise DocentError("The client went away while its question waited; it was not asked.")
        if not self._waited:
            self._waited = True
            self.put(
                ("waiting", {"detail": f"This conversation is answering another question first: {busy.describe()}."})
            )

    def leave(self) -> None:
        with self._lock:
            self.gone.set()
            if self.turn is not None:
                self.turn.stop()  # after the current word; what was written is stored, marked as stopped

    def work(self) -> None:
        try:
            self._work()
        except DocentError as e:
            self.put(("error", {"detail": str(e), "status": status_for(e)}))
        except Exception:
            logger.exception("an answer failed")
            self.put(("error", {"detail": INTERNAL, "status": 500}))
        finally:
            self.put(None)

    def _work(self) -> None:
        turn = self.start(self.waiting)
        with self._lock:
            self.turn = turn
            gone = self.gone.is_set()
        if gone:
            turn.abandon()
            return
        self.put(("sources", turn_json(turn)))
        first = (turn.condensed_question, [s.get("chunk_id") for s in turn.sources])
        try:
            if turn.model_pending:  # the local model's first load: each step said, as the page's status does
                turn.load_model(progress=lambda message: self.put(("loading", {"detail": message})))
            turn.prepare()  # a follow-up only the model can rewrite: rewritten, searched again
        except Exception:
            turn.close()  # failed before its words: the question stays, unanswered
            raise
        if self.gone.is_set():
            turn.abandon()
            return
        if (turn.condensed_question, [s.get("chunk_id") for s in turn.sources]) != first:
            self.put(("sources", turn_json(turn)))
        for delta in turn:
            self.put(("token", {"text": delta}))
            if self.gone.is_set():
                turn.stop()
        if turn.answered is not None:
            self.put(("message", answered_json(turn)))


async def run_turn(start: Start) -> AsyncGenerator[Event, None]:
    """The events of one turn, in order, read from the thread that runs it. Cancelled (the
    client went away) or closed early, it stops the turn."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Event | None] = asyncio.Queue()

    def put(item: Event | None) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop is closed: the server is stopping
            loop.call_soon_threadsafe(queue.put_nowait, item)

    run = TurnRun(start, put)
    threading.Thread(target=run.work, name="docent-api-turn", daemon=True).start()
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), PING_S)
            except TimeoutError:  # nothing for a while (the model loading, a long prompt): say it is alive
                yield ("ping", {})
                continue
            if item is None:
                break
            yield item
    finally:
        run.leave()


async def answered(start: Callable[[Waiting | None], Turn]) -> Turn:
    """A turn asked and run to its end off the event loop (a request that does not stream);
    a failure closes it, so its session is free again."""
    from starlette.concurrency import run_in_threadpool

    turn = await run_in_threadpool(start, None)
    try:
        await run_in_threadpool(turn.result)
    except BaseException:
        turn.close()
        raise
    return turn


def sse(event: str, data: Any) -> str:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


async def sse_events(start: Start) -> AsyncIterator[str]:
    """A turn as server-sent events: ``waiting`` (while the session answers another question),
    ``sources`` (again after a rewrite), ``loading`` (the model's first load), ``token``…,
    ``message`` (the stored answer), then ``done``; or ``error`` then ``done``."""
    failed = False
    async with contextlib.aclosing(run_turn(start)) as events:
        async for kind, data in events:
            failed = failed or kind == "error"
            yield ": ping\n\n" if kind == "ping" else sse(kind, data)
    yield sse("done", {"ok": not failed})


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
