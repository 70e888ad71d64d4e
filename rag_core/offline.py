"""What third-party libraries would send out on their own, switched off before they load.

``rag_core/__init__.py`` imports this module first, so it runs before onnxruntime or
LlamaIndex are imported anywhere in the process (the app, the CLI, the tests); processes
started from there inherit it. Each entry names the library and what it would otherwise
do. ``tests/test_offline.py`` runs the app and the CLI under strace and fails on any
look-up or connection beyond this machine.
"""

from __future__ import annotations

import os

# Set, whatever the environment says.
FORCED = {
    # onnxruntime (1.32, Linux wheels): its 1DS telemetry keeps events in
    # ~/.cache/Microsoft/DeveloperTools/.onnxruntime and, ~9 s after the first
    # InferenceSession, resolves mobile.events.data.microsoft.com to upload them.
    # disable_telemetry_events() only drops some events; this stops the uploader.
    "ORT_DISABLE_TELEMETRY": "1",
}
# (chromadb 1.5's telemetry client sends nothing; index.py still passes anonymized_telemetry=False.)

# Removed: with them set, LlamaIndex looks in the given folder instead of the copy its
# wheel ships, and when that folder lacks the file, downloads it.
REMOVED = (
    # tiktoken's cl100k_base (the sentence splitter's token counter) from
    # openaipublic.blob.core.windows.net: an ingest fails offline.
    "TIKTOKEN_CACHE_DIR",
)


def stay_offline() -> None:
    """Switch the libraries' own outbound traffic off for this process and its children."""
    os.environ.update(FORCED)
    for name in REMOVED:
        os.environ.pop(name, None)


stay_offline()
