"""Where the pages are: the files ``st.navigation`` in app.py runs, for links and page switches.

They live in ``app_pages/`` rather than ``pages/`` (app.py says why); ``st.switch_page`` and
``st.page_link`` name a page by its file's path relative to app.py.
"""

from __future__ import annotations

CHAT_PAGE = "app_pages/chat.py"
UPLOAD_PAGE = "app_pages/upload.py"
SETTINGS_PAGE = "app_pages/settings.py"
EVALUATE_PAGE = "app_pages/evaluate.py"
