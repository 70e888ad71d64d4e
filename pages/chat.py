"""Chat: the current session's conversation, a question box, answers streamed with sources."""

from __future__ import annotations

import streamlit as st

from rag_core import AppContext, DocentError, Message, Session
from ui.common import (
    NEW_CHAT,
    UPLOAD_PAGE,
    current_session,
    ensure_llm,
    ensure_routed,
    mismatch_notice,
    require_context,
)
from ui.markdown import escape_markdown, inert_markdown
from ui.messages import render_answer, render_details, render_user, stream_answer

FAILED = "failed_question"  # {"session": id, "question": text, "error": message}
RETRY = "retry_question"  # set by the Retry button, answered on the next run


def limit_to_documents(ctx: AppContext, session_id: str, doc_filter: list[str] | None, names: list[str]) -> None:
    current = [n for n in (doc_filter or []) if n in names]
    chosen = st.multiselect(
        "Search only these documents",
        names,
        default=current,
        key=f"doc_filter_{session_id}",
        placeholder="All documents",
        help="Limits this conversation to the chosen documents; leave empty to search all.",
    )
    if sorted(chosen) != sorted(current):
        ctx.sessions.set_doc_filter(session_id, chosen or None)


def render_history(messages: list[Message]) -> None:
    question = None
    for message in messages:
        if message.role == "user":
            question = message.content
            render_user(message.content)
        else:
            render_answer(message, question)


def offer_retry(session_id: str, messages: list[Message]) -> None:
    """A question with no answer yet (it failed, or the app stopped): its error and a Retry button."""
    failed = st.session_state.get(FAILED)
    if failed and failed["session"] != session_id:
        failed = None
    last_unanswered = messages[-1].content if messages and messages[-1].role == "user" else None
    if failed is None and last_unanswered is None:
        return
    question = failed["question"] if failed else last_unanswered
    if question != last_unanswered:
        render_user(question)  # it failed before the engine stored it
    with st.chat_message("assistant"):
        if failed:
            st.error(failed["error"])
        else:
            st.warning("This question has no answer yet.")
        st.button("🔁 Retry", key="retry", on_click=ask_again, args=(question,))


def ask_again(question: str) -> None:
    st.session_state[RETRY] = question


def name_after_first_question(ctx: AppContext, session: Session, question: str) -> bool:
    """A new chat takes its first question as its name, so the sidebar tells chats apart."""
    if session.name != NEW_CHAT:
        return False
    name = " ".join(question.split())
    ctx.sessions.rename(session.id, name if len(name) <= 48 else name[:47] + "…")
    return True


def answer(ctx: AppContext, session_id: str, question: str, *, show_question: bool = True) -> None:
    if show_question:
        render_user(question)
    with st.chat_message("assistant"):
        try:
            ensure_llm(ctx)
            stream = ctx.chat.stream(question, session_id)
            stream.prepare()  # a follow-up the LLM rewrites is searched again before the answer
            placeholder = st.empty()
            placeholder.markdown("…")
            render_details(
                question=question,
                condensed=stream.condensed_question,
                notices=stream.notices,
                sources=stream.sources,
            )
            written = stream_answer(stream, placeholder)
            if stream.turn and stream.turn.answer != written.strip():  # e.g. nothing was written
                placeholder.markdown(inert_markdown(stream.turn.answer))
        except DocentError as e:
            st.session_state[FAILED] = {"session": session_id, "question": question, "error": str(e)}
            st.rerun()  # draw the failure as a reload would: the question kept, Retry offered
        st.session_state.pop(FAILED, None)
        if stream.turn and stream.turn.timings.get("total_s") is not None:
            st.caption(f"Answered in {stream.turn.timings['total_s']:.1f} s")


ensure_routed()
ctx = require_context()
session = current_session(ctx)
st.title("💬 Chat")
st.caption(f"Conversation: {escape_markdown(session.name)}")

names = [doc.name for doc in ctx.ingestion.documents()]
if not names:
    st.info("No document is indexed yet. Upload some documents first, then ask about them.")
    st.page_link(UPLOAD_PAGE, label="Upload documents", icon="📤")
else:
    limit_to_documents(ctx, session.id, session.doc_filter, names)
mismatch_notice(ctx)

messages = ctx.sessions.messages(session.id)
render_history(messages)
retry = st.session_state.pop(RETRY, None)
if retry is None:
    offer_retry(session.id, messages)
question = st.chat_input("Ask about your documents", disabled=not names) or retry
if question:
    renamed = not messages and name_after_first_question(ctx, session, question)
    shown = bool(messages) and messages[-1].role == "user" and messages[-1].content == question
    answer(ctx, session.id, question, show_question=not shown)
    if renamed:
        st.rerun()  # redraw the sidebar with the new name
