"""A question typed is kept before anything else happens, and never dropped silently.

The chat box's ``on_submit`` (``keep_typed``) runs before the page: it keeps the question in
this tab (``TYPED``) and in the store (``SessionStore.pending``: the database, or this
process's memory while the database is away). The page lets it go once the question is in
its conversation. Until then, whatever happened (the database stopped, the tab was reloaded
while the question waited behind another tab's answer, the page failed while drawing), the
chat shows it with "Ask it" and "Dismiss"; the page that says the database is away shows it
too, and that it is kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import streamlit as st

from rag_core import AppContext, Busy, DocentError
from ui.answer import PENDING, render_user
from ui.context import get_context
from ui.current_session import SESSION_ID
from ui.markdown import escape_markdown

if TYPE_CHECKING:
    from rag_core.storage.pending import Pending

QUESTION = "question"  # the chat box's key
TYPED = "typed_question"  # {"id": kept id or None, "session": id, "question": text}: typed here, not yet asked
ASKING = "asking_kept"  # the kept question this run asks (its lease is let go when the run ends)


def keep_typed() -> None:
    """The chat box's ``on_submit``: keep the question, before the run draws anything."""
    text = str(st.session_state.get(QUESTION) or "").strip()
    session_id = st.session_state.get(SESSION_ID) or st.query_params.get("session")
    if not text or not session_id:
        return
    typed: dict[str, Any] = {"id": None, "session": session_id, "question": text}
    st.session_state[TYPED] = typed
    with contextlib.suppress(DocentError):  # else kept in this tab alone; the page says what failed
        typed["id"] = st.session_state[ASKING] = get_context().sessions.pending.keep(session_id, text).id


@contextlib.contextmanager
def asking(ctx: AppContext) -> Iterator[None]:
    """Around the chat page's run: the kept question it asks is let go when the run ends, so
    that if it did not reach its conversation (it failed, the run was stopped by a reload or
    a click), any tab shows it, with "Ask it"."""
    pending_id = st.session_state.pop(ASKING, None)
    try:
        yield
    finally:
        if pending_id:
            with contextlib.suppress(DocentError):
                ctx.sessions.pending.release(pending_id)


def renewer(ctx: AppContext, request: dict[str, Any]) -> Callable[[], None]:
    """What a question waiting behind another answer calls as it waits: its lease renewed."""
    pending_id = request.get("pending")

    def renew() -> None:
        if pending_id:
            with contextlib.suppress(DocentError):
                ctx.sessions.pending.renew(pending_id)

    return renew


def typed_request(typed: str | None) -> dict[str, Any] | None:
    """The request for a question typed in this run (with the id it is kept under)."""
    if typed is None:
        return None
    kept = st.session_state.get(TYPED) or {}
    same = kept.get("question") == typed.strip()
    return {"question": typed, "pending": kept.get("id") if same else None}


def asked(ctx: AppContext, request: dict[str, Any]) -> None:
    """The question of ``request`` is in its conversation: let its kept copy go."""
    kept = st.session_state.get(TYPED) or {}
    if kept.get("question") == request["question"].strip():
        st.session_state.pop(TYPED, None)
    if request.get("pending"):
        with contextlib.suppress(DocentError):  # else still kept: the next run lets it go, seeing it stored
            ctx.sessions.pending.drop(request["pending"])


def _ask(ctx: AppContext, question: str, pending_id: str) -> None:
    st.session_state[PENDING] = {"question": question, "rewrite": None, "regenerate": False, "pending": pending_id}
    with contextlib.suppress(DocentError):
        ctx.sessions.pending.renew(pending_id, force=True)  # being asked: other tabs leave it to this one
        st.session_state[ASKING] = pending_id


def _dismiss(ctx: AppContext, pending_id: str) -> None:
    ctx.sessions.pending.drop(pending_id)
    if (st.session_state.get(TYPED) or {}).get("id") == pending_id:
        st.session_state.pop(TYPED, None)


def offer_kept(ctx: AppContext, kept: list[Pending], busy: Busy | None, failed: dict[str, Any] | None) -> None:
    """The questions kept for this conversation but not in it (``kept``), each with "Ask it"
    and "Dismiss"; while another tab answers in the conversation (``busy``), Ask waits for it.
    ``failed``: this tab's failure to ask one of them (its error is shown under it)."""
    for i, p in enumerate(kept):
        render_user(p.question)
        with st.chat_message("assistant"):
            if failed and failed.get("question") == p.question:
                st.error(escape_markdown(failed["error"]))
            elif busy is not None:
                st.info("Not asked yet: it can be asked once the answer being written is stored.", icon="⏳")
            else:
                st.warning("Kept, not asked yet (the page was left or failed before asking it).", icon="📝")
            with st.container(horizontal=True, gap="small"):
                st.button(
                    "❓ Ask it",
                    key=f"ask_pending_{i}",
                    on_click=_ask,
                    args=(ctx, p.question, p.id),
                    disabled=busy is not None,
                )
                st.button("Dismiss", key=f"dismiss_pending_{i}", type="tertiary", on_click=_dismiss, args=(ctx, p.id))


def show_kept_while_away() -> None:
    """On the page that says the database is away: the question typed here, and that it is
    kept (it shows in the chat, with "Ask it", once the database answers)."""
    typed = st.session_state.get(TYPED)
    questions = [typed["question"]] if typed else []
    with contextlib.suppress(DocentError):
        questions += [p.question for p in get_context().sessions.pending.in_memory() if p.question not in questions]
    for question in questions:
        render_user(question)
    if questions:
        st.info(
            "Your question is kept, not asked: it shows in the chat with a button to ask it as soon as the database "
            "answers again.",
            icon="📝",
        )
