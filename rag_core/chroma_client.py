"""Opening and reopening Chroma's client: a ``chroma run`` server, or the embedded index in
the data folder, reopened when another process wrote to it (``rag_core.index``)."""

from __future__ import annotations

import os
from typing import Any

from rag_core.chroma_guard import ChromaPlace, Guarded, translated
from rag_core.settings import DocentSettings


def chroma_client(settings: DocentSettings) -> Any:
    # Telemetry off before chromadb is imported anywhere else in this process.
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=True)
    place = place_of(settings)
    with translated(place):  # a server that does not answer, a disk too full to open the index
        if settings.chroma_host:
            client = chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings)
        else:
            settings.paths.chroma.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(settings.paths.chroma), settings=chroma_settings)
    return Guarded(client, place)


def place_of(settings: DocentSettings) -> ChromaPlace:
    return ChromaPlace(settings.data_dir, settings.chroma_host, settings.chroma_port)  # the folder a user knows


def reopen_chroma(client: Any, settings: DocentSettings) -> Any:
    """A new embedded client on the same folder that reads the segments afresh.

    chromadb keeps one ``System`` per path in a process (``SharedSystemClient``), and its
    vector segments are loaded once: a new client on that path would share the stale one.
    So the cached system is dropped from that table first. It is not stopped: collections
    still held elsewhere in this process keep working on it until they reopen as well."""
    from chromadb.api.shared_system_client import SharedSystemClient

    identifier = getattr(client, "_identifier", None)
    if identifier is not None:
        with SharedSystemClient._refcount_lock:
            SharedSystemClient._identifier_to_system.pop(identifier, None)
            SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    return chroma_client(settings)
