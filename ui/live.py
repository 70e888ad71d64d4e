"""An answer while it is written: the search, a preview, the text streaming, a Stop button.

Once the engine has stored the answer, the page runs again and draws it from the session
like every other (``ui.answer``), with its controls. If the run is interrupted while the
answer streams (Stop, a new question, any click: Streamlit stops the script at its next
``st`` call), the stream is told to stop and drained, so that the engine stores the part
written so far, marked as stopped, before the interruption goes on.

Streamlit starts the next run without waiting for the interrupted one to end, so the
next run waits (``wait_for_answer``, briefly) until the interrupted answer is stored:
otherwise it would draw the conversation without it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

import streamlit as st

from rag_core import AppContext, DocentError
from ui.answer import FOLLOW_UPS
from ui.markdown import escape_markdown, inert_markdown
from ui.progress import ensure_llm
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
    ctx: AppContext, session_id: str, question: str, *, rewrite: str | None = None, regenerate: bool = False
) -> None:
    """Answer ``question`` in ``session_id`` (or the last question again), streamed into an
    assistant message. Raises ``DocentError`` when it cannot; the question is kept.

    The engine searches before it needs the model: the sources and a preview sentence are
    shown first, then the model loads (behind a visible status, the first time) and reads."""
    writing = threading.Event()
    st.session_state[WRITING] = writing
    try:
        _write(ctx, session_id, question, rewrite, regenerate)
    finally:
        writing.set()
    remember(ctx, session_id, question)


def _write(ctx: AppContext, session_id: str, question: str, rewrite: str | None, regenerate: bool) -> None:
    """``write_answer``'s drawing: the search, the preview, the sources, Stop, the words."""
    with st.chat_message("assistant"):
        stream = ctx.chat.stream(question, session_id, rewrite=rewrite, regenerate=regenerate)
        searched, notices, text, sources = st.empty(), st.container(), st.empty(), st.empty()
        show_search(searched, question, stream.condensed_question)
        show_preview(text, stream.preview)
        if stream.sources:
            sources.caption(sources_caption(stream.sources))  # labels already escaped
        waited = ensure_llm(ctx)
        if waited and "model_load_s" not in stream.timings:
            # The engine times from the question, so its total already holds this wait: say so.
            stream.timings["model_load_s"] = round(waited, 3)
        stream.prepare()  # a follow-up only the model can rewrite is rewritten and searched again
        show_search(searched, question, stream.condensed_question)
        if stream.sources:
            sources.caption(sources_caption(stream.sources))
        else:
            sources.empty()
        with notices:
            for notice in stream.notices:
                st.info(escape_markdown(notice), icon="ℹ️")
        stop_slot = st.empty()
        stop_slot.button("⏹️ Stop", key="stop_answer")  # no tooltip: it would draw the button twice
        written = stream_text(stream, text)
        stop_slot.empty()
        if stream.turn is not None and stream.turn.answer != written.strip():  # e.g. nothing was written
            text.markdown(inert_markdown(stream.turn.answer))


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
                for _ in deltas:  # the engine ends the answer here and stores it, marked as stopped
                    pass
            except Exception:
                logger.exception("finishing a stopped answer")
        raise
    placeholder.markdown(inert_markdown(text))
    return text


def remember(ctx: AppContext, session_id: str, question: str) -> None:
    """The follow-up questions to offer under the answer just stored (kept by this browser)."""
    messages = ctx.sessions.messages(session_id)
    if not messages or messages[-1].role != "assistant" or messages[-1].id is None:
        return
    last = messages[-1]
    if last.meta.get("stopped") or not last.sources:
        return
    started = time.perf_counter()
    try:
        with st.spinner("Suggesting follow-up questions…"):
            questions = ctx.suggestions.follow_ups(question, last.content, last.sources, n=2)
    except DocentError as e:
        logger.info("no follow-ups: %s", e)
        return
    logger.info("follow-ups in %.2f s", time.perf_counter() - started)
    st.session_state.setdefault(FOLLOW_UPS, {})[last.id] = [q for q in questions if q.strip()][:2]
