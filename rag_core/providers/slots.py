"""What llama.cpp's slots have read, kept over a reload of the model.

The local model's threads are chosen for the cores other programs leave free, and a changed
choice reloads the model (``llama_engine``): every prompt read so far was then forgotten, so the
first answer after it read the system prompt again, and a follow-up the conversation the model had
read ahead (on a busy laptop, seconds each; docs/performance.md, "Keeping the slots over a
reload"). llama.cpp's server can write a slot's cache to a file and read it back
(``POST /slots/{id}?action=save|restore``, allowed once ``slot_save_path`` is set): a 660-token
slot is 19 MB, written in ~20 ms and read back in ~3 ms, against seconds to read its prompt again.
xllamacpp offers it only through the server's HTTP listener, which here is a Unix socket in a
private folder behind a random key (``llama_engine``); the files go to a private folder of their
own and are deleted once read back. Keeping them is only a saving: any failure is logged, and the
model reads the prompts again as it did before.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import shutil
import socket
import tempfile
import weakref
from typing import Any

logger = logging.getLogger(__name__)

ACTION_TIMEOUT_S = 10.0  # a slot of the whole context window (~115 MB) is written in well under a second


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def slot_action(socket_path: str, key: str, slot: int, action: str, filename: str) -> dict[str, Any]:
    """``action`` (save or restore) on ``slot`` through the server's listener; its reply."""
    conn = _UnixConnection(socket_path, ACTION_TIMEOUT_S)
    try:
        conn.request(
            "POST",
            f"/slots/{int(slot)}?action={action}",
            body=json.dumps({"filename": filename}),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    reply = json.loads(body or b"{}")
    if response.status != 200 or not isinstance(reply, dict) or "error" in reply:
        raise OSError(f"llama.cpp refused to {action} slot {slot}: HTTP {response.status}")
    return reply


class SlotKeeper:
    """The private folder a server writes its slots to (``folder``, for ``slot_save_path``), and
    the saving before a reload and the reading back after it."""

    def __init__(self) -> None:
        self._dir: str | None = None

    def folder(self) -> str:
        """The folder for ``slot_save_path`` (llama.cpp joins it to the file name as text: it
        ends with a separator). Created private (mode 0700) on first use, removed at exit."""
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="docent-slots-")
            weakref.finalize(self, shutil.rmtree, self._dir, True)
        return self._dir + os.sep

    def save(self, socket_path: str | None, key: str, slots: int) -> list[int]:
        """Write each slot's cache to a file; the slots written (none on failure)."""
        if socket_path is None or self._dir is None:
            return []
        saved = []
        for slot in range(slots):
            try:
                reply = slot_action(socket_path, key, slot, "save", _file(slot))
            except (OSError, ValueError, http.client.HTTPException) as e:
                logger.info("slot %d not kept over the reload (%s): its prompt is read again", slot, e)
                continue
            if int(reply.get("n_saved") or 0) > 0:
                saved.append(slot)
        return saved

    def restore(self, socket_path: str | None, key: str, saved: list[int]) -> int:
        """Read the saved slots back into the reloaded server, then delete the files; the
        tokens read back."""
        restored = 0
        try:
            for slot in saved:
                if socket_path is None:
                    break
                try:
                    reply = slot_action(socket_path, key, slot, "restore", _file(slot))
                except (OSError, ValueError, http.client.HTTPException) as e:
                    logger.info("slot %d not read back after the reload (%s): its prompt is read again", slot, e)
                    continue
                restored += int(reply.get("n_restored") or 0)
        finally:
            self.clear()
        return restored

    def clear(self) -> None:
        """Delete every saved file (they hold what the model read of the documents)."""
        if self._dir is None:
            return
        for slot_file in os.listdir(self._dir):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._dir, slot_file))


def _file(slot: int) -> str:
    return f"slot{int(slot)}.bin"
