"""Small real PDFs written byte by byte, so tests need no fixtures on disk."""

from __future__ import annotations

from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[str], path: Path | None = None) -> bytes:
    """A PDF with one page per string (lines split on newlines, Helvetica 11pt).
    An empty string makes a page without a text layer, like a scanned page."""
    streams = []
    for text in pages:
        lines = text.split("\n") if text else []
        ops = ["BT", "/F1 11 Tf", "14 TL", "50 780 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        streams.append("\n".join(ops).encode("latin-1") if lines else b"")
    return _pdf(streams, path)


def make_columns_pdf(pages: list[tuple[list[str], list[list[str]]]], path: Path | None = None) -> bytes:
    """A PDF whose pages are statements written column by column, as some filings' PDFs are
    (3M's and Corning's 10-Ks): every line's text first (``lines``, top to bottom: headings
    and row labels), then each column of figures (``columns``: one string per line, "" for
    none), each figure placed at its line's height. PDFium's text stream then gives a row's
    label and its figures on separate lines; only their positions join them."""
    streams = []
    for lines, columns in pages:
        ops = ["BT", "/F1 10 Tf", "14 TL", "40 780 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        for c, column in enumerate(columns):
            for i, figure in enumerate(column):
                if figure:
                    ops.append(f"BT /F1 10 Tf {360 + 80 * c} {780 - 14 * i} Td ({_escape(figure)}) Tj ET")
        streams.append("\n".join(ops).encode("latin-1"))
    return _pdf(streams, path)


def _pdf(streams: list[bytes], path: Path | None) -> bytes:
    objects: list[bytes] = []
    pages = streams
    n = len(pages)
    font_id = 3 + 2 * n
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    for i, stream in enumerate(streams):
        content_id = 4 + 2 * i
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 {font_id} 0 R >> >> "
            f"/Contents {content_id} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for num, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{num} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    data = bytes(out)
    if path is not None:
        Path(path).write_bytes(data)
    return data


def encrypt_pdf(data: bytes, password: str) -> bytes:
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-256")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


ZEPHYR_PAGES = [
    "The Zephyr Handbook\nChapter 1: Overview\nThe Zephyr pump moves water for small farms.",
    "Chapter 2: Capacity\nThe Zephyr pump delivers 42 litres per minute at full speed.\n"
    "It runs on a single 12 volt battery.",
    "Chapter 3: Safety\nNever run the Zephyr pump dry. Two pumps cannot share one battery,\n"
    "because the battery can only supply 10 amperes and each pump draws 8 amperes.",
]


def scan_image(text: str, dpi: int = 200, size: float = 12):
    """``text`` set on a white A4 page (lines split on newlines, ``size`` pt, Pillow's own
    font; a tab moves to the next 150 pt column, as in a table) as a grey image, as a
    scanner would see the printed page."""
    from PIL import Image, ImageDraw, ImageFont

    px = dpi / 72
    page = Image.new("L", (int(595 * px), int(842 * px)), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=int(size * px))
    y = int(72 * px)
    for line in text.split("\n"):
        for column, cell in enumerate(line.split("\t")):
            draw.text((int((60 + 150 * column) * px), y), cell, font=font, fill=30)
        y += int(size * 1.6 * px)
    return page


def make_scanned_pdf(pages: list[str], path: Path | None = None, text_pages: set[int] = frozenset()) -> bytes:
    """A PDF whose pages are images of ``pages`` with no text layer, like a scan; the pages
    whose 0-based index is in ``text_pages`` are ordinary text pages instead (a mixed PDF)."""
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for i, text in enumerate(pages):
        if i in text_pages:
            data = make_pdf([text])
        else:
            buf = io.BytesIO()
            scan_image(text).save(buf, format="PDF", resolution=200)
            data = buf.getvalue()
        writer.add_page(PdfReader(io.BytesIO(data)).pages[0])
    out = io.BytesIO()
    writer.write(out)
    if path is not None:
        Path(path).write_bytes(out.getvalue())
    return out.getvalue()
