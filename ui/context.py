"""The rag_core context every page works with, built once per distinct settings.

The context (models, index, stores) is cached with ``st.cache_resource``, shared by every
browser session with the same settings. The keys typed on the Settings page are per browser
session (``st.session_state``) and never saved; they reach rag_core as overrides of
``load_settings``, and only a digest of them keys the cache.
"""

from __future__ import annotations

import contextlib
import hashlib

import streamlit as st

from rag_core import AppContext, DatabaseUnavailableError, DocentError, DocentSettings, build_context, load_settings
from ui.auth import current_person
from ui.navigation import SETTINGS_PAGE

TYPED_KEYS = "typed_keys"  # {"openai_api_key": ..., "cohere_api_key": ...}, never saved


def typed_keys() -> dict[str, str]:
    """Keys the user typed on the Settings page (this browser session only)."""
    return {name: value for name, value in st.session_state.get(TYPED_KEYS, {}).items() if value}


def current_settings() -> DocentSettings:
    """Defaults, then settings.json, then DOCENT_* variables, then the keys typed here."""
    return load_settings(None, **typed_keys())


def settings_fingerprint(settings: DocentSettings) -> str:
    """What the cache is keyed by: every setting, and a digest of the keys (never the keys)."""
    secrets = [settings.openai_api_key, settings.cohere_api_key, settings.database_url]
    digest = hashlib.sha256("\n".join(s.get_secret_value() if s else "" for s in secrets).encode()).hexdigest()
    return f"{settings.model_dump_json()}#{digest}"


@st.cache_resource(show_spinner="Opening the document index…", max_entries=4)
def _cached_context(fingerprint: str, _settings: DocentSettings) -> AppContext:
    return build_context(_settings)


def get_context() -> AppContext:
    """The shared context for the current settings (built on first use, then cached), as the
    signed-in person sees it: their conversations, and per user their own library."""
    settings = current_settings()
    return _cached_context(settings_fingerprint(settings), settings).for_person(current_person())


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


RETRY_EVERY_S = 3  # while the team's database is away, how often the page tries it again


@st.fragment(run_every=RETRY_EVERY_S)
def back_when_reachable() -> None:
    """While the team's database is away the page is only its message: try the server every
    few seconds and draw the page again once it answers, so nobody has to reload or find
    an "action" to make it try (a disabled chat box offers none)."""
    reachable = False
    with contextlib.suppress(DatabaseUnavailableError):
        get_context().registry.list()  # what every page reads first
        reachable = True
    if reachable:
        st.rerun(scope="app")
    st.caption(f"⏳ Trying the database server again every {RETRY_EVERY_S} s; the page comes back by itself.")
