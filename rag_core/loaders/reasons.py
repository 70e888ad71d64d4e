"""Why a file is refused, in a few words: what its first bytes say it really is (a ``.pdf``
that is a PNG), and an exception's first line instead of a traceback."""

from __future__ import annotations

import re

# File signatures, to say what a misnamed file really is.
CFB = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file: .doc/.xls, or an encrypted .docx
_SIGNATURES = [
    (b"%PDF", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive (such as .docx, .epub or .odt)"),
    (CFB, "an old Office file (.doc/.xls) or an encrypted Office file"),
    (b"{\\rtf", "an RTF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
]


def sniff(data: bytes) -> str | None:
    """What the file's first bytes say it is ('a PDF', 'a PNG image'...), or None."""
    head = data[:1024].lstrip()[:16]
    return next((what for sig, what in _SIGNATURES if head.startswith(sig)), None)


def short(e: BaseException) -> str:
    """An exception as a short reason: its first line, at most 160 characters."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    # pypdfium2 wraps PDFium's reason: "Failed to load document (PDFium: Data format error)."
    msg = re.sub(r"^Failed to load document \((.+)\)\.?$", r"\1", msg)
    return msg[:160]
