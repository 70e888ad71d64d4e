"""Export a conversation (JSON to import elsewhere, Markdown to read) and import one.

An export holds the messages with their sources and a digest of each cited document, so
an import into another data folder can say which documents are missing there, or indexed
with other content (``rag_core.exchange``). An imported file is read once: the uploader
keeps showing it, and its report, until it is removed: it is read once per upload, whatever
the result, and an error is said once, in the import box.
"""

from __future__ import annotations

import json
import re

import streamlit as st

from rag_core import AppContext, DocentError, Session, export_markdown, export_session, import_session
from ui.current_session import select_session
from ui.markdown import escape_markdown
from ui.navigation import CHAT_PAGE

IMPORTING = "importing_chat"  # the import box is open
IMPORTED = "imported_chat"  # {"file": uploader file id, "name", "messages", "missing", "changed"} or "error"
UNREADABLE = "This file could not be imported: reading it failed (the server's log says why). Nothing was imported."


def file_stem(name: str) -> str:
    """A file name from a chat's name: letters, digits and dashes, at most 40 of them."""
    stem = re.sub(r"[^\w]+", "-", name, flags=re.UNICODE).strip("-")[:40].strip("-")
    return stem or "chat"


def export_buttons(ctx: AppContext, session: Session) -> None:
    """Two downloads of the conversation as it is now.

    The files are made here, as bytes, and only while the section holding them is open
    (``ui.sidebar.manage_chat``): not a callable run at the click. A callable download is
    registered under a new id at every run, and the rerun that draws an answer just written
    drops the previous run's id; a click landing in that second asked for a dropped id and
    brought nothing ("Deferred file … not found" in the server's log; a user clicked again).
    A file's id is the hash of its bytes, and a file a rerun replaced is still served until
    the run after that one, so a click in any run gets its file."""
    stem = file_stem(session.name)
    try:
        as_json = json.dumps(export_session(ctx, session.id), ensure_ascii=False, indent=2).encode()
        as_markdown = export_markdown(ctx, session.id).encode()
    except DocentError as e:
        st.error(escape_markdown(str(e)))
        return
    left, right = st.columns(2)
    left.download_button(
        "⬇️ JSON",
        as_json,
        file_name=f"{stem}.docent.json",
        mime="application/json",
        key=f"export_json_{session.id}",
        on_click="ignore",
        width="stretch",
    )
    right.download_button(
        "⬇️ Markdown",
        as_markdown,
        file_name=f"{stem}.md",
        mime="text/markdown",
        key=f"export_md_{session.id}",
        on_click="ignore",
        width="stretch",
    )


def import_box(ctx: AppContext) -> None:
    """ "Import a chat…", then an uploader for an exported conversation and what the import
    found. The uploader appears only when asked for: a page has one drop zone, its own."""
    if not st.session_state.get(IMPORTING):
        st.button("📥 Import a chat…", key="import_open", type="tertiary", on_click=_importing, args=(True,))
        return
    with st.container(border=True, key="import_box"):
        upload = st.file_uploader(
            "A conversation exported from Docent (.json)", type=["json"], key="import_file", max_upload_size=64
        )
        done = st.session_state.get(IMPORTED)
        if upload is not None and (done is None or done["file"] != upload.file_id):
            # Read once per upload: marked as read before reading, so that a failure nobody
            # foresaw shows once, then this line, never again at every run of every page.
            st.session_state[IMPORTED] = {"file": upload.file_id, "error": UNREADABLE}
            try:
                report = import_session(ctx, upload.getvalue())
            except DocentError as e:
                st.session_state[IMPORTED] = {"file": upload.file_id, "error": str(e)}
            else:
                st.session_state[IMPORTED] = {
                    "file": upload.file_id,
                    "session": report.session_id,
                    "name": getattr(report, "name", ""),
                    "messages": report.messages,
                    "missing": list(report.missing),
                    "changed": list(report.changed),
                }
                select_session(report.session_id)
                st.switch_page(CHAT_PAGE)
        done = st.session_state.get(IMPORTED)
        if upload is not None and done is not None:
            if "error" in done:
                st.error(escape_markdown(done["error"]))
            else:
                st.caption(f"✅ Imported {done['messages']} message(s); what it found is above the chat.")
        st.button("Close", key="import_close", type="tertiary", on_click=_importing, args=(False,))


def _importing(on: bool) -> None:
    st.session_state[IMPORTING] = on
    if not on:
        st.session_state.pop(IMPORTED, None)


def import_report(session_id: str) -> None:
    """Above an imported chat: what was imported, and the documents it cites that are not
    here, or here with other content (their sources will not open, or may not match)."""
    done = st.session_state.get(IMPORTED)
    if not done or done.get("session") != session_id:
        return
    name = f" as “{escape_markdown(done['name'])}”" if done.get("name") else ""
    st.success(f"Imported {done['messages']} message(s){name}.", icon="📥")
    if done["missing"]:
        names = ", ".join(escape_markdown(n) for n in done["missing"])
        st.warning(f"Cited but not indexed here: {names}. Upload them to open these sources.", icon="📄")
    if done["changed"]:
        names = ", ".join(escape_markdown(n) for n in done["changed"])
        st.warning(f"Indexed here with other content: {names}. Their passages may not match.", icon="⚠️")
    if not done["missing"] and not done["changed"]:
        st.caption("Every cited document is indexed here, unchanged.")
