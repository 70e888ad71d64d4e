"""The conversation this browser shows.

Its id is per browser session (``st.session_state``) and mirrored in
``st.query_params["session"]``, so a reload or a bookmark comes back to the same conversation.
"""

from __future__ import annotations

import streamlit as st

from rag_core import AppContext, Session

NEW_CHAT = "New chat"  # the name of a session until its first question names it
SESSION_ID = "session_id"  # st.session_state key; the URL carries it as ?session=


def current_session(ctx: AppContext) -> Session:
    """The conversation this browser shows: from session_state, else the URL, else the latest.

    A missing or deleted id, or another person's, falls back to the most recent session (one is
    created when there is none): "not found", never the conversation. The URL is kept in step so
    it can be bookmarked.
    """
    sessions = ctx.sessions.list()
    by_id = {s.id: s for s in sessions}
    wanted = st.session_state.get(SESSION_ID) or st.query_params.get("session")
    session = by_id.get(wanted) if wanted else None
    if session is None:
        if wanted:
            st.toast(f"Conversation {wanted!r} was not found; showing your latest one.", icon="ℹ️")
        session = sessions[0] if sessions else ctx.sessions.create(NEW_CHAT)
    select_session(session.id)
    return session


def select_session(session_id: str) -> None:
    st.session_state[SESSION_ID] = session_id
    if st.query_params.get("session") != session_id:
        st.query_params["session"] = session_id
