"""Chat: the current session's conversation, a question box, answers streamed with sources.

A run draws the conversation from the session, then answers at most one request: a typed
question, or one a button left (a suggestion, a follow-up, Retry, Regenerate, an edited
search; see ``ui.answer.request_answer``). Once an answer is stored the page runs again, so
every answer on screen is drawn the same way, from the session.
"""

from __future__ import annotations

import streamlit as st

from rag_core import AppContext, DocentError, Message, Session
from ui.answer import PENDING, render_user, request_answer
from ui.context import require_context
from ui.current_session import NEW_CHAT, current_session
from ui.exchange import import_report
from ui.history import latest_messages, render_history
from ui.live import wait_for_answer, write_answer
from ui.markdown import escape_markdown, inert_markdown
from ui.navigation import UPLOAD_PAGE
from ui.pending import QUESTION, asked, asking, keep_typed, offer_kept, renewer, typed_request
from ui.rebuild import mismatch_notice
from ui.sources import open_from_link, show_viewer

FAILED = "failed_question"  # {"session": id, "question": text, "error": message, "request": the request}
UNSAVED = "unsaved_answer"  # {"session": id, "question", "answer", "notices"}: answered on a full disk, not stored


def limit_to_documents(ctx: AppContext, session: Session, names: list[str]) -> list[str]:
    """The document filter; returns the documents in scope (empty: all of them)."""
    current = [n for n in (session.doc_filter or []) if n in names]
    chosen = st.multiselect(
        "Search only these documents",
        names,
        default=current,
        key=f"doc_filter_{session.id}",
        placeholder="All documents",
        help="Limits this conversation to the chosen documents; leave empty to search all.",
    )
    if sorted(chosen) != sorted(current):
        ctx.sessions.set_doc_filter(session.id, chosen or None)
    return chosen


def scope_line(scope: list[str], names: list[str]) -> str:
    if not scope or len(scope) == len(names):
        return f"Searching all {len(names)} document(s)"
    shown = ", ".join(escape_markdown(n) for n in scope[:4])
    more = f" and {len(scope) - 4} more" if len(scope) > 4 else ""
    return f"Searching {len(scope)} of {len(names)} documents: {shown}{more}"


def offer_retry(ctx: AppContext, session_id: str, messages: list[Message]) -> None:
    """A question with no answer yet (it failed, or the app stopped): its error and a Retry
    button; or, while another tab or process is answering it, that, until it is answered.
    Then the questions kept but not yet in the conversation (``ui.pending``)."""
    failed = st.session_state.get(FAILED)
    if failed and failed["session"] != session_id:
        failed = None
    last_unanswered = messages[-1].content if messages and messages[-1].role == "user" else None
    kept = ctx.sessions.pending.of(session_id)
    busy = ctx.sessions.claims.holder(session_id)
    failed_kept = failed if failed and any(p.question == failed["question"] for p in kept) else None
    if failed_kept:
        failed = None  # shown with its kept copy, below
    elsewhere = busy is not None or ctx.sessions.pending.being_asked(session_id) > 0  # another tab's question
    if failed is None and elsewhere:
        being_answered(ctx, session_id)  # and the page runs again once it is answered
    elif failed is not None or last_unanswered is not None:
        question = str(failed["question"] if failed else last_unanswered)
        if question != last_unanswered:
            render_user(question)  # it failed before the engine stored it
        with st.chat_message("assistant"):
            if failed:
                st.error(escape_markdown(failed["error"]))
            else:
                st.warning("This question has no answer yet.")
            again = {k: v for k, v in (failed or {}).get("request", {}).items() if k in ("rewrite", "regenerate")}
            st.button("🔁 Retry", key="retry", on_click=request_answer, args=(question,), kwargs=again)
    offer_kept(ctx, kept, busy, failed_kept)


@st.fragment(run_every=2)
def being_answered(ctx: AppContext, session_id: str) -> None:
    """The last question is being answered elsewhere (another tab, window or command): say
    so, and draw the page again once its answer is stored."""
    busy = ctx.sessions.claims.holder(session_id)
    if busy is None and not ctx.sessions.pending.being_asked(session_id):
        st.rerun(scope="app")
    if busy is None:  # a question typed in another tab, about to be asked
        st.caption("⏳ A question asked in another tab is about to be answered here; it shows once it is written.")
        return
    with st.chat_message("assistant"):
        st.info(f"Being answered: {escape_markdown(busy.describe())}. It shows here once it is written.", icon="⏳")


