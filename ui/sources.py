"""An answer's sources: grouped by file and page, and opened in a viewer at the passage.

Under an answer, one button per (file, page) lists the citation numbers found there. A
click (or a citation marker ``[n]`` in the answer, which links to ``?source=MESSAGE-n``)
opens the viewer, a dialog over the chat: for a PDF, the page as an image with the
passage highlighted, page by page; for other formats, the passage marked in the text
around it. Page images are rendered and cached on disk by ``ctx.viewer``.

Passages are document text, so they are shown with ``st.text`` or ``escape_markdown``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from rag_core import AppContext, DocentError, NotFoundError, Source
from ui.markdown import escape_markdown

logger = logging.getLogger(__name__)

VIEWER = "source_viewer"  # {"sources": [...], "n": 1-based citation, "page": page shown or None}
SOURCE_PARAM = "source"  # ?source=<message id>-<n>: a citation link opens the viewer on it


@dataclass
class SourceGroup:
    """The passages of one answer that come from the same file and page."""

    file: str
    page: int | None
    numbers: list[int] = field(default_factory=list)  # 1-based citation numbers
    page_label: str | None = None
    heading: str | None = None

    @property
    def label(self) -> str:
        parts = [self.file]
        if self.page is not None:
            parts.append(f"page {self.page_label or self.page}")
        elif self.heading:
            parts.append(self.heading)
        marks = " ".join(f"[{n}]" for n in self.numbers)
        return "📄 " + escape_markdown(" · ".join(parts)) + " " + escape_markdown(marks)


def group_sources(sources: list[Source]) -> list[SourceGroup]:
    """One group per file and page (per file and section for formats without pages), in
    the order the answer first cites them."""
    groups: dict[tuple[str, int | None, str | None], SourceGroup] = {}
    for n, source in enumerate(sources, start=1):
        file = str(source.get("file") or "unknown file")
        page = source.get("page") if source.get("page") not in ("", None) else None
        heading = source.get("heading") if page is None else None
        key = (file, page, heading)
        if key not in groups:
            groups[key] = SourceGroup(file, page, page_label=source.get("page_label"), heading=heading)
        groups[key].numbers.append(n)
    return list(groups.values())


def is_pdf(source: Source) -> bool:
    return str(source.get("file") or "").lower().endswith(".pdf") and source.get("page") not in (None, "")


# ============================================================================ under an answer
def render_source_buttons(sources: list[Source], key: str) -> None:
    """The grouped sources of an answer, each a button that opens the viewer."""
    if not sources:
        return
    with st.container(horizontal=True, gap="small", key=f"sources_{key}"):
        for i, group in enumerate(group_sources(sources)):
            st.button(
                group.label,
                key=f"src_{key}_{i}",
                type="tertiary",  # no tooltip: Streamlit would draw the button twice (one hidden)
                on_click=open_viewer,
                args=(sources, group.numbers[0]),
            )


def sources_caption(sources: list[Source]) -> str:
    """The sources of an answer still being written, in one line (no buttons yet)."""
    return "Sources: " + " · ".join(group.label.removeprefix("📄 ") for group in group_sources(sources))


# ============================================================================ the viewer
def open_viewer(sources: list[Source], n: int) -> None:
    st.session_state[VIEWER] = {"sources": list(sources), "n": n, "page": sources[n - 1].get("page")}


def close_viewer() -> None:
    st.session_state.pop(VIEWER, None)


def open_from_link(ctx: AppContext, session_id: str) -> None:
    """``?source=<message id>-<n>`` (a citation link opened in a new tab): open that passage."""
    wanted = st.query_params.get(SOURCE_PARAM)
    if not wanted:
        return
    del st.query_params[SOURCE_PARAM]  # once: a later rerun must not open it again
    message_id, _, n = wanted.partition("-")
    message = ctx.sessions.message(session_id, int(message_id)) if message_id.isdigit() else None
    if message is not None and n.isdigit() and 1 <= int(n) <= len(message.sources):
        open_viewer(message.sources, int(n))
        return
    st.toast("That source is not in this conversation any more.", icon="ℹ️")


def show_viewer(ctx: AppContext) -> None:
    """The viewer dialog, while a source is open (the last call of the chat page)."""
    if st.session_state.get(VIEWER):
        _viewer_dialog(ctx)


@st.dialog("Source", width="large", on_dismiss=close_viewer)
def _viewer_dialog(ctx: AppContext) -> None:
    state = st.session_state.get(VIEWER)
    if state:
        viewer_body(ctx, state)


def viewer_body(ctx: AppContext, state: dict[str, Any]) -> None:
    """What the viewer shows for ``state`` (see ``VIEWER``); a function of its own for tests."""
    sources: list[Source] = state["sources"]
    source = sources[state["n"] - 1]
    file = str(source.get("file") or "unknown file")
    st.markdown(f"#### {escape_markdown(file)}")
    if len(sources) > 1:
        _pick_passage(sources, state)
        source = sources[state["n"] - 1]
        file = str(source.get("file") or "unknown file")
    try:
        if is_pdf(source):
            _pdf_page(ctx.viewer, state, sources)
        else:
            _passage_in_context(ctx.viewer, file, str(source.get("text") or ""), state["n"])
    except NotFoundError as e:
        st.warning(f"{escape_markdown(str(e))} The passage as it was cited:", icon="⚠️")
        st.text(source.get("text") or "")
    except DocentError as e:
        st.error(escape_markdown(str(e)))


def _pick_passage(sources: list[Source], state: dict[str, Any]) -> None:
    def label(n: int) -> str:
        s = sources[n - 1]
        where = f" p. {s.get('page_label') or s.get('page')}" if s.get("page") not in (None, "") else ""
        return escape_markdown(f"[{n}] {s.get('file') or '?'}{where}")  # a page label is the document's text

    def picked() -> None:
        n = st.session_state.get("viewer_pick") or state["n"]
        state.update(n=n, page=sources[n - 1].get("page"))

    st.session_state["viewer_pick"] = state["n"]
    st.segmented_control(
        "Cited passages", list(range(1, len(sources) + 1)), format_func=label, key="viewer_pick", on_change=picked
    )


def _pdf_page(tool: Any, state: dict[str, Any], sources: list[Source]) -> None:
    cited = sources[state["n"] - 1]
    file = cited["file"]
    page = int(state.get("page") or cited["page"])
    # Highlight what this answer cites on the page shown: the chosen passage, or another one.
    here = [n for n, s in enumerate(sources, start=1) if s.get("file") == file and s.get("page") == page]
    n = state["n"] if state["n"] in here else (here[0] if here else None)
    passage = str(sources[n - 1].get("text") or "") if n else None
    image = tool.page_image(file, page, highlight=passage)
    left, right = st.columns([3, 2], gap="medium")
    left.image(image.png, width="stretch")  # the passage is highlighted on it (ctx.viewer)
    with right:
        _page_navigation(state, page, int(image.pages))
        if image.ocr:
            st.caption("This page is a scan: its text was read by OCR and may differ from the image.")
        if n is None:
            st.caption("No passage of this answer is on this page.")
        elif image.found:
            st.caption(f"Passage [{n}], highlighted on the page:")
        else:
            st.caption(f"Passage [{n}] could not be located on the page image; its text:")
        if n is not None:
            st.text(passage or "")


def _page_navigation(state: dict[str, Any], page: int, pages: int) -> None:
    def go(to: int) -> None:
        state["page"] = to

    with st.container(horizontal=True, vertical_alignment="center", key="viewer_nav"):
        st.button("◀ Previous", key="viewer_prev", disabled=page <= 1, on_click=go, args=(page - 1,))
        st.markdown(f"Page **{page}** of {pages}")
        st.button("Next ▶", key="viewer_next", disabled=page >= pages, on_click=go, args=(page + 1,))


def _passage_in_context(tool: Any, file: str, passage: str, n: int) -> None:
    found = tool.passage_in_context(file, passage)
    if not found.found:
        st.caption(f"Passage [{n}] was not found in the stored document (it may have changed); as cited:")
        st.text(passage)
        return
    st.caption(f"Passage [{n}], marked in the text around it:")
    with st.container(height=420, border=True, key="viewer_context"):
        st.markdown(marked_markdown(found.before, found.passage, found.after))


def marked_markdown(before: str, passage: str, after: str) -> str:
    """Document text as Markdown that shows it as is, with ``passage`` highlighted.

    Each paragraph of the passage is wrapped in Streamlit's background directive; the
    text inside is escaped, so it can neither close the directive nor open another."""
    marked = "\n\n".join(
        f":yellow-background[{escape_markdown(part.strip())}]" for part in passage.split("\n\n") if part.strip()
    )
    parts = [escape_markdown(before).rstrip(), marked, escape_markdown(after).lstrip()]
    return "\n\n".join(p for p in parts if p).replace("\n", "  \n").replace("  \n  \n", "\n\n")
