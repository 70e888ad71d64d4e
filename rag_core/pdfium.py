"""PDFium's one lock, for everything in Docent that calls it.

PDFium (pypdfium2) is not thread-safe, not even across documents, and Streamlit runs each
session and each upload in its own thread; the PDF loader and the viewer both call it. So
every PDFium call, from either, holds ``PDFIUM_LOCK``: one lock per process, here, so that
neither borrows the other's.
"""

from __future__ import annotations

import threading

PDFIUM_LOCK = threading.Lock()
