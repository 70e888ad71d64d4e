"""The conversation this browser shows.

Its id is per browser session (``st.session_state``) and mirrored in
``st.query_params["session"]``, so a reload or a bookmark comes back to the same conversation.

This server also keeps which conversation each of its open tabs shows (``shown_elsewhere``),
so that "New chat" can hand out an empty chat nobody is looking at, but not one open in
another tab. It is advice, kept in this process: tabs of another server on the same data
folder are not seen (two tabs in one chat are then kept apart by the one-question-at-a-time
claim, ``rag_core.storage.claims``).
"""

from __future__ import annotations

import contextlib
import threading
import uuid

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from rag_core import AppContext, NotFoundError, Session
from ui.auth import shared_without_sign_in
from ui.markdown import escape_markdown

NEW_CHAT = "New chat"  # the name of a session until its first question names it
SESSION_ID = "session_id"  # st.session_state key; the URL carries it as ?session=
TAB = "tab_id"  # st.session_state key: this tab, for ``shown_elsewhere``

_shown: dict[str, tuple[str | None, str]] = {}  # tab id -> (its Streamlit session id, the chat it shows)
_shown_lock = threading.Lock()


def current_session(ctx: AppContext) -> Session:
    """The conversation this browser shows: from session_state, else the URL, else the latest.

    A missing or deleted id, or another person's, falls back to the most recent session (one is
    created when there is none): "not found", never the conversation. The URL is kept in step so
    it can be bookmarked. Where everyone shares the conversations (a team database without
    sign-in, ``ui.auth.shared_without_sign_in``), a new visitor gets a new chat instead: the
    latest is another person's.
    """
    wanted = st.session_state.get(SESSION_ID) or st.query_params.get("session")
    session = None
    if wanted:
        with contextlib.suppress(NotFoundError):
            session = ctx.sessions.get(str(wanted))
    if session is None:
        if wanted:
            shown = escape_markdown(repr(wanted))  # from the address: anyone can write it
            st.toast(f"Conversation {shown} was not found; showing your latest one.", icon="ℹ️")
        latest, _ = ctx.sessions.latest(1)
        if latest and not (shared_without_sign_in(bool(ctx.settings.database_url)) and not wanted):
            session = latest[0]
        else:
            session = ctx.sessions.create(NEW_CHAT)
    select_session(session.id)
    return session


def select_session(session_id: str) -> None:
    st.session_state[SESSION_ID] = session_id
    if st.query_params.get("session") != session_id:
        st.query_params["session"] = session_id
    tab = st.session_state.setdefault(TAB, uuid.uuid4().hex)
    script = get_script_run_ctx()
    with _shown_lock:
        _shown[tab] = (script.session_id if script else None, session_id)


def shown_elsewhere(chat_id: str) -> bool:
    """Whether another open tab of this server shows ``chat_id`` (tabs whose browser went
    away are forgotten here)."""
    mine = st.session_state.get(TAB)
    live = runtime.get_instance() if runtime.exists() else None
    with _shown_lock:
        for tab, (streamlit_session, chat) in list(_shown.items()):
            if live is not None and streamlit_session is not None and not live.is_active_session(streamlit_session):
                del _shown[tab]
            elif tab != mine and chat == chat_id:
                return True
    return False
