"""The conversations in the sidebar: new, search, switch (grouped by day), rename, export,
delete, import.

"New chat" hands out an empty chat when there is one (the current one, or one an earlier
visit left), never one open in another tab unless this tab made it; chats are grouped under
Today, Yesterday, the weekday or the date of their last message, and a name that occurs
more than once shows its time.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta

import streamlit as st

from rag_core import AppContext, DocentError, Session
from ui.auth import shared_without_sign_in
from ui.confirm import confirm
from ui.current_session import NEW_CHAT, SESSION_ID, current_session, select_session, shown_elsewhere
from ui.exchange import export_buttons, import_box
from ui.jobs import sidebar_indicator
from ui.markdown import escape_markdown
from ui.navigation import CHAT_PAGE

SEARCH = "chat_search"
RECENT = 30  # the chats listed; the others are found by searching
MADE_HERE = "chats_made_here"  # ids of the chats this tab's "New chat" created
MANAGE = "manage_chat"  # whether "Rename, export or delete this chat" is open


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
        shown, total = ctx.sessions.latest(RECENT, query)
        if query and not shown:
            st.caption("No chat has that in its name.")
        repeated = {name for name, count in Counter(s.name for s in shown).items() if count > 1}
        today = date.today()
        day = None
        for session in shown:
            if day_label(session.updated, today) != day:
                day = day_label(session.updated, today)
                st.caption(day)
            _session_button(session, current, repeated)
        if total > len(shown):
            what = "chats match" if query else "chats"
            st.caption(f"The latest {len(shown)} of {total:,} {what}: search for the others.")
        manage_chat(ctx, current.id)
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
    """An empty chat: the current one if it is empty, else another empty one, else a new one.

    An empty chat open in another tab is not handed out (two people would write into one
    conversation), unless this tab made it; so a fresh visit reuses the empty chat an
    earlier one left, instead of adding another beside it."""
    made = st.session_state.setdefault(MADE_HERE, set())
    # Where everyone shares the conversations, an empty chat may be a visitor's on another server.
    others = [] if shared_without_sign_in(bool(ctx.settings.database_url)) else ctx.sessions.unused(NEW_CHAT)
    for session in [current, *others]:
        if session.name != NEW_CHAT or ctx.sessions.count(session.id):
            continue
        if session.id in made or not shown_elsewhere(session.id):
            return session
    session = ctx.sessions.create(NEW_CHAT)
    made.add(session.id)
    return session


def day_label(timestamp: float, today: date) -> str:
    day = date.fromtimestamp(timestamp)
    if day == today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    if timedelta(0) < today - day < timedelta(days=7):
        return f"{day:%A}"
    return f"{day.day} {day:%b %Y}"


@st.fragment
def manage_chat(ctx: AppContext, session_id: str) -> None:
    """Rename, export, delete: in a fragment, so that opening it (which makes the export
    files, ``ui.exchange.export_buttons``) never interrupts an answer being written; the
    exports are made only while it is open."""
    try:
        session = ctx.sessions.get(session_id)  # as stored now: a fragment's rerun keeps its arguments
    except DocentError:
        return  # deleted in another tab: the next run of the page shows another chat
    box = st.expander("✏️ Rename, export or delete this chat", key=MANAGE, on_change="rerun")
    with box:
        _manage_session(ctx, session, exports=bool(box.open))


def _manage_session(ctx: AppContext, session: Session, *, exports: bool) -> None:
    key = f"name_{session.id}"
    # The box shows the chat's name as stored now (the first question renames a new chat),
    # not what it held when it was first drawn; what the user is typing is left alone. A box
    # that lost its value (Streamlit drops a widget's state after a run that did not draw it,
    # which a click during a run can cause) or was emptied shows the stored name again.
    if st.session_state.get(f"{key}_was") != session.name or not str(st.session_state.get(key) or "").strip():
        st.session_state[key] = session.name
        st.session_state[f"{key}_was"] = session.name
    name = st.text_input("Name", key=key, max_chars=120)
    if st.button("Rename", key=f"rename_{session.id}", disabled=not name.strip() or name.strip() == session.name):
        try:
            ctx.sessions.rename(session.id, name)
        except DocentError as e:
            st.error(escape_markdown(str(e)))
        else:
            st.rerun()
    if exports:
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
            st.error(escape_markdown(str(e)))
            return
        st.session_state.pop(SESSION_ID, None)
        st.query_params.pop("session", None)
        st.rerun()
