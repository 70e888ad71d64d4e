"""Docent: chat with your own documents.

This file only routes: four pages, the conversations in the sidebar of each, and the
rag_core context built once per distinct settings and cached (``ui.context.get_context``).
Each page renders and calls rag_core. With sign-in configured (``[auth]`` in
``.streamlit/secrets.toml``, see ``ui.auth``), a visitor who has not signed in is routed
to the sign-in page alone.

The pages live in ``app_pages/``, not ``pages/``: a ``pages/`` folder beside app.py puts
Streamlit in its older folder-based mode, where a deep link (``/chat?session=…``, a reload
after a restart) runs the page file without app.py, so without its sidebar and sign-in.

    streamlit run app.py
"""

import contextlib
import sys

import streamlit as st

st.set_page_config(page_title="Docent", page_icon="📚")
# The first run of a fresh server imports LlamaIndex, Chroma and the model runtimes: seconds on
# 2 cores. Say so at once instead of a blank page; the page replaces it when they are in.
starting = st.empty() if "rag_core" not in sys.modules else None
if starting is not None:
    with starting.container():
        st.title("📚 Docent")
        st.caption("Starting: loading the search and model libraries (a few seconds, once per server start)…")

from rag_core import ChromaUnavailableError, DatabaseUnavailableError, DocentError  # noqa: E402 (after the starting line)
from rag_core.chroma_guard import unreachable  # noqa: E402
from ui.auth import may_enter, render_account, say_shared, sign_in_page  # noqa: E402
from ui.context import back_when_reachable, get_context  # noqa: E402
from ui.navigation import CHAT_PAGE, EVALUATE_PAGE, SETTINGS_PAGE, UPLOAD_PAGE  # noqa: E402
from ui.pending import show_kept_while_away  # noqa: E402
from ui.sidebar import render_sidebar  # noqa: E402

if starting is not None:
    starting.empty()
if may_enter():
    navigation = st.navigation(
        [
            st.Page(UPLOAD_PAGE, title="Upload", icon="📤"),
            st.Page(CHAT_PAGE, title="Chat", icon="💬", default=True),
            st.Page(SETTINGS_PAGE, title="Settings", icon="⚙️"),
            st.Page(EVALUATE_PAGE, title="Evaluate", icon="📏"),
        ]
    )
    with contextlib.suppress(DocentError):  # the page shows the error; Settings still opens, to fix it
        say_shared(bool(get_context().settings.database_url))  # a team database without sign-in
        render_sidebar(get_context())
    render_account()
else:
    navigation = st.navigation([st.Page(sign_in_page, title="Sign in", icon="🔒")], position="hidden")
try:
    navigation.run()
except DatabaseUnavailableError as e:  # a team's PostgreSQL away: said plainly; the next run tries again
    st.error(str(e), icon="🛑")
    show_kept_while_away()  # a question typed meanwhile: on the page, and kept until it can be asked
    back_when_reachable()
except Exception as e:  # a team's Chroma server away (a call not through the guard): the same, no traceback
    settings = get_context().settings
    why = unreachable(e) if settings.chroma_host else None
    if why is None:
        raise
    st.error(str(ChromaUnavailableError(settings.chroma_host or "", settings.chroma_port, why)), icon="🛑")
