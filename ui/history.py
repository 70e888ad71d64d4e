"""The conversation on the chat page, drawn from its end: the latest ``PAGE`` messages, and
"Show earlier messages" for the ones before, a page at a time, as chat apps do. A chat of
10,000 messages opens as fast as a chat of ten; its messages are read a page at a time
from the store (``SessionStore.recent``), never all of them.
"""

from __future__ import annotations

import streamlit as st

from rag_core import AppContext, Message, Session
from ui.answer import FOLLOW_UPS, render_answer, render_user
from ui.markdown import escape_markdown

PAGE = 30  # messages drawn at first, and added by each "Show earlier messages"
SHOWN = "messages_shown"  # {session id: how many of its latest messages are drawn}


def latest_messages(ctx: AppContext, session: Session) -> tuple[list[Message], int]:
    """The messages to draw (the latest ones, oldest first) and how many the session holds.

    The window begins with a question, so that the first answer drawn has its question."""
    shown = int(st.session_state.get(SHOWN, {}).get(session.id, PAGE))
    messages = ctx.sessions.recent(session.id, shown)
    if messages and messages[0].role == "assistant" and messages[0].id is not None:
        messages = ctx.sessions.recent(session.id, 1, before=messages[0].id) + messages
    total = ctx.sessions.count(session.id) if len(messages) >= shown else len(messages)
    return messages, total


def show_earlier(session_id: str) -> None:
    shown = st.session_state.setdefault(SHOWN, {})
    shown[session_id] = int(shown.get(session_id, PAGE)) + PAGE


def render_history(ctx: AppContext, session: Session, messages: list[Message], total: int, *, replacing: bool) -> None:
    """The conversation's latest messages; the turns a summary stands for, collapsed under it;
    above them, how many there are in all and a button for the earlier ones.

    ``replacing``: the last answer is being written again, so it is left out."""
    if total > len(messages):
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):
            st.caption(f"The latest {len(messages):,} of {total:,} messages.")
            st.button(
                "⬆️ Show earlier messages",
                key="show_earlier",
                type="tertiary",
                on_click=show_earlier,
                args=(session.id,),
            )
    if replacing and messages and messages[-1].role == "assistant":
        messages = messages[:-1]
    summary = max(ctx.sessions.summaries(session.id), key=lambda s: s.upto_message_id, default=None)
    upto = summary.upto_message_id if summary else None
    older = [m for m in messages if upto is not None and m.id is not None and m.id <= upto]
    earlier = total > len(messages)
    if older:
        with st.expander(f"🗜️ Earlier turns, summarised ({len(older)} messages)"):
            st.caption("The model now sees this summary instead of the messages below it:")
            st.markdown(escape_markdown(summary.text if summary else ""))
            st.divider()
            _draw(session, messages, 0, len(older), latest=not replacing, earlier=earlier)
    _draw(session, messages, len(older), len(messages), latest=not replacing, earlier=earlier)


def _draw(session: Session, messages: list[Message], start: int, end: int, *, latest: bool, earlier: bool) -> None:
    """``messages[start:end]``; the last message of all, when it is an answer, with its controls.
    ``earlier``: the conversation has messages before these (so every question is a follow-up)."""
    questions = [m.content for m in messages[:start] if m.role == "user"]
    for i in range(start, end):
        message = messages[i]
        if message.role == "user":
            questions.append(message.content)
            render_user(message.content)
            continue
        is_last = latest and i == len(messages) - 1
        render_answer(
            message,
            questions[-1] if questions else None,
            session_id=session.id,
            follow_up=earlier or len(questions) > 1,
            latest=is_last,
            follow_ups=st.session_state.get(FOLLOW_UPS, {}).get(message.id) if is_last else None,
        )
