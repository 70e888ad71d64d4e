"""The index rebuilt from the stored files, and the notice that asks for it when the index
holds another embedding model's vectors (searching them with this model would find nothing)."""

from __future__ import annotations

import streamlit as st

from rag_core import AppContext, IngestResult
from rag_core.recovery import rebuild
from ui.context import forget_contexts
from ui.markdown import escape_markdown
from ui.progress import progress_bar


def rebuild_index(ctx: AppContext) -> list[IngestResult]:
    """Re-ingest every stored file with the current settings (embedding included)."""
    with st.status("Rebuilding the index…", expanded=True) as status:
        results = rebuild(ctx.ingestion, progress=progress_bar())
        failed = [r for r in results if r.status == "failed"]
        status.update(
            label=f"Index rebuilt: {len(results) - len(failed)} document(s) indexed, {len(failed)} failed",
            state="error" if failed else "complete",
            expanded=False,
        )
    for result in failed:
        st.error(f"{escape_markdown(result.file)}: {escape_markdown(result.reason)}")
    forget_contexts()
    return results


def mismatch_notice(ctx: AppContext) -> bool:
    """When the index holds another embedding model's vectors: say so, offer the rebuild."""
    problem = ctx.index.mismatch()
    if not problem:
        return False
    st.warning(problem, icon="⚠️")
    if st.button("Rebuild index", key="rebuild_mismatch", type="primary"):
        rebuild_index(ctx)
        st.rerun()
    return True
