"""An answer while it is written: the search, a preview, the text streaming, a Stop button.

The answer is a ``Turn`` (rag_core.chat.turn): this module draws its phases as they come
(the search and a preview, the model's load, the words) and, once the turn has stored the
answer, asks it for follow-up questions. The page then runs again and draws the answer from
the session like every other (``ui.answer``), with its controls. If the run is interrupted while the
answer streams (Stop, a new question, any click: Streamlit stops the script at its next
``st`` call), the turn is told to stop and drained, so that it stores the part
written so far, marked as stopped, before the interruption goes on; interrupted before its
first word, it stores a stopped answer saying so (a new question typed meanwhile then follows
an answered one, never an unanswered one).

Streamlit starts the next run without waiting for the interrupted one to end, so the
next run waits (``wait_for_answer``, briefly) until the interrupted answer is stored:
otherwise it would draw the conversation without it.

A conversation answers one question at a time (``rag_core.storage.claims``): while another
tab, window or command is answering in it, the question waits, and says for what.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import streamlit as st

from rag_core import AppContext, Busy, DocentError, Turn
from ui.answer import FOLLOW_UPS
from ui.markdown import escape_markdown, inert_markdown
from ui.sources import sources_caption

logger = logging.getLogger(__name__)

CURSOR = " ▌"
WRITING = "answer_being_written"  # a threading.Event, set once the answer being written is stored or lost
WAIT_S = 15.0  # the longest a run waits for an interrupted answer to be stored


def wait_for_answer() -> None:
    """Before reading the conversation: let an answer an interrupted run is finishing land."""
    writing = st.session_state.get(WRITING)
    if writing is not None and not writing.wait(WAIT_S):
        logger.warning("an interrupted answer was not stored within %.0f s", WAIT_S)


def write_answer(
    ctx: AppContext,
    session_id: str,
    question: str,
    *,
    rewrite: str | None = None,
    regenerate: bool = False,
    on_wait: Callable[[], None] | None = None,
) -> Turn:
    """Answer ``question`` in ``session_id`` (or the last question again), streamed into an
    assistant message, then offer follow-up questions under it; the turn. Raises
    ``DocentError`` when it cannot; the question is kept.

    The turn searches before it needs the model: the sources and a preview sentence are
    shown first, then the model loads (behind a visible status, the first time) and reads.
    ``on_wait`` hears each look while the question waits behind another answer."""
    writing = threading.Event()
    st.session_state[WRITING] = writing
    try:
        turn = _write(ctx, session_id, question, rewrite, regenerate, on_wait)
    finally:
        writing.set()
    remember(turn)
    return turn


def _write(
    ctx: AppContext,
    session_id: str,
    question: str,
    rewrite: str | None,
    regenerate: bool,
    on_wait: Callable[[], None] | None,
) -> Turn:
    """``write_answer``'s drawing: the search, the preview, the sources, Stop, the words."""
    with st.chat_message("assistant"):
        waiting = st.empty()
        turn = ctx.chat.turn(
            question,
            session_id,
            rewrite=rewrite,
            regenerate=regenerate,
            waiting=lambda busy: (on_wait and on_wait(), show_waiting(waiting, busy)),
        )
        waiting.empty()
        try:
            return _draw(turn, question)
        except Exception:
            turn.close()  # failed before its words: the question stays, unanswered, with Retry
            raise
        except BaseException:
            turn.abandon()  # interrupted (a new question, Stop, a click): stored as stopped before it began
            raise


def _draw(turn: Turn, question: str) -> Turn:
    """The turn's phases as they come, inside its assistant message."""
    searched, notices, text, sources = st.empty(), st.container(), st.empty(), st.empty()
    show_search(searched, question, turn.condensed_question)
    show_preview(text, turn.preview)
    if turn.sources:
        sources.caption(sources_caption(turn.sources))  # labels already escaped
    if turn.model_pending:
        load_model(turn)
    turn.prepare()  # a follow-up only the model can rewrite is rewritten and searched again
    show_search(searched, question, turn.condensed_question)
    if turn.sources:
        sources.caption(sources_caption(turn.sources))
    else:
        sources.empty()
    with notices:
        for notice in turn.notices:
            st.info(escape_markdown(notice), icon="ℹ️")
    stop_slot = st.empty()
    stop_slot.button("⏹️ Stop", key="stop_answer")  # no tooltip: it would draw the button twice
    written = stream_text(turn, text)
    stop_slot.empty()
    if turn.answered is not None and turn.answered.answer != written.strip():  # e.g. nothing was written
        text.markdown(inert_markdown(turn.answered.answer))
    return turn


def load_model(turn: Turn) -> None:
    """The turn loads the local model behind a visible status, never silently (the answer's
    timings say how long it waited)."""
    with st.status("Loading the local model…", expanded=True) as status:
        step = st.empty()  # one line, updated: assembling reports each of its parts
        step.caption("The first time, the model is assembled from its parts: about a minute.")

        def report(message: str) -> None:
            step.caption(escape_markdown(message))

        turn.load_model(progress=report)
        status.update(label="The local model is ready", state="complete", expanded=False)


def show_waiting(slot: Any, busy: Busy) -> None:
    """While another tab, window or command answers in this conversation: what this
    question waits for (each look is also where a click can interrupt the wait)."""
    slot.info(
        f"This conversation is answering another question first: {escape_markdown(busy.describe())}. Yours is "
        "asked as soon as that answer is stored, with it in the conversation.",
        icon="⏳",
    )


def show_search(slot: Any, question: str, condensed: str | None) -> None:
    if condensed and condensed.strip() != question.strip():
        slot.caption(f"🔎 Searched for: {escape_markdown(condensed)}")


def show_preview(slot: Any, preview: dict[str, Any] | None) -> None:
    """The sentence of the sources that best answers the question, marked as a preview,
    until the first words of the answer replace it."""
    if not preview or not preview.get("sentence"):
        slot.markdown("…")
        return
    where = str(preview.get("file") or "")
    if preview.get("page") not in (None, ""):
        where += f", page {preview['page']}"
    with slot.container():
        st.caption(f"Preview, from {escape_markdown(where)}: the answer is being written…")
        st.markdown("> " + escape_markdown(" ".join(str(preview["sentence"]).split())))


def stream_text(stream: Iterable[str], placeholder: Any) -> str:
    """Show an answer while it is written, like ``st.write_stream``.

    Every frame is passed through ``inert_markdown`` first, so a half-written image or
    link in the model's output never becomes live, even for a moment."""
    deltas = iter(stream)
    text = ""
    try:
        for delta in deltas:
            text += delta
            placeholder.markdown(inert_markdown(text) + CURSOR)
    except BaseException:
        # Streamlit interrupts a run by raising from the next st call: keep what was written.
        stop = getattr(stream, "stop", None)
        if callable(stop):
            stop()
            try:
                for _ in deltas:  # the turn ends the answer here and stores it, marked as stopped
                    pass
            except Exception:
                logger.exception("finishing a stopped answer")
        raise
    placeholder.markdown(inert_markdown(text))
    return text


def remember(turn: Turn) -> None:
    """The follow-up questions to offer under the answer just stored (kept by this browser)."""
    if turn.stored is None or turn.stored.id is None:
        return
    started = time.perf_counter()
    try:
        with st.spinner("Suggesting follow-up questions…"):
            questions = turn.follow_ups(n=2)
    except DocentError as e:
        logger.info("no follow-ups: %s", e)
        return
    logger.info("follow-ups in %.2f s", time.perf_counter() - started)
    st.session_state.setdefault(FOLLOW_UPS, {})[turn.stored.id] = questions
