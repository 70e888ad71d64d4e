"""The conversations in the sidebar: new, search, switch (grouped by day), rename, export,
delete, import.

"New chat" in an empty chat that this tab made stays in it instead of adding another (an
empty chat this tab merely opened may be someone else's, open in their tab); chats are grouped under
Today, Yesterday, the weekday or the date of their last message, and a name that occurs
more than once shows its time.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta

import streamlit as st

from rag_core import AppContext, DocentError, Session
from ui.confirm import confirm
from ui.current_session import NEW_CHAT, SESSION_ID, current_session, select_session
from ui.exchange import export_buttons, import_box
from ui.jobs import sidebar_indicator
from ui.markdown import escape_markdown
from ui.navigation import CHAT_PAGE

SEARCH = "chat_search"
MADE_HERE = "chats_made_here"  # ids of the chats this tab's "New chat" created


def render_sidebar(ctx: AppContext) -> None:
    current = current_session(ctx)
    with st.sidebar:
        st.subheader("Conversations")
        if st.button("➕ New chat", key="new_chat", width="stretch"):
            select_session(new_chat(ctx, current).id)
            st.switch_page(CHAT_PAGE)
        query = st.text_input(
            "Search chats", key=SEARCH, placeholder="🔍 Search chats", label_visibility="collapsed"
        ).strip()
        sessions = ctx.sessions.list()
        shown = [s for s in sessions if matches(s.name, query)]
        if query and not shown:
            st.caption("No chat has that in its name.")
        repeated = {name for name, count in Counter(s.name for s in sessions).items() if count > 1}
        today = date.today()
        day = None
        for session in shown:
            if day_label(session.updated, today) != day:
                day = day_label(session.updated, today)
                st.caption(day)
            _session_button(session, current, repeated)
        with st.expander("✏️ Rename, export or delete this chat"):
            _manage_session(ctx, current)
        import_box(ctx)
    sidebar_indicator(ctx)  # background uploads, start-up repairs (ui/jobs.py)


def _session_button(session: Session, current: Session, repeated: set[str]) -> None:
    is_current = session.id == current.id
    name = session.name
    if name in repeated:
        name += f" · {datetime.fromtimestamp(session.updated):%H:%M}"
    label = ("💬 " if is_current else "") + escape_markdown(name)
    # No tooltip: with one, Streamlit draws a stretched button twice (one hidden), and the
    # day headings and the time of repeated names already tell chats apart.
    if st.button(label, key=f"open_{session.id}", type="primary" if is_current else "secondary", width="stretch"):
        select_session(session.id)
        st.switch_page(CHAT_PAGE)


def new_chat(ctx: AppContext, current: Session) -> Session:
    """The current chat if this tab created it and it has no message yet, else a new one. An
    empty chat this tab did not create is not reused: it may be open in another tab (a new tab
    opens the most recent chat), and two people would write into one conversation."""
    made = st.session_state.setdefault(MADE_HERE, set())
    if current.id in made and current.name == NEW_CHAT and not ctx.sessions.messages(current.id):
        return current
    session = ctx.sessions.create(NEW_CHAT)
    made.add(session.id)
    return session


def matches(name: str, query: str) -> bool:
    """Every word of ``query`` is in ``name`` (case-insensitive); an empty query matches all."""
    name = name.casefold()
    return all(word in name for word in query.casefold().split())


def day_label(timestamp: float, today: date) -> str:
    day = date.fromtimestamp(timestamp)
    if day == today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    if timedelta(0) < today - day < timedelta(days=7):
        return f"{day:%A}"
    return f"{day.day} {day:%b %Y}"


def _manage_session(ctx: AppContext, session: Session) -> None:
    key = f"name_{session.id}"
    # The box shows the chat's name as stored now (the first question renames a new chat),
    # not what it held when it was first drawn; what the user is typing is left alone.
    if st.session_state.get(f"{key}_was") != session.name:
        st.session_state[key] = session.name
        st.session_state[f"{key}_was"] = session.name
    name = st.text_input("Name", key=key, max_chars=120)
    if st.button("Rename", key=f"rename_{session.id}", disabled=not name.strip() or name.strip() == session.name):
        try:
            ctx.sessions.rename(session.id, name)
        except DocentError as e:
            st.error(str(e))
        else:
            st.rerun()
    export_buttons(ctx, session)
    if confirm(
        f"delete_chat_{session.id}",
        "🗑️ Delete this chat",
        "Delete this chat and all its messages? This cannot be undone.",
        "Delete",
    ):
        try:
            ctx.sessions.delete(session.id)
        except DocentError as e:
            st.error(str(e))
            return
        st.session_state.pop(SESSION_ID, None)
        st.query_params.pop("session", None)
        st.rerun()
