"""Upload: add documents with a progress display per file; list and delete indexed ones."""

from __future__ import annotations

import datetime as dt

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from rag_core import SUPPORTED_EXTS, AppContext, DocentError, IngestResult
from ui.common import ensure_routed, human_size, mismatch_notice, progress_bar, require_context
from ui.confirm import confirm
from ui.markdown import escape_markdown

PROCESSED = "processed_uploads"  # file_id -> IngestResult, so a rerun never ingests a file twice

SUMMARY = {
    "indexed": ("✅", "indexed"),
    "replaced": ("🔁", "replaced the earlier version"),
    "skipped": ("⏭️", "already indexed and unchanged"),
    "failed": ("❌", "failed"),
}


def summary(result: IngestResult, *, icon: bool = True, reason: bool = True) -> str:
    mark, verb = SUMMARY.get(result.status, ("•", result.status))
    counts = [f"{result.pages} page(s)"] if result.pages else []
    if result.chunks:
        counts.append(f"{result.chunks} chunk(s)")
    text = f"{mark + ' ' if icon else ''}**{escape_markdown(result.file)}**: {verb}"
    if result.status == "failed":
        return f"{text}: {escape_markdown(result.reason)}" if reason else text
    return text + (f" ({', '.join(counts)})" if counts else "")


def ingest(ctx: AppContext, upload: UploadedFile) -> IngestResult:
    with st.status(f"Indexing {escape_markdown(upload.name)}…", expanded=True) as status:
        result = ctx.ingestion.ingest_bytes(upload.getvalue(), upload.name, progress=progress_bar())
        status.update(
            label=summary(result, icon=False, reason=False),  # a failure's reason follows, in red
            state="error" if result.status == "failed" else "complete",
            expanded=False,
        )
    return result


def show_result(result: IngestResult, *, below_status: bool = False) -> None:
    """One file's outcome; right below its status box, only what needs attention."""
    if result.status == "failed":
        st.error(summary(result))
    elif not below_status:
        st.success(summary(result))
    for warning in result.warnings:
        st.warning(f"{escape_markdown(result.file)}: {escape_markdown(warning)}")


def documents_table(ctx: AppContext) -> None:
    docs = ctx.ingestion.documents()
    st.subheader(f"Indexed documents ({len(docs)})")
    if not docs:
        st.caption("Nothing indexed yet.")
        return
    st.dataframe(
        [
            {
                "Name": d.name,
                "Pages": str(d.pages) if d.pages else "–",  # text files have sections, not pages
                "Chunks": d.chunks,
                "Size": human_size(d.size),
                "Added": dt.datetime.fromtimestamp(d.added).strftime("%Y-%m-%d %H:%M"),
            }
            for d in docs
        ],
        hide_index=True,
    )
    name = st.selectbox("Delete a document", [d.name for d in docs], index=None, placeholder="Choose a document")
    pending = confirm(
        "delete_document",
        "🗑️ Delete…",
        lambda doc: f"Delete **{escape_markdown(doc)}** from the index? Answers already given keep their text.",
        "Delete",
        value=name,
        disabled=name is None,
    )
    if pending:
        try:
            ctx.ingestion.delete(pending)
        except DocentError as e:
            st.error(str(e))
            return
        st.toast(f"Deleted {escape_markdown(pending)}", icon="🗑️")
        st.rerun()


ensure_routed()
ctx = require_context()
st.title("📤 Upload")
mismatch_notice(ctx)

uploads = st.file_uploader(
    "Add PDF, Word (.docx), HTML, text or Markdown files",
    type=sorted(ext.lstrip(".") for ext in SUPPORTED_EXTS),
    accept_multiple_files=True,
    help="Each file is parsed, split into passages, embedded and stored. Re-uploading a file replaces it.",
)
processed: dict[str, IngestResult] = st.session_state.setdefault(PROCESSED, {})
for upload in uploads or []:
    if upload.file_id in processed:
        show_result(processed[upload.file_id])
    else:
        processed[upload.file_id] = ingest(ctx, upload)
        show_result(processed[upload.file_id], below_status=True)

documents_table(ctx)
