"""Drawing chat messages: the answer, what was searched, notices and sources.

Everything here is data from documents or from a model, so it goes through
``inert_markdown`` (answers), ``escape_markdown`` (labels) or ``st.text`` (passages):
never ``unsafe_allow_html``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from rag_core import Message
from ui.common import source_label
from ui.markdown import escape_markdown, inert_markdown

CURSOR = " ▌"


def render_user(text: str) -> None:
    with st.chat_message("user"):
        st.markdown(escape_markdown(text))


def render_answer(message: Message, question: str | None) -> None:
    """A stored answer with what it was based on."""
    with st.chat_message("assistant"):
        st.markdown(inert_markdown(message.content))
        render_details(
            question=question,
            condensed=message.condensed_question,
            notices=message.meta.get("notices") or [],
            sources=message.sources,
            timings=message.meta.get("timings") or {},
        )


def stream_answer(deltas: Iterable[str], placeholder: Any) -> str:
    """Show an answer while it is written, like ``st.write_stream``.

    ``st.write_stream`` would render the raw accumulated text; here every frame is
    passed through ``inert_markdown`` first, so a half-written image or link in the
    model's output never becomes live, even for a moment.
    """
    text = ""
    for delta in deltas:
        text += delta
        placeholder.markdown(inert_markdown(text) + CURSOR)
    placeholder.markdown(inert_markdown(text))
    return text


def render_details(
    *,
    question: str | None,
    condensed: str | None,
    notices: list[str],
    sources: list[dict[str, Any]],
    timings: dict[str, float] | None = None,
) -> None:
    """Under an answer: the standalone question searched (when rewritten), notices, sources."""
    if condensed and question is not None and condensed.strip() != question.strip():
        st.caption(f"🔎 Searched for: {escape_markdown(condensed)}")
    for notice in notices:
        st.info(escape_markdown(notice), icon="ℹ️")
    for source in sources:
        with st.expander(source_label(source)):
            st.text(source.get("text") or "")
    if timings and timings.get("total_s") is not None:
        st.caption(f"Answered in {float(timings['total_s']):.1f} s")
