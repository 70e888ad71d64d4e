"""Background uploads as this browser session sees them, and the sidebar's small indicator.

The jobs themselves run in ``rag_core.jobs`` (shared by the process, one runner per data
folder); what belongs to this session — the ids of the jobs it started — stays in
``st.session_state``, so the progress is there again after visiting another page.
"""

from __future__ import annotations

import streamlit as st

from rag_core import AppContext, JobView
from ui.auth import current_person
from ui.markdown import escape_markdown
from ui.navigation import UPLOAD_PAGE

UPLOAD_JOBS = "upload_jobs"  # ids of the jobs this session started, oldest first
SEEN_NOTICES = "seen_notices"  # start-up repair notices this session dismissed


def session_jobs(ctx: AppContext) -> list[JobView]:
    """This session's jobs the runner still holds, oldest first (forgotten ones dropped), and
    this person's uploads that another app process runs (a team's processes share them
    through the database)."""
    ids: list[str] = st.session_state.setdefault(UPLOAD_JOBS, [])
    ids.extend(i for i in ctx.jobs.running_elsewhere(current_person()) if i not in ids)
    views = [v for v in (ctx.jobs.view(i) for i in ids) if v is not None]
    st.session_state[UPLOAD_JOBS] = [v.id for v in views]
    return views


def add_job(job_id: str) -> None:
    st.session_state.setdefault(UPLOAD_JOBS, []).append(job_id)


def sidebar_indicator(ctx: AppContext) -> None:
    """Uploads still running, and what start-up had to repair (until dismissed)."""
    running = [v for v in session_jobs(ctx) if v.running]
    notices = [n for n in ctx.notices if n not in st.session_state.get(SEEN_NOTICES, [])]
    if not running and not notices:
        return
    with st.sidebar:
        if running:
            files = sum(len(v.files) for v in running)
            done = sum(f.state == "done" for v in running for f in v.files)
            st.progress(
                sum(v.fraction for v in running) / len(running), text=f"⏳ Indexing: {done} of {files} file(s) done"
            )
            st.page_link(UPLOAD_PAGE, label="See the uploads", icon="📤")
        for notice in notices:
            st.warning(escape_markdown(notice), icon="🛠️")
        if notices and st.button("Dismiss", key="dismiss_notices"):
            st.session_state[SEEN_NOTICES] = [*st.session_state.get(SEEN_NOTICES, []), *notices]
            st.rerun()
