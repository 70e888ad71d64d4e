"""What every page shares: the cached context, the current session, the sidebar.

The context (models, index, stores) is built once per distinct settings and cached with
``st.cache_resource``. Per-user things stay in ``st.session_state``: the current session
id (mirrored in ``st.query_params["session"]`` so a reload or a bookmark comes back to the
same conversation), keys typed on the Settings page, and a question whose answer failed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

import streamlit as st

from rag_core import AppContext, DocentError, DocentSettings, IngestResult, Session, build_context, load_settings
from ui.markdown import escape_markdown

CHAT_PAGE = "app_pages/chat.py"
UPLOAD_PAGE = "app_pages/upload.py"
SETTINGS_PAGE = "app_pages/settings.py"
EVALUATE_PAGE = "app_pages/evaluate.py"

NEW_CHAT = "New chat"  # the name of a session until its first question names it
SESSION_ID = "session_id"  # st.session_state key; the URL carries it as ?session=
TYPED_KEYS = "typed_keys"  # {"openai_api_key": ..., "cohere_api_key": ...}, never saved


# ============================================================================ context
def typed_keys() -> dict[str, str]:
    """Keys the user typed on the Settings page (this browser session only)."""
    return {name: value for name, value in st.session_state.get(TYPED_KEYS, {}).items() if value}


def current_settings() -> DocentSettings:
    """Defaults, then settings.json, then DOCENT_* variables, then the keys typed here."""
    return load_settings(None, **typed_keys())


def settings_fingerprint(settings: DocentSettings) -> str:
    """What the cache is keyed by: every setting, and a digest of the keys (never the keys)."""
    secrets = [settings.openai_api_key, settings.cohere_api_key]
    digest = hashlib.sha256("\n".join(s.get_secret_value() if s else "" for s in secrets).encode()).hexdigest()
    return f"{settings.model_dump_json()}#{digest}"


@st.cache_resource(show_spinner="Opening the document index…", max_entries=4)
def _cached_context(fingerprint: str, _settings: DocentSettings) -> AppContext:
    return build_context(_settings)


def get_context() -> AppContext:
    """The shared context for the current settings (built on first use, then cached)."""
    settings = current_settings()
    return _cached_context(settings_fingerprint(settings), settings)


def forget_contexts() -> None:
    """Drop every cached context, after the settings were saved or the index rebuilt.

    A context holds its own view of the index (the Chroma collection handle, the docstore
    in memory), so one built before a rebuild must not be handed out again.
    """
    _cached_context.clear()


def require_context() -> AppContext:
    """The context, or the error that prevents building it (and the page stops there)."""
    try:
        return get_context()
    except DocentError as e:
        st.error(str(e))
        st.page_link(SETTINGS_PAGE, label="Open the settings", icon="⚙️")
        st.stop()


# ============================================================================ sessions
def current_session(ctx: AppContext) -> Session:
    """The conversation this browser shows: from session_state, else the URL, else the latest.

    A missing or deleted id falls back to the most recent session (one is created when
    there is none), and the URL is kept in step so it can be bookmarked.
    """
    sessions = ctx.sessions.list()
    by_id = {s.id: s for s in sessions}
    wanted = st.session_state.get(SESSION_ID) or st.query_params.get("session")
    session = by_id.get(wanted) if wanted else None
    if session is None:
        if wanted:
            st.toast(f"Conversation {wanted!r} does not exist any more; showing the latest one.", icon="ℹ️")
        session = sessions[0] if sessions else ctx.sessions.create(NEW_CHAT)
    select_session(session.id)
    return session


def select_session(session_id: str) -> None:
    st.session_state[SESSION_ID] = session_id
    if st.query_params.get("session") != session_id:
        st.query_params["session"] = session_id


def render_sidebar(ctx: AppContext) -> None:
    """The conversations, on every page (``ui.sidebar``; app.py calls it from here)."""
    from ui.sidebar import render_sidebar as render  # ui.sidebar builds on this module

    render(ctx)


# ============================================================================ models and index
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


def rebuild_index(ctx: AppContext) -> list[IngestResult]:
    """Re-ingest every stored file with the current settings (embedding included)."""
    with st.status("Rebuilding the index…", expanded=True) as status:
        results = ctx.ingestion.rebuild(progress=progress_bar())
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


# ============================================================================ formatting
def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
