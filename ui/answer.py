"""Drawing an answer: its text, what was searched, where the time went, its sources, and
the controls of the latest one (edit the search, regenerate, copy, follow-ups).

Everything here is data from documents or from a model, so it goes through
``inert_markdown`` (answers), ``escape_markdown`` (labels) or ``st.text``/``st.code``
(passages, the Markdown to copy): never ``unsafe_allow_html``.

Controls do not answer by themselves: they leave a request in ``st.session_state[PENDING]``
that the chat page answers, in place of the answer it replaces, on its next run.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from rag_core import Message, Source
from ui.markdown import escape_markdown, inert_markdown
from ui.sources import SOURCE_PARAM, render_source_buttons

FOLLOW_UPS = "follow_ups"  # {message id: follow-up questions suggested after it}
PENDING = "pending_answer"  # {"question": str, "rewrite": str | None, "regenerate": bool}
CURSOR = " ▌"


def request_answer(question: str, *, rewrite: str | None = None, regenerate: bool = False) -> None:
    """Ask (a suggestion, a follow-up, Retry) or answer the last question again (Regenerate,
    an edited search): the chat page answers it on its next run."""
    st.session_state[PENDING] = {"question": question, "rewrite": rewrite, "regenerate": regenerate}


def render_user(text: str) -> None:
    with st.chat_message("user"):
        st.markdown(escape_markdown(text))


def citation_link(session_id: str, message: Message):
    """``n`` -> the address that opens source ``n`` of ``message`` (in a new tab)."""

    def href(n: int) -> str | None:
        if message.id is None or not 1 <= n <= len(message.sources):
            return None
        return f"?session={session_id}&{SOURCE_PARAM}={message.id}-{n}"

    return href


def render_answer(
    message: Message,
    question: str | None,
    *,
    session_id: str | None = None,
    follow_up: bool = False,
    latest: bool = False,
    follow_ups: list[str] | None = None,
) -> None:
    """A stored answer with what it was based on; the latest one with its controls and the
    follow-up questions suggested under it."""
    meta = message.meta or {}
    key = str(message.id if message.id is not None else "draft")
    with st.chat_message("assistant"):
        cite = citation_link(session_id, message) if session_id else None
        st.markdown(inert_markdown(message.content, cite=cite))
        if meta.get("stopped"):
            st.caption("⏹️ Stopped before the end" + (": Regenerate writes it in full." if latest else "."))
        searched(
            question,
            message.condensed_question,
            follow_up=follow_up,
            edited=bool(meta.get("rewrite_edited")),
            edit_key=key if latest and question else None,
        )
        for notice in meta.get("notices") or []:
            st.info(escape_markdown(notice), icon="ℹ️")
        render_source_buttons(message.sources, key)
        line = timing_line(meta.get("timings") or {}, meta.get("served_by") or {})
        if line:
            st.caption(line)
        with st.container(horizontal=True, gap="small", key=f"actions_{key}"):
            if latest and question:
                st.button(
                    "🔁 Regenerate",
                    key=f"regenerate_{key}",
                    type="tertiary",
                    on_click=request_answer,
                    args=(question,),
                    kwargs={"regenerate": True},
                )
            with st.popover("📋 Copy", type="tertiary", key=f"copy_{key}"):
                st.caption("The answer with its sources, as Markdown (copy button at the top right):")
                st.code(answer_markdown(message.content, message.sources), language="markdown", wrap_lines=True)
        render_follow_ups(follow_ups or [], key)


def searched(
    question: str | None, condensed: str | None, *, follow_up: bool, edited: bool, edit_key: str | None
) -> None:
    """The standalone question a follow-up was searched with; on the latest answer, editable."""
    if not condensed or question is None:
        return
    if not follow_up and condensed.strip() == question.strip():
        return
    note = " (edited)" if edited else ""
    st.caption(f"🔎 Searched for: {escape_markdown(condensed)}{note}")
    if edit_key is None:
        return
    popover = st.popover("✏️ Edit the search", type="tertiary", key=f"edit_search_{edit_key}")
    with popover, st.form(f"rewrite_{edit_key}", border=False):
        text = st.text_area("Search with this question instead", value=condensed, key=f"rewrite_text_{edit_key}")
        st.caption("The documents are searched again with it, and the question answered again.")
        if st.form_submit_button("Search and answer again", type="primary") and text.strip():
            request_answer(question, rewrite=text.strip(), regenerate=True)
            st.rerun()


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def timing_line(timings: dict[str, Any], served_by: dict[str, Any]) -> str | None:
    """Where the time went, in one line: ``Answered in 4.2 s · condense 410 ms · retrieval ...``.

    The total counts from the question, so it holds the model's loading when the answer
    waited for it (``model_load_s``): then the line says how much of it that was."""
    total = timings.get("total_s")
    if total is None:
        return None
    head = f"Answered in {float(total):.1f} s"
    load = float(timings.get("model_load_s") or 0)
    if load >= 0.1:
        head += f", including {load:.1f} s loading the model"
    parts = [head]
    condense = str(served_by.get("condense") or "")
    for name, label in (("condense_s", "condense"), ("retrieve_s", "retrieval"), ("rerank_s", "rerank")):
        if timings.get(name) is not None and not (name == "condense_s" and condense == "first turn"):
            parts.append(f"{label} {_seconds(float(timings[name]))}")
    if timings.get("first_token_s") is not None:
        parts.append(f"first token {_seconds(float(timings['first_token_s']))}")
    if timings.get("tokens_per_s"):
        parts.append(f"{float(timings['tokens_per_s']):.1f} tokens/s")
    if served_by.get("llm"):
        parts.append(f"by {served_by['llm']}")
    rerank = str(served_by.get("rerank") or "")
    if rerank:
        parts.append("no rerank" if rerank == "off" else f"rerank {rerank}")
    if condense and condense not in ("first turn", "llm"):
        parts.append(f"rewrite {condense}")
    parts.extend(figures_part(timings))
    return "⏱️ " + escape_markdown(" · ".join(parts))


def figures_part(timings: dict[str, Any]) -> list[str]:
    """What the figure check found, for the timing line: "1 figure not found in the sources"."""
    checked, missing = int(timings.get("figures_checked") or 0), int(timings.get("figures_unsupported") or 0)
    if not checked:
        return []
    if missing:
        return [f"{missing} figure{'s' if missing != 1 else ''} not found in the sources"]
    return [f"{checked} figure{'s' if checked != 1 else ''} checked against the sources"]


def answer_markdown(answer: str, sources: list[Source]) -> str:
    """An answer and its sources as Markdown to paste elsewhere (``[n]`` as in the answer)."""
    lines = [answer.strip(), ""]
    if sources:
        lines.append("Sources:")
        lines.append("")
        for n, source in enumerate(sources, start=1):
            where = str(source.get("file") or "unknown file")
            if source.get("page") not in (None, ""):
                where += f", page {source.get('page_label') or source['page']}"
            passage = " ".join(str(source.get("text") or "").split())
            if len(passage) > 300:
                passage = passage[:299] + "…"
            lines.append(f"[{n}] {where}: “{passage}”")
    return "\n".join(lines).strip() + "\n"


def render_follow_ups(questions: list[str], key: str) -> None:
    """Up to two follow-up questions under the latest answer, as buttons that ask them."""
    if not questions:
        return
    with st.container(horizontal=True, gap="small", key=f"follow_ups_{key}"):
        for i, q in enumerate(questions):
            st.button(f"↪ {escape_markdown(q)}", key=f"follow_up_{key}_{i}", on_click=request_answer, args=(q,))
