"""Ingestion: files in, chunks with vectors out; a document is fully indexed or absent.

    service.py     IngestionService: ingest, replace, delete, list; conflicts between names
    ahead.py       reading the next file while this one is embedded
    transforms.py  the pipeline's own steps: page context for chunks, embedding in batches
    markers.py     the pending markers written before the first vector (for recovery)
    names.py       document names: identity, uploads, the stored copy's file name

What a crash or a lost registry leaves is for ``rag_core.recovery``, which works on the
``IngestionService`` it is given.
"""

from rag_core.ingestion.ahead import start_reading
from rag_core.ingestion.markers import IngestMarkers
from rag_core.ingestion.names import iter_inputs, numbered, safe_name, upload_name
from rag_core.ingestion.service import Conflict, IngestionService, IngestResult, OnConflict

__all__ = [
    "Conflict",
    "IngestMarkers",
    "IngestResult",
    "IngestionService",
    "OnConflict",
    "iter_inputs",
    "numbered",
    "safe_name",
    "start_reading",
    "upload_name",
]
