"""Long waits shown as they happen: the local model's load, and a progress bar for rag_core.

A page never blocks silently: whatever takes seconds says what it is doing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from rag_core import AppContext
from ui.markdown import escape_markdown


def ensure_llm(ctx: AppContext) -> float:
    """Assemble and load the local model behind a visible status, never silently.

    Returns the seconds it waited for that (0 when the model was ready)."""
    if ctx.llm_ready or ctx.settings.llm_provider != "local":
        return 0.0
    started = time.perf_counter()
    with st.status("Loading the local model…", expanded=True) as status:
        step = st.empty()  # one line, updated: assembling reports each of its parts
        step.caption("The first time, the model is assembled from its parts: about a minute.")

        def report(message: str) -> None:
            step.caption(escape_markdown(message))

        ctx.llm(progress=report)
        status.update(label="The local model is ready", state="complete", expanded=False)
    return time.perf_counter() - started


def progress_bar(text: str = "Starting…") -> Callable[[str, float], None]:
    """A progress bar and the ``(message, fraction)`` callback rag_core reports to."""
    bar = st.progress(0.0, text=text)

    def report(message: str, fraction: float) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=escape_markdown(message))

    return report
