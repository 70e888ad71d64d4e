"""Upload: add documents in the background with progress per file and a Cancel button;
list and delete indexed ones.

Files are ingested by a background job (``rag_core.jobs``): the page can be left and come
back to, the progress is still there (this session keeps its job ids), and the results
stay until dismissed. A file whose name is already indexed from a *different* file is not
sent until the user chose: replace it, keep both (``report (2).pdf``), or skip it.
"""

from __future__ import annotations

import datetime as dt

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from rag_core import UPLOAD_LABEL, UPLOAD_TYPES, AppContext, DocentError, IngestResult, JobView, Upload
from ui.auth import current_person
from ui.confirm import confirm
from ui.context import require_context
from ui.formatting import human_size
from ui.jobs import add_job, session_jobs
from ui.markdown import escape_markdown
from ui.rebuild import mismatch_notice

SEEN = "upload_seen"  # uploader file_id -> job id, or "asked": a rerun never sends a file twice
QUESTIONS = "upload_questions"  # file_id -> (name, bytes): waiting for replace / keep both / skip
FINISHED = "upload_finished"  # job ids whose end already refreshed the whole page

SUMMARY = {
    "indexed": ("✅", "indexed"),
    "replaced": ("🔁", "replaced the earlier version"),
    "skipped": ("⏭️", "already indexed and unchanged"),
    "failed": ("❌", "failed"),
    "cancelled": ("⏹️", "cancelled; nothing of it was kept"),
}


def summary(result: IngestResult, *, icon: bool = True, reason: bool = True) -> str:
    mark, verb = SUMMARY.get(result.status, ("•", result.status))
    counts = [f"{result.pages} page(s)"] if result.pages else []
    if result.chunks:
        counts.append(f"{result.chunks} chunk(s)")
    text = f"{mark + ' ' if icon else ''}**{escape_markdown(result.file)}**: {verb}"
    if result.status == "failed":
        return f"{text}: {escape_markdown(result.reason)}" if reason else text
    return text + (f" ({', '.join(counts)})" if counts and result.status != "cancelled" else "")


def show_result(result: IngestResult) -> None:
    if result.status == "failed":
        st.error(summary(result))
    elif result.status == "cancelled":
        st.info(summary(result))
    else:
        st.success(summary(result))
    for warning in result.warnings:
        st.warning(f"{escape_markdown(result.file)}: {escape_markdown(warning)}")


def send(ctx: AppContext, uploads: list[UploadedFile]) -> None:
    """New files from the uploader: those without a name conflict go to a job at once."""
    seen: dict[str, str] = st.session_state.setdefault(SEEN, {})
    questions: dict[str, tuple[str, bytes]] = st.session_state.setdefault(QUESTIONS, {})
    batch = []
    for upload in uploads:
        if upload.file_id in seen:
            continue
        data = upload.getvalue()
        if ctx.ingestion.conflict(upload.name, data):
            questions[upload.file_id] = (upload.name, data)
            seen[upload.file_id] = "asked"
        else:
            batch.append((upload.file_id, Upload(upload.name, data)))
    if batch:
        job_id = ctx.jobs.submit(ctx.ingestion, [u for _, u in batch], owner=current_person())
        add_job(job_id)
        seen.update({file_id: job_id for file_id, _ in batch})


def ask_about_names(ctx: AppContext) -> None:
    """One question per upload whose name is indexed from a different file."""
    questions: dict[str, tuple[str, bytes]] = st.session_state.setdefault(QUESTIONS, {})
    for file_id, (name, data) in list(questions.items()):
        conflict = ctx.ingestion.conflict(name, data)
        if conflict is None:  # deleted or replaced meanwhile: nothing to ask any more
            questions.pop(file_id)
            add_job(ctx.jobs.submit(ctx.ingestion, [Upload(name, data)], owner=current_person()))
            continue
        old = conflict.existing
        added = dt.datetime.fromtimestamp(old.added).strftime("%Y-%m-%d %H:%M")
        cited = (
            f" {conflict.answers} answer(s) in {conflict.conversations} conversation(s) cite it; if you replace "
            "it they keep the passages they quoted, and may no longer match the new file."
            if conflict.answers
            else ""
        )
        with st.container(border=True):
            st.warning(
                f"**{escape_markdown(conflict.name)}** is already indexed from a different file "
                f"(added {added}, {human_size(old.size)}, {old.chunks} chunk(s)).{cited}",
                icon="❓",
            )
            replace, both, skip = st.columns(3)
            choice = None
            if replace.button("Replace it", key=f"replace_{file_id}", type="primary"):
                choice = "replace"
            if both.button(f"Keep both (as {escape_markdown(conflict.keep_both_name)})", key=f"keep_both_{file_id}"):
                choice = "keep_both"
            if skip.button("Skip this file", key=f"skip_{file_id}"):
                choice = "skip"
        if choice:
            questions.pop(file_id)
            if choice != "skip":
                policy = "replace" if choice == "replace" else "keep_both"
                add_job(
                    ctx.jobs.submit(ctx.ingestion, [Upload(name, data, on_conflict=policy)], owner=current_person())
                )
            st.rerun()


def show_jobs(ctx: AppContext) -> None:
    """This session's jobs: progress and Cancel while running, results until dismissed."""
    views = session_jobs(ctx)
    finished: list[str] = st.session_state.setdefault(FINISHED, [])
    for view in reversed(views):  # newest first
        if view.running:
            show_running(ctx, view)
            continue
        if view.id not in finished:  # it ended since the last full run: refresh the document list
            finished.append(view.id)
            st.rerun(scope="app")
        for result in view.results:
            show_result(result)
        if view.error:
            st.error(f"The upload stopped: {escape_markdown(view.error)}")
    done = [v for v in views if not v.running]
    if done and st.button("Clear finished uploads", key="clear_uploads"):
        for view in done:
            ctx.jobs.forget(view.id)
        st.rerun(scope="app")


def show_running(ctx: AppContext, view: JobView) -> None:
    with st.container(border=True):
        st.markdown(f"**⏳ Indexing {len(view.files)} file(s)…**")
        st.caption("This goes on if you leave the page; come back to see where it is.")
        for entry in view.files:
            if entry.result is not None:
                show_result(entry.result)
            else:
                st.progress(entry.fraction, text=escape_markdown(entry.message))
        if st.button("Cancel", key=f"cancel_{view.id}", help="Stops after the current batch; nothing half is kept"):
            ctx.jobs.cancel(view.id)
            st.toast("Cancelling: the file being indexed is removed, the rest are not started.", icon="⏹️")


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
            st.error(escape_markdown(str(e)))
            return
        st.toast(f"Deleted {escape_markdown(pending)}", icon="🗑️")
        st.rerun()


ctx = require_context()
ctx.ingestion.warm()  # the worker that reads files, started while the person picks them
st.title("📤 Upload")
mismatch_notice(ctx)

uploads = st.file_uploader(
    UPLOAD_LABEL,
    type=UPLOAD_TYPES,
    accept_multiple_files=True,
    help="Each file is parsed, split into passages, embedded and stored, in the background. "
    "A file with the name of an indexed but different file asks first: replace it, or keep both.",
)
send(ctx, uploads or [])
ask_about_names(ctx)
running = any(v.running for v in session_jobs(ctx))
st.fragment(run_every=1.0 if running else None)(show_jobs)(ctx)  # redrawn each second while running
documents_table(ctx)
