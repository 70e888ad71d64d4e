"""The settings saved from the page, when the state lives in PostgreSQL: the one row of table
``saved_settings`` (made by the migrations), so that every app process of a team reads what
anyone saved. Same shape as ``settings.json``: an object of flat field names, never a key.

Settings are read on every page run. When the server cannot be reached, the last object
read in this process is used (the database errors that follow say what is wrong), so that
a restart of the server never changes the models or the index a process works with.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from rag_core import postgres
from rag_core.errors import DocentError

logger = logging.getLogger(__name__)

_LAST: dict[str, dict[str, Any]] = {}
_LAST_LOCK = threading.Lock()


def read(url: str) -> tuple[dict[str, Any], str | None]:
    """The saved values, and why they could not be read as an object (None when they could)."""
    try:
        with postgres.borrowed(url) as conn:
            row = conn.execute("SELECT data FROM saved_settings WHERE id = 1").fetchone()
            conn.rollback()
    except DocentError as e:
        with _LAST_LOCK:
            last = _LAST.get(url)
        if last is None:
            raise
        logger.warning("saved settings: %s; using the ones read last", e)
        return dict(last), None
    except Exception as e:  # the table is not there yet: the first start migrates it
        logger.info("no saved settings in %s yet (%s)", postgres.shown_url(url), type(e).__name__)
        return {}, None
    if row is None:
        data: Any = {}
    else:
        try:
            data = json.loads(row[0])
        except ValueError as e:
            return {}, f"the saved row is not JSON: {e}"
    if not isinstance(data, dict):
        return {}, f"it holds a JSON {type(data).__name__}, not an object of settings"
    with _LAST_LOCK:
        _LAST[url] = dict(data)
    return data, None


def write(url: str, data: dict[str, Any]) -> None:
    with postgres.borrowed(url) as conn, conn.transaction():
        conn.execute(
            "INSERT INTO saved_settings (id, data, updated) VALUES (1, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET data = excluded.data, updated = excluded.updated",
            (json.dumps(data, indent=2, sort_keys=True), time.time()),
        )
    with _LAST_LOCK:
        _LAST[url] = dict(data)