def offer_suggestions(ctx: AppContext, scope: list[str]) -> None:
    """A new conversation: three questions drawn from the documents in scope."""
    try:
        questions = [q for q in ctx.suggestions.for_documents(scope or None, n=3) if q.strip()][:3]
    except DocentError as e:
        st.caption(f"No suggestions: {escape_markdown(str(e))}")
        return
    if not questions:
        return
    st.caption("💡 Questions these documents can answer:")
    with st.container(horizontal=True, gap="small", key="suggestions"):
        for i, q in enumerate(questions):
            st.button(escape_markdown(q), key=f"suggestion_{i}", on_click=request_answer, args=(q,))


def name_after_first_question(ctx: AppContext, session: Session, question: str) -> bool:
    """A new chat takes its first question as its name, so the sidebar tells chats apart."""
    name = " ".join(question.split())
    if session.name != NEW_CHAT or not name:
        return False
    ctx.sessions.rename(session.id, name if len(name) <= 48 else name[:47] + "…")
    return True


def answer(ctx: AppContext, session: Session, messages: list[Message], request: dict) -> None:
    question = request["question"]
    shown = bool(messages) and messages[-1].role == "user" and messages[-1].content == question
    if not request.get("regenerate") and not shown:
        render_user(question)
    if not messages:
        name_after_first_question(ctx, session, question)
    st.session_state.pop(UNSAVED, None)
    try:
        turn = write_answer(
            ctx,
            session.id,
            question,
            rewrite=request.get("rewrite"),
            regenerate=bool(request.get("regenerate")),
            on_wait=renewer(ctx, request),
        )
    except DocentError as e:
        st.session_state[FAILED] = {"session": session.id, "question": question, "error": str(e), "request": request}
    else:
        st.session_state.pop(FAILED, None)
        asked(ctx, request)
        if turn.answered is not None and not turn.save:  # the disk is full: not in the session, kept on screen
            answered = turn.answered
            st.session_state[UNSAVED] = {"session": session.id, "question": question, **answered.as_json()}
    st.rerun()  # draw it from the session, with its controls (or the failure, with Retry)


def show_unsaved(session_id: str, messages: list[Message]) -> None:
    """The last answer, when the disk was too full to store it: shown until the next question."""
    unsaved = st.session_state.get(UNSAVED)
    if not unsaved or unsaved["session"] != session_id:
        return
    if not (messages and messages[-1].role == "user" and messages[-1].content == unsaved["question"]):
        render_user(unsaved["question"])  # the question could not be stored either
    with st.chat_message("assistant"):
        st.markdown(inert_markdown(unsaved["answer"]))
        for notice in unsaved["notices"]:
            st.warning(escape_markdown(notice), icon="💾")


@st.fragment(run_every=2)
def model_loading(ctx: AppContext) -> None:
    """A line saying the local model is loading in the background, gone once it is ready."""
    if ctx.models.loading:
        st.caption(f"⏳ Loading the local model in the background: {escape_markdown(ctx.models.loading)}")


ctx = require_context()
with asking(ctx):  # a kept question this run asks is let go when it ends (ui.pending)
    session = current_session(ctx)
    st.title("💬 Chat")
    header = st.empty()
    names = [doc.name for doc in ctx.ingestion.documents()]
    scope: list[str] = []
    if not names:
        st.info("No document is indexed yet. Upload some documents first, then ask about them.")
        st.page_link(UPLOAD_PAGE, label="Upload documents", icon="📤")
    else:
        scope = limit_to_documents(ctx, session, names)
    header.caption(
        f"Conversation: {escape_markdown(session.name)}" + (f" · 🔎 {scope_line(scope, names)}" if names else "")
    )
    mismatch_notice(ctx)
    import_report(session.id)
    if names and ctx.settings.llm_provider == "local" and ctx.models.preload():
        model_loading(ctx)  # in the background: the page is usable, the first answer waits less

    wait_for_answer()  # an answer a click interrupted is stored by its own run, maybe still now
    messages, total = latest_messages(ctx, session)
    open_from_link(ctx, session.id)
    # kept by its on_submit before this run began (ui.pending)
    typed = st.chat_input("Ask about your documents", disabled=not names, key=QUESTION, on_submit=keep_typed)
    request = st.session_state.pop(PENDING, None) or typed_request(typed)
    if request is not None and not request["question"].strip():
        st.toast("Type a question first.", icon="✏️")
        request = None
    render_history(ctx, session, messages, total, replacing=bool(request and request.get("regenerate")))
    if request is not None:
        answer(ctx, session, messages, request)
    else:
        show_unsaved(session.id, messages)
        offer_retry(ctx, session.id, messages)
        if not messages and names:
            offer_suggestions(ctx, scope)
    show_viewer(ctx)
